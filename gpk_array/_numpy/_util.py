"""Helpers shared by the NumPy-flavoured modules: device resolution, unwrapping array-likes to backing arrays,
NumPy's ``out=`` convention, the standard's functions as bound in the namespace.

Everything computes with ``dev.xp`` (NumPy on the CPU, CuPy on a CUDA device); only ``host`` copies to the host
(for printing and file I/O).
"""
import builtins
import operator

import numpy as _np

from .. import _dtypes as _dt
from .._array import Array, check_writeable
from .._device import CPU, as_device, default_device
from .._errors import DeviceError
from .._ops._common import new, normalize_axis, oom_guard  # noqa: F401  re-exported for the modules here

PY_SCALARS = (builtins.bool, int, float, complex)


class _NoValueType:
    """Sentinel for "argument not given" where None is meaningful (NumPy's ``np._NoValue``)."""

    __slots__ = ()

    def __repr__(self):
        return "<no value>"


NoValue = _NoValueType()


def dev_of(*xs):
    """The device of the first Array among xs (nested one level in lists/tuples), else the default device."""
    for x in xs:
        c = x.__class__
        if c is Array:
            return x._device
        if c is list or c is tuple:
            for y in x:
                if y.__class__ is Array:
                    return y._device
    return default_device()


def dev_arg(device, *xs):
    """An explicit ``device=`` wins; else the device of the Arrays among xs; else the default device."""
    if device is not None:
        return as_device(device)
    return dev_of(*xs)


def to_array(x, dev=None):
    """An Array for x on dev (Arrays must already be there)."""
    if x.__class__ is Array:
        if dev is not None and x._device is not dev:
            raise DeviceError(f"arrays are on different devices: {x._device} and {dev}; "
                              "move one with x.to_device()")
        return x
    return _asarray(x, dev)


def _asarray(x, dev):
    from .creation import _from_object
    return _from_object(x, None, dev if dev is not None else default_device())


def data(x, dev):
    """The backing array of x on dev: an Array's data, or an array-like converted on dev."""
    if x.__class__ is Array:
        if x._device is not dev:
            raise DeviceError(f"arrays are on different devices: {x._device} and {dev}; "
                              "move one with x.to_device()")
        return x._data
    return _asarray(x, dev)._data


def data_or_scalar(x, dev):
    """Python scalars stay Python scalars (weak in NumPy 2's promotion); everything else as ``data``."""
    if x.__class__ in PY_SCALARS:
        return x
    return data(x, dev)


def opt_data(x, dev):
    return None if x is None else data(x, dev)


def finish(r, dev, out):
    """A result r (backing array) as an Array, or written into out= (NumPy's casting) and out returned."""
    if out is None:
        return new(r, dev)
    o = out_data(out, dev)
    if o.shape != r.shape:
        try:
            _np.broadcast_shapes(r.shape, o.shape)
        except ValueError:
            raise ValueError(f"out= has shape {o.shape}, the result {r.shape}") from None
        if _np.broadcast_shapes(r.shape, o.shape) != o.shape:
            raise ValueError(f"out= has shape {o.shape}, the result {r.shape}")
    o[...] = r
    return out


def out_data(out, dev):
    if out.__class__ is tuple:
        if len(out) != 1:
            raise ValueError("out= takes one array here")
        out = out[0]
    if out.__class__ is not Array:
        raise TypeError(f"out= must be a gpk_array Array, got {type(out).__name__}")
    if out._device is not dev:
        raise DeviceError(f"out= is on {out._device}, the operands on {dev}")
    if dev is not CPU:
        check_writeable(out)
    return out._data


def dtype_arg(dtype):
    """None, or a supported numpy.dtype from any dtype-like (int, float, "float32", numpy types)."""
    if dtype is None:
        return None
    return _dt.to_dtype(dtype)


def host(x):
    """A NumPy array holding x's values: only for host-only operations (file I/O, printing)."""
    if isinstance(x, Array):  # subclasses of ndarray too (their __array__ refuses device arrays)
        if x._device is CPU:
            d = x._data
            return d if d.__class__ is _np.ndarray else d.view(_np.ndarray)  # host-only dtypes' HostData too
        return x._data.get()
    return _np.asarray(x)


def shape_arg(shape):
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(s) for s in shape)
    return (operator.index(shape),)


def std_fn(name, module):
    """The namespace's current function for a name the standard defines (it may be a replacement the lead bound
    in gpk_array/__init__), else the one in the standard's module; never one of this package's wrappers."""
    import sys
    ns = sys.modules.get("gpk_array")
    fn = getattr(ns, name, None) if ns is not None else None
    if fn is None or getattr(fn, "__module__", "").startswith("gpk_array._numpy") or not callable(fn):
        fn = getattr(module, name)
    return fn


def acc_dtype(dt, dtype=None):
    """NumPy's accumulator dtype of sum/prod/cumsum: bool and narrow integers widen to 64 bits."""
    if dtype is not None:
        return _dt.to_dtype(dtype)
    k = dt.kind
    if k == "b" or (k == "i" and dt.itemsize < 8):
        return _dt.I64
    if k == "u" and dt.itemsize < 8:
        return _np.dtype(_np.uint64)
    return dt


def viewof(r, parent):
    """r (a new Array) records parent as the array it views, when it shares parent's memory."""
    if r is not parent and r._data.base is not None:
        r._base = parent
    return r
