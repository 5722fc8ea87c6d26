"""GEMM and fused-linear benchmarks on the GPU: gpk_array beside cuBLAS (through CuPy) and torch, same run.

gemm: TFLOP/s over a sweep (square, GPT-2 shapes, unaligned tails) for float16, bfloat16, float32 (full FP32, the
namespace's default precision) and "tf32" (float32 with TF32 allowed, against cuBLAS TF32); linear: linear + bias +
GELU against the bare GEMM of the same shape.
"""
import numpy as np

SQUARE = [512, 1024, 2048, 4096, 8192]
GPT2_KN = [(768, 3072), (3072, 768), (768, 2304), (768, 768)]
GPT2_M = [1, 8, 128, 1024, 8192]
TAILS = [1000, 4095]


def _shapes():
    out = [(n, n, n) for n in SQUARE] + [(n, n, n) for n in TAILS]
    out += [(m, k, n) for m in GPT2_M for k, n in GPT2_KN]
    return out


def _time(fn, cp, reps=10):
    for _ in range(3):
        fn()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return float(np.median(times))


def _time_rounds(fns, cp, reps=10, rounds=3):
    """``_time`` of each callable, interleaved over ``rounds`` rounds (ours, baseline, ours, ...), the best round
    of each: a GPU or host slowing down for a moment then costs both sides alike, not whichever ran then."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], _time(fn, cp, reps))
    return best


def _heuristic_graph_time(a, b, cp):
    """GPU time per call of cuBLASLt's heuristic first choice for a @ b (the kernel cuBLAS runs), in CUDA graphs;
    None where cuBLASLt does not take the problem."""
    from gpk_array._kernels import blas
    from gpk_array._precision import tf32
    keep = blas.AUTOTUNE_ALGOS
    blas.AUTOTUNE_ALGOS = 1      # part of blas.py's plan and call keys: entries of their own, not the tuned ones
    use_tf32 = tf32() and a.dtype == cp.float32    # the precision the namespace's matmul uses (full FP32 by default)
    try:
        return _graph_time(lambda: blas.matmul(a, b, tf32=use_tf32), cp)
    finally:
        blas.AUTOTUNE_ALGOS = keep


def _graph_time(fn, cp, calls=20, reps=5):
    """GPU seconds per call with no host time in it: ``calls`` calls recorded in a CUDA graph, replayed ``reps``
    times; the fastest replay. None when the calls cannot be captured."""
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        fn()
        s.synchronize()
        s.begin_capture()
        try:
            for _ in range(calls):
                fn()
        except Exception:  # noqa: BLE001 - e.g. CuPy's cuBLAS wrappers refuse to run while a stream captures
            s.end_capture()
            return None
        graph = s.end_capture()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        best = None
        for _ in range(reps):
            start.record(s)
            graph.launch(stream=s)
            end.record(s)
            end.synchronize()
            t = cp.cuda.get_elapsed_time(start, end) * 1e-3 / calls
            best = t if best is None else min(best, t)
    return best


def run(kind="gemm"):
    import cupy as cp

    import gpk_array as xp
    try:
        import torch
    except ImportError:
        torch = None
    if cp.cuda.runtime.getDeviceCount() == 0:
        raise RuntimeError("no CUDA GPU")
    dev = xp.Device("cuda:0")
    rows = []
    rng = np.random.default_rng(0)
    if kind == "gemm":
        from gpk_array._kernels import blas
        # "tf32": float32 under float32_matmul_precision("high") (TF32 allowed), against cuBLAS TF32 (our cuBLASLt
        # binding with CUBLAS_COMPUTE_32F_FAST_TF32; CuPy's matmul runs full FP32 unless CUPY_TF32 is set)
        for dname in ("float16", "bfloat16", "float32", "tf32"):
            prec = "high" if dname == "tf32" else "highest"
            for m, k, n in _shapes():
                dt = xp.float32 if dname == "tf32" else getattr(xp, dname)
                a = xp.asarray(rng.standard_normal((m, k), dtype=np.float32), device=dev)
                b = xp.asarray(rng.standard_normal((k, n), dtype=np.float32), device=dev)
                a, b = xp.astype(a, dt), xp.astype(b, dt)
                flop = 2.0 * m * n * k
                if dname == "tf32":
                    ref = cp.empty((m, n), cp.float32)
                    if blas.matmul(a._data, b._data, out=ref, tf32=True) is None:
                        raise RuntimeError(f"cuBLASLt declined the TF32 baseline {m}x{k}x{n}")
                    fns = [lambda: a @ b, lambda: blas.matmul(a._data, b._data, out=ref, tf32=True)]
                else:
                    fns = [lambda: a @ b, lambda: cp.matmul(a._data, b._data)]
                if torch is not None:
                    ta = torch.from_dlpack(a._data)
                    tb = torch.from_dlpack(b._data)
                    torch.backends.cuda.matmul.allow_tf32 = True
                    fns.append(lambda: ta @ tb)
                with xp.float32_matmul_precision(prec):
                    t_ours, t_cublas, *t_torch = _time_rounds(fns, cp)
                    # GPU time alone (CUDA graphs of 20 calls): our dispatch's kernels against the kernel cuBLAS
                    # picks (cuBLASLt's heuristic first choice, no autotuning; CuPy's cuBLAS calls cannot be
                    # captured)
                    g_ours = _graph_time(lambda: a @ b, cp)
                    g_cublas = _heuristic_graph_time(a._data, b._data, cp)
                t_torch = t_torch[0] if t_torch else None
                gr = None if None in (g_ours, g_cublas) else g_cublas / g_ours
                rows.append({"dtype": dname, "m": m, "k": k, "n": n, "ours_tflops": flop / t_ours / 1e12,
                             "cublas_cupy_tflops": flop / t_cublas / 1e12,
                             "baseline": "cuBLASLt TF32" if dname == "tf32" else "cupy.matmul",
                             "torch_tflops": None if t_torch is None else flop / t_torch / 1e12,
                             "ratio_vs_cublas": t_cublas / t_ours,
                             "gpu_ours_us": None if g_ours is None else g_ours * 1e6,
                             "gpu_cublas_us": None if g_cublas is None else g_cublas * 1e6,
                             "gpu_ratio_vs_cublas": gr})
        print("per call (single calls, event-timed from an idle GPU: host time + GPU time), and GPU time alone "
              "(CUDA graphs; cuBLAS = cuBLASLt's heuristic choice). tf32: float32 with TF32 allowed, per-call "
              "cuBLAS = cuBLASLt TF32; torch float32 rows run TF32 (allow_tf32)")
        print(f"{'dtype':9} {'M':>5} {'K':>5} {'N':>5} {'ours':>8} {'cuBLAS':>8} {'torch':>8} {'ratio':>6}  TFLOP/s"
              f" | GPU us: {'ours':>8} {'cuBLAS':>8} {'ratio':>6}")
        for r in rows:
            tt = "-" if r["torch_tflops"] is None else f"{r['torch_tflops']:8.1f}"
            g = (f"{r['gpu_ours_us']:8.2f} {r['gpu_cublas_us']:8.2f} {r['gpu_ratio_vs_cublas']:6.2f}"
                 if r["gpu_ratio_vs_cublas"] is not None else "       -        -      -")
            print(f"{r['dtype']:9} {r['m']:5} {r['k']:5} {r['n']:5} {r['ours_tflops']:8.1f} "
                  f"{r['cublas_cupy_tflops']:8.1f} {tt:>8} {r['ratio_vs_cublas']:6.2f}          | {g}")
        for dname in ("float16", "bfloat16", "float32", "tf32"):
            rs = [r["ratio_vs_cublas"] for r in rows if r["dtype"] == dname]
            gs = [r["gpu_ratio_vs_cublas"] for r in rows if r["dtype"] == dname and r["gpu_ratio_vs_cublas"]]
            print(f"geomean ratio vs cuBLAS, {dname}: per call {float(np.exp(np.mean(np.log(rs)))):.3f}, "
                  f"GPU time {float(np.exp(np.mean(np.log(gs)))) if gs else float('nan'):.3f} ({len(gs)} shapes)")
    elif kind == "linear":
        for dname, act in (("float16", "gelu_tanh"), ("bfloat16", "gelu_tanh"), ("float16", "gelu"),
                           ("bfloat16", "gelu")):
            for m, k, n in [(8192, 768, 3072), (512, 768, 3072)]:
                dt = getattr(xp, dname)
                x = xp.astype(xp.asarray(rng.standard_normal((m, k), dtype=np.float32), device=dev), dt)
                w = xp.astype(xp.asarray(rng.standard_normal((n, k), dtype=np.float32) * 0.02, device=dev), dt)
                bias = xp.astype(xp.asarray(rng.standard_normal(n, dtype=np.float32), device=dev), dt)
                wt = w._data.T
                t_gemm = _time(lambda: cp.matmul(x._data, wt), cp)
                t_ours = _time(lambda: xp.linear(x, w, bias, activation=act), cp)
                # GPU time alone (CUDA graphs): the epilogue's own cost, without either call's host time. The bare
                # GEMM is cuBLASLt's, as CuPy's cuBLAS calls cannot be captured (cuBLAS runs the same kernels).
                from gpk_array._kernels import blas
                g_gemm = _heuristic_graph_time(x._data, wt, cp)
                g_ours = _graph_time(lambda: xp.linear(x, w, bias, activation=act), cp)
                t_torch = None
                if torch is not None:
                    import torch.nn.functional as F
                    tx, tw, tb = (torch.from_dlpack(v._data) for v in (x, w, bias))
                    appr = "tanh" if act == "gelu_tanh" else "none"
                    t_torch = _time(lambda: F.gelu(F.linear(tx, tw, tb), approximate=appr), cp)
                rows.append({"dtype": dname, "activation": act, "m": m, "k": k, "n": n, "bare_gemm_ms": t_gemm * 1e3,
                             "ours_ms": t_ours * 1e3, "torch_linear_gelu_ms": None if t_torch is None else
                             t_torch * 1e3, "ours_over_bare": t_ours / t_gemm,
                             "torch_over_bare": None if t_torch is None else t_torch / t_gemm,
                             "graph_bare_gemm_ms": None if g_gemm is None else g_gemm * 1e3,
                             "graph_ours_ms": None if g_ours is None else g_ours * 1e3,
                             "graph_ours_over_bare": None if None in (g_gemm, g_ours) else g_ours / g_gemm})
        print(f"{'dtype':9} {'act':9} {'shape':>18} {'bare GEMM ms':>12} {'ours ms':>8} {'x bare':>7} {'torch ms':>9} "
              f"{'x bare':>7} | GPU only: {'bare ms':>8} {'ours ms':>8} {'x bare':>7}")
        for r in rows:
            g = r["graph_ours_over_bare"]
            print(f"{r['dtype']:9} {r['activation']:9} {r['m']:>6}x{r['k']}->{r['n']:<5} {r['bare_gemm_ms']:12.3f} "
                  f"{r['ours_ms']:8.3f} {r['ours_over_bare']:7.2f} {r['torch_linear_gelu_ms'] or 0:9.3f} "
                  f"{r['torch_over_bare'] or 0:7.2f}"
                  f" |           {r['graph_bare_gemm_ms'] or 0:8.4f} {r['graph_ours_ms'] or 0:8.4f} "
                  f"{g if g is not None else float('nan'):7.2f}")
    return rows
