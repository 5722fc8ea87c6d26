"""Pieces shared by the elementwise and reduction front ends: dtype codes, strided-layout helpers,
launch sizing. Everything here except ``launch_sizes`` runs without a GPU."""

from __future__ import annotations

import numpy as np

# dtype name -> code used in kernel names and -DGPK_DT_<code>
DTYPE_CODES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "b",
}
FLOATS = ("f16", "bf16", "f32", "f64")
SINTS = ("i8", "i16", "i32", "i64")
UINTS = ("u8", "u16", "u32", "u64")
INTS = SINTS + UINTS
BOOL = ("b",)
ALL = FLOATS + INTS + BOOL

ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8,
            "u8": 1, "u16": 2, "u32": 4, "u64": 8, "b": 1}

MAX_NDIM = 8
MAX_OPERANDS = 3

# The layout of gpk::NdParams in gpk_common.cuh (all 64-bit fields, no padding).
ND_PARAMS_DTYPE = np.dtype([
    ("n", "<i8"), ("ndim", "<i8"),
    ("shape", "<i8", (MAX_NDIM,)), ("magic", "<i8", (MAX_NDIM,)), ("shift", "<i8", (MAX_NDIM,)),
    ("stride", "<i8", (MAX_OPERANDS, MAX_NDIM)),
])
assert ND_PARAMS_DTYPE.itemsize == 8 * (2 + 3 * MAX_NDIM + MAX_OPERANDS * MAX_NDIM)


class VersionedDict(dict):
    """A dict that counts its changes (``version``), for caches keyed by what it held (settings tables)."""
    version = 0

    def _bump(self):
        self.version += 1

    def __setitem__(self, k, v):
        super().__setitem__(k, v)
        self._bump()

    def __delitem__(self, k):
        super().__delitem__(k)
        self._bump()

    def update(self, *a, **kw):
        super().update(*a, **kw)
        self._bump()

    def __ior__(self, other):
        self.update(other)
        return self

    def clear(self):
        super().clear()
        self._bump()

    def pop(self, *a):
        r = super().pop(*a)
        self._bump()
        return r

    def popitem(self):
        r = super().popitem()
        self._bump()
        return r

    def setdefault(self, k, v=None):
        r = super().setdefault(k, v)
        self._bump()
        return r


_code_cache: dict = {}


def dtype_code(dtype) -> str | None:
    """Kernel dtype code for a NumPy/CuPy dtype (bfloat16 from ml_dtypes included), else None."""
    try:
        return _code_cache[dtype]
    except (KeyError, TypeError):
        pass
    code = _dtype_code(dtype)
    try:
        _code_cache[dtype] = code
    except TypeError:
        pass
    return code


def _dtype_code(dtype) -> str | None:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    code = DTYPE_CODES.get(dt.name)
    if code is None or dt.itemsize != ITEMSIZE[code]:
        return None
    if code != "bf16" and dt.kind not in "biuf":
        return None
    if not dt.isnative:
        return None
    return code


def div_magic(d: int) -> tuple[int, int]:
    """(magic, shift) with q = (umulhi(n, magic) + n) >> shift == n // d for 0 <= n < 2**31.

    Granlund & Montgomery's unsigned division by an invariant: l = ceil(log2 d),
    magic = floor(2**32 * (2**l - d) / d) + 1. The sum stays below 2**32 because n < 2**31."""
    if d < 1 or d > (1 << 31):
        raise ValueError(f"divisor out of range: {d}")
    shift = (d - 1).bit_length()
    magic = ((1 << 32) * ((1 << shift) - d)) // d + 1
    assert 0 < magic < (1 << 32)
    return magic, shift


def emulate_fast_div(n: int, magic: int, shift: int) -> int:
    """What the kernel computes, in Python (for tests)."""
    hi = (n * magic) >> 32
    return ((hi + n) & 0xFFFFFFFF) >> shift


def broadcast_strides(shape, arr_shape, arr_strides_bytes, itemsize) -> list[int]:
    """Element strides of an operand broadcast to ``shape`` (0 on broadcast dims)."""
    nd = len(shape)
    pad = nd - len(arr_shape)
    out = [0] * nd
    for i, (s, st) in enumerate(zip(arr_shape, arr_strides_bytes)):
        if st % itemsize:
            raise NotImplementedError("gpk_array kernels: stride not a multiple of the item size")
        out[pad + i] = 0 if (s == 1 and shape[pad + i] != 1) else st // itemsize
    return out


def collapse_dims(shape, strides_list):
    """Drop extent-1 dims and merge neighbours that are contiguous for every operand.

    Returns (shape, [strides per operand]) with the fewest dims that address the same elements
    in the same (C) order."""
    dims = [(int(s), [int(st[i]) for st in strides_list]) for i, s in enumerate(shape) if s != 1]
    if not dims:
        return (), [() for _ in strides_list]
    merged = [dims[0]]
    for s, sts in dims[1:]:
        ps, psts = merged[-1]
        if all(pst == st * s for pst, st in zip(psts, sts)):
            merged[-1] = (ps * s, sts)
        else:
            merged.append((s, sts))
    new_shape = tuple(s for s, _ in merged)
    new_strides = [tuple(sts[k] for _, sts in merged) for k in range(len(strides_list))]
    return new_shape, new_strides


_nd_cache: dict = {}


def nd_params(n: int, shape, strides_list) -> np.ndarray:
    """A one-element array in gpk::NdParams layout (passed to the kernel by value)."""
    key = (n, tuple(shape), tuple(tuple(s) for s in strides_list))
    p = _nd_cache.get(key)
    if p is not None:
        return p
    nd = len(shape)
    if nd > MAX_NDIM:
        raise NotImplementedError(f"gpk_array kernels: more than {MAX_NDIM} non-contiguous dims")
    p = np.zeros(1, dtype=ND_PARAMS_DTYPE)
    p["n"] = n
    p["ndim"] = nd
    for d, s in enumerate(shape):
        p["shape"][0, d] = s
        if n < (1 << 31):
            m, sh = div_magic(s)
            p["magic"][0, d] = m
            p["shift"][0, d] = sh
    for k, st in enumerate(strides_list):
        for d, v in enumerate(st):
            p["stride"][0, k, d] = v
    if len(_nd_cache) > 512:
        _nd_cache.clear()
    _nd_cache[key] = p
    return p


# Strided kernels index with 32 bits: a launch covers fewer than ND_LIMIT elements.
ND_LIMIT = (1 << 31) - 1


def chunk_indices(shape, limit: int = ND_LIMIT):
    """Index tuples that cut an array of ``shape`` into pieces of at most ``limit`` elements
    (slices along the first dims; an int index where even one slice along a dim is too big)."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        yield ()
        return
    inner = 1
    for s in shape[1:]:
        inner *= s
    if inner <= limit:
        step = max(1, limit // max(inner, 1))
        for i0 in range(0, shape[0], step):
            yield (slice(i0, min(i0 + step, shape[0])),)
    else:
        for i0 in range(shape[0]):
            for rest in chunk_indices(shape[1:], limit):
                yield (i0,) + rest


def unroll_for(u: int, itemsize: int) -> int:
    """Mirror of gpk::unroll_for in gpk_common.cuh."""
    v = u * itemsize // 4
    return 1 if v < 1 else min(v, u)
