"""Comparisons of whole arrays, predicates on values and objects, and small NumPy math helpers
(isclose, allclose, array_equal, isscalar, shape, nan_to_num, sinc, angle, unwrap, round/around, fix, ...)."""
import numpy as _np

from .. import _dtypes as _dt
from .._array import Array
from .._device import CPU
from .._ops import elementwise as _ew
from ._util import PY_SCALARS, data, data_or_scalar, dev_of, finish, new, oom_guard, std_fn, to_array

__all__ = ["isfortran", "isclose", "allclose", "array_equal", "array_equiv", "isscalar", "shape", "ndim", "size",
           "iscomplexobj", "isrealobj", "iscomplex", "isreal", "isneginf", "isposinf", "nan_to_num",
           "real_if_close", "sinc", "i0", "angle", "unwrap", "round", "around", "fix", "may_share_memory",
           "shares_memory"]

_round = std_fn("round", _ew)


def _pair(a, b):
    dev = dev_of(a, b)
    return dev, data_or_scalar(a, dev), data_or_scalar(b, dev)


@oom_guard
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Element-wise ``|a - b| <= atol + rtol * |b|``."""
    dev, x, y = _pair(a, b)
    xp = dev.xp
    if x.__class__ in PY_SCALARS and y.__class__ in PY_SCALARS:
        x = xp.asarray(x)
    rtol, atol = data_or_scalar(rtol, dev), data_or_scalar(atol, dev)   # tolerances may be Arrays too
    return new(xp.asarray(xp.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)), dev)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether all elements are close (a Python bool, as NumPy)."""
    return bool(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)._data.all())


def array_equal(a1, a2, equal_nan=False):
    """Whether the arrays have the same shape and elements (a Python bool)."""
    dev = dev_of(a1, a2)
    x = data(a1, dev)
    y = data(a2, dev)
    if x.shape != y.shape:
        return False
    xp = dev.xp
    if not equal_nan:
        return bool((x == y).all())
    eq = x == y
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        eq = eq | (xp.isnan(x) & xp.isnan(y))
    return bool(eq.all())


def array_equiv(a1, a2):
    """Whether the arrays are equal after broadcasting (a Python bool)."""
    dev = dev_of(a1, a2)
    x = data(a1, dev)
    y = data(a2, dev)
    try:
        _np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool((x == y).all())


def isscalar(element):
    """Whether element is a scalar (Python number, string or NumPy scalar); arrays, 0-d ones too, are not."""
    return _np.isscalar(element)


def shape(a):
    """The shape of ``a`` as a tuple (an Array's, or NumPy's ``shape`` of anything else)."""
    if isinstance(a, Array):
        return a._data.shape
    return _np.shape(a)


def ndim(a):
    """The number of dimensions of ``a`` (an Array's, or NumPy's ``ndim`` of anything else)."""
    if isinstance(a, Array):
        return a._data.ndim
    return _np.ndim(a)


def size(a, axis=None):
    """The number of elements of ``a``, or its length along ``axis``, or the product of its lengths along a tuple
    of axes (NumPy's ``size``)."""
    if isinstance(a, Array):
        if axis is None:
            return a._data.size
        sh = a._data.shape
        if axis.__class__ is int:
            return sh[axis]
        n = 1
        for ax in _np.lib.array_utils.normalize_axis_tuple(axis, len(sh)):
            n *= sh[ax]
        return n
    return _np.size(a, axis)


def isfortran(a):
    """Whether ``a`` is Fortran-contiguous and not also C-contiguous (NumPy's ``isfortran``)."""
    if isinstance(a, Array):
        f = a._data.flags
        return bool(f.f_contiguous and not f.c_contiguous)
    return _np.isfortran(a)


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype (a Python bool; the values are not looked at)."""
    if isinstance(x, Array):
        return x._data.dtype.kind == "c"
    return _np.iscomplexobj(x)


def isrealobj(x):
    """Whether ``x`` does not have a complex dtype (a Python bool; ``not iscomplexobj(x)``)."""
    return not iscomplexobj(x)


@oom_guard
def iscomplex(x):
    """Element-wise: whether the imaginary part is nonzero (all False for a real dtype)."""
    a = to_array(x)
    xp = a._device.xp
    if a._data.dtype.kind != "c":
        return new(xp.zeros(a.shape, dtype=bool), a._device)
    return new(a._data.imag != 0, a._device)


@oom_guard
def isreal(x):
    """Element-wise: whether the imaginary part is zero (all True for a real dtype; for strings, NumPy's answer)."""
    a = to_array(x)
    if a._data.dtype.kind in _dt.HOST_KINDS:
        from .. import _hostdata
        return _hostdata.call(_np.isreal, a)
    xp = a._device.xp
    if a._data.dtype.kind != "c":
        return new(xp.ones(a.shape, dtype=bool), a._device)
    return new(a._data.imag == 0, a._device)


@oom_guard
def isneginf(x, out=None):
    """Element-wise: whether the value is negative infinity (all False for non-float dtypes)."""
    a = to_array(x)
    d = a._data
    xp = a._device.xp
    return finish(xp.isinf(d) & xp.signbit(d) if d.dtype.kind == "f" else xp.zeros(d.shape, dtype=bool),
                  a._device, out)


@oom_guard
def isposinf(x, out=None):
    """Element-wise: whether the value is positive infinity (all False for non-float dtypes)."""
    a = to_array(x)
    d = a._data
    xp = a._device.xp
    return finish(xp.isinf(d) & ~xp.signbit(d) if d.dtype.kind == "f" else xp.zeros(d.shape, dtype=bool),
                  a._device, out)


@oom_guard
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, infinities to ``posinf``/``neginf`` (the dtype's extremes by default)."""
    a = to_array(x)
    xp = a._device.xp
    # replacements may be arrays (broadcast against x, as NumPy's copyto does): their backing data
    nan, posinf, neginf = (v if v is None or v.__class__ in PY_SCALARS or isinstance(v, _np.generic)
                           else data(v, a._device) for v in (nan, posinf, neginf))
    r = xp.nan_to_num(a._data, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    if not copy:
        if r is not a._data:
            a._data[...] = r
        return a
    return new(r, a._device)


@oom_guard
def real_if_close(a, tol=100):
    """Real part if all imaginary parts are within tol machine epsilons of zero."""
    x = to_array(a)
    d = x._data
    if d.dtype.kind != "c":
        return x
    xp = x._device.xp
    t = tol * _np.finfo(d.dtype).eps if tol > 1 else tol
    if bool(xp.all(xp.abs(d.imag) < t)):
        return new(d.real.copy(), x._device)
    return x


@oom_guard
def sinc(x):
    """sin(pi x) / (pi x), with sinc(0) = 1."""
    a = to_array(x)
    xp = a._device.xp
    if xp is _np:
        return new(_np.sinc(a._data), a._device)
    # NumPy's formula, sin(y) / y with y = pi * x: CuPy's sinc uses sinpi and gives exact zeros at the integers
    # where NumPy gives sin(pi * n) rounding noise (3.9e-17)
    d = a._data
    if d.dtype.kind in "biu":
        d = d.astype(_np.float64)
    y = xp.where(d == 0, xp.asarray(1.0e-20, dtype=d.dtype), d) * _np.pi
    return new(xp.sin(y) / y, a._device)


@oom_guard
def i0(x):
    """Modified Bessel function of the first kind, order 0."""
    a = to_array(x)
    return new(a._device.xp.i0(a._data), a._device)


@oom_guard
def angle(z, deg=False):
    """Argument of complex values (radians, or degrees with deg=True)."""
    a = to_array(z)
    xp = a._device.xp
    d = a._data
    if d.dtype.kind in "biu":
        d = d.astype(_np.float64)
    r = xp.arctan2(d.imag, d.real) if d.dtype.kind == "c" else xp.arctan2(xp.zeros_like(d), d)
    if deg:
        r = r * (180.0 / _np.pi)
    return new(r, a._device)


@oom_guard
def unwrap(p, discont=None, axis=-1, *, period=2 * _np.pi):
    """Unwrap phase jumps larger than discont (default period/2) along axis."""
    a = to_array(p)
    xp = a._device.xp
    if xp is _np:
        return new(_np.unwrap(a._data, discont=discont, axis=axis, period=period), a._device)
    return new(xp.unwrap(a._data, discont=discont, axis=axis, period=period), a._device)


@oom_guard
def round(a, /, decimals=0, out=None):
    """NumPy's ``round(a, decimals=0, out=None)`` (and the standard's): half to even."""
    return _round(a, decimals, out=out)


around = round


@oom_guard
def fix(x, out=None):
    """Round toward zero (floats stay floats)."""
    a = to_array(x)
    xp = a._device.xp
    d = a._data
    return finish(xp.trunc(d) if d.dtype.kind in "fc" else d.copy(), a._device, out)


def may_share_memory(a, b, max_work=None):
    """Whether two arrays may share memory: NumPy's ``may_share_memory`` (a bounds check unless ``max_work`` asks
    for more), run on the arrays' layouts (pointer, shape, strides), so on a CUDA device too; False for arrays on
    different devices and for anything that is not an array there."""
    return _overlap(_np.may_share_memory, a, b, max_work)


def shares_memory(a, b, max_work=None):
    """Whether two arrays share memory: NumPy's ``shares_memory`` (the exact check; ``max_work`` bounds its work
    and ``numpy.exceptions.TooHardError`` is raised when that is not enough, as NumPy's), run on the arrays'
    layouts (pointer, shape, strides), so on a CUDA device too, without reading the elements; False for arrays on
    different devices and for anything that is not an array there."""
    return _overlap(_np.shares_memory, a, b, max_work)


def _overlap(fn, a, b, max_work):
    ha, hb = _layout(a), _layout(b)
    if ha is None or hb is None or ha[0] != hb[0]:
        return False
    return bool(fn(ha[1], hb[1]) if max_work is None else fn(ha[1], hb[1], max_work=max_work))


class _Layout:
    """An object exposing a device array's layout as NumPy's array interface: NumPy builds an array over its
    address that is never read (only the overlap solver looks at its pointer, shape and strides)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, ptr, shape, strides, itemsize):
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "strides": strides,
                                    "typestr": f"|V{itemsize}", "version": 3}


def _layout(x):
    """(device, an ndarray with x's memory layout) for an Array (or, on the CPU, a NumPy array); None otherwise."""
    if x.__class__ is Array:
        dev = x._device
        d = x._data
        if dev.xp is _np:
            return dev, d.view(_np.ndarray) if d.__class__ is not _np.ndarray else d
        mem = getattr(d, "data", None)
        ptr = getattr(mem, "ptr", None)
        if ptr is None:  # an ndarray standing for a device array (the test suite's stand-in CUDA device)
            ptr = d.__array_interface__["data"][0]
        return dev, _np.asarray(_Layout(ptr, d.shape, d.strides, d.itemsize))
    if isinstance(x, _np.ndarray):
        return CPU, x
    return None
