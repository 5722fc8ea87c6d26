"""Compile every kernel module into the disk cache, so no user call waits for a compiler.

    python -m gpk_array._kernels.prebuild [--arch 90] [--jobs N] [--force]

The CUTLASS GEMM instances (gemm.py) are among the modules: they take the longest, 6 to 18 s each on two cores
(NVRTC or nvcc, sm_90), and need the nvidia-cutlass package's headers. For an SM90 GPU (arch 90) the SM90 CUTLASS
instances (cutlass/launch_sm90.py, sm_90a cubins, 30-100 s each with nvcc on two cores) are built too; without the
headers they are skipped, and a cubin built elsewhere can be copied into the cache.

Without --arch the local GPU's compute capability is used (that needs a GPU); with it, nothing
touches a GPU. ``prebuild()`` returns one dict per module: file, options, arch, path, cached,
seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor

from . import loader


def all_variants() -> list[tuple[str, tuple]]:
    """Every (cu_file, options) module the front ends may load, the CUTLASS GEMM instances of gemm.py
    (``cutlass/<file>.cu``, used with GPK_GEMM=cutlass) included."""
    from . import attention, elementwise, gemm, nn, reduction, sampling
    return sorted(set(elementwise.variants()) | set(reduction.variants()) | set(nn.variants())
                  | set(attention.variants()) | set(sampling.variants()) | set(gemm.variants()))


def prebuild(arch=None, *, jobs: int | None = None, verbose: bool = False, force: bool = False,
             variants=None) -> list[dict]:
    arch = loader.normalize_arch(arch) if arch is not None else loader.device_arch()
    todo = list(variants) if variants is not None else all_variants()
    if variants is None and loader.cutlass_headers()[0] is None:  # nvidia-cutlass missing: the rest still builds
        todo = [v for v in todo if not v[0].startswith(loader.CUTLASS_PREFIX)]
        if verbose:
            print("gpk_array: nvidia-cutlass is not installed: CUTLASS GEMM instances skipped", file=sys.stderr)
    jobs = jobs or os.cpu_count() or 1
    backend = loader.default_backend()
    results: list[dict] = []

    def one(v):
        cu_file, options = v
        info = loader.build(cu_file, options, arch, force=force, note=False,
                            backend=None if cu_file.startswith(loader.CUTLASS_PREFIX) else backend)
        if verbose:
            state = "cached" if info["cached"] else f"{info['seconds']:.1f}s"
            print(f"gpk_array: {cu_file} {' '.join(options)} sm_{arch}: {state}", file=sys.stderr,
                  flush=True)
        return info

    sm90 = []
    if variants is None and arch.startswith("90"):
        from .cutlass import launch_sm90
        sm90 = launch_sm90.instance_keys()

    def one_sm90(key):
        from .cutlass import launch_sm90
        try:
            r = launch_sm90.build(key, force=force)
        except launch_sm90.CutlassUnavailable as e:
            if verbose:
                print(f"gpk_array: {key} skipped: {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
            return None
        if verbose:
            state = "cached" if r["cached"] else f"{r['seconds']:.1f}s"
            print(f"gpk_array: {key} sm_{launch_sm90.ARCH}: {state}", file=sys.stderr, flush=True)
        return {"file": key, "options": (), "arch": launch_sm90.ARCH, "path": r["path"], "cached": r["cached"],
                "seconds": r["seconds"]}

    t0 = time.perf_counter()
    # NVRTC releases the GIL while it compiles, and nvcc runs as a subprocess: threads suffice.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for info in pool.map(one, todo):
            results.append(info)
        for info in pool.map(one_sm90, sm90):
            if info is not None:
                results.append(info)
    if verbose:
        built = sum(1 for r in results if not r["cached"])
        print(f"gpk_array: {built} of {len(results)} modules built for sm_{arch} in "
              f"{time.perf_counter() - t0:.1f}s ({backend})", file=sys.stderr, flush=True)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default=None, help="e.g. 90 or sm_90 (default: the local GPU)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = ap.parse_args(argv)
    prebuild(args.arch, jobs=args.jobs, verbose=True, force=args.force)
    return 0


class _CallableModule(types.ModuleType):
    """Importing this submodule rebinds ``gpk_array._kernels.prebuild`` from the package's function
    to this module; making the module callable keeps ``gpk_array._kernels.prebuild(arch)`` working."""

    def __call__(self, arch=None, **kwargs):
        return prebuild(arch, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
