"""Reductions on CuPy arrays: sum, prod, max, min, mean, var, std, argmax, argmin.

``reduce(op, x, axis=None, keepdims=False, ddof=0)`` returns a ``cupy.ndarray``. The input is viewed
as (outer, K, inner) with the reduced axes as the contiguous middle block: a C-contiguous array
whose reduced axes are adjacent (after dropping extent-1 axes) is used as it is, an F-contiguous one
through its transpose; otherwise the reduced axes are moved last and the array is copied to C order
first. inner == 1 takes the row kernel (16-byte loads along the row; long rows are split across
blocks), anything else a column kernel (coalesced across the inner axis, 16-byte loads of adjacent
outputs where the layout allows; long K is split). Split partial results are combined by the last
block of each row (column tile) to finish, in the same launch (atomic counters only count finished
blocks), or, while a CUDA graph is being captured and with CONFIG["fin"] = "kernel", by a second
kernel. Every combination order is fixed by the launch configuration: results are deterministic.

Result dtypes follow NumPy: sum/prod of signed ints and bool give int64, of unsigned ints uint64,
of floats the same float (float16/bfloat16 accumulate in float32, float32 in float32, float64 in
float64); max/min keep the dtype; mean/var/std exist for floats only; argmax/argmin give int64 and
take axis=None or one axis. Unsupported (op, dtype) raises NotImplementedError.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from .. import _config
from . import loader
from ._common import ALL, BOOL, FLOATS, INTS, ITEMSIZE, VersionedDict, dtype_code

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

# Chosen from scripts/gpu_tune_red.py on the H200 (benchmarks/results/h200_2026-11-30_s6_red_tune_4056f26.*): float32
# at 2^28 elements, GB/s against CuPy's in the same run: full sum ~4.34-4.37 TB/s (1.00-1.01x), rows of 1024
# 4.49 TB/s (1.93x), columns 4.34 TB/s (1.85x); unroll 8 with .nc loads, a warp per row, 2 waves for full
# reductions, 64 threads across a column block.
CONFIG = VersionedDict({
    # build settings (each value other than reduce.cu's default builds its own modules)
    "threads": 256,            # GPK_RED_THREADS: threads per block of the row kernel
    "unroll": 8,               # GPK_RED_UNROLL: 16-byte loads in flight per thread, row kernel (H200: 8)
    "col_unroll": 8,           # GPK_RED_COL_UNROLL: scalar loads in flight per thread, column kernel
    "vcol_unroll": 4,          # GPK_RED_VCOL_UNROLL: 16-byte loads in flight per thread, vector column kernel
    "min_blocks": 3,           # GPK_RED_MIN_BLOCKS: __launch_bounds__(block, this): caps registers (0: none)
    "load": 1,                 # GPK_RED_LOAD: 0 plain, 1 .nc.L1::no_allocate, 2 .cs, 3 as 1 + .L2::256B (H200: 1)
    "async": 0,                # GPK_RED_ASYNC: > 1: the row kernel loads through a cp.async pipeline, this deep
    "gather": 4,               # GPK_RED_GATHER: partials in flight per thread when they are combined
    "half_unroll": 4,          # float16/bfloat16: the row kernel's unroll and load (None: as above); H200:
    "half_load": 0,            # unroll 8, .nc took float16 rows of 1024 from 0.97x to 0.64x CuPy's, full 1.07x->1.03x
    # launch settings
    "blocks_per_sm": None,     # resident blocks per SM assumed when sizing grids; None: occupancy
    "row_min_k": 32,           # rows shorter than this go to the column kernel (thread per row)
    "warp_max_k": 2048,        # rows up to this length: one warp per row
    "warp_rows_max_k": 65536,  # ... and up to this length when there are >= 16 rows per SM
    "block_min_seg": 4096,     # a split row segment holds at least this many elements
    "col_min_iters": 8,        # a split column chunk gives each thread at least this many loads
    "waves": 2,                # block-mode rows (full reductions): segments and grid for waves x resident blocks
    "warp_waves": 0,           # warp-mode rows: grid of at most waves x resident blocks (0: a warp per row)
    "half_warp_waves": 8,      # float16/bfloat16: warp_waves for them (None: as above). H200, 2^28 elements (s10):
                               # sums of rows of 1024 3.81 -> 4.14 TB/s, of 256 1.32 -> 1.57, max +12%, mean +10%,
                               # rows of 4096 and argmax within 1%; float32 rows lose 2% (warp_waves stays 0)
    "col_waves": 1,            # column kernels: grid of at most waves x resident blocks
    "col_vec": True,           # 16-byte loads of adjacent outputs in column reductions where aligned
    "col_tx": 64,              # threads across the outputs of a column block
    "fin": "last",             # split results: "last" block combines them, or a second "kernel"
})

# reduce.cu's defaults of the build settings, and their macros
_BUILD = {"threads": ("GPK_RED_THREADS", 256), "unroll": ("GPK_RED_UNROLL", 8),
          "col_unroll": ("GPK_RED_COL_UNROLL", 8), "vcol_unroll": ("GPK_RED_VCOL_UNROLL", 4),
          "min_blocks": ("GPK_RED_MIN_BLOCKS", 3), "load": ("GPK_RED_LOAD", 1), "async": ("GPK_RED_ASYNC", 0),
          "gather": ("GPK_RED_GATHER", 4)}


def _config_from_env(text: str) -> None:
    """GPK_RED_CONFIG="unroll=8,load=1,fin=kernel": CONFIG overrides (ints, None, True/False, words)."""
    _apply_settings(_config.parse_settings(text))


def _apply_settings(items) -> None:
    """CONFIG overrides from ``(key, value)`` pairs (gpk_array/_config.py's ``parse_settings``); ValueError for a
    key CONFIG does not have."""
    for key, val in items:
        if key not in CONFIG:
            raise ValueError(f"GPK_RED_CONFIG: unknown setting {key!r}")
        CONFIG[key] = val


_apply_settings(_config.get("GPK_RED_CONFIG"))


# setting -> its 16-bit override (build settings: unroll, load; launch settings: warp_waves)
_HALF_OVERRIDES = {"unroll": "half_unroll", "load": "half_load", "warp_waves": "half_warp_waves"}


def _dt_setting(cfg, dt: str | None, key: str) -> int:
    """Setting ``key`` for dtype code ``dt`` (a 16-bit override where one is set)."""
    over = _HALF_OVERRIDES.get(key) if dt in ("f16", "bf16") else None
    v = cfg[key] if over is None or cfg.get(over) is None else cfg[over]
    return int(v)


def module_options(dt: str, group: str, cfg=None) -> tuple:
    cfg = cfg or CONFIG
    opts = ("-DGPK_SELECT", f"-DGPK_DT_{dt}", f"-DGPK_GROUP_{group}")
    for key, (macro, default) in _BUILD.items():
        v = _dt_setting(cfg, dt, key)
        if v != default:
            opts += (f"-D{macro}={v}",)
    return opts


def col_vec_width(itemsize: int) -> int:
    """Adjacent outputs per thread of the vector column kernel (gpk::col_vec in reduce.cu)."""
    return min(16 // itemsize, 8)


def stage_bytes(threads: int, dt: str, cfg=None) -> int:
    """Dynamic shared memory of the row kernel: the cp.async stages (0 without them)."""
    cfg = cfg or CONFIG
    stages = int(cfg["async"])
    if stages <= 1:
        return 0
    unroll = _dt_setting(cfg, dt, "unroll")
    if ITEMSIZE[dt] == 1:
        unroll = (unroll + 1) // 2
    return stages * unroll * threads * 16


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
            for kind in ("row", "col", "colv", "fin"):
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


def kernel_shape(outer: int, K: int, inner: int, sms: int = 132, cfg=None, vec: int = 1) -> dict:
    """Which kernel (row, col or colv) and its block shape. Pure function.

    Rows: one warp per row when rows are short, or when there are so many rows that warps alone
    fill the GPU in one wave; otherwise a block per row segment (long rows are split). Columns:
    ``vec`` > 1 (inner % vec == 0 and an aligned input) takes the vector column kernel, a thread per
    ``vec`` adjacent outputs."""
    cfg = cfg or CONFIG
    threads = cfg["threads"]
    nout = outer * inner
    if inner == 1 and K >= cfg["row_min_k"]:
        warp = K <= cfg["warp_max_k"] or (outer >= sms * 16 and K <= cfg["warp_rows_max_k"])
        return {"kind": "row", "warp_mode": 1 if warp else 0, "block": (threads,)}
    # column kernels: TX consecutive outputs (vectors of outputs) x TY slices of K (TY a power of two)
    threads = min(threads, _COL_MAX_THREADS)
    units = nout // vec
    cap = min(int(cfg["col_tx"]), threads) if vec > 1 else 32
    tx = cap if units >= cap else _pow2ceil(units)
    ty = min(threads // tx, _pow2ceil(K))
    tx = min(threads // ty, max(tx, min(_pow2ceil(units), threads)))
    return {"kind": "colv" if vec > 1 else "col", "block": (tx, ty), "vec": vec}


def plan_launch(outer: int, K: int, inner: int, sms: int, blocks_per_sm: int = 8, cfg=None, vec: int = 1,
                dt: str | None = None) -> dict:
    """Kernel choice and launch shape for an (outer, K, inner) reduction of dtype code ``dt``; ``blocks_per_sm`` is
    the kernel's occupancy at its block size. ``units``: the counters a split launch needs (one per row, or per
    column tile). Pure function."""
    cfg = cfg or CONFIG
    shape = kernel_shape(outer, K, inner, sms, cfg, vec)
    base = sms * max(1, int(cfg["blocks_per_sm"] or blocks_per_sm))
    if shape["kind"] == "row":
        threads = shape["block"][0]
        if shape["warp_mode"]:
            groups = -(-outer // (threads // 32))
            waves = _dt_setting(cfg, dt, "warp_waves")
            grid = groups if waves <= 0 else min(groups, base * waves)
            return dict(shape, splits=1, seg_len=K, units=outer, grid=(max(1, grid),))
        target = base * max(1, int(cfg["waves"]))
        splits = pick_splits(outer, target, K // cfg["block_min_seg"])
        seg_len = -(-K // splits)
        seg_len = -(-seg_len // 16) * 16
        splits = -(-K // seg_len)
        return dict(shape, splits=splits, seg_len=seg_len, units=outer,
                    grid=(max(1, min(outer * splits, target)),))
    tx, ty = shape["block"]
    ntiles = -(-(outer * inner // vec) // tx)
    target = base * max(1, int(cfg["col_waves"]))
    splits = pick_splits(ntiles, target, K // (ty * cfg["col_min_iters"]))
    kchunk = -(-K // splits)
    splits = -(-K // kchunk)
    return dict(shape, splits=splits, kchunk=kchunk, units=ntiles, grid=(max(1, min(ntiles * splits, target)),))


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
    """Reduce cupy array ``x`` with ``op`` over ``axis`` (None, an int, or a tuple of ints).

    A call like an earlier one (same op, dtype, shape, strides, axis, keepdims, ddof, device, 16-byte alignment
    and CONFIG) reuses that call's prepared launches (``_prepared``): the per-call host work is then allocating
    the result and launching."""
    try:
        key = (op, x.__class__, x.dtype, x.shape, x.strides, axis, axis.__class__, keepdims, ddof, x.data.device_id,
               x.data.ptr & 15, CONFIG.version)
        p = _prepared.get(key)
    except (TypeError, AttributeError):  # an unhashable axis (a list), or not an array: the full path says which
        key = p = None
    if p is None or loader.current_device_id() != key[9]:
        return _reduce_slow(op, x, axis, keepdims, ddof, key)
    return _execute(p, x)


class _Prepared:
    """What a reduction of one (op, dtype, layout, axes) does: the input view ("c"), its transpose ("f") or a
    reordered copy ("copy", ``perm``); the result's dtype and shape; the launches (``center``: the mean a var/std
    launch subtracts, or None; ``main``)."""
    __slots__ = ("how", "perm", "rdt", "nout", "out_shape", "f_shape", "center", "main")


def _reduce_slow(op, x, axis, keepdims, ddof, key):
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

    p = _Prepared()
    p.perm = None
    if kop in ("argmax", "argmin") and len(axes) > 1 and x.ndim > 1:
        # flat index in C order over the whole array
        how, outer, K, inner = ("c" if x.flags.c_contiguous else "copy"), 1, x.size, 1
        p.perm = tuple(range(x.ndim))
    else:
        how, outer, K, inner, p.perm = plan_layout(shape, axes, bool(x.flags.c_contiguous),
                                                   bool(x.flags.f_contiguous))
    p.how, p.rdt, p.nout, p.out_shape = how, rdt, nout, out_shape
    # the kernel writes the outputs of an F-order input in the C order of the transposed (reversed) axes
    p.f_shape = tuple(s for i, s in enumerate(shape) if i not in axes)[::-1] if how == "f" else None
    p.center = None
    if kop in ("var", "std"):
        p.center = _step("mean", dt, module_options(dt, "basic"), outer, K, inner, 0.0, x, how)
    p.main = _step(kop, dt, module_options(dt, REDUCE_OPS[kop][0]), outer, K, inner, float(ddof), x, how)
    if key is not None:
        if len(_prepared) > 4096:
            _prepared.clear()
        _prepared[key] = p
    return _execute(p, x)


def _execute(p: _Prepared, x):
    import cupy
    if p.how == "f":
        x = x.T
    elif p.how == "copy":
        x = cupy.ascontiguousarray(x.transpose(p.perm))
    out = cupy.empty(p.nout, dtype=p.rdt)
    center = None
    if p.center is not None:
        center = cupy.empty(p.nout, dtype=x.dtype)
        _launch(p.center, x, center, None)
    _launch(p.main, x, out, center)
    if p.f_shape is not None:
        return cupy.ascontiguousarray(out.reshape(p.f_shape).T).reshape(p.out_shape)
    return out.reshape(p.out_shape)


_prepared: dict = {}  # reduce()'s call signature -> _Prepared
_plans: dict = {}  # (kop, dt, opts, outer, K, inner, vec, device, CONFIG values) -> (kernel, launch plan)


def _plan(kop, dt, opts, outer, K, inner, vec):
    dev = loader.current_device_id()
    key = (kop, dt, opts, outer, K, inner, vec, dev, tuple(CONFIG.values()))
    hit = _plans.get(key)
    if hit is None:
        sms = loader.sm_count()
        shape = kernel_shape(outer, K, inner, sms, vec=vec)
        fn = loader.get_function(REDUCE_FILE, f"gpk_red_{kop}_{dt}_{shape['kind']}", opts)
        threads = 1
        for b in shape["block"]:
            threads *= b
        smem = stage_bytes(threads, dt) if shape["kind"] == "row" else 0
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        plan = plan_launch(outer, K, inner, sms, loader.occupancy(fn, threads, smem), vec=vec, dt=dt)
        plan["smem"] = smem
        if len(_plans) > 4096:
            _plans.clear()
        hit = _plans[key] = (fn, plan)
    return hit


def _vec(x, inner: int, dt: str) -> int:
    """Outputs per thread of the column kernel for input x (None: a fresh, aligned copy): col_vec_width where inner
    and x's alignment allow."""
    if inner <= 1 or not CONFIG["col_vec"]:
        return 1
    v = col_vec_width(ITEMSIZE[dt])
    return v if inner % v == 0 and (x is None or x.data.ptr % (v * ITEMSIZE[dt]) == 0) else 1


_counter_bufs: dict = {}  # (device, stream pointer[, thread]) -> (weak reference to the stream, zeroed counters)
_PER_THREAD_STREAM = 2    # cudaStreamPerThread (CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1): each thread's own stream


def _counters(n: int):
    """Zeroed uint32 counters for a split launch on the current stream (every launch leaves them zeroed;
    launches on one stream run one after another), or None while the stream captures a CUDA graph
    (then the fin kernel combines the partials: a replay of the graph on another stream must not
    share counters with this one)."""
    import cupy
    stream = cupy.cuda.get_current_stream()
    if cupy.cuda.runtime.streamIsCapturing(stream.ptr):
        return None
    key = (loader.current_device_id(), stream.ptr)
    if stream.ptr == _PER_THREAD_STREAM:  # one handle, a different stream in every thread: counters per thread
        key += (threading.get_ident(),)
    hit = _counter_bufs.get(key)
    # a dead stream's handle may be reused by a new stream while its last launch still runs: fresh counters
    if hit is not None and hit[1].size >= n and (hit[0]() is stream or stream.ptr in (0, _PER_THREAD_STREAM)):
        return hit[1]
    if len(_counter_bufs) > 64:
        for k in [k for k, v in list(_counter_bufs.items()) if v[0]() is None]:
            _counter_bufs.pop(k, None)
    buf = cupy.zeros(max(int(n), 1024), dtype=np.uint32)
    try:
        ref = weakref.ref(stream)
    except TypeError:  # not weakly referenceable: compare by pointer only
        ref = lambda s=stream.ptr: stream if s == stream.ptr else None  # noqa: E731
    _counter_bufs[key] = (ref, buf)
    return buf


def _step(kop, dt, opts, outer, K, inner, ddof, x, how):
    """One launch of a prepared reduction, as ``_launch`` takes it: (kernel, grid, block, shared memory, splits,
    counters a split launch needs, the scalar arguments between the input and the buffers, those after them, the
    fin kernel's (kernel, grid, block, scalar arguments) or None, outputs). ``x`` is the caller's input; ``how``
    says which view of it the kernel reads ("copy": a fresh copy, aligned)."""
    nout = outer * inner
    fn, p = _plan(kop, dt, opts, outer, K, inner, _vec(None if how == "copy" else x, inner, dt))
    splits = p["splits"]
    n, dd = np.float64(K), np.float64(ddof)
    if p["kind"] == "row":
        mid = (np.int64(outer), np.int64(K), np.int64(splits), np.int64(p["seg_len"]), np.int32(p["warp_mode"]))
    else:
        mid = (np.int64(outer), np.int64(K), np.int64(inner), np.int64(splits), np.int64(p["kchunk"]))
    fin = None
    if splits > 1:
        f = plan_fin(nout, splits, loader.sm_count())
        fin = (loader.get_function(REDUCE_FILE, f"gpk_red_{kop}_{dt}_fin", opts), f["grid"], f["block"],
               (np.int64(nout), np.int64(splits)))
    return (fn, p["grid"], p["block"], p["smem"], splits, p["units"], mid, (n, dd), fin, nout)


def _launch(step, x, out, center):
    """Run a prepared step (``_step``) on input view ``x`` into ``out``."""
    import cupy
    fn, grid, block, smem, splits, units, mid, tail, fin, nout = step
    partial = counters = None
    if splits > 1:
        partial = cupy.empty(splits * nout * _ACC_SLOT, dtype=np.uint8)
        if CONFIG["fin"] == "last":
            counters = _counters(units)
    loader.launch(fn, grid, block, (x,) + mid + (partial, out, center) + tail + (counters,), shared_mem=smem)
    if fin is not None and counters is None:
        ffn, fgrid, fblock, fargs = fin
        loader.launch(ffn, fgrid, fblock, (partial,) + fargs + (out,) + tail)
