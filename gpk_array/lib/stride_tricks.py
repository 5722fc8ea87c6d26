"""Strided views: ``sliding_window_view`` and ``as_strided`` (NumPy's on the CPU, CuPy's on a CUDA device).

Both return views sharing memory with the input; ``as_strided`` trusts the given strides, as NumPy's does.
"""
from .._array import Array
from .._ops._common import new
from .._numpy._util import to_array

__all__ = ["sliding_window_view", "as_strided", "broadcast_to", "broadcast_arrays", "broadcast_shapes"]


def _st(dev):
    return dev.xp.lib.stride_tricks


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """All windows of window_shape over x (along axis), as a read-only view: shape x.shape[-k:] - w + 1 + w."""
    a = to_array(x)
    dev = a._device
    ws = tuple(window_shape) if isinstance(window_shape, (tuple, list)) else (int(window_shape),)
    kw = {} if dev.xp.__name__ != "numpy" else {"writeable": writeable}
    return new(_st(dev).sliding_window_view(a._data, ws, axis=axis, **kw), dev)


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """A view of x's memory with the given shape and strides (in bytes); no bounds are checked."""
    if x.__class__ is not Array:
        x = to_array(x)
    dev = x._device
    shape = None if shape is None else tuple(int(s) for s in shape)
    strides = None if strides is None else tuple(int(s) for s in strides)
    if dev.xp.__name__ == "numpy":
        r = dev.xp.lib.stride_tricks.as_strided(x._data, shape=shape, strides=strides, writeable=writeable)
    else:
        r = _st(dev).as_strided(x._data, shape=shape, strides=strides)
    return new(r, dev)


def broadcast_to(array, shape, subok=False):
    """``gpk_array.broadcast_to(array, shape)`` (a read-only view); an int ``shape`` means one dimension."""
    from .. import broadcast_to as _b
    return _b(array, tuple(shape) if not isinstance(shape, int) else (shape,))


def broadcast_arrays(*args, subok=False):
    """``gpk_array.broadcast_arrays(*args)``: the arrays broadcast against each other."""
    from .. import broadcast_arrays as _b
    return _b(*args)


def broadcast_shapes(*args):
    """``gpk_array.broadcast_shapes(*shapes)``: the shape that the given shapes broadcast to."""
    from .. import broadcast_shapes as _b
    return _b(*args)
