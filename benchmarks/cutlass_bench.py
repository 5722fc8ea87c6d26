"""The CUTLASS SM80 GEMM instances (gpk_array._kernels.gemm) beside cuBLAS, measured in the same run.

    python -m benchmarks.cutlass_bench [--json OUT]        or        python -m benchmarks cutlass [--json OUT]

Problem: D (M, N) = X (M, K) @ W (N, K)^T in float16 and bfloat16 (the layout of a linear layer). Shapes: square
512..8192, 1000^3, and GPT-2's M in (1, 8, 128, 1024, 8192) x (K, N) in ((768, 3072), (3072, 768), (768, 2304),
(768, 768)). For each: cuBLAS as a user calls it (CuPy's ``x @ w.T``), each CUTLASS instance (small: 64x64x64 tile,
large: 128x256x64) called through ``gemm.linear_tn(x, w, key=...)``, both timed with CUDA events around a batch of
back-to-back calls (best of 3 batches; small problems are bound by host time per call there, for both); and the
GPU time alone: the same calls recorded in a CUDA graph and replayed, for the CUTLASS instances and for cuBLASLt
(``gpk_array._kernels.blas.linear``, as CuPy's cuBLAS calls cannot be captured). ``winner`` is the faster instance by
graph time; ``select`` is the instance the shape rule of gemm.select() picks; ``ratio`` = cuBLAS time / best CUTLASS
time (above 1: CUTLASS faster), eager against eager and graph against graph. ``max_rel_diff``: the CUTLASS results
against cuBLAS's, on the first 64 rows, relative to max|cuBLAS|. Stops adding shapes after DEADLINE_S seconds.
"""

import json
import math
import sys
import time

import numpy as np

from benchmarks.gemm_bench import _graph_time  # GPU time per call, calls recorded in a CUDA graph

SQUARE = [512, 1024, 2048, 4096, 8192]
TAILS = [1000]
GPT2_KN = [(768, 3072), (3072, 768), (768, 2304), (768, 768)]
GPT2_M = [1, 8, 128, 1024, 8192]
DEADLINE_S = 100.0
_BATCH_S = 0.01          # a timed batch lasts about this long at 400 TFLOP/s (10 to 200 calls)


def shapes():
    """(M, N, K) of every problem, in order."""
    out = [(n, n, n) for n in SQUARE] + [(n, n, n) for n in TAILS]
    out += [(m, n, k) for m in GPT2_M for k, n in GPT2_KN]
    return out


def _calls(flop):
    return int(min(200, max(10, _BATCH_S * 400e12 / flop)))


def _event_time(fn, cp, calls, reps=3):
    """GPU-clock seconds per call of ``calls`` back-to-back calls between two events, best of ``reps`` batches."""
    fn()
    fn()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    best = math.inf
    for _ in range(reps):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) * 1e-3 / calls)
    return best


def _tflops(flop, t):
    return None if t is None else flop / t / 1e12


def run():
    import cupy as cp

    import gpk_array as xp
    from gpk_array._kernels import gemm, loader
    from gpk_array._kernels.prebuild import prebuild
    if cp.cuda.runtime.getDeviceCount() == 0:
        raise RuntimeError("no CUDA GPU")
    arch = loader.device_arch()
    try:
        from gpk_array._kernels import blas
        blas = blas if blas.available() else None
    except Exception:  # noqa: BLE001
        blas = None
    t0 = time.perf_counter()
    built = prebuild(arch, variants=gemm.variants(), jobs=4)  # compile (or find cached) the four instances
    for r in built:
        state = "cached" if r["cached"] else f"built in {r['seconds']:.1f} s"
        print(f"{r['file']} sm_{arch}: {state}", flush=True)
    dev = xp.Device("cuda:0")
    rng = np.random.default_rng(0)
    rows = []
    for dname in ("float16", "bfloat16"):
        dt = getattr(xp, dname)
        code = "f16" if dname == "float16" else "bf16"
        for m, n, k in shapes():
            if time.perf_counter() - t0 > DEADLINE_S:
                print(f"deadline of {DEADLINE_S:.0f}s reached: {dname} {m}x{n}x{k} and later shapes skipped")
                break
            flop = 2.0 * m * n * k
            x = xp.astype(xp.asarray(rng.standard_normal((m, k), dtype=np.float32), device=dev), dt)._data
            w = xp.astype(xp.asarray(rng.standard_normal((n, k), dtype=np.float32), device=dev), dt)._data
            calls = _calls(flop)
            wt = w.T
            ref = cp.matmul(x, wt)
            row = {"dtype": dname, "m": m, "n": n, "k": k, "calls": calls,
                   "select": gemm.select(code, "tn", m, n, k, arch)}
            t_cublas = _event_time(lambda: cp.matmul(x, wt), cp, calls)
            row["cublas_tflops"] = _tflops(flop, t_cublas)
            g_lt = None
            if blas is not None:
                out_lt = cp.empty((m, n), dtype=x.dtype)
                g_lt = _graph_time(lambda: blas.linear(x, w, None, None, out=out_lt), cp, calls, reps=3)
            row["cublaslt_graph_tflops"] = _tflops(flop, g_lt)
            best_e, best_g = math.inf, math.inf
            for fam in ("small", "large"):
                key = f"gemm/{code}/tn/{fam}/sm80"
                try:
                    y = gemm.linear_tn(x, w, key=key)
                except ValueError as e:  # the instance cannot run this problem
                    row[fam] = {"error": str(e)}
                    continue
                diff = _rel_diff(y[:64], ref[:64])
                out = cp.empty((m, n), dtype=x.dtype)
                t_e = _event_time(lambda: gemm.linear_tn(x, w, key=key), cp, calls)
                t_g = _graph_time(lambda: gemm.linear_tn(x, w, out=out, key=key), cp, calls, reps=3)
                row[fam] = {"tflops": _tflops(flop, t_e), "graph_tflops": _tflops(flop, t_g), "max_rel_diff": diff}
                best_e = min(best_e, t_e)
                if t_g is not None and t_g < best_g:
                    best_g, row["winner"] = t_g, fam
            row["ratio_vs_cublas"] = t_cublas / best_e if best_e < math.inf else None
            row["graph_ratio_vs_cublaslt"] = g_lt / best_g if g_lt is not None and best_g < math.inf else None
            rows.append(row)
            _print_row(row, header=len(rows) == 1)
    _summary(rows)
    print(f"cutlass_bench: {len(rows)} problems in {time.perf_counter() - t0:.1f}s")
    return rows


def _rel_diff(y, ref):
    """max|y - ref| / max|ref| on the host, in float64 (bfloat16 through ml_dtypes)."""
    a = np.asarray(y.get()).astype(np.float64)
    b = np.asarray(ref.get()).astype(np.float64)
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-30))


def _fmt(v, spec="7.1f"):
    return f"{v:{spec}}" if isinstance(v, float) else f"{'-':>7}"


def _print_row(r, header=False):
    if header:
        print(f"{'dtype':9} {'M':>5} {'N':>5} {'K':>5} | {'cuBLAS':>7} {'small':>7} {'large':>7} {'ratio':>6} | "
              f"graph: {'cuBLASLt':>8} {'small':>7} {'large':>7} {'ratio':>6} | winner select  TFLOP/s")
    s, lg = r.get("small", {}), r.get("large", {})
    print(f"{r['dtype']:9} {r['m']:5} {r['n']:5} {r['k']:5} | {_fmt(r['cublas_tflops'])} {_fmt(s.get('tflops'))} "
          f"{_fmt(lg.get('tflops'))} {_fmt(r['ratio_vs_cublas'], '6.2f')} | "
          f"       {_fmt(r['cublaslt_graph_tflops'], '8.1f')} {_fmt(s.get('graph_tflops'))} "
          f"{_fmt(lg.get('graph_tflops'))} {_fmt(r['graph_ratio_vs_cublaslt'], '6.2f')} | "
          f"{r.get('winner', '-'):6} {(r['select'] or 'None').split('/')[3] if r['select'] else 'None':6}",
          flush=True)


def _summary(rows):
    for dname in ("float16", "bfloat16"):
        rs = [r for r in rows if r["dtype"] == dname]
        for field in ("ratio_vs_cublas", "graph_ratio_vs_cublaslt"):
            v = [r[field] for r in rs if r[field]]
            if v:
                print(f"geomean {field}, {dname}: {float(np.exp(np.mean(np.log(v)))):.3f} over {len(v)} shapes; "
                      f"CUTLASS faster on {sum(x > 1 for x in v)}")
        agree = sum(1 for r in rs if r.get("winner") and r["select"] and r["select"].split("/")[3] == r["winner"])
        print(f"select() picked the graph-time winner on {agree} of {len(rs)} {dname} shapes")
        diffs = [r[f]["max_rel_diff"] for r in rs for f in ("small", "large") if "max_rel_diff" in r.get(f, {})]
        if diffs:
            print(f"largest CUTLASS vs cuBLAS difference, {dname}: {max(diffs):.2e} of max|cuBLAS|")


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cutlass_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args(argv)
    from benchmarks.__main__ import _env
    out = {"env": _env(), "results": {"cutlass": run()}}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
