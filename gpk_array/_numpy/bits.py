"""Bit packing and integer bit strings: packbits/unpackbits (on the device where the backend has them: NumPy and
CuPy both do), bitwise_count, and binary_repr/base_repr (Python strings, as NumPy's)."""
import numpy as _np

from .. import _dtypes as _dt
from ._util import data, dev_of, new, oom_guard

__all__ = ["packbits", "unpackbits", "bitwise_count", "binary_repr", "base_repr"]

binary_repr = _np.binary_repr
base_repr = _np.base_repr


def _bit_axis(d, axis):
    """(array with the bit axis last, the axis to move it back to or None for a flattened input)."""
    if axis is None:
        return d.reshape(-1), None
    if not -d.ndim <= axis < d.ndim:
        raise _np.exceptions.AxisError(axis, d.ndim)
    axis %= d.ndim
    return d.swapaxes(axis, -1), axis


def _weights(xp, bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    w = [1 << (7 - i) for i in range(8)] if bitorder == "big" else [1 << i for i in range(8)]
    return xp.asarray(_np.array(w, dtype=_np.uint8))


@oom_guard
def packbits(a, /, axis=None, bitorder="big"):
    """Bits of a boolean or integer array packed into uint8 (8 per byte, along axis or of the flattened array)."""
    dev = dev_of(a)
    d = data(a, dev)
    if d.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    xp = dev.xp
    if xp is _np:
        return new(_np.packbits(d, axis=axis, bitorder=bitorder), dev)
    w = _weights(xp, bitorder)
    x, ax = _bit_axis(d, axis)
    n = x.shape[-1]
    bits = (x != 0).astype(_np.uint8)
    if n % 8:
        bits = xp.concatenate([bits, xp.zeros(x.shape[:-1] + (8 - n % 8,), dtype=_np.uint8)], axis=-1)
    packed = (bits.reshape(x.shape[:-1] + (-1, 8)) * w).sum(axis=-1, dtype=_np.uint8)
    return new(packed if ax is None else xp.ascontiguousarray(packed.swapaxes(ax, -1)), dev)


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
    w = _weights(xp, bitorder)
    x, ax = _bit_axis(d, axis)
    r = ((x[..., None] & w) != 0).astype(_np.uint8).reshape(x.shape[:-1] + (-1,))
    if count is not None:
        n = r.shape[-1]
        count = int(count)
        if count < 0:
            count = max(n + count, 0)
        if count <= n:
            r = r[..., :count]
        else:
            r = xp.concatenate([r, xp.zeros(r.shape[:-1] + (count - n,), dtype=r.dtype)], axis=-1)
    return new(r if ax is None else xp.ascontiguousarray(r.swapaxes(ax, -1)), dev)


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
