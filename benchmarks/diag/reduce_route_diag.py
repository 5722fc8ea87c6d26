"""Where our reduction kernels should take the namespace's reductions (gpk_array/_gpu.py REDUCE_ROUTE): the time per
call (host included, as a user's loop sees it) of gpk_array's sum, max, mean, var, argmax on a CUDA device, with every
route to our kernels on (the checking mode, OWN_KERNELS_MIN = 0) and with every route off (CuPy's path inside the
namespace: float16/bfloat16 through float32), beside CuPy's own call on the same array, from 2^10 to 2^24
elements, over all elements, rows (the last axis) and columns (the first axis).

    python -m benchmarks.diag.reduce_route_diag [--json OUT] [--dtypes float32,float16,...] [--ops sum,argmax,...]

"least" in the summary: the smallest measured size from which our kernels are at least as fast as the namespace's
CuPy path at that size and at every larger one measured (None: not at 2^24).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

SIZES = (10, 14, 18, 20, 22, 24)
DTYPES = ("float32", "float16", "bfloat16", "float64", "int32")
OPS = ("sum", "max", "mean", "var", "argmax")
KINDS = ("full", "rows", "cols")


def _per_call(fn, sync, budget=0.01, repeats=3):
    """Best of ``repeats`` loops of about ``budget`` seconds each: seconds per call, host and GPU together."""
    from benchmarks.overhead import _per_call as loops
    fn()
    sync()
    t = time.perf_counter()
    fn()
    sync()
    n = int(min(200, max(3, budget / max(time.perf_counter() - t, 1e-7))))
    return loops(fn, sync, n, warmup=0, repeats=repeats)


def _shape(kind, p):
    n = 1 << p
    c = 1024 if p >= 16 else 1 << (p // 2)
    return {"full": (n,), "rows": (n // c, c), "cols": (c, n // c)}[kind], {"full": None, "rows": -1, "cols": 0}[kind]


def run(out_json=None, dtypes=DTYPES, ops=OPS):
    import cupy
    import gpk_array as gp
    from gpk_array import _gpu
    dev = next(d for d in gp.__array_namespace_info__().devices() if d.kind == "cuda")
    sync = cupy.cuda.get_current_stream().synchronize
    own_min, floor = _gpu.OWN_KERNELS_MIN, _gpu.reduce_floor
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'dtype':9} {'op':7} {'kind':5} {'n':>9} {'ours us':>9} {'path us':>9} {'cupy us':>9} "
          f"{'path/ours':>10}  ok")
    for dname in dtypes:
        dt = gp.bfloat16 if dname == "bfloat16" else getattr(gp, dname)
        for p in SIZES:
            n = 1 << p
            host = rng.integers(-1000, 1000, n).astype(np.float64) / 256.0
            base = gp.astype(gp.asarray(host.astype(np.float32) if dname != "float64" else host, device=dev), dt)
            for kind in KINDS:
                shape, axis = _shape(kind, p)
                x = gp.reshape(base, shape)
                for op in ops:
                    if op in ("mean", "var") and dname == "int32":
                        continue
                    fn = getattr(gp, op)

                    def call(x=x, fn=fn, axis=axis):
                        return fn(x, axis=axis)

                    try:
                        _gpu.OWN_KERNELS_MIN = 0
                        r_ours = call()
                        t_ours = _per_call(call, sync)
                        _gpu.OWN_KERNELS_MIN, _gpu.reduce_floor = own_min, (lambda op, dtype: None)
                        r_path = call()
                        t_path = _per_call(call, sync)
                    except Exception as e:  # noqa: BLE001 - one failing row does not end the run
                        print(f"{dname:9} {op:7} {kind:5} {n:9d} error {type(e).__name__}: {e}", flush=True)
                        rows.append({"dtype": dname, "op": op, "kind": kind, "n": n, "error": repr(e)})
                        continue
                    finally:
                        _gpu.OWN_KERNELS_MIN, _gpu.reduce_floor = own_min, floor
                    a = np.asarray(r_ours.to_device("cpu")).astype(np.float64)
                    b = np.asarray(r_path.to_device("cpu")).astype(np.float64)
                    tol = {"float16": 2e-2, "bfloat16": 5e-2}.get(dname, 1e-4)
                    ok = bool(np.array_equal(a, b)) if op == "argmax" else bool(
                        np.allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max(initial=0)))))
                    t_cupy = None
                    try:
                        cx = x._data
                        cfn = getattr(cupy, op)
                        t_cupy = _per_call(lambda: cfn(cx, axis=axis), sync)
                    except Exception:  # noqa: BLE001 - CuPy without this dtype
                        pass
                    row = {"dtype": dname, "op": op, "kind": kind, "n": n, "shape": list(shape),
                           "ours_us": t_ours * 1e6, "path_us": t_path * 1e6,
                           "cupy_us": None if t_cupy is None else t_cupy * 1e6, "path_over_ours": t_path / t_ours,
                           "ok": ok}
                    rows.append(row)
                    cu = f"{t_cupy * 1e6:9.2f}" if t_cupy is not None else f"{'-':>9}"
                    print(f"{dname:9} {op:7} {kind:5} {n:9d} {t_ours * 1e6:9.2f} {t_path * 1e6:9.2f} {cu} "
                          f"{t_path / t_ours:10.2f}  {'y' if ok else 'N'}", flush=True)
            cupy.get_default_memory_pool().free_all_blocks()
    summary = []
    print("\nleast size from which ours >= the namespace's CuPy path (at every larger size measured)")
    for dname in dtypes:
        for op in ops:
            for kind in KINDS:
                rs = sorted((r for r in rows if (r["dtype"], r["op"], r["kind"]) == (dname, op, kind)
                             and "error" not in r),
                            key=lambda r: r["n"])
                if not rs:
                    continue
                least = None
                for r in reversed(rs):
                    if r["path_over_ours"] < 1.0:
                        break
                    least = r["n"]
                summary.append({"dtype": dname, "op": op, "kind": kind, "least": least,
                                "ratios": [round(r["path_over_ours"], 3) for r in rs]})
                print(f"{dname:9} {op:7} {kind:5} least {str(least):>9}  "
                      + " ".join(f"{r['path_over_ours']:.2f}" for r in rs))
    if out_json:
        from benchmarks.__main__ import _env
        with open(out_json, "w") as f:
            json.dump({"env": _env(), "sizes": [1 << p for p in SIZES], "rows": rows, "summary": summary}, f, indent=1)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--ops", default=",".join(OPS))
    a = ap.parse_args(argv)
    run(a.json, tuple(a.dtypes.split(",")), tuple(a.ops.split(",")))


if __name__ == "__main__":
    sys.exit(main())
