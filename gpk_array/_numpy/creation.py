"""Array creation with NumPy's signatures: positional dtype, ``order=``, ``ndmin=``, array fill values, ``retstep=``,
array endpoints for linspace, plus NumPy-only creators (identity, logspace, geomspace, indices, diag, tri, ...).

Where a name is also the standard's (zeros, asarray, arange, linspace, ...), the standard's call forms give the
standard's results: these wrappers hand them to the standard's implementation.
"""
import math
from collections.abc import Mapping

import numpy as _np

from .. import _dtypes as _dt
from .. import _hooks
from .._array import Array
from .. import _hostdata as _host
from .._device import CPU, as_device, default_device
from .._ops import creation as _std
from .. import _version
from .._ops._common import on_device, raise_oom
from ._util import PY_SCALARS, data, dev_arg, dtype_arg, new, normalize_axis, oom_guard, shape_arg, to_array

_SUPPORTED = _dt.SUPPORTED

__all__ = ["array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "copy", "zeros", "ones",
           "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "eye", "identity", "arange",
           "linspace", "logspace", "geomspace", "meshgrid", "indices", "tril", "triu", "tri", "diag", "diagflat",
           "vander", "fromfunction", "fromiter", "asarray_chkfinite", "require"]


# --- conversion -----------------------------------------------------------------------------------------------
def _target_device(obj, device):
    """Where array/asarray put obj's data: device= when given, else an Array's own device, else the device of an
    Array nested in lists, else the default device."""
    if device is not None:
        return as_device(device)
    if obj.__class__ is Array:
        return obj._device
    return _tree_device(obj) or default_device()


def _tree_device(obj, depth=0):
    """The device of an Array inside nested lists/tuples, looking at the first and last entries of each level
    (None if there is none there: the data then goes through the standard's conversion, which refuses nesting
    deeper than NumPy's 64 dimensions with a ValueError)."""
    c = obj.__class__
    if c is Array:
        return obj._device
    if (c is list or c is tuple) and obj and depth <= 64:
        d = _tree_device(obj[0], depth + 1)
        if d is None and len(obj) > 1:
            d = _tree_device(obj[-1], depth + 1)
        return d
    return None


def _stack_tree(obj, dev):
    """Build nested lists holding Arrays on a CUDA device there, stacking on the device (no host round trip)."""
    xp = dev.xp
    c = obj.__class__
    if c is Array:
        return obj._data if obj._device is dev else _std.asarray(obj, device=dev)._data
    if c is list or c is tuple:
        parts = [_stack_tree(o, dev) for o in obj]
        if not parts:
            return xp.asarray(_np.asarray(obj))
        shapes = {p.shape for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"setting an array element with a sequence: the nested sequence has an "
                             f"inhomogeneous shape ({sorted(shapes)})")
        return xp.stack(parts)
    if c in PY_SCALARS or isinstance(obj, _np.generic):
        return xp.asarray(obj)
    return _std.asarray(obj, device=dev)._data


def _from_object(obj, dt, dev, copy=None):
    """NumPy's array coercion for obj onto device dev, with dtype dt (None: inferred)."""
    c = obj.__class__
    if c is list or c is tuple:
        if dev is CPU and copy is not False:
            # fast path: NumPy's conversion where it gives a supported dtype (anything else, errors included, takes
            # the standard's path, which converts the same way and explains)
            try:
                r = _np.asarray(obj, dtype=dt)
            except Exception:
                r = None
            if r is not None and r.dtype in _SUPPORTED:
                return new(r, dev)
            return _std.asarray(obj, dtype=dt, device=dev, copy=copy)
        if dev is not CPU and _tree_device(obj) is not None:
            r = _stack_tree(obj, dev)
            if dt is not None and r.dtype != dt:
                r = r.astype(dt)
            return new(r, dev)
        return _std.asarray(obj, dtype=dt, device=dev, copy=copy)
    if c is not Array and isinstance(obj, Array):  # a subclass of ndarray: its data, as a plain Array
        return _from_object(new(obj._data, obj._device), dt, dev, copy)
    if c is range:
        return _std.asarray(_np.arange(obj.start, obj.stop, obj.step, dtype=dt or _dt.I64), device=dev,
                            copy=copy)
    if c is Array or c in PY_SCALARS or isinstance(obj, (_np.ndarray, _np.generic)):
        return _std.asarray(obj, dtype=dt, device=dev, copy=copy)
    if c is bytearray or c is memoryview:  # the buffer protocol: uint8 (or the view's format), as in NumPy
        return _std.asarray(obj, dtype=dt, device=dev, copy=copy)
    if not hasattr(obj, "__array__") and not hasattr(obj, "__cuda_array_interface__") and \
            not hasattr(obj, "__dlpack__") and hasattr(obj, "__len__") and hasattr(obj, "__getitem__"):
        if isinstance(obj, (bytes, str, Mapping)):
            raise TypeError(f"Unsupported input type {type(obj).__name__}: gpk_array has no string, bytes or "
                            "object dtype")
        return _from_object(list(obj), dt, dev, copy)
    return _std.asarray(obj, dtype=dt, device=dev, copy=copy)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None, device=None):
    """NumPy's ``array``: a new array from array-likes (copies unless copy=None/False allow otherwise). Data of
    a host-only dtype (strings, records, dates) gives an array on the CPU device (gpk_array/_hostdata.py)."""
    try:
        dt = dtype_arg(dtype)
        dev = _target_device(object, device)
        cp = True if copy is True else (False if copy is False else None)
        r = _from_object(object, dt, dev, cp)
    except TypeError as e:
        r = _host.convert(object, dtype, device, copy, e)
        dev = r._device
    if ndmin and r._data.ndim < ndmin:
        r = new(r._data.reshape((1,) * (ndmin - r._data.ndim) + r._data.shape), dev)
    if order == "F" and r._data.ndim > 1:
        r = new(dev.xp.asfortranarray(r._data), dev)
    return r


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """NumPy's ``asarray`` (and the standard's: ``asarray(obj, /, *, dtype, device, copy)``). An Array that needs no
    change (its dtype, its device, the layout ``order`` asks for, no ``copy=True``) is returned itself, as NumPy
    returns its input (``np.asarray(x) is x``); ``order="C"``/``"F"`` copy to that layout where the input lacks it.
    Data of a host-only dtype (strings, records, dates) gives an array on the CPU device (gpk_array/_hostdata.py);
    a bare str or bytes is refused with a TypeError, as CuPy refuses it."""
    if a.__class__ is Array:
        if dtype is None and device is None and copy is None and order is None:
            return a
        if copy is not True and (dtype is None or dtype_arg(dtype) == a._data.dtype) and \
                (device is None or as_device(device) is a._device) and _has_order(a._data, order):
            return a
    try:
        dt = dtype_arg(dtype)
        dev = _target_device(a, device)
        r = _from_object(a, dt, dev, copy)
    except TypeError as e:
        if copy is False:
            raise
        return _host.convert(a, dtype, device, copy, e)
    if order in ("C", "F") and not _has_order(r._data, order):
        if copy is False:
            raise ValueError(f"order={order!r} needs a copy, but copy=False")
        r = new(dev.xp.asfortranarray(r._data) if order == "F" else dev.xp.ascontiguousarray(r._data), dev)
    return r


def _has_order(d, order):
    """Whether backing array d already has the layout ``order`` asks for (None, "K" and "A": any layout)."""
    if order is None or order == "K" or order == "A":
        return True
    if order == "C":
        return d.flags.c_contiguous
    if order == "F":
        return d.flags.f_contiguous
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """NumPy's ``asanyarray``: the same as ``asarray`` here (gpk_array has one array class; ``like`` is ignored)."""
    return asarray(a, dtype, order, device=device, copy=copy)


def ascontiguousarray(a, dtype=None, *, like=None):
    """A C-contiguous array of ``a`` (a copy only where needed: an Array that is C-contiguous already, of that dtype,
    is returned itself, as NumPy's); a 0-d input becomes shape (1,), as NumPy's ``ascontiguousarray``."""
    x = asarray(a, dtype)
    d = x._data
    if d.ndim == 0:
        return new(d.reshape(1), x._device)
    if d.flags.c_contiguous:
        return x
    return new(x._device.xp.ascontiguousarray(d), x._device)


def asfortranarray(a, dtype=None, *, like=None):
    """A Fortran-ordered (column-major) array of ``a``, NumPy's ``asfortranarray`` (a copy only where needed: an
    Array that is F-contiguous already, of that dtype, is returned itself); a 0-d input becomes shape (1,)."""
    x = asarray(a, dtype)
    if x._data.ndim == 0:
        return new(x._data.reshape(1), x._device)
    if x._data.flags.f_contiguous:
        return x
    return new(x._device.xp.asfortranarray(x._data), x._device)


def copy(a, order="K", subok=False):
    """A copy of a (NumPy's ``copy``)."""
    x = asarray(a)
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(x._data.nbytes, x._device)
    return new(x._data.copy(order=order if order in ("C", "F", "A", "K") else "K"), x._device)


# --- filled arrays --------------------------------------------------------------------------------------------
def _filled(fname):
    """NumPy's ``zeros`` / ``ones`` / ``empty``: ``(shape, dtype=float, order='C')`` (and the standard's)."""
    def fn(shape, dtype=None, order="C", *, device=None, like=None):
        if order == "C" or order is None:
            try:
                return _std._make(fname, shape, dtype, device)
            except TypeError:
                hd = _host.host_dtype(dtype) if dtype is not None else None
                if hd is None:
                    raise
                return _host.host_array(getattr(_np, fname)(shape_arg(shape), dtype=hd), device)
        dev = as_device(device)
        hd = _host.host_dtype(dtype) if dtype is not None else None
        if hd is not None:
            return _host.host_array(getattr(_np, fname)(shape_arg(shape), dtype=hd, order=order), device)
        dt = _dt.F64 if dtype is None else _dt.to_dtype(dtype)
        shape = shape_arg(shape)
        if _hooks.prealloc_hook is not None:
            _hooks.precheck(shape, dt, dev)
        try:
            with on_device(dev):
                return new(getattr(dev.xp, fname)(shape, dtype=dt, order=order), dev)
        except MemoryError as e:
            raise_oom(e)
    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = (f"NumPy's ``{fname}(shape, dtype=float, order='C')`` (and the standard's); a host-only dtype "
                  "(strings, records, dates) gives an array on the CPU device (gpk_array/_hostdata.py).")
    return fn


zeros = _filled("zeros")
ones = _filled("ones")
empty = _filled("empty")


def _scalar_fill(v):
    """A fill value as a Python/NumPy scalar, or None when it is array-like with more than one element."""
    c = v.__class__
    if c in PY_SCALARS or isinstance(v, _np.generic):
        return v
    if c is Array:
        return v if v._data.ndim == 0 else None
    if isinstance(v, _np.ndarray) and v.ndim == 0:
        return v[()]
    return None


@oom_guard
def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """NumPy's ``full``: fill_value may also be an array broadcast to shape; a host-only dtype or fill value (a
    string, a date) gives an array on the CPU device (gpk_array/_hostdata.py)."""
    try:
        s = _scalar_fill(fill_value)
        if s is not None and (s.__class__ is not Array or device is None or s._device is as_device(device)):
            if s.__class__ is Array:
                dev = s._device if device is None else as_device(device)
                dt = s._data.dtype if dtype is None else _dt.to_dtype(dtype)
                if _hooks.prealloc_hook is not None:
                    _hooks.precheck(shape_arg(shape), dt, dev)
                with on_device(dev):
                    r = dev.xp.empty(shape_arg(shape), dtype=dt)
                    r[...] = s._data
                return new(r, dev)
            if dtype is None and isinstance(s, _np.generic):
                dtype = s.dtype
            return _std.full(shape, s, dtype=dtype, device=device)
        dev = dev_arg(device, fill_value)
        f = data(fill_value, dev)
        dt = f.dtype if dtype is None else _dt.to_dtype(dtype)
        if _hooks.prealloc_hook is not None:
            _hooks.precheck(shape_arg(shape), dt, dev)
        with on_device(dev):
            r = dev.xp.empty(shape_arg(shape), dtype=dt)
            r[...] = f
        return new(r, dev)
    except TypeError as e:
        return _host.full(shape, fill_value, dtype, device, e)


def _like_parts(a, dtype, shape, device):
    x = to_array(a) if a.__class__ is Array else asarray(a)
    dev = x._device if device is None else as_device(device)
    dt = x._data.dtype if dtype is None else _dt.to_dtype(dtype)
    shp = x._data.shape if shape is None else shape_arg(shape)
    return shp, dt, dev


def _like(fname, a, dtype, shape, device):
    if a.__class__ is Array and a._data.__class__ is _dt.HostData:
        return _host.like(fname, a, dtype, shape, device)
    try:
        if shape is None:
            return getattr(_std, fname + "_like")(a if a.__class__ is Array else asarray(a), dtype=dtype,
                                                  device=device)
        shp, dt, dev = _like_parts(a, dtype, shape, device)
        return getattr(_std, fname)(shp, dtype=dt, device=dev)
    except TypeError:
        if not _host.any_host(a) and (dtype is None or _host.host_dtype(dtype) is None):
            raise
        return _host.like(fname, a, dtype, shape, device)


def zeros_like(a, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """NumPy's ``zeros_like`` (and the standard's)."""
    return _like("zeros", a, dtype, shape, device)


def ones_like(a, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """NumPy's ``ones_like`` (and the standard's)."""
    return _like("ones", a, dtype, shape, device)


def empty_like(a, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """NumPy's ``empty_like`` (and the standard's)."""
    return _like("empty", a, dtype, shape, device)


@oom_guard
def full_like(a, /, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """NumPy's ``full_like`` (and the standard's): fill_value is cast to the result's dtype; it may be an array
    that broadcasts to the shape."""
    if _host.any_host(a) or (dtype is not None and _host.host_dtype(dtype) is not None) or \
            fill_value.__class__ is str or fill_value.__class__ is bytes:
        return _host.like("full", a, dtype, shape, device, fill_value)
    s = _scalar_fill(fill_value)
    if s is not None and s.__class__ is not Array:
        if shape is None:
            return _std.full_like(a if a.__class__ is Array else asarray(a), s, dtype=dtype, device=device)
        shp, dt, dev = _like_parts(a, dtype, shape, device)
        return _std.full(shp, s, dtype=dt, device=dev)
    shp, dt, dev = _like_parts(a, dtype, shape, device)
    if _hooks.prealloc_hook is not None:
        _hooks.precheck(shp, dt, dev)
    with on_device(dev):
        r = dev.xp.empty(shp, dtype=dt)
        r[...] = data(fill_value, dev)
    return new(r, dev)


def eye(N, M=None, k=0, dtype=None, order="C", *, device=None, like=None):
    """NumPy's ``eye(N, M=None, k=0, dtype=float)`` (and the standard's)."""
    return _std.eye(N, M, k=k, dtype=dtype, device=device)


def identity(n, dtype=None, *, device=None, like=None):
    """The n x n identity matrix."""
    return _std.eye(n, dtype=dtype, device=device)


# --- ranges -----------------------------------------------------------------------------------------------------
def _py(v):
    """A scalar argument as a Python number (0-d Arrays and NumPy scalars too)."""
    if v.__class__ is Array:
        if v._data.size != 1:
            raise TypeError(f"expected a scalar, got an array of shape {v.shape}")
        return v._data.reshape(()).item() if v._device is CPU else v._data.get().reshape(()).item()
    if isinstance(v, _np.generic):
        return v.item()
    if isinstance(v, _np.ndarray) and v.ndim == 0:
        return v.item()
    return v


def arange(start, /, stop=None, step=None, dtype=None, *, device=None, like=None):
    """NumPy's ``arange([start,] stop[, step], dtype=None)`` (and the standard's); dates (``datetime64``
    endpoints or dtype, ISO strings with a datetime64 dtype) give an array on the CPU device
    (gpk_array/_hostdata.py)."""
    try:
        a = start if start.__class__ is int else _py(start)
        b = stop if stop is None or stop.__class__ is int else _py(stop)
        c = 1 if step is None else (step if step.__class__ is int else _py(step))
        return _std.arange(a, b, c, dtype=dtype, device=device)  # it translates out-of-memory errors
    except TypeError as e:
        return _host.arange(e, start, stop, step, dtype, device)


def _is_scalar_like(v):
    return v.__class__ in PY_SCALARS or isinstance(v, _np.generic) or \
        (v.__class__ is Array and v._data.ndim == 0) or (isinstance(v, _np.ndarray) and v.ndim == 0)


@oom_guard
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """NumPy's ``linspace`` (and the standard's): array endpoints, ``retstep=``, ``axis=``; integer dtypes take
    the floor of the samples, as NumPy 2 does."""
    c0 = start.__class__
    c1 = stop.__class__
    if (c0 is float or c0 is int) and (c1 is float or c1 is int) and dtype is None and not retstep and \
            num.__class__ is int and num >= 0:
        # fast path: Python numbers, the standard's linspace (as the scalar branch below calls it)
        return _std._linspace(start, stop, num, None, as_device(device), endpoint)
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace num must be non-negative, got {num}")
    dt = dtype_arg(dtype)
    div = (num - 1) if endpoint else num
    if _is_scalar_like(start) and _is_scalar_like(stop) and (start.__class__ is not Array or device is None) \
            and (stop.__class__ is not Array or device is None):
        dev = dev_arg(device, start, stop)
        s0, s1 = _py(start), _py(stop)
        integer = dt is not None and _dt.kind(dt) in "biu"
        r = _std.linspace(s0, s1, num, dtype=None if integer else dt, device=dev, endpoint=endpoint)
        if integer:
            r = new(dev.xp.floor(r._data).astype(dt), dev)
        if retstep:
            step = (s1 - s0) / div if div > 0 else _np.nan
            return r, step
        return r
    dev = dev_arg(device, start, stop)
    xp = dev.xp
    a = data(start, dev) * 1.0
    b = data(stop, dev) * 1.0
    a, b = xp.broadcast_arrays(a, b)
    delta = b - a
    shape = (num,) + (1,) * a.ndim
    y = xp.arange(num, dtype=_np.result_type(a.dtype, _np.float64) if a.dtype.kind != "c" else a.dtype)
    y = y.reshape(shape)
    step = delta / div if div > 0 else delta * _np.nan
    if div > 0:
        y = y * step + a
    else:
        y = y * delta + a
    if endpoint and num > 1:
        y[-1, ...] = b
    if axis != 0:
        y = xp.moveaxis(y, 0, normalize_axis(axis, y.ndim))
    if dt is not None:
        y = (xp.floor(y) if _dt.kind(dt) in "biu" else y).astype(dt, copy=False)
    r = new(y, dev)
    if retstep:
        return r, new(step, dev)
    return r


@oom_guard
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, *, device=None):
    """Samples evenly spaced on a log scale: ``base ** linspace(start, stop, num)``."""
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis, device=device)
    dev = y._device
    xp = dev.xp
    b = data(base, dev) if not _is_scalar_like(base) else _py(base)
    if not _is_scalar_like(base):
        b = xp.expand_dims(b, axis)
    r = xp.power(b, y._data)
    if dtype is not None:
        r = r.astype(_dt.to_dtype(dtype), copy=False)
    return new(r, dev)


@oom_guard
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0, *, device=None):
    """Samples evenly spaced on a log scale between the endpoints themselves (real or complex scalars)."""
    s0, s1 = _py(start), _py(stop)
    if not (_is_scalar_like(start) and _is_scalar_like(stop)):
        raise TypeError("gpk_array.geomspace takes scalar start and stop")
    if s0 == 0 or s1 == 0:
        raise ValueError("geometric sequence cannot include zero")
    dev = dev_arg(device, start, stop)
    # up to 2^16 samples NumPy computes them and they are copied to the device: NumPy's values to the bit (CuPy's
    # power rounds differently in the last place, which dtype=int shows: 63 against NumPy's 63.99999 -> 63)
    xp = _np if num <= 65536 else dev.xp
    on = CPU if xp is _np else dev
    if isinstance(s0, complex) or isinstance(s1, complex):
        ls, le = _np.log10(complex(s0)), _np.log10(complex(s1))
        r = xp.power(10.0, linspace(ls, le, num, endpoint=endpoint, device=on)._data)
        if num > 0:
            r[0] = s0
        if num > 1 and endpoint:
            r[-1] = s1
    else:
        sign = 1.0 if s0 > 0 else -1.0
        a, b = s0 / sign, s1 / sign
        if b < 0:
            raise ValueError("geomspace endpoints of opposite sign need complex input")
        r = xp.power(10.0, linspace(math.log10(a), math.log10(b), num, endpoint=endpoint, device=on)._data)
        if num > 0:
            r[0] = a
        if num > 1 and endpoint:
            r[-1] = b
        r = r * sign
    if axis != 0:
        r = xp.moveaxis(r, 0, normalize_axis(axis, r.ndim))
    if dtype is not None:
        r = r.astype(_dt.to_dtype(dtype), copy=False)
    return new(r, dev) if on is dev else _from_object(r, None, dev)


@oom_guard
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's ``meshgrid`` (and the standard's): inputs are flattened, keep their own dtypes, ``sparse=``."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    seq = tuple if _version.get() >= "2025.12" else list  # a list before 2025.12, as the standard had it
    if not xi:
        return seq()
    dev = dev_arg(None, *xi)
    xp = dev.xp
    ds = [data(x, dev).reshape(-1) for x in xi]
    n = len(ds)
    shapes = [(1,) * i + (d.shape[0],) + (1,) * (n - i - 1) for i, d in enumerate(ds)]
    if indexing == "xy" and n > 1:
        shapes[0] = (1, ds[0].shape[0]) + (1,) * (n - 2)
        shapes[1] = (ds[1].shape[0], 1) + (1,) * (n - 2)
    outs = [d.reshape(s) for d, s in zip(ds, shapes)]
    if not sparse:
        full_shape = _np.broadcast_shapes(*shapes)
        outs = [xp.broadcast_to(o, full_shape) for o in outs]
        if copy:
            outs = [o.copy() for o in outs]
    elif copy:
        outs = [o.copy() for o in outs]
    return seq(new(o, dev) for o in outs)


@oom_guard
def indices(dimensions, dtype=int, sparse=False, *, device=None):
    """Index grids: an array of shape (len(dimensions), *dimensions), or a tuple of sparse grids."""
    dev = as_device(device)
    xp = dev.xp
    dims = tuple(int(d) for d in dimensions)
    dt = _dt.to_dtype(dtype)
    n = len(dims)
    with on_device(dev):
        parts = [xp.arange(d, dtype=dt).reshape((1,) * i + (d,) + (1,) * (n - i - 1)) for i, d in enumerate(dims)]
        if sparse:
            return tuple(new(p, dev) for p in parts)
        if n == 0:
            return new(xp.empty((0,), dtype=dt), dev)
        return new(xp.stack([xp.broadcast_to(p, dims) for p in parts]), dev)


# --- triangles and diagonals ----------------------------------------------------------------------------------
@oom_guard
def tril(m, /, k=0):
    """Lower triangle (NumPy's and the standard's; one-dimensional input is broadcast to a square, as NumPy)."""
    x = asarray(m)
    if x._data.ndim >= 2:
        return _std.tril(x, k=k)
    return new(x._device.xp.tril(x._data, k=k), x._device)


@oom_guard
def triu(m, /, k=0):
    """Upper triangle (NumPy's and the standard's; one-dimensional input is broadcast to a square, as NumPy)."""
    x = asarray(m)
    if x._data.ndim >= 2:
        return _std.triu(x, k=k)
    return new(x._device.xp.triu(x._data, k=k), x._device)


def tri(N, M=None, k=0, dtype=float, *, device=None, like=None):
    """Ones at and below diagonal k."""
    dev = as_device(device)
    with on_device(dev):
        return new(dev.xp.tri(N, M, k, dtype=_dt.to_dtype(dtype)), dev)


@oom_guard
def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with v on its k-th diagonal."""
    x = asarray(v)
    if x._data.ndim not in (1, 2):
        raise ValueError("diag takes a 1-D or 2-D input")
    r = x._device.xp.diag(x._data, k)
    return new(r, x._device)


@oom_guard
def diagflat(v, k=0):
    """A 2-D array with the flattened input on diagonal ``k`` (NumPy's ``diagflat``)."""
    x = asarray(v)
    return new(x._device.xp.diagflat(x._data, k), x._device)


@oom_guard
def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns are powers of x."""
    a = asarray(x)
    if a._data.ndim != 1:
        raise ValueError("vander takes a one-dimensional x")
    xp = a._device.xp
    n = a._data.shape[0] if N is None else int(N)
    p = xp.arange(n)
    if not increasing:
        p = p[::-1]
    return new(a._data[:, None] ** p[None, :].astype(a._data.dtype if a._data.dtype.kind != "b" else _dt.I64),
               a._device)


@oom_guard
def fromfunction(function, shape, *, dtype=float, like=None, device=None, **kwargs):
    """``function(*index_grids, **kwargs)`` over a grid of the given shape."""
    grids = indices(shape, dtype=dtype, device=device)
    return function(*[new(g, grids._device) for g in grids._data], **kwargs)


def fromiter(iter, dtype, count=-1, *, like=None, device=None):
    """An array from an iterable of Python values (read on the host, then moved to the device); a host-only dtype
    (strings, records, dates) gives an array on the CPU device (gpk_array/_hostdata.py)."""
    hd = _host.host_dtype(dtype)
    if hd is not None:
        return _host.host_array(_np.fromiter(iter, dtype=hd, count=count), device)
    dt = _np.dtype(dtype) if isinstance(dtype, (tuple, _np.dtype)) else None
    if dt is not None and dt.subdtype is not None:
        # a subarray dtype such as (int64, 2): NumPy returns shape (n, 2) of the base dtype
        _dt.to_dtype(dt.base)
        h = _np.fromiter(iter, dtype=dt, count=count)
    else:
        h = _np.fromiter(iter, dtype=_dt.to_dtype(dtype), count=count)
    return _std.asarray(h, device=as_device(device))


def asarray_chkfinite(a, dtype=None, order=None):
    """``asarray(a, dtype)``, raising ValueError where a floating or complex result holds an inf or NaN (NumPy's
    ``asarray_chkfinite``; on a CUDA device the check reads one bool back to the host)."""
    x = asarray(a, dtype)
    if order == "F":
        x = asfortranarray(x)
    d = x._data
    if d.dtype.kind in "fc" or d.dtype == _dt.BF16:
        if not bool(x._device.xp.isfinite(d).all()):
            raise ValueError("array must not contain infs or NaNs")
    return x


_REQUIRE = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F", "FORTRAN": "F",
            "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O", "E": "E",
            "ENSUREARRAY": "E"}


def require(a, dtype=None, requirements=None, *, like=None):
    """An array of ``a`` (of ``dtype``) meeting ``requirements`` ("C"/"F" contiguous, "A" aligned, "W"
    writeable, "O" owning its data, "E" a base-class array; long names too), copied only where it falls short,
    as NumPy's ``require``."""
    x = asarray(a, dtype)
    if not requirements:
        return x
    try:  # a string is a sequence of one-letter flags ("CW"), as NumPy reads it
        req = {_REQUIRE[r.upper()] for r in requirements}
    except KeyError as e:
        raise KeyError(f"require: unknown requirement {e.args[0]!r}") from None
    if "C" in req and "F" in req:
        raise ValueError("Cannot specify both 'C' and 'F' order")
    d = x._data
    f = d.flags
    xp = x._device.xp
    if "C" in req and not f.c_contiguous:
        return new(xp.ascontiguousarray(d), x._device)
    if "F" in req and not f.f_contiguous:
        return new(xp.asfortranarray(d), x._device)
    owns = f.owndata if hasattr(f, "owndata") else True
    writeable = getattr(f, "writeable", True)
    if ("O" in req and not owns) or ("W" in req and not writeable):
        return new(d.copy(order="F" if "F" in req else "C" if "C" in req else "K"), x._device)
    return x

