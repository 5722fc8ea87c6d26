"""Elementwise kernels on CuPy arrays.

``binary(op, a, b, out=None)`` and ``unary(op, x, out=None)`` take ``cupy.ndarray`` operands of ONE
dtype (the caller promotes first), broadcast like NumPy, and return a ``cupy.ndarray`` (``out`` if
given). Comparisons return bool; everything else returns the operands' dtype. An (op, dtype) pair we
have no kernel for raises ``NotImplementedError`` so the caller can fall back to CuPy;
``supports_binary`` / ``supports_unary`` answer that question without raising.

Paths: contiguous same-shape operands whose data pointers are 16-byte aligned take 128-bit vector
kernels (also when one operand is a single element, and when one is a row (C,) or a column (R, 1) broadcast
over the other's last axis: ``_bcast2``); anything else takes the strided kernel (broadcast dims have stride 0;
dims are collapsed first, at most 8 may remain).
"""

from __future__ import annotations

import numpy as np

from . import loader
from ._common import (ALL, BOOL, FLOATS, INTS, ITEMSIZE, ND_LIMIT, VersionedDict, broadcast_strides,
                      chunk_indices, collapse_dims, div_magic, dtype_code, nd_params, unroll_for)

BINARY_FILE = "binary.cu"
UNARY_FILE = "unary.cu"

# op -> (module group, dtype codes, returns bool)
BINARY_OPS: dict[str, tuple[str, tuple, bool]] = {}
for _op in ("add", "subtract", "multiply"):
    BINARY_OPS[_op] = ("arith", FLOATS + INTS, False)
for _op in ("maximum", "minimum"):
    BINARY_OPS[_op] = ("arith", ALL, False)
for _op in ("divide", "pow"):
    BINARY_OPS[_op] = ("arith", FLOATS, False)
for _op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    BINARY_OPS[_op] = ("cmp", ALL, True)
for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    BINARY_OPS[_op] = ("cmp", INTS + BOOL, False)

# Names the caller may use for the same kernels: (alias, dtype codes it is valid for) -> op.
BINARY_ALIASES = {
    "true_divide": ("divide", FLOATS),
    "power": ("pow", FLOATS),
    "logical_and": ("bitwise_and", BOOL),
    "logical_or": ("bitwise_or", BOOL),
    "logical_xor": ("bitwise_xor", BOOL),
}

# op -> (module group, dtype codes)
UNARY_OPS: dict[str, tuple[str, tuple]] = {}
for _op in ("negative", "abs", "square", "relu"):
    UNARY_OPS[_op] = ("basic", FLOATS + INTS)
UNARY_OPS["bitwise_invert"] = ("basic", INTS + BOOL)
for _op in ("exp", "log", "sqrt", "sin", "cos", "tanh", "log1p", "expm1", "reciprocal", "rsqrt",
            "sigmoid", "silu", "gelu", "gelu_tanh"):
    UNARY_OPS[_op] = ("math", FLOATS)

UNARY_ALIASES = {
    "logical_not": ("bitwise_invert", BOOL),
    "absolute": ("abs", FLOATS + INTS),
}

# Ops with a scalar-first (_sv) kernel; for the others, op(s, b) == SWAP[op](b, s).
_HAS_SV = {"subtract", "divide", "pow"}
_SWAP = {"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum",
         "equal": "equal", "not_equal": "not_equal", "less": "greater", "greater": "less",
         "less_equal": "greater_equal", "greater_equal": "less_equal",
         "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor"}

# Cheap ops unroll 4 vectors (of 4-byte elements) per thread and iteration, pow and the
# transcendental unary ops 2 (GPK_EW_UNROLL / GPK_EW_MATH_UNROLL and unroll_for in the .cu files).
_MATH_BINARY = {"pow"}
_CHEAP_UNARY = {"negative", "abs", "square", "relu", "bitwise_invert", "reciprocal"}

# Launch settings; the benchmark's tuning sweep changes them (a VersionedDict: binary()'s prepared launches are
# keyed by its version).
CONFIG = VersionedDict({
    # Vector kernels: one block per tile of threads * unroll vectors (waves 0), or a grid-stride grid capped at
    # blocks_per_sm (None: the occupancy) per SM times `waves`. The default is the uncapped grid of 128-thread
    # blocks (blocks that run in launch order keep the data in flight on neighbouring addresses); why:
    # docs/measurements.md.
    "threads": 128,          # threads per block, vector kernels
    "blocks_per_sm": None,
    "waves": 0,
    "nd_threads": 256,
    "nd_blocks_per_sm": None,
    "nd_waves": 2,
    # Build settings; a value other than the default builds (and caches) separate modules.
    "unroll": 4,             # GPK_EW_UNROLL: vectors per thread and iteration (cheap ops)
    "min_blocks": 1,         # GPK_MIN_BLOCKS: __launch_bounds__(1024, n), 0 = none
    "load": 0,               # GPK_EW_LOAD: cache treatment of 16-byte loads (gpk_common.cuh)
    "store": 0,              # GPK_EW_STORE: ... and stores
})


def module_options(dt: str, group: str) -> tuple:
    opts = ("-DGPK_SELECT", f"-DGPK_DT_{dt}", f"-DGPK_GROUP_{group}")
    if CONFIG["unroll"] != 4:
        opts += (f"-DGPK_EW_UNROLL={int(CONFIG['unroll'])}",)
    if CONFIG["min_blocks"] != 1:
        opts += (f"-DGPK_MIN_BLOCKS={int(CONFIG['min_blocks'])}",)
    if CONFIG["load"]:
        opts += (f"-DGPK_EW_LOAD={int(CONFIG['load'])}",)
    if CONFIG["store"]:
        opts += (f"-DGPK_EW_STORE={int(CONFIG['store'])}",)
    return opts


def variants() -> list[tuple[str, tuple]]:
    """Every (cu_file, options) module this front end may load."""
    out = set()
    for group, dts, _ in BINARY_OPS.values():
        for dt in dts:
            out.add((BINARY_FILE, module_options(dt, group)))
    for group, dts in UNARY_OPS.values():
        for dt in dts:
            out.add((UNARY_FILE, module_options(dt, group)))
    return sorted(out)


def expected_by_module() -> dict[tuple[str, tuple], set[str]]:
    """(cu_file, options) -> the kernel names this front end requests from that module."""
    mods: dict = {}
    for op, (group, dts, _) in BINARY_OPS.items():
        for dt in dts:
            names = mods.setdefault((BINARY_FILE, module_options(dt, group)), set())
            for mode in ("vv", "vs", "nd", "b2") + (("sv",) if op in _HAS_SV else ()):
                names.add(f"gpk_{op}_{dt}_{mode}")
    for op, (group, dts) in UNARY_OPS.items():
        for dt in dts:
            names = mods.setdefault((UNARY_FILE, module_options(dt, group)), set())
            for mode in ("v", "nd"):
                names.add(f"gpk_{op}_{dt}_{mode}")
    return mods


def expected_kernels() -> dict[str, set[str]]:
    """cu_file -> every kernel name the front end may request (for the compile check)."""
    names: dict = {BINARY_FILE: set(), UNARY_FILE: set()}
    for (f, _), s in expected_by_module().items():
        names[f] |= s
    return names


def _resolve_binary(op: str, dt: str):
    spec = BINARY_OPS.get(op)
    if spec is None:
        alias = BINARY_ALIASES.get(op)
        if alias is not None and dt in alias[1]:
            op = alias[0]
            spec = BINARY_OPS[op]
    if spec is None or dt not in spec[1]:
        return None, None
    return op, spec


def _resolve_unary(op: str, dt: str):
    spec = UNARY_OPS.get(op)
    if spec is None:
        alias = UNARY_ALIASES.get(op)
        if alias is not None and dt in alias[1]:
            op = alias[0]
            spec = UNARY_OPS[op]
    if spec is None or dt not in spec[1]:
        return None, None
    return op, spec


def supports_binary(op: str, dtype) -> bool:
    dt = dtype_code(dtype)
    return dt is not None and _resolve_binary(op, dt)[0] is not None


def supports_unary(op: str, dtype) -> bool:
    dt = dtype_code(dtype)
    return dt is not None and _resolve_unary(op, dt)[0] is not None


def _vec_grid(fn, n: int, itemsize: int, unroll: int, dev: int) -> tuple[int, int]:
    """One block per tile of threads * unroll vectors (CONFIG waves 0), else at most `waves` waves of resident
    blocks striding over the tiles; at least one block for the scalar tail."""
    threads = CONFIG["threads"]
    unroll = unroll_for(unroll, itemsize)
    nvec = n // (16 // itemsize)
    tiles = -(-nvec // (threads * unroll))
    if tiles <= 1:
        return 1, threads
    if not CONFIG["waves"]:
        return tiles, threads
    per_sm = CONFIG["blocks_per_sm"] or loader.occupancy(fn, threads, 0, dev)
    cap = loader.sm_count(dev) * per_sm * CONFIG["waves"]
    return max(1, min(tiles, cap)), threads


def stride_fits_u32(nvec: int, grid: int, tile: int) -> bool:
    """The _b2 kernel's 32-bit grid-stride loop (``base += gridDim.x * tile`` while ``base < nvec``) never wraps:
    every base it reaches, the one past the end included, stays below 2^32. Pure function."""
    return nvec + grid * tile < 1 << 32


def _nd_grid(fn, n: int, dev: int) -> tuple[int, int]:
    threads = CONFIG["nd_threads"]
    blocks = -(-n // threads)
    if blocks <= 1:
        return 1, threads
    per_sm = CONFIG["nd_blocks_per_sm"] or loader.occupancy(fn, threads, 0, dev)
    cap = loader.sm_count(dev) * per_sm * CONFIG["nd_waves"]
    return max(1, min(blocks, cap)), threads


def _aligned(arr, nbytes: int) -> bool:
    return arr.data.ptr % nbytes == 0


def _check_out(out, shape, dtype):
    import cupy
    if not isinstance(out, cupy.ndarray):
        raise TypeError("gpk_array kernels: out must be a cupy.ndarray")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"gpk_array kernels: out has shape {out.shape}, expected {tuple(shape)}")
    if out.dtype != dtype:
        raise ValueError(f"gpk_array kernels: out has dtype {out.dtype}, expected {np.dtype(dtype)}")


def _bcast2(a, b, shape, n: int, vec: int):
    """(x, y, C, kind, swap) when the _b2 kernel computes op(a, b) into a C-contiguous out of ``shape``: one
    operand x has n elements, C-contiguous and 16-byte aligned; the other, y, C-contiguous, is a row of the last
    extent C (kind 0; 16-byte aligned) or one element per row of C (kind 1: its last extent is 1); C a multiple
    of ``vec`` and n / vec < 2^31. swap: x is b. None otherwise."""
    if len(shape) < 2 or n // vec >= (1 << 31):
        return None
    cols = shape[-1]
    if cols % vec or not cols:
        return None
    for x, y, swap in ((a, b, 0), (b, a, 1)):
        if x.size != n or not x.flags.c_contiguous or not _aligned(x, 16) or not y.flags.c_contiguous or not y.ndim:
            continue
        if y.size == cols and y.shape[-1] == cols and _aligned(y, 16):
            return x, y, cols, 0, swap
        if y.shape[-1] == 1 and y.size * cols == n:
            return x, y, cols, 1, swap
    return None


def binary(op: str, a, b, out=None):
    """``out = op(a, b)`` elementwise with NumPy broadcasting; a and b are cupy arrays of one dtype.

    Without ``out`` a call like an earlier one (op, dtype, shapes, strides, 16-byte alignment of each operand,
    device, CONFIG) reuses that call's launch (``_prepared``): the result is then allocated and the kernel
    launched, nothing else (a fresh result is C-contiguous and aligned, so the earlier choice holds)."""
    if out is None:
        try:
            key = (op, a.__class__, b.__class__, a.dtype, b.dtype, a.shape, b.shape, a.strides, b.strides,
                   a.data.ptr & 15, b.data.ptr & 15, a.data.device_id, b.data.device_id, CONFIG.version)
            p = _prepared.get(key)
        except (AttributeError, TypeError):  # not arrays: the full path says what is wrong
            p = None
        if p is not None and loader.current_device_id() == key[11]:
            import cupy
            fn, grid, block, shape, odt, swap, tail = p
            out = cupy.empty(shape, dtype=odt)
            loader.launch(fn, grid, block, ((b, a, out) if swap else (a, b, out)) + tail)
            return out
        launch = []
        out = _binary(op, a, b, None, launch)
        if len(launch) == 1:
            if len(_prepared) > 4096:
                _prepared.clear()
            _prepared[key] = launch[0]
        return out
    return _binary(op, a, b, out, None)


_prepared: dict = {}  # binary()'s call signature (out=None) -> (fn, grid, block, shape, dtype, swap, tail args)


def _binary(op, a, b, out, record):
    """binary(); ``record`` (a list, or None) receives the one launch a call made, for binary()'s cache."""
    import cupy
    if not isinstance(a, cupy.ndarray) or not isinstance(b, cupy.ndarray):
        raise TypeError("gpk_array kernels: binary() takes cupy.ndarray operands")
    if a.dtype != b.dtype:
        raise TypeError(f"gpk_array kernels: binary() needs operands of one dtype, got {a.dtype} "
                        f"and {b.dtype}")
    dt = dtype_code(a.dtype)
    if dt is None:
        raise NotImplementedError(f"gpk_array kernels: no {op} kernel for dtype {a.dtype}")
    kop, spec = _resolve_binary(op, dt)
    if kop is None:
        raise NotImplementedError(f"gpk_array kernels: no {op} kernel for dtype {a.dtype}")
    group, _, returns_bool = spec
    shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    out_dtype = np.dtype(np.bool_) if returns_bool else a.dtype
    dev = a.data.device_id
    if b.data.device_id != dev or (out is not None and out.data.device_id != dev):
        raise ValueError("gpk_array kernels: operands are on different devices")
    if dev != loader.current_device_id():
        with cupy.cuda.Device(dev):
            return _binary(op, a, b, out, None)
    if out is None:
        out = cupy.empty(shape, dtype=out_dtype)
    else:
        _check_out(out, shape, out_dtype)
    n = out.size
    if n == 0:
        return out
    opts = module_options(dt, group)
    isz = ITEMSIZE[dt]
    vec = 16 // isz
    out_align = vec * out.dtype.itemsize
    if out.flags.c_contiguous and _aligned(out, out_align):
        mode = None
        # An operand with n elements that broadcasts to `shape` differs from it only by extent-1
        # dims, so a C-contiguous one is laid out like `out`.
        if (a.size == n and b.size == n and a.flags.c_contiguous and b.flags.c_contiguous
                and _aligned(a, 16) and _aligned(b, 16)):
            mode = "vv"
        elif b.size == 1 and a.size == n and a.flags.c_contiguous and _aligned(a, 16):
            mode = "vs"
        elif a.size == 1 and b.size == n and b.flags.c_contiguous and _aligned(b, 16):
            mode = "sv"
        if mode is not None:
            x, y, name = a, b, kop
            if mode == "sv" and kop not in _HAS_SV:
                x, y, name, mode = b, a, _SWAP[kop], "vs"
            fn = loader.get_function(BINARY_FILE, f"gpk_{name}_{dt}_{mode}", opts)
            grid, block = _vec_grid(fn, n, isz, 2 if kop in _MATH_BINARY else CONFIG["unroll"], dev)
            tail = (np.int64(n),)
            loader.launch(fn, grid, block, (x, y, out) + tail)
            if record is not None:
                record.append((fn, grid, block, shape, out_dtype, x is not a, tail))
            return out
        b2 = _bcast2(a, b, shape, n, vec)
        if b2 is not None:
            fn = loader.get_function(BINARY_FILE, f"gpk_{kop}_{dt}_b2", opts)
            unroll = 2 if kop in _MATH_BINARY else CONFIG["unroll"]
            grid, block = _vec_grid(fn, n, isz, unroll, dev)
            if not stride_fits_u32(n // vec, grid, block * unroll_for(unroll, isz)):
                b2 = None   # its 32-bit vector index would wrap: the strided kernel below
        if b2 is not None:
            x, y, cols, kind, swap = b2
            cvec = cols // vec
            magic, shift = div_magic(cvec)
            tail = (np.uint32(n // vec), np.uint32(cvec), np.uint32(magic), np.uint32(shift), np.int32(kind),
                    np.int32(swap))
            loader.launch(fn, grid, block, (x, y, out) + tail)
            if record is not None:
                record.append((fn, grid, block, shape, out_dtype, x is not a, tail))
            return out
    if n > ND_LIMIT:
        ab, bb = cupy.broadcast_to(a, shape), cupy.broadcast_to(b, shape)
        for idx in chunk_indices(shape, ND_LIMIT):
            _binary(op, ab[idx], bb[idx], out[idx], None)
        return out
    st_o = broadcast_strides(shape, out.shape, out.strides, out.dtype.itemsize)
    st_a = broadcast_strides(shape, a.shape, a.strides, isz)
    st_b = broadcast_strides(shape, b.shape, b.strides, isz)
    cshape, cstrides = collapse_dims(shape, [st_o, st_a, st_b])
    params = nd_params(n, cshape, cstrides)
    fn = loader.get_function(BINARY_FILE, f"gpk_{kop}_{dt}_nd", opts)
    grid, block = _nd_grid(fn, n, dev)
    loader.launch(fn, grid, block, (a, b, out, params))
    if record is not None:
        record.append((fn, grid, block, shape, out_dtype, False, (params,)))
    return out


def unary(op: str, x, out=None):
    """``out = op(x)`` elementwise; x is a cupy array, out has x's dtype and shape. ``out`` may be ``x`` itself (in
    place: every element is read once, by the thread that writes it); no other overlap of out and x."""
    import cupy
    if not isinstance(x, cupy.ndarray):
        raise TypeError("gpk_array kernels: unary() takes a cupy.ndarray")
    dt = dtype_code(x.dtype)
    if dt is None:
        raise NotImplementedError(f"gpk_array kernels: no {op} kernel for dtype {x.dtype}")
    kop, spec = _resolve_unary(op, dt)
    if kop is None:
        raise NotImplementedError(f"gpk_array kernels: no {op} kernel for dtype {x.dtype}")
    group = spec[0]
    dev = x.data.device_id
    if out is not None and out.data.device_id != dev:
        raise ValueError("gpk_array kernels: operands are on different devices")
    if dev != loader.current_device_id():
        with cupy.cuda.Device(dev):
            return unary(op, x, out)
    shape = x.shape
    if out is None:
        out = cupy.empty(shape, dtype=x.dtype)
    else:
        _check_out(out, shape, x.dtype)
    n = out.size
    if n == 0:
        return out
    opts = module_options(dt, group)
    isz = ITEMSIZE[dt]
    if (x.flags.c_contiguous and out.flags.c_contiguous and _aligned(x, 16) and _aligned(out, 16)):
        fn = loader.get_function(UNARY_FILE, f"gpk_{kop}_{dt}_v", opts)
        grid, block = _vec_grid(fn, n, isz, CONFIG["unroll"] if kop in _CHEAP_UNARY else 2, dev)
        loader.launch(fn, grid, block, (x, out, np.int64(n)))
        return out
    if n > ND_LIMIT:
        for idx in chunk_indices(shape, ND_LIMIT):
            unary(op, x[idx], out=out[idx])
        return out
    st_o = broadcast_strides(shape, out.shape, out.strides, isz)
    st_x = broadcast_strides(shape, x.shape, x.strides, isz)
    cshape, cstrides = collapse_dims(shape, [st_o, st_x])
    params = nd_params(n, cshape, cstrides)
    fn = loader.get_function(UNARY_FILE, f"gpk_{kop}_{dt}_nd", opts)
    grid, block = _nd_grid(fn, n, dev)
    loader.launch(fn, grid, block, (x, out, params))
    return out
