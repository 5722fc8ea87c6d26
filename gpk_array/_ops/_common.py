"""Helpers shared by the function modules: argument coercion, axes, device checks."""
import builtins
import functools
import operator

import numpy as np

from .._array import Array
from .._device import CPU
from .._errors import DeviceError, OutOfMemoryError

PY_SCALARS = (builtins.bool, int, float, complex)
new = Array._new
_AxisError = np.exceptions.AxisError


def plain_scalar(x):
    """x as a plain Python int, float or complex where x is an instance of a subclass of one that is no NumPy
    scalar (``finfo(float32).eps``, an ``enum.IntEnum`` member), else None: such values are Python scalars to
    the standard (weak in promotion), and the fast paths only recognize the exact built-in classes."""
    c = x.__class__
    if c in PY_SCALARS or not isinstance(x, (int, float, complex)) or isinstance(x, np.generic):
        return None
    return int(x) if isinstance(x, int) else float(x) if isinstance(x, float) else complex(x)


def as_array(x, device=None):
    """An Array for x: Arrays pass through; array-likes (lists, NumPy/CuPy arrays, scalars) are converted."""
    if x.__class__ is Array:
        return x
    from .creation import asarray
    return asarray(x, device=device)


def as_arrays(*xs):
    """Arrays for xs on one device: the device of the Arrays among them (ValueError if they differ)."""
    dev = None
    for x in xs:
        if isinstance(x, Array):
            if dev is None:
                dev = x._device
            elif x._device is not dev:
                raise DeviceError(f"arrays are on different devices: {dev} and {x._device}")
    return [as_array(x, dev) for x in xs]


def axis_error(axis, ndim, name="axis"):
    """NumPy's ``AxisError`` (a ValueError and an IndexError) for axis out of range for ndim dimensions, with
    NumPy's wording (``axis 2 is out of bounds for array of dimension 2``; other names as a prefix)."""
    return _AxisError(axis, ndim, None if name == "axis" else name)


def normalize_axis(axis, ndim, name="axis"):
    """axis as a non-negative int below ndim (0 for the axes 0 and -1 of a 0-d array); out of range raises
    ``numpy.exceptions.AxisError``, a subclass of both ValueError and IndexError, as NumPy's functions do."""
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(axis).__name__}") from None
    if not -ndim <= ax < max(ndim, 1) or (ndim == 0 and ax not in (0, -1)):
        raise axis_error(ax, ndim, name)
    return ax % ndim if ndim else 0


def normalize_axes(axis, ndim, name="axis"):
    """A tuple of non-negative axes (None means all); duplicates raise ValueError."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple) or isinstance(axis, list):
        axes = tuple(normalize_axis(a, ndim, name) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated {name} in {axis}")
        return axes
    return (normalize_axis(axis, ndim, name),)


def raise_oom(e):
    """Raise a backend's MemoryError e as gpk_array.OutOfMemoryError (e itself when it already is one); for hot
    functions that catch ``MemoryError`` themselves instead of paying for the ``oom_guard`` wrapper's call."""
    if isinstance(e, OutOfMemoryError):
        raise e
    raise OutOfMemoryError(str(e)) from e


def oom_guard(fn):
    """Translate a backend's out-of-memory error into gpk_array.OutOfMemoryError (a MemoryError)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemoryError as e:
            raise_oom(e)
    return wrapper


def on_device(device):
    """Context that makes a CUDA device current for allocation (a no-op on the CPU and on cuda:0's own)."""
    if device is CPU or device.index == 0:
        return _NULL
    return device.xp.cuda.Device(device.index)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_NULL = _Null()

