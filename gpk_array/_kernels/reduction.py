"""Reductions on CuPy arrays: sum, prod, max, min, mean, var, std, argmax, argmin.

``reduce(op, x, axis=None, keepdims=False, ddof=0)`` returns a ``cupy.ndarray``. The input is viewed
as (outer, K, inner) with the reduced axes as the contiguous middle block: a C-contiguous array
whose reduced axes are adjacent (after dropping extent-1 axes) is used as it is, an F-contiguous one
through its transpose; otherwise the reduced axes are moved last and the array is copied to C order
first. inner == 1 takes the row kernel (vector loads along the row; long rows are split across
blocks), anything else the column kernel (coalesced across the inner axis; long K is split). Split
partial results go through a second, deterministic kernel; no atomics.

Result dtypes follow NumPy: sum/prod of signed ints and bool give int64, of unsigned ints uint64,
of floats the same float (float16/bfloat16 accumulate in float32, float32 in float32, float64 in
float64); max/min keep the dtype; mean/var/std exist for floats only; argmax/argmin give int64 and
take axis=None or one axis. Unsupported (op, dtype) raises NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from . import loader
from ._common import ALL, BOOL, FLOATS, INTS, dtype_code

REDUCE_FILE = "reduce.cu"

# op -> (module group, dtype codes)
REDUCE_OPS: dict[str, tuple[str, tuple]] = {
    "sum": ("basic", ALL),
    "max": ("basic", ALL),
    "min": ("basic", ALL),
    "prod": ("basic", FLOATS + INTS),
    "mean": ("basic", FLOATS),
    "argmax": ("stat", ALL),
    "argmin": ("stat", ALL),
    "var": ("stat", FLOATS),
    "std": ("stat", FLOATS),
}
ALIASES = {"amax": "max", "amin": "min", "any": "max", "all": "min"}

# Partial results are stored in 16-byte slots (the largest accumulator: value + int64 index).
_ACC_SLOT = 16
# The column and final kernels keep one accumulator per thread in __shared__ A sm[256].
_COL_MAX_THREADS = 256

CONFIG = {
    "threads": 256,
    "blocks_per_sm": None,     # resident blocks per SM assumed when sizing grids; None: occupancy
    "row_min_k": 32,           # rows shorter than this go to the column kernel (thread per row)
    "warp_max_k": 2048,        # rows up to this length: one warp per row
    "warp_rows_max_k": 65536,  # ... and up to this length when there are >= 16 rows per SM
    "block_min_seg": 4096,     # a split row segment holds at least this many elements
    "col_min_iters": 8,        # a split column chunk gives each thread at least this many loads
    "unroll": 4,               # GPK_RED_UNROLL; other values build separate modules
}


def module_options(dt: str, group: str) -> tuple:
    opts = ("-DGPK_SELECT", f"-DGPK_DT_{dt}", f"-DGPK_GROUP_{group}")
    if CONFIG["unroll"] != 4:
        opts += (f"-DGPK_RED_UNROLL={int(CONFIG['unroll'])}",)
    return opts


def variants() -> list[tuple[str, tuple]]:
    out = set()
    for group, dts in REDUCE_OPS.values():
        for dt in dts:
            out.add((REDUCE_FILE, module_options(dt, group)))
    return sorted(out)


def expected_by_module() -> dict[tuple[str, tuple], set[str]]:
    """(cu_file, options) -> the kernel names this front end requests from that module."""
    mods: dict = {}
    for op, (group, dts) in REDUCE_OPS.items():
        for dt in dts:
            names = mods.setdefault((REDUCE_FILE, module_options(dt, group)), set())
            for kind in ("row", "col", "fin"):
                names.add(f"gpk_red_{op}_{dt}_{kind}")
    return mods


def expected_kernels() -> dict[str, set[str]]:
    names: set = set()
    for s in expected_by_module().values():
        names |= s
    return {REDUCE_FILE: names}


def _resolve(op: str, dt: str):
    if op in ("any", "all") and dt not in BOOL:
        return None
    op = ALIASES.get(op, op)
    spec = REDUCE_OPS.get(op)
    if spec is None or dt not in spec[1]:
        return None
    return op


def supports(op: str, dtype) -> bool:
    dt = dtype_code(dtype)
    return dt is not None and _resolve(op, dt) is not None


def result_dtype(op: str, dtype) -> np.dtype:
    dt = dtype_code(dtype)
    op = ALIASES.get(op, op)
    if op in ("argmax", "argmin"):
        return np.dtype(np.int64)
    if op in ("sum", "prod") and dt not in FLOATS:
        return np.dtype(np.uint64) if dt.startswith("u") else np.dtype(np.int64)
    return np.dtype(dtype)


def _normalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    out = []
    for a in axis:
        a = int(a)
        if a < -ndim or a >= ndim:
            raise np.exceptions.AxisError(a, ndim)
        a %= ndim
        if a in out:
            raise ValueError("gpk_array kernels: duplicate value in 'axis'")
        out.append(a)
    return tuple(sorted(out))


def plan_layout(shape, axes, c_contiguous: bool, f_contiguous: bool):
    """How to view the input as (outer, K, inner). Pure function (CPU-testable).

    Returns (how, outer, K, inner, perm): how is "c" (use as is), "f" (use the transpose: a C-order
    view with axes reversed), or "copy" (``ascontiguousarray(x.transpose(perm))``, reduced axes
    last, then inner == 1)."""
    ndim = len(shape)
    red = set(axes)
    nout = 1
    for i in range(ndim):
        if i not in red:
            nout *= shape[i]
    K = 1
    for i in red:
        K *= shape[i]

    def run(order):
        # order: axes in memory order, outermost first
        kept = [i for i in order if shape[i] != 1]
        flags = [i in red for i in kept]
        if True not in flags:          # only extent-1 axes are reduced: K == 1
            return nout, 1, 1
        first = flags.index(True)
        last = len(flags) - 1 - flags[::-1].index(True)
        if not all(flags[first:last + 1]):
            return None
        outer = 1
        for i in kept[:first]:
            outer *= shape[i]
        inner = 1
        for i in kept[last + 1:]:
            inner *= shape[i]
        return outer, K, inner

    if c_contiguous:
        r = run(list(range(ndim)))
        if r is not None:
            return ("c",) + tuple(r) + (None,)
    if f_contiguous:
        r = run(list(range(ndim - 1, -1, -1)))
        if r is not None:
            return ("f",) + tuple(r) + (None,)
    perm = tuple(i for i in range(ndim) if i not in red) + tuple(sorted(red))
    return ("copy", nout, K, 1, perm)


def _pow2ceil(v: int) -> int:
    return 1 if v <= 1 else 1 << (int(v) - 1).bit_length()


def pick_splits(units: int, target: int, max_splits: int) -> int:
    """How many pieces to cut each of ``units`` equal work items into, for ``target`` resident
    blocks: the time is about ceil(units * s / target) / s (waves, each 1/s as long); take the
    smallest s that reaches the best, and never more than ``max_splits``."""
    units, target, max_splits = max(1, int(units)), max(1, int(target)), max(1, int(max_splits))
    if units >= 8 * target or max_splits == 1:
        return 1
    hi = min(max_splits, 4 * target // units + 1)
    costs = [(-(-units * s // target)) / s for s in range(1, hi + 1)]
    best = min(costs)
    for s, c in enumerate(costs, 1):
        if c <= best * (1 + 1e-9):
            return s
    return 1


def kernel_shape(outer: int, K: int, inner: int, sms: int = 132, cfg=None) -> dict:
    """Which kernel (row or col) and its block shape. Pure function.

    Rows: one warp per row when rows are short, or when there are so many rows that warps alone
    fill the GPU in one wave; otherwise a block per row segment (long rows are split)."""
    cfg = cfg or CONFIG
    threads = cfg["threads"]
    nout = outer * inner
    if inner == 1 and K >= cfg["row_min_k"]:
        warp = K <= cfg["warp_max_k"] or (outer >= sms * 16 and K <= cfg["warp_rows_max_k"])
        return {"kind": "row", "warp_mode": 1 if warp else 0, "block": (threads,)}
    # column kernel: TX consecutive outputs x TY slices of K (TY a power of two)
    threads = min(threads, _COL_MAX_THREADS)
    tx = 32 if nout >= 32 else _pow2ceil(nout)
    ty = min(threads // tx, _pow2ceil(K))
    tx = min(threads // ty, max(tx, min(_pow2ceil(nout), threads)))
    return {"kind": "col", "block": (tx, ty)}


def plan_launch(outer: int, K: int, inner: int, sms: int, blocks_per_sm: int = 8, cfg=None) -> dict:
    """Kernel choice and launch shape for an (outer, K, inner) reduction; ``blocks_per_sm`` is the
    kernel's occupancy at its block size. Pure function."""
    cfg = cfg or CONFIG
    shape = kernel_shape(outer, K, inner, sms, cfg)
    target = sms * max(1, int(cfg["blocks_per_sm"] or blocks_per_sm))
    nout = outer * inner
    if shape["kind"] == "row":
        threads = shape["block"][0]
        if shape["warp_mode"]:
            warps = threads // 32
            return dict(shape, splits=1, seg_len=K, grid=(max(1, min(-(-outer // warps), target)),))
        splits = pick_splits(outer, target, K // cfg["block_min_seg"])
        seg_len = -(-K // splits)
        seg_len = -(-seg_len // 16) * 16
        splits = -(-K // seg_len)
        return dict(shape, splits=splits, seg_len=seg_len, grid=(max(1, min(outer * splits, target)),))
    tx, ty = shape["block"]
    ntiles = -(-nout // tx)
    splits = pick_splits(ntiles, target, K // (ty * cfg["col_min_iters"]))
    kchunk = -(-K // splits)
    splits = -(-K // kchunk)
    return dict(shape, splits=splits, kchunk=kchunk, grid=(max(1, min(ntiles * splits, target)),))


def plan_fin(nout: int, splits: int, sms: int, cfg=None) -> dict:
    cfg = cfg or CONFIG
    threads = min(cfg["threads"], _COL_MAX_THREADS)
    tx = 32 if nout >= 32 else _pow2ceil(nout)
    ty = min(threads // tx, _pow2ceil(splits))
    ntiles = -(-nout // tx)
    return {"grid": (max(1, min(ntiles, sms * 16)),), "block": (tx, ty)}


def _empty_result(op, out_shape, rdt):
    import cupy
    if op == "any":
        return cupy.zeros(out_shape, dtype=np.bool_)
    if op == "all":
        return cupy.ones(out_shape, dtype=np.bool_)
    if op == "sum":
        return cupy.zeros(out_shape, dtype=rdt)
    if op == "prod":
        return cupy.ones(out_shape, dtype=rdt)
    if op in ("mean", "var", "std"):
        return cupy.full(out_shape, np.nan, dtype=rdt)
    raise ValueError(f"zero-size array to reduction operation {op} which has no identity")


def reduce(op: str, x, axis=None, keepdims: bool = False, ddof=0):
    """Reduce cupy array ``x`` with ``op`` over ``axis`` (None, an int, or a tuple of ints)."""
    import cupy
    if not isinstance(x, cupy.ndarray):
        raise TypeError("gpk_array kernels: reduce() takes a cupy.ndarray")
    dt = dtype_code(x.dtype)
    kop = _resolve(op, dt) if dt is not None else None
    if kop is None:
        raise NotImplementedError(f"gpk_array kernels: no {op} reduction for dtype {x.dtype}")
    if kop in ("argmax", "argmin") and axis is not None and not isinstance(axis, (int, np.integer)):
        if len(tuple(axis)) != 1:
            raise NotImplementedError("gpk_array kernels: argmax/argmin take one axis or None")
        axis = tuple(axis)[0]
    axes = _normalize_axes(axis, x.ndim)
    dev = x.data.device_id
    if dev != loader.current_device_id():
        with cupy.cuda.Device(dev):
            return reduce(op, x, axis, keepdims, ddof)
    shape = tuple(x.shape)
    out_shape_keep = tuple(1 if i in axes else s for i, s in enumerate(shape))
    out_shape = out_shape_keep if keepdims else tuple(s for i, s in enumerate(shape) if i not in axes)
    rdt = result_dtype(kop, x.dtype)
    if op in ("any", "all"):
        rdt = np.dtype(np.bool_)
    nout = 1
    for s in out_shape:
        nout *= s
    K = 1
    for i in axes:
        K *= shape[i]
    if nout == 0:
        return cupy.empty(out_shape, dtype=rdt)
    if K == 0:
        return _empty_result(op if op in ("any", "all") else kop, out_shape, rdt)

    if kop in ("argmax", "argmin") and len(axes) > 1 and x.ndim > 1:
        # flat index in C order over the whole array
        x = cupy.ascontiguousarray(x)
        how, outer, K, inner, perm = "c", 1, x.size, 1, None
    else:
        how, outer, K, inner, perm = plan_layout(shape, axes, bool(x.flags.c_contiguous),
                                                 bool(x.flags.f_contiguous))
    if how == "f":
        x = x.T
    elif how == "copy":
        x = cupy.ascontiguousarray(x.transpose(perm))
    group = REDUCE_OPS[kop][0]
    opts = module_options(dt, group)
    out = cupy.empty(nout, dtype=rdt)
    center = None
    if kop in ("var", "std"):
        center = cupy.empty(nout, dtype=x.dtype)
        _run("mean", dt, module_options(dt, "basic"), x, outer, K, inner, center, None, 0.0)
    _run(kop, dt, opts, x, outer, K, inner, out, center, float(ddof))
    if how == "f":
        # the kernel wrote the outputs in the C order of the transposed (reversed) axes
        kept = tuple(s for i, s in enumerate(shape) if i not in axes)
        res = cupy.ascontiguousarray(out.reshape(kept[::-1]).T)
        return res.reshape(out_shape)
    return out.reshape(out_shape)


_plans: dict = {}  # (kop, dt, opts, outer, K, inner, device) -> (kernel, launch plan): pick_splits is a search


def _plan(kop, dt, opts, outer, K, inner):
    dev = loader.current_device_id()
    key = (kop, dt, opts, outer, K, inner, dev)
    hit = _plans.get(key)
    if hit is None:
        sms = loader.sm_count()
        shape = kernel_shape(outer, K, inner, sms)
        fn = loader.get_function(REDUCE_FILE, f"gpk_red_{kop}_{dt}_{shape['kind']}", opts)
        threads = 1
        for b in shape["block"]:
            threads *= b
        if len(_plans) > 4096:
            _plans.clear()
        hit = _plans[key] = (fn, plan_launch(outer, K, inner, sms, loader.occupancy(fn, threads)))
    return hit


def _run(kop, dt, opts, x, outer, K, inner, out, center, ddof):
    import cupy
    nout = outer * inner
    fn, p = _plan(kop, dt, opts, outer, K, inner)
    kind = p["kind"]
    splits = p["splits"]
    partial = cupy.empty(splits * nout * _ACC_SLOT, dtype=np.uint8) if splits > 1 else None
    n = np.float64(K)
    ddof = np.float64(ddof)
    if kind == "row":
        loader.launch(fn, p["grid"], p["block"],
                      (x, np.int64(outer), np.int64(K), np.int64(splits), np.int64(p["seg_len"]),
                       np.int32(p["warp_mode"]), partial, out, center, n, ddof))
    else:
        loader.launch(fn, p["grid"], p["block"],
                      (x, np.int64(outer), np.int64(K), np.int64(inner), np.int64(splits),
                       np.int64(p["kchunk"]), partial, out, center, n, ddof))
    if splits > 1:
        f = plan_fin(nout, splits, loader.sm_count())
        fin = loader.get_function(REDUCE_FILE, f"gpk_red_{kop}_{dt}_fin", opts)
        loader.launch(fin, f["grid"], f["block"], (partial, np.int64(nout), np.int64(splits), out, n, ddof))
