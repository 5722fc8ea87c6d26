"""python -m benchmarks KIND [KIND ...] [--json OUT]: run benchmarks, print tables, write JSON with the GPU, the
commit and every figure beside its baseline measured in the same run.

KIND: overhead | elementwise | reduction | gemm | linear | cutlass | attention | sched | llm | tokenizer | dask | jit
      | pykernel | kernels | all

kernels: an alias of ``elementwise reduction`` (our element-wise and reduction kernels against CuPy's, the suites
the kernel workbench's routing thresholds rest on); their results are written under those two kinds.
"""
import argparse
import datetime
import importlib
import json
import platform
import subprocess
import sys
import traceback

KINDS = {
    "overhead": ("benchmarks.overhead", "run", ()),
    "elementwise": ("benchmarks.kernels_bench", "run", ("elementwise",)),
    "reduction": ("benchmarks.kernels_bench", "run", ("reduction",)),
    "gemm": ("benchmarks.gemm_bench", "run", ("gemm",)),
    "linear": ("benchmarks.gemm_bench", "run", ("linear",)),
    "cutlass": ("benchmarks.cutlass_bench", "run", ()),
    "attention": ("benchmarks.attention_bench", "run", ()),
    "sched": ("benchmarks.sched_bench", "run", ()),
    "llm": ("benchmarks.llm_bench", "run", ()),
    "tokenizer": ("benchmarks.tokenizer_bench", "run", ()),
    "dask": ("benchmarks.dask_bench", "run", ()),
    "jit": ("benchmarks.jit_bench", "run", ()),
    "pykernel": ("benchmarks.pykernel_bench", "run", ()),
}
# kinds that name several of KINDS: expanded in order, each benchmark run once
ALIASES = {"kernels": ("elementwise", "reduction")}


def expand(kinds) -> list:
    """The benchmarks of KINDS that ``kinds`` (names of KINDS, ALIASES or "all") name, in order, each once; "all"
    among them: every kind of KINDS, in KINDS' order."""
    if "all" in kinds:
        return list(KINDS)
    out = []
    for k in kinds:
        for name in ALIASES.get(k, (k,)):
            if name not in out:
                out.append(name)
    return out


def _env():
    info = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(), "python": platform.python_version()}
    import os
    info["commit"] = os.environ.get("GPK_COMMIT", "")  # a copied tree without .git names its commit here
    if not info["commit"]:
        try:
            info["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                            timeout=10).stdout.strip() or "unknown"
            # tracked files that differ from that commit: the figures are not that commit's (a copied tree can
            # carry a stale .git; export GPK_COMMIT there)
            info["dirty"] = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                                capture_output=True, text=True, timeout=30).stdout.strip())
        except Exception:
            info["commit"] = "unknown"
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount():
            p = cupy.cuda.runtime.getDeviceProperties(0)
            info["gpu"] = p["name"].decode()
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            info["cupy"] = cupy.__version__
    except Exception:
        info["gpu"] = None
    import numpy
    info["numpy"] = numpy.__version__
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kinds", nargs="+", choices=list(KINDS) + list(ALIASES) + ["all"])
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args(argv)
    kinds = expand(a.kinds)
    out = {"env": _env(), "results": {}}
    status = 0
    for k in kinds:
        mod, fn, args = KINDS[k]
        print(f"\n== {k} ==", flush=True)
        try:
            out["results"][k] = getattr(importlib.import_module(mod), fn)(*args)
        except Exception as e:  # one failing benchmark must not lose the others' figures
            traceback.print_exc()
            out["results"][k] = {"error": f"{type(e).__name__}: {e}"}
            status = 1
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1, default=str)
    return status


if __name__ == "__main__":
    sys.exit(main())
