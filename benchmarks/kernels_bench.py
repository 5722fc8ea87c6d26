"""Benchmarks of gpk_array's kernels against CuPy on the GPU.

    python -m benchmarks.kernels_bench [elementwise|reduction|elementwise_tune|reduction_tune ...]

``run(kind)`` measures ours and CuPy's version of the same operation on 2^20, 2^24 and 2^28 elements
(float32, float16, bfloat16), prints a table (GB/s counting bytes read + written, ours / CuPy) and
returns one dict per row. Times come from CUDA events around a batch of back-to-back calls (so
small sizes include the host's launch overhead, for both libraries alike): a few warm-up batches,
then the median of ``reps`` (>= 20) batches. Every row also checks that both results agree.

The ``*_tune`` kinds sweep the launch and build settings (elementwise: threads per block, grid cap, unroll,
launch bounds, streaming hints; reduction: unroll, waves, how split results finish) of the float32/float16 case at
the largest size, and return the same kind of rows (with a ``config`` field), for choosing defaults on a new GPU
(scripts/gpu_tune_red.py sweeps the reduction candidates further).
"""

from __future__ import annotations

import statistics
import sys

import numpy as np

KINDS = ("elementwise", "reduction", "elementwise_tune", "reduction_tune")
SIZES = (20, 24, 28)
DTYPES = ("float32", "float16", "bfloat16")


def _require_gpu():
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        raise RuntimeError(f"kernels_bench: needs a CUDA GPU and CuPy ({type(e).__name__}: {e})") from e
    if n < 1:
        raise RuntimeError("kernels_bench: needs a CUDA GPU; none is visible")
    return cupy


def _dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _time_per_call(cupy, fn, reps, warmup, target_s=2e-3):
    """Median GPU seconds per call, over batches of back-to-back calls."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    fn()
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = max(cupy.cuda.get_elapsed_time(start, end) * 1e-3, 1e-7)
    batch = int(min(1000, max(1, target_s // one)))
    for _ in range(warmup):
        for _ in range(batch):
            fn()
    cupy.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3 / batch)
    return statistics.median(times)


def _close(cupy, a, b, dtype):
    a = cupy.asnumpy(a).astype(np.float64)
    b = cupy.asnumpy(b).astype(np.float64)
    tol = {"float16": 1e-2, "bfloat16": 5e-2}.get(np.dtype(dtype).name, 1e-4)
    return bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True))


def _row(kind, op, dtype, shape, nbytes, t_ours, t_cupy, ok, **extra):
    n = int(np.prod(shape))
    r = {"kind": kind, "op": op, "dtype": np.dtype(dtype).name, "n": n, "shape": list(shape),
         "bytes": int(nbytes), "ours_us": t_ours * 1e6, "cupy_us": (t_cupy * 1e6) if t_cupy else None,
         "ours_gbs": nbytes / t_ours / 1e9,
         "cupy_gbs": (nbytes / t_cupy / 1e9) if t_cupy else None,
         "ratio": (t_cupy / t_ours) if t_cupy else None, "ok": ok}
    r.update(extra)
    return r


def _print(rows, title):
    print(f"\n{title}")
    hdr = f"{'op':<18}{'dtype':<10}{'shape':<18}{'ours GB/s':>11}{'cupy GB/s':>11}{'ours/cupy':>10}  ok  extra"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        if "error" in r:
            print(f"{r['op']:<18}{r['dtype']:<10}{str(tuple(r['shape'])):<18}  ERROR {r['error']}")
            continue
        cg = f"{r['cupy_gbs']:11.1f}" if r["cupy_gbs"] is not None else f"{'-':>11}"
        ra = f"{r['ratio']:10.2f}" if r["ratio"] is not None else f"{'-':>10}"
        extra = " ".join(f"{k}={r[k]}" for k in ("config",) if k in r)
        ok = "-" if r["ok"] is None else ("y" if r["ok"] else "N")
        print(f"{r['op']:<18}{r['dtype']:<10}{str(tuple(r['shape'])):<18}{r['ours_gbs']:11.1f}{cg}{ra}"
              f"  {ok:>2}  {extra}")
    sys.stdout.flush()


def _rand(cupy, shape, dtype, lo=-2.0, hi=2.0):
    x = cupy.random.uniform(lo, hi, size=shape, dtype=cupy.float32)
    if np.dtype(dtype) == np.float32:
        return x
    try:
        return x.astype(dtype)
    except Exception:  # noqa: BLE001 - a CuPy without this cast: go through the host
        return cupy.asarray(cupy.asnumpy(x).astype(dtype))


def _measure(cupy, kind, op, dt, shape, nbytes, ours, theirs, check, reps, warmup):
    """One table row; errors become rows too, so one failure does not end the run."""
    try:
        r_ours = ours()
        cupy.cuda.get_current_stream().synchronize()
    except Exception as e:  # noqa: BLE001
        return {"kind": kind, "op": op, "dtype": np.dtype(dt).name, "n": int(np.prod(shape)),
                "shape": list(shape), "error": f"{type(e).__name__}: {e}"}
    ok, t_cupy = None, None
    try:
        r_cupy = theirs()
        ok = check(r_ours, r_cupy)
        t_cupy = _time_per_call(cupy, theirs, reps, warmup)
    except Exception:  # noqa: BLE001 - CuPy may lack the dtype
        pass
    t_ours = _time_per_call(cupy, ours, reps, warmup)
    return _row(kind, op, dt, shape, nbytes, t_ours, t_cupy, ok)


def _elementwise_size(cupy, ew, dt, p, reps, warmup):
    n = 1 << p
    isz = dt.itemsize
    a = _rand(cupy, (n,), dt)
    b = _rand(cupy, (n,), dt)
    out = cupy.empty_like(a)
    s = cupy.asarray(np.asarray(1.5, dtype=dt))
    a2, bias, out2 = a.reshape(n // 1024, 1024), b[:1024], out.reshape(n // 1024, 1024)
    col = b[: n // 1024].reshape(n // 1024, 1)  # one value per row: x - mean(x, axis=-1, keepdims=True)
    cases = [
        ("add", lambda: ew.binary("add", a, b, out=out), lambda: cupy.add(a, b, out=out), 3 * n * isz),
        ("multiply(x,s)", lambda: ew.binary("multiply", a, s, out=out),
         lambda: cupy.multiply(a, s, out=out), 2 * n * isz),
        ("exp", lambda: ew.unary("exp", a, out=out), lambda: cupy.exp(a, out=out), 2 * n * isz),
        ("add(bias bcast)", lambda: ew.binary("add", a2, bias, out=out2),
         lambda: cupy.add(a2, bias, out=out2), 2 * n * isz),
        ("sub(column bcast)", lambda: ew.binary("subtract", a2, col, out=out2),
         lambda: cupy.subtract(a2, col, out=out2), 2 * n * isz),
    ]
    rows = []
    for op, ours, theirs, nbytes in cases:
        def check(_ro, _rc, ours=ours, theirs=theirs):
            ours()
            mine = out.copy()
            theirs()
            return _close(cupy, mine, out, dt)
        rows.append(_measure(cupy, "elementwise", op, dt, (n,), nbytes, ours, theirs, check, reps, warmup))
    # the namespace's own call (result allocated, as a user writes it): gpk_array/_gpu.py routes large arrays here
    import gpk_array as gp
    try:
        ga, gb = gp.from_dlpack(a), gp.from_dlpack(b)
    except Exception:  # noqa: BLE001 - arrays DLPack cannot carry (an emulated bfloat16)
        return rows
    rows.append(_measure(cupy, "elementwise", "gpk_array.add", dt, (n,), 3 * n * isz, lambda: gp.add(ga, gb)._data,
                         lambda: cupy.add(a, b), lambda ro, rc: _close(cupy, ro, rc, dt), reps, warmup))
    return rows


def _elementwise(cupy, sizes, dtypes, reps, warmup):
    from gpk_array._kernels import elementwise as ew
    rows = []
    for dname in dtypes:
        for p in sizes:
            rows += _elementwise_size(cupy, ew, _dtype(dname), p, reps, warmup)
            cupy.get_default_memory_pool().free_all_blocks()
    _print(rows, "elementwise: ours vs CuPy (bytes read + written)")
    return rows


def _reduction_size(cupy, red, dt, p, reps, warmup):
    n = 1 << p
    isz = dt.itemsize
    x = _rand(cupy, (n,), dt)
    cases = [("sum", x, None), ("max", x, None), ("mean", x, None),
             ("sum(rows)", x.reshape(n // 1024, 1024), 1), ("sum(cols)", x.reshape(1024, n // 1024), 0)]
    if p <= 24:
        cases += [("var", x, None), ("argmax", x, None)]
    cfns = {"sum": cupy.sum, "max": cupy.max, "mean": cupy.mean, "var": cupy.var, "argmax": cupy.argmax}
    rows = []
    for op, arr, axis in cases:
        base = op.split("(")[0]

        def ours(arr=arr, axis=axis, base=base):
            return red.reduce(base, arr, axis)

        def theirs(arr=arr, axis=axis, cfn=cfns[base]):
            return cfn(arr, axis=axis)

        def check(ro, rc, arr=arr, base=base, axis=axis):
            if base == "argmax":
                flat = arr.reshape(-1)
                return bool(flat[int(ro)] == flat[int(rc)])
            # against float64, not CuPy's result: CuPy's float16 var overflows, and its float16 row sums were
            # further from ours than the tolerance in session 8's run
            return _close(cupy, ro, cfns[base](arr.astype(cupy.float64), axis=axis), dt)
        rows.append(_measure(cupy, "reduction", op, dt, arr.shape, arr.size * isz, ours, theirs, check,
                             reps, warmup))
    import gpk_array as gp
    try:
        gx = gp.from_dlpack(x)
    except Exception:  # noqa: BLE001
        return rows
    rows.append(_measure(cupy, "reduction", "gpk_array.sum", dt, x.shape, n * isz, lambda: gp.sum(gx)._data,
                         lambda: cupy.sum(x), lambda ro, rc: _close(cupy, ro, rc, dt), reps, warmup))
    if isz == 2:  # against the float32 round trip the namespace made before (and an accuracy-minded user writes)
        rows.append(_measure(cupy, "reduction", "gpk_array.sum/f32", dt, x.shape, n * isz,
                             lambda: gp.sum(gx)._data, lambda: x.astype(cupy.float32).sum().astype(dt),
                             lambda ro, rc: _close(cupy, ro, rc, dt), reps, warmup))
    return rows


def _reduction(cupy, sizes, dtypes, reps, warmup):
    from gpk_array._kernels import reduction as red
    rows = []
    for dname in dtypes:
        for p in sizes:
            rows += _reduction_size(cupy, red, _dtype(dname), p, reps, warmup)
            cupy.get_default_memory_pool().free_all_blocks()
    _print(rows, "reduction: ours vs CuPy (bytes read)")
    return rows


def _elementwise_tune(cupy, reps, warmup, p=28):
    """Stage 1: launch shapes (threads, grid cap, waves) of the default build. Stage 2: build
    variants (unroll, launch bounds, cache hints) at stage 1's best launch shape. waves 0: one block per tile."""
    from gpk_array._kernels import elementwise as ew
    saved = dict(ew.CONFIG)
    rows = []

    def measure(dt, a, b, out, t_cupy, **cfg):
        ew.CONFIG.clear()
        ew.CONFIG.update(saved)
        ew.CONFIG.update(cfg)
        try:
            t = _time_per_call(cupy, lambda: ew.binary("add", a, b, out=out), reps, warmup)
        except Exception as e:  # noqa: BLE001 - e.g. too many registers for 1024 threads
            print(f"  skipped {cfg}: {type(e).__name__}: {e}")
            return None
        row = _row("elementwise_tune", "add", dt, (a.size,), 3 * a.size * dt.itemsize, t, t_cupy, True,
                   config=",".join(f"{k}={v}" for k, v in cfg.items()))
        rows.append(row)
        return row

    try:
        for dname in ("float32", "float16"):
            dt = _dtype(dname)
            n = 1 << p
            a, b = _rand(cupy, (n,), dt), _rand(cupy, (n,), dt)
            out = cupy.empty_like(a)
            t_cupy = _time_per_call(cupy, lambda: cupy.add(a, b, out=out), reps, warmup)
            stage1 = []
            for threads in (128, 256, 512, 1024):
                for per_sm in (None, 1 << 20):
                    for waves in ((0, 1, 2, 4) if per_sm is None else (1,)):
                        r = measure(dt, a, b, out, t_cupy, threads=threads, blocks_per_sm=per_sm, waves=waves)
                        if r:
                            stage1.append((r["ours_gbs"], dict(threads=threads, blocks_per_sm=per_sm,
                                                               waves=waves)))
            best = max(stage1, key=lambda x: x[0])[1] if stage1 else {}
            for build in (dict(unroll=2), dict(unroll=8), dict(min_blocks=0), dict(min_blocks=2),
                          dict(load=2, store=1), dict(load=3), dict(store=2), dict(unroll=8, min_blocks=0)):
                measure(dt, a, b, out, t_cupy, **best, **build)
            a = b = out = None
            cupy.get_default_memory_pool().free_all_blocks()
    finally:
        ew.CONFIG.clear()
        ew.CONFIG.update(saved)
    rows.sort(key=lambda r: (r["dtype"], -r["ours_gbs"]))
    _print(rows, "elementwise tuning: float add, 2^%d elements (best first)" % p)
    return rows


def _reduction_tune(cupy, reps, warmup, p=28):
    from gpk_array._kernels import reduction as red
    saved = dict(red.CONFIG)
    rows = []
    try:
        for dname in ("float32", "float16"):
            dt = _dtype(dname)
            n = 1 << p
            x = _rand(cupy, (n,), dt)
            t_cupy = _time_per_call(cupy, lambda: cupy.sum(x), reps, warmup)
            for unroll in (4, 8):
                for waves in (1, 4):
                    for fin in ("last", "kernel"):
                        red.CONFIG.clear()
                        red.CONFIG.update(saved)
                        red.CONFIG.update(unroll=unroll, waves=waves, fin=fin)
                        try:
                            t = _time_per_call(cupy, lambda: red.reduce("sum", x), reps, warmup)
                        except Exception as e:  # noqa: BLE001
                            print(f"  skipped unroll={unroll} waves={waves} fin={fin}: {type(e).__name__}: {e}")
                            continue
                        rows.append(_row("reduction_tune", "sum", dt, (n,), n * dt.itemsize, t, t_cupy, True,
                                         config=f"unroll={unroll},waves={waves},fin={fin}"))
            x = None
            cupy.get_default_memory_pool().free_all_blocks()
    finally:
        red.CONFIG.clear()
        red.CONFIG.update(saved)
    rows.sort(key=lambda r: (r["dtype"], -r["ours_gbs"]))
    _print(rows, "reduction tuning: full sum, 2^%d elements (best first)" % p)
    return rows


def run(kind: str, *, sizes=SIZES, dtypes=DTYPES, reps: int = 25, warmup: int = 3) -> list[dict]:
    """Run one benchmark kind on the GPU; returns the table's rows as dicts."""
    if kind not in KINDS:
        raise ValueError(f"kernels_bench: unknown kind {kind!r}; one of {KINDS}")
    reps = max(20, int(reps))
    cupy = _require_gpu()
    if kind == "elementwise":
        return _elementwise(cupy, sizes, dtypes, reps, warmup)
    if kind == "reduction":
        return _reduction(cupy, sizes, dtypes, reps, warmup)
    if kind == "elementwise_tune":
        return _elementwise_tune(cupy, reps, warmup, p=max(sizes))
    return _reduction_tune(cupy, reps, warmup, p=max(sizes))


def main(argv=None) -> int:
    import json
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    kinds = [a for a in argv if not a.startswith("--")] or ["elementwise", "reduction"]
    rows = []
    for k in kinds:
        rows += run(k)
    if as_json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
