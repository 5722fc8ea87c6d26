"""Host time per call of small ops: gpk_array against the backend it wraps (NumPy on the CPU, CuPy on the GPU),
on the same data. Issue 2's goals: at most 1.5x NumPy and 1.1x CuPy."""
import time

import numpy as np


def _per_call(fn, sync, n=2000, warmup=50, repeats=5):
    """Seconds per call (host and GPU): the best of ``repeats`` loops of ``n`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def _unchecked(a, idx):
    """a[idx] with the CUDA index bounds check off (GPK_INDEX_CHECK=0): the check's cost is this row's difference
    from the a[idx] row."""
    from gpk_array._ops import indexing
    indexing.INDEX_CHECK = False
    try:
        return a[idx]
    finally:
        indexing.INDEX_CHECK = True


def run(device=None):
    import gpk_array as xp
    devs = [xp.Device(device)] if device else xp.__array_namespace_info__().devices()
    rows = []
    for dev in devs:
        if dev.kind == "cuda":
            import cupy as base
            sync = base.cuda.get_current_stream().synchronize
            base_name = "cupy"
        else:
            base = np
            sync = lambda: None  # noqa: E731
            base_name = "numpy"
        a = xp.asarray(np.arange(1000, dtype=np.float32), device=dev)
        b = xp.asarray(np.ones(1000, dtype=np.float32), device=dev)
        ra, rb = a._data, b._data
        idx = xp.asarray(np.arange(0, 1000, 7), device=dev)
        ridx = idx._data
        ha = xp.astype(xp.reshape(a[:576], (24, 24)), xp.float16)
        hb = xp.astype(xp.reshape(b[:576], (24, 24)), xp.float16)
        rha, rhb = ha._data, hb._data
        cases = [
            ("matmul f16 24^2", lambda: ha @ hb, lambda: base.matmul(rha, rhb)),
            ("add", lambda: xp.add(a, b), lambda: base.add(ra, rb)),
            ("a + b", lambda: a + b, lambda: ra + rb),
            ("a * 2.0", lambda: a * 2.0, lambda: ra * 2.0),
            ("exp", lambda: xp.exp(a), lambda: base.exp(ra)),
            ("sum", lambda: xp.sum(a), lambda: base.sum(ra)),
            ("max(axis=0)", lambda: xp.max(a, axis=0), lambda: base.max(ra, axis=0)),
            ("a[idx]", lambda: a[idx], lambda: ra[ridx]),
            ("a[idx] unchecked", lambda: _unchecked(a, idx), lambda: ra[ridx]),
            ("a[10:20]", lambda: a[10:20], lambda: ra[10:20]),
        ]
        for name, ours, theirs in cases:
            t_ours = _per_call(ours, sync)
            t_base = _per_call(theirs, sync)
            rows.append({"device": str(dev), "op": name, "gpk_us": t_ours * 1e6, "baseline_us": t_base * 1e6,
                         "baseline": base_name, "ratio": t_ours / t_base})
    print(f"{'device':8} {'op':14} {'gpk_array us':>13} {'baseline us':>12} {'baseline':>9} {'ratio':>6}")
    for r in rows:
        print(f"{r['device']:8} {r['op']:14} {r['gpk_us']:13.2f} {r['baseline_us']:12.2f} {r['baseline']:>9} "
              f"{r['ratio']:6.2f}")
    return rows
