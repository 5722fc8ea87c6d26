"""Bit packing and integer bit strings: packbits/unpackbits (on the device where the backend has them: NumPy and
CuPy both do), bitwise_count, and binary_repr/base_repr (Python strings, as NumPy's)."""
import numpy as _np

from .. import _dtypes as _dt
from ._util import data, dev_of, new, oom_guard

__all__ = ["packbits", "unpackbits", "bitwise_count", "binary_repr", "base_repr"]

binary_repr = _np.binary_repr
base_repr = _np.base_repr


@oom_guard
def packbits(a, /, axis=None, bitorder="big"):
    """Bits of a boolean or integer array packed into uint8 (8 per byte, along axis or of the flattened array)."""
    dev = dev_of(a)
    d = data(a, dev)
    if d.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    if dev.xp is _np:
        return new(_np.packbits(d, axis=axis, bitorder=bitorder), dev)
    return new(dev.xp.packbits(d, axis=axis, bitorder=bitorder), dev)


@oom_guard
def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """The bits of a uint8 array as a uint8 array of 0s and 1s (along axis or of the flattened array)."""
    dev = dev_of(a)
    d = data(a, dev)
    if d.dtype != _np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    xp = dev.xp
    if xp is _np:
        return new(_np.unpackbits(d, axis=axis, count=count, bitorder=bitorder), dev)
    r = xp.unpackbits(d, axis=axis, bitorder=bitorder)
    if count is not None:
        ax = 0 if axis is None else axis
        n = r.shape[ax]
        if count < 0:
            count = max(n + count, 0)
        key = [slice(None)] * r.ndim
        if count <= n:
            key[ax] = slice(0, count)
            r = r[tuple(key)]
        else:
            pad = list(r.shape)
            pad[ax] = count - n
            r = xp.concatenate([r, xp.zeros(tuple(pad), dtype=r.dtype)], axis=ax)
    return new(r, dev)


@oom_guard
def bitwise_count(x, /):
    """The number of 1 bits of each integer's absolute value (uint8 results, as NumPy's)."""
    dev = dev_of(x)
    d = data(x, dev)
    if d.dtype.kind not in "biu":
        raise TypeError(f"bitwise_count takes integer or boolean arrays, got {d.dtype}")
    xp = dev.xp
    if xp is _np:
        return new(_np.asarray(_np.bitwise_count(d)), dev)
    v = xp.abs(d.astype(_dt.I64)).astype(_np.uint64) if d.dtype.kind == "i" else d.astype(_np.uint64)
    c = xp.zeros(v.shape, dtype=_np.uint8)
    for _ in range(d.dtype.itemsize * 8):
        c += (v & 1).astype(_np.uint8)
        v = v >> 1
    return new(c, dev)
