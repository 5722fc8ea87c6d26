#!/usr/bin/env python3
"""Compile every gpk_array/_kernels/cuda/*.cu with nvcc to cubins, without a GPU.

    python scripts/check_kernels.py [--arch 80 --arch 90a] [--jobs 2] [--file binary.cu]
    python scripts/check_kernels.py --nvrtc [--arch 90]

Each .cu file is compiled whole (every dtype and op group instantiated) once per arch, `--jobs` at
a time. Then each cubin's symbol table must hold every kernel name the Python front ends may ask
for. Exits 0 when all is well; otherwise prints the failing commands with nvcc's log (or the
missing names) and exits 1.

With --nvrtc (needs the NVRTC library, not a GPU) every module the loader builds at run time is
compiled exactly as the loader does (NVRTC, per-dtype and per-group options), and each module must
hold the names the front ends request from that very module.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpk_array._kernels import attention, elementwise, loader, nn, reduction, sampling  # noqa: E402

DEFAULT_ARCHS = ("80", "90a")


def compile_one(nvcc: str, cu: Path, arch: str, outdir: Path) -> dict:
    out = outdir / f"{cu.stem}.sm_{arch}.cubin"
    cmd = [nvcc, "-cubin", f"-arch=sm_{arch}", "-std=c++17", f"-I{loader.CUDA_DIR}",
           "-o", str(out), str(cu)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    res = {"file": cu.name, "arch": arch, "seconds": dt, "cmd": " ".join(cmd),
           "ok": proc.returncode == 0 and out.is_file(), "log": (proc.stdout or "") + (proc.stderr or "")}
    if res["ok"]:
        res["symbols"] = loader.cubin_symbols(out.read_bytes())
    return res


def expected_names() -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    for table in (elementwise.expected_kernels(), reduction.expected_kernels(), nn.expected_kernels(),
                  attention.expected_kernels(), sampling.expected_kernels()):
        for f, s in table.items():
            names.setdefault(f, set()).update(s)
    return names


def check_nvrtc(archs, jobs) -> int:
    if not loader.nvrtc_available():
        print("check_kernels: NVRTC library not loadable", file=sys.stderr)
        return 2
    mods: dict = {}
    for table in (elementwise.expected_by_module(), reduction.expected_by_module(), nn.expected_by_module(),
                  attention.expected_by_module(), sampling.expected_by_module()):
        mods.update(table)
    work = [(f, opts, a) for (f, opts) in sorted(mods) for a in archs]
    t0 = time.perf_counter()

    def one(item):
        f, opts, a = item
        t = time.perf_counter()
        try:
            cubin = loader.compile_cubin(loader.read_source(f), opts, a, backend="nvrtc", name=f)
        except loader.KernelCompileError as e:
            return item, time.perf_counter() - t, str(e)
        missing = sorted(mods[(f, opts)] - loader.cubin_symbols(cubin))
        return item, time.perf_counter() - t, (f"missing {missing[:10]}" if missing else None)

    failures = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for (f, opts, a), dt, err in pool.map(one, work):
            print(f"check_kernels: nvrtc {f:10s} {' '.join(opts[1:]):40s} sm_{a:4s} {dt:6.1f}s  "
                  f"{'ok' if err is None else 'FAILED'}", flush=True)
            if err:
                failures.append(f"{f} {opts} sm_{a}: {err}")
    print(f"check_kernels: {len(work)} NVRTC modules in {time.perf_counter() - t0:.1f}s")
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="compile-check the gpk_array CUDA kernels with nvcc")
    ap.add_argument("--arch", action="append", default=None, help="repeatable; default 80 and 90a")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--file", action="append", default=None, help="only these .cu files")
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--nvrtc", action="store_true", help="check the run-time modules with NVRTC instead")
    args = ap.parse_args(argv)

    if args.nvrtc:
        return check_nvrtc([loader.normalize_arch(a) for a in (args.arch or ("90",))], args.jobs)

    nvcc = args.nvcc or loader.nvcc_path()
    if not nvcc:
        print("check_kernels: nvcc not found", file=sys.stderr)
        return 2
    archs = [loader.normalize_arch(a) for a in (args.arch or DEFAULT_ARCHS)]
    files = sorted(loader.CUDA_DIR.glob("*.cu"))
    if args.file:
        files = [f for f in files if f.name in set(args.file)]
    if not files:
        print("check_kernels: no .cu files", file=sys.stderr)
        return 2
    expected = expected_names()
    t0 = time.perf_counter()
    # Longest first (reduce.cu, binary.cu) so two workers finish close together.
    weight = {"binary.cu": 3, "reduce.cu": 3, "unary.cu": 1}
    jobs = sorted(((f, a) for f in files for a in archs), key=lambda fa: -weight.get(fa[0].name, 2))
    failures = []
    with tempfile.TemporaryDirectory(prefix="gpk_check_") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda fa: compile_one(nvcc, fa[0], fa[1], Path(tmp)), jobs))
    for r in results:
        status = "ok" if r["ok"] else "FAILED"
        print(f"check_kernels: {r['file']:12s} sm_{r['arch']:4s} {r['seconds']:6.1f}s  {status}")
        if not r["ok"]:
            failures.append(f"$ {r['cmd']}\n{r['log']}")
            continue
        missing = sorted(expected.get(r["file"], set()) - r["symbols"])
        if missing:
            failures.append(f"{r['file']} sm_{r['arch']}: {len(missing)} kernels the Python side "
                            f"expects are missing, e.g. {missing[:10]}")
    print(f"check_kernels: {len(results)} compiles in {time.perf_counter() - t0:.1f}s "
          f"on {args.jobs} jobs ({os.cpu_count()} cpus)")
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
