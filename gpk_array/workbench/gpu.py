"""The workbench's device side: runs a candidate's validation plan (checks.py) and its benchmark on a CUDA GPU.
Imported only by a real (not ``--dry-run``) validate, bench or profile run.

GEMM candidates run through the namespace's own path for an instance (``launch_sm90.gemm_into``: the cached
Params and TMA descriptors, one driver call); the incumbent is what dispatch picks today for the same problem
(``_gpu.matmul`` / ``_gpu.linear``, the registry in force), beside cuBLASLt's heuristic kernel and torch where it is
installed. GPU time: ``calls`` calls recorded in a CUDA graph, replayed ``repeats`` times (per-call time of each
replay; median and spread); host time: the median time to issue one call. Elementwise and reduction candidates are
routing thresholds, which the namespace chose on time per call (host and GPU): they are timed per call, ours
against CuPy's, back to back.

A candidate whose code does not build or load (``build_failure``) is a failed "compile" case of its validation,
not an exception: validate writes it as evidence, and the gate refuses it naming the case.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from . import checks


def _cp():
    import cupy
    return cupy


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype("float32" if name == "tf32" else name)


def _to_dev(a):
    return _cp().asarray(a)


def _to_host(a):
    return _cp().asnumpy(a).astype(np.float64)


def _filled(shape, fill, dtype):
    return _to_dev(np.full(shape, fill, dtype=np.float32).astype(dtype))


# --- build and load failures --------------------------------------------------------------------------------------

LOG_TAIL = 4000       # characters of the compiler log a "compile" case keeps
_LOAD_ERRORS = ("CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_PTX",
                "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "CUDA_ERROR_INVALID_SOURCE", "CUDA_ERROR_SHARED_OBJECT",
                "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "CUDA_ERROR_NOT_FOUND", "cuModuleLoad")


def build_failure(e: BaseException) -> dict | None:
    """The failed "compile" case of an exception that says the candidate's code does not build or load, or None
    for any other exception (a launch failure, a bug: those are raised). Build failures: ``KernelCompileError``
    (stage "compile", with the compiler log's last LOG_TAIL characters and the first line it blames) and
    ``CutlassUnavailable`` (no cubin and nothing to compile it with, a wrong device, a module the driver rejects);
    load failures: a CUDA driver error of loading a module (``CUDADriverError`` naming a bad image, a missing
    binary for the GPU, PTX the driver cannot take)."""
    from .._errors import KernelCompileError
    from .._kernels.cutlass.launch_sm90 import CutlassUnavailable
    text = str(e)
    if isinstance(e, KernelCompileError):
        rec = {"stage": "compile", "why": f"the candidate does not compile: {e.message}",
               "log_tail": e.log[-LOG_TAIL:], "line": e.line, "backend": e.backend, "file": e.file}
    elif isinstance(e, CutlassUnavailable):
        stage = "compile" if "compile" in text and "cannot load" not in text else "load"
        rec = {"stage": stage, "why": f"the candidate does not {'build' if stage == 'compile' else 'load'}: "
                                      f"{text.splitlines()[0] if text else type(e).__name__}"}
    elif type(e).__name__ == "CUDADriverError" and any(c in text for c in _LOAD_ERRORS):
        rec = {"stage": "load", "why": f"the driver does not load the candidate's module: {text.splitlines()[0]}"}
    else:
        return None
    return dict({"case": "compile", "passed": False, "error": type(e).__name__}, **rec)


# --- GEMM --------------------------------------------------------------------------------------------------------


def _gemm_operands(meta, shape, rng):
    m, n, k = shape
    dt = _np_dtype(meta["dtype"])
    x = (rng.standard_normal((m, k), dtype=np.float32)).astype(dt)
    wshape = (k, n) if meta["layout"] == "nn" else (n, k)
    w = (rng.standard_normal(wshape, dtype=np.float32) / np.sqrt(k)).astype(dt)
    bias = None
    if meta.get("epilogue"):
        bias = rng.standard_normal(n, dtype=np.float32).astype(dt)
    return x, w, bias


def _act(meta):
    epi = meta.get("epilogue")
    return None if epi in (None, "bias") else epi[len("bias_"):]


def _run_candidate(meta, x, w, bias, fill):
    from .._kernels.cutlass import launch_sm90
    cp = _cp()
    m, n = x.shape[0], (w.shape[1] if meta["layout"] == "nn" else w.shape[0])
    out = _filled((m, n), fill, x.dtype)
    ok = launch_sm90.gemm_into(meta["instance"], x, w, out, cp.cuda.runtime.getDevice(), bias)
    cp.cuda.get_current_stream().synchronize()
    return out if ok else None


def _gemm_case(meta, case, rng, tol):
    """The result record of one case of a GEMM plan (its operands drawn from ``rng``)."""
    shape = case["shape"]
    x, w, bias = _gemm_operands(meta, shape, rng)
    if case["case"] == "nan_inf":
        x[0, 0] = np.nan
        x[1, 0] = np.inf
    ref = checks.gemm_reference(x, w, meta["layout"], bias, _act(meta))
    dx, dw = _to_dev(x), _to_dev(w)
    db = None if bias is None else _to_dev(bias)
    rec = {"case": case["case"], "shape": shape}
    if "in_class" in case:
        rec["in_class"] = case["in_class"]
    out = _run_candidate(meta, dx, dw, db, np.nan)
    if out is None:
        rec.update(declined=True, why="the instance does not take these operands (dispatch falls back)")
        return rec
    rec.update(checks.compare(_to_host(out), ref, tol))
    if case["case"] == "stale_memory":
        again = _run_candidate(meta, dx, dw, db, case["fills"][1])
        bits = np.uint16 if out.itemsize == 2 else np.uint32
        same = again is not None and bool(np.array_equal(_cp().asnumpy(out).view(bits),
                                                         _cp().asnumpy(again).view(bits)))
        rec["bit_identical_over_fills"] = same
        if not same:
            rec.update(passed=False, why="the output depends on the memory it overwrites (or is not "
                                         "deterministic)")
    return rec


def gemm_validate(meta, plan):
    """The validation results of a GEMM candidate, one record per case of ``plan``; where the instance does not
    build or load (``build_failure``), one failed "compile" case instead of the rest (each would fail the same)."""
    rng = np.random.default_rng(plan["seed"])
    results = []
    for case in plan["cases"]:
        try:
            results.append(_gemm_case(meta, case, rng, plan["tolerance"]))
        except Exception as e:  # noqa: BLE001 - a build/load failure is evidence; anything else is raised
            fail = build_failure(e)
            if fail is None:
                raise
            results.append(dict(fail, instance=meta["instance"], shape=case["shape"]))
            break
    return results


def graph_times(fn, calls=20, repeats=10, warmup=3):
    """Per-call GPU seconds of ``fn`` from ``repeats`` replays of a CUDA graph of ``calls`` calls (None: not
    capturable)."""
    cp = _cp()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        for _ in range(max(1, warmup)):
            fn()
        s.synchronize()
        s.begin_capture()
        try:
            for _ in range(calls):
                fn()
        except Exception:  # noqa: BLE001 - a call that refuses to be captured
            s.end_capture()
            return None
        graph = s.end_capture()
        graph.launch(stream=s)
        s.synchronize()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        out = []
        for _ in range(repeats):
            start.record(s)
            graph.launch(stream=s)
            end.record(s)
            end.synchronize()
            out.append(cp.cuda.get_elapsed_time(start, end) * 1e-3 / calls)
    return out


def host_times(fn, repeats=10):
    """Seconds to issue one call of ``fn`` (no synchronization inside), ``repeats`` samples."""
    cp = _cp()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
        cp.cuda.get_current_stream().synchronize()
    return out


def wall_times(fn, calls=20, repeats=10, warmup=3):
    """Per-call seconds (host and GPU) of ``calls`` back-to-back calls, ``repeats`` samples."""
    cp = _cp()
    for _ in range(max(1, warmup)):
        fn()
    cp.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        cp.cuda.get_current_stream().synchronize()
        out.append((time.perf_counter() - t) / calls)
    return out


def stats(ts):
    """median, min, max and relative spread ((max - min) / median) of a sample, in microseconds."""
    if not ts:
        return None
    med = statistics.median(ts)
    return {"median_us": med * 1e6, "min_us": min(ts) * 1e6, "max_us": max(ts) * 1e6,
            "spread": (max(ts) - min(ts)) / med if med else None, "samples": len(ts)}


def _torch_graph_times(fn, calls, repeats, warmup):
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(max(1, warmup)):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    out = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3 / calls)
    return out


def gemm_bench(meta, warmup=3, repeats=10, calls=20):
    """Per shape: the candidate, the incumbent (``row["incumbent"]``: the kernel dispatch picks today, timed as
    ``row["dispatch"]``), cuBLASLt's heuristic kernel and torch, GPU time (graphs) and host time per call, and
    ratio = incumbent / candidate median GPU time."""
    cp = _cp()
    from .. import _gpu
    from .._kernels import blas, gemm
    from .._kernels import elementwise as ew
    from .._kernels.cutlass import launch_sm90
    rng = np.random.default_rng(checks.SEED)
    dev = cp.cuda.runtime.getDevice()
    act = _act(meta)
    rows = []
    for shape in meta["shapes"]:
        m, n, k = shape
        x, w, bias = (_to_dev(a) if a is not None else None for a in _gemm_operands(meta, shape, rng))
        out = cp.empty((m, n), dtype=x.dtype)
        key = meta["instance"]
        fns = {"candidate": lambda: launch_sm90.gemm_into(key, x, w, out, dev, bias)}
        b = w if meta["layout"] == "nn" else w.T
        use_tf32 = meta["dtype"] == "tf32"
        from .._precision import float32_matmul_precision
        if meta.get("epilogue"):
            inc_key = gemm.select_sm90_fused(x.dtype, m, n, k, act)
            fns["dispatch"] = lambda: _gpu.linear(x, w, bias, act)

            def lt():
                y = blas.linear(x, w, bias, act if act in (None, "relu", "gelu_tanh") else None)
                return y if act in (None, "relu", "gelu_tanh") else ew.unary(act, y, out=y)
            fns["cublaslt"] = lt
        else:
            inc_key = gemm.select_sm90(x.dtype, meta["layout"], m, n, k, tf32=use_tf32)
            fns["dispatch"] = lambda: _gpu.matmul(x, b)
            fns["cublaslt"] = lambda: blas.matmul(x, b, tf32=use_tf32)
        row = {"shape": shape, "incumbent": inc_key or "cublaslt"}
        keep = blas.AUTOTUNE_ALGOS
        with float32_matmul_precision("high" if use_tf32 else "highest"):
            for name, fn in fns.items():
                if name == "cublaslt":
                    blas.AUTOTUNE_ALGOS = 1   # the heuristic's first choice: the kernel cuBLAS itself runs
                try:
                    row[name] = {"gpu": stats(graph_times(fn, calls, repeats, warmup)),
                                 "host": stats(host_times(fn, repeats))}
                finally:
                    blas.AUTOTUNE_ALGOS = keep
        try:
            import torch
            import torch.nn.functional as F
            tx, tw = torch.from_dlpack(x), torch.from_dlpack(w)
            tb = None if bias is None else torch.from_dlpack(bias)
            torch.backends.cuda.matmul.allow_tf32 = use_tf32
            tbm = tw if meta["layout"] == "nn" else tw.T

            def tfn():
                if not meta.get("epilogue"):
                    return tx @ tbm
                y = F.linear(tx, tw, tb)
                if act == "relu":
                    return F.relu(y)
                if act in ("gelu", "gelu_tanh"):
                    return F.gelu(y, approximate="tanh" if act == "gelu_tanh" else "none")
                return F.silu(y) if act == "silu" else y
            row["torch"] = {"gpu": stats(_torch_graph_times(tfn, calls, repeats, warmup))}
        except Exception as e:  # noqa: BLE001 - torch missing or refusing: the record says so
            row["torch"] = {"unavailable": f"{type(e).__name__}: {e}"[:200]}
        c, i = row["candidate"]["gpu"], row["dispatch"]["gpu"]
        row["ratio_vs_incumbent"] = None if not (c and i) else i["median_us"] / c["median_us"]
        lt = row["cublaslt"]["gpu"]
        row["ratio_vs_cublaslt"] = None if not (c and lt) else lt["median_us"] / c["median_us"]
        rows.append(row)
    return rows


# --- elementwise / reduction ----------------------------------------------------------------------------------------

_NP_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "negative": np.negative}
_NP_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
              "maximum": np.maximum, "minimum": np.minimum}
_EW_NAME = {"divide": "true_divide"}


def _routing_inputs(meta, op, dt, size, rng):
    npd = _np_dtype(dt)
    if meta["kind"] == "reduction":
        shape = (size,) if meta["axis_kind"] == "full" else (max(1, size // 1024), min(size, 1024))
        x = rng.standard_normal(shape, dtype=np.float32)
        if npd.kind in "iu":
            x = rng.integers(-100, 100, size=shape)
        return [x.astype(npd)]
    lo = 0.1 if op in ("log", "sqrt") else None
    mk = (lambda: rng.uniform(lo, 4.0, size).astype(np.float32)) if lo else \
        (lambda: rng.standard_normal(size, dtype=np.float32))
    return [mk().astype(npd)] + ([mk().astype(npd)] if op in _NP_BINARY else [])


def _ours(meta, op, args, out=None):
    from .._kernels import elementwise as ew
    from .._kernels import reduction as red
    if meta["kind"] == "reduction":
        axis = None if meta["axis_kind"] == "full" else ((1,) if meta["axis_kind"] == "rows" else (0,))
        return red.reduce(op, args[0], axis=axis)
    name = _EW_NAME.get(op, op)
    return ew.binary(name, *args, out=out) if len(args) == 2 else ew.unary(name, args[0], out=out)


def _cupy_fn(meta, op, args):
    cp = _cp()
    if meta["kind"] == "reduction":
        axis = None if meta["axis_kind"] == "full" else (1 if meta["axis_kind"] == "rows" else 0)
        return getattr(cp, op)(args[0], axis=axis)
    return getattr(cp, op)(*args)


def _reference(meta, op, host_args):
    a64 = [np.asarray(a, dtype=np.float64) for a in host_args]
    with np.errstate(all="ignore"):
        if meta["kind"] == "reduction":
            axis = None if meta["axis_kind"] == "full" else (1 if meta["axis_kind"] == "rows" else 0)
            return getattr(np, op)(a64[0], axis=axis)
        return (_NP_BINARY.get(op) or _NP_UNARY[op])(*a64)


def _routing_case(meta, case, rng, tol):
    """The result record of one case of an elementwise/reduction plan (its inputs drawn from ``rng``)."""
    op, dt, size = case["op"], case["dtype"], case["size"]
    host = _routing_inputs(meta, op, dt, size, rng)
    if case["case"] == "nan_inf" and host[0].dtype.kind == "f":
        flat = host[0].reshape(-1)
        flat[0] = np.nan
        if flat.size > 1:
            flat[-1] = np.inf
    ref = _reference(meta, op, host)
    args = [_to_dev(a) for a in host]
    rec = {"case": case["case"], "op": op, "dtype": dt, "size": size}
    if "in_class" in case:
        rec["in_class"] = case["in_class"]
    if case["case"] == "aliasing":
        out = _ours(meta, op, args, out=args[0])
    elif case["case"] == "stale_memory":
        buf = _filled(host[0].shape, np.nan, host[0].dtype)
        out = _ours(meta, op, args, out=buf)
    else:
        out = _ours(meta, op, args)
    if out is None:
        rec.update(declined=True, why="our kernel does not cover it")
        return rec
    rec.update(checks.compare(_to_host(out), ref, tol))
    if case["case"] == "stale_memory":
        buf2 = _filled(host[0].shape, case["fills"][1], host[0].dtype)
        again = _ours(meta, op, [_to_dev(a) for a in host], out=buf2)
        same = bool(np.array_equal(_cp().asnumpy(out), _cp().asnumpy(again), equal_nan=True))
        rec["bit_identical_over_fills"] = same
        if not same:
            rec.update(passed=False, why="the output depends on the memory it overwrites")
    return rec


def routing_validate(meta, plan):
    """The validation results of an elementwise/reduction candidate's kernels, one record per case; where our
    kernels do not build or load (``build_failure``), one failed "compile" case instead of the rest."""
    rng = np.random.default_rng(plan["seed"])
    results = []
    for case in plan["cases"]:
        try:
            results.append(_routing_case(meta, case, rng, plan["tolerance"][case["dtype"]]))
        except Exception as e:  # noqa: BLE001 - a build/load failure is evidence; anything else is raised
            fail = build_failure(e)
            if fail is None:
                raise
            results.append(dict(fail, op=case["op"], dtype=case["dtype"], size=case["size"]))
            break
    return results


def routing_bench(meta, incumbent_from, warmup=3, repeats=10, calls=20):
    """Per op x dtype x size: ours and CuPy's time per call; the candidate's and the incumbent's choice
    (``incumbent_from``: the registry's current threshold, None: CuPy) and ratio = incumbent / candidate time."""
    rng = np.random.default_rng(checks.SEED)
    n_c = meta["choice"]["own_from"]
    rows = []
    for op in meta["ops"]:
        for dt in meta["dtype"].split(","):
            for (size,) in meta["shapes"]:
                args = [_to_dev(a) for a in _routing_inputs(meta, op, dt, size, rng)]
                t_ours = stats(wall_times(lambda: _ours(meta, op, args), calls, repeats, warmup))
                t_cupy = stats(wall_times(lambda: _cupy_fn(meta, op, args), calls, repeats, warmup))
                cand = "ours" if size >= n_c else "cupy"
                inc = "ours" if incumbent_from is not None and size >= incumbent_from else "cupy"
                t = {"ours": t_ours, "cupy": t_cupy}
                rows.append({"op": op, "dtype": dt, "shape": [size], "ours": t_ours, "cupy": t_cupy,
                             "candidate_choice": cand, "incumbent_choice": inc,
                             "ratio_vs_incumbent": t[inc]["median_us"] / t[cand]["median_us"],
                             "decision_differs": cand != inc})
    return rows
