"""numpy.ndarray's methods and attributes on gpk_array.Array (installed once at import by ``install``).

``T`` reverses all axes for any number of dimensions, as NumPy's: the 2025.12 standard says an error *should* be
raised for non-2-D arrays (RFC 2119 "should", not "must"), and NumPy scripts rely on ``v.T`` of vectors and stacks,
so NumPy's behaviour wins there; on 2-D arrays both agree.
"""
import builtins

import numpy as _np

from .. import _dtypes as _dt
from .. import _hostdata
from .. import _hooks
from .._array import Array, check_writeable, check_writeable_any
from .._device import CPU
from .._ops import searching as _se
from . import indexing as _ix
from . import linalg_funcs as _lf
from . import logic as _lg
from . import printing as _pr
from . import reductions as _rd
from . import shaping as _sh
from . import memory as _mem
from . import sorting as _so
from ._util import data_or_scalar, host, new, std_fn
from ._util import viewof as _viewof


def _reshape(self, *shape, order="C", copy=None):
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    if len(shape) == 1:
        shape = shape[0]
        c = shape.__class__
        if c is tuple or c is int:
            if order == "C" and copy is None:
                return _viewof(new(self._data.reshape(shape), self._device), self)
        elif c is Array or c is list:
            shape = tuple(shape) if c is list else shape
    return _viewof(_sh.reshape(self, shape, order, copy=copy), self)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """A copy cast to dtype (NumPy's casting: complex to real drops the imaginary part with a warning). A host-only
    dtype (strings, dates, records) gives an array on the CPU device; a host-only array cast to a standard dtype
    goes to the default device (gpk_array/_hostdata.py)."""
    try:
        dt = _dt.to_dtype(dtype)
    except TypeError:
        hd = _hostdata.host_dtype(dtype)
        if hd is None:
            raise
        d = _hostdata.host_value(self)
        if casting != "unsafe" and not _np.can_cast(d.dtype, hd, casting=casting):
            raise TypeError(f"Cannot cast array data from {d.dtype} to {hd} according to the rule {casting!r}") \
                from None
        return _hostdata.host_array(d.astype(hd, order=order, copy=True))
    d = self._data
    if not copy and d.dtype == dt:
        return self
    if casting == "same_value":
        return _mem.astype_same_value(self, d, dt, order)
    if casting != "unsafe" and not _np.can_cast(d.dtype, dt, casting=casting):
        raise TypeError(f"Cannot cast array data from {d.dtype} to {dt} according to the rule {casting!r}")
    if d.dtype.kind == "c" and dt.kind != "c":
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part", _np.exceptions.ComplexWarning,
                      stacklevel=2)
        d = d.real
    if _hooks.prealloc_hook is not None:
        _hooks.precheck(d.shape, dt, self._device)
    return new(d.astype(dt, order=order, copy=True), self._device)


def _flatten(self, order="C"):
    """A one-dimensional copy (NumPy's ``x.flatten(order="C")``; ``order`` "C", "F", "A" or "K")."""
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(self._data.nbytes, self._device)
    return new(self._data.flatten(order), self._device)


def _ravel(self, order="C"):
    """The array as one dimension (NumPy's ``x.ravel(order="C")``): a view where the layout allows, else a copy."""
    return _viewof(_sh.ravel(self, order), self)


def _copy(self, order="C"):
    """A copy on the same device (NumPy's ``x.copy(order="C")``)."""
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(self._data.nbytes, self._device)
    return new(self._data.copy(order=order), self._device)


def _fill(self, value):
    """Set every element to ``value`` in place (NumPy's ``x.fill``); a 0-d Array on another device is read as
    a scalar."""
    check_writeable(self)
    if value.__class__ is Array:
        if value._device is not self._device:
            value = value._scalar("scalar")
        else:
            value = value._data
    self._data.fill(value)


def _view(self, dtype=None, type=None):
    """A view with another dtype (where the layout allows: the last axis must be contiguous to change size), or as
    an instance of a subclass of ``ndarray`` (``x.view(Sub)``: its ``__array_finalize__(x)`` runs, as NumPy's)."""
    if isinstance(dtype, builtins.type) and issubclass(dtype, Array):
        dtype, type = None, dtype
    if dtype is None:
        r = new(self._data.view(), self._device)
    else:
        dt = _np.dtype(dtype)
        if dt.kind in _dt.HOST_KINDS:
            # a host-only dtype (x.view([('a', 'f8'), ('b', 'f8')]), void rows): on the CPU device, a view there
            # and a copy of an array of a CUDA device (gpk_array/_hostdata.py)
            return _hostdata.result(_hostdata.host_value(self).view(dt))
        if dt not in _dt.SUPPORTED:
            _dt.to_dtype(dt)
        r = new(self._data.view(dt), self._device)
        if r._device is not self._device:  # a host-only array viewed as a standard dtype: moved (a copy)
            return r
    r._base = self
    if type is not None and type is not Array and type.__name__ != "ndarray":
        sub = object.__new__(type)
        sub._data, sub._device, sub._base = r._data, r._device, self
        fin = getattr(sub, "__array_finalize__", None)
        if fin is not None:
            fin(self)
        return sub
    return r


def _base(self):
    """NumPy's ``x.base``: None for an array owning its memory, else the array owning the memory viewed (the
    Array a view was taken from, through a chain of views; an Array wrapping the owner where none is known)."""
    cls = self._data.__class__
    owner = self._data.base
    if owner is None or not isinstance(owner, cls):  # memory of another kind of object (bytes, a host buffer)
        return None
    while isinstance(owner.base, cls):
        owner = owner.base
    p = getattr(self, "_base", None)
    while p is not None:
        if p._data is owner:
            return p
        p = getattr(p, "_base", None)
    return new(owner, self._device)


def _resize(self, *new_shape, refcheck=True):
    """In place, as NumPy's ``x.resize(shape)``: the elements kept in memory order (C order for a C-contiguous
    array, Fortran order for a Fortran-ordered one, which stays Fortran-ordered), missing ones zero-filled;
    ``ValueError`` for an array that is neither (NumPy's "single-segment" rule)."""
    if len(new_shape) == 1 and new_shape[0].__class__ in (tuple, list):
        new_shape = tuple(new_shape[0])
    new_shape = tuple(int(n) for n in new_shape)
    if any(n < 0 for n in new_shape):
        raise ValueError("negative dimensions not allowed")
    check_writeable_any(self)
    d = self._data
    if d.flags.c_contiguous:
        order = "C"
    elif d.flags.f_contiguous:
        order = "F"
    else:
        raise ValueError("resize only works on single-segment arrays")
    xp = self._device.xp
    flat = d.ravel(order)
    size = int(_np.prod(new_shape, dtype=_np.int64))
    out = xp.zeros(new_shape, dtype=flat.dtype, order=order)  # owns its memory, as the resized NumPy array does
    k = min(size, flat.shape[0])
    if k:
        # out's memory in its own order: a view of it flattened in that order (reshape(-1, order) would copy
        # for a Fortran-ordered out; its transpose is C-contiguous)
        mem = out.reshape(-1) if order == "C" else out.T.reshape(-1)
        mem[:k] = flat[:k]
    self._data = out


def _item(self, *args):
    """The element as a Python scalar: ``x.item()`` (one element), ``x.item(flat_index)``, ``x.item(i, j)``."""
    d = self._data
    if not args:
        return self._scalar("scalar")
    if len(args) == 1 and args[0].__class__ is not tuple:
        i = int(args[0])
        if not -d.size <= i < d.size:
            raise IndexError("index out of bounds")
        v = d.reshape(-1)[i] if d.flags.c_contiguous else d.ravel()[i]
    else:
        key = args[0] if len(args) == 1 else args
        v = d[tuple(int(k) for k in key)]
    return v.item()


def _tolist(self):
    """The elements as nested Python lists of Python scalars (NumPy's ``x.tolist()``; copies GPU data to the
    host)."""
    return host(self).tolist()


def _tobytes(self, order="C"):
    """The raw bytes of the elements in ``order`` (NumPy's ``x.tobytes``; copies GPU data to the host)."""
    return host(self).tobytes(order)


def _tofile(self, fid, sep="", format="%s"):
    """Write the elements to a file (NumPy's ``x.tofile(fid, sep="", format="%s")``, through a host copy)."""
    host(self).tofile(fid, sep, format)


def _sort(self, axis=-1, kind=None, order=None, *, descending=False, stable=None):
    """Sort in place along ``axis`` (NumPy's ``x.sort``; stable by default here; ``descending`` as the standard's
    ``sort``)."""
    check_writeable(self)
    r = _so.sort(self, axis, kind, order, descending=descending, stable=stable)
    self._data[...] = r._data


def _argsort(self, axis=-1, kind=None, order=None, *, descending=False, stable=None):
    """Indices that sort along ``axis`` (NumPy's ``x.argsort``; the standard's ``descending``/``stable``)."""
    return _so.argsort(self, axis, kind, order, descending=descending, stable=stable)


def _partition(self, kth, axis=-1, kind="introselect", order=None):
    """Partition in place around the ``kth`` element(s) along ``axis`` (NumPy's ``x.partition``)."""
    check_writeable(self)
    self._data[...] = _so.partition(self, kth, axis)._data


def _argpartition(self, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition along ``axis`` around ``kth`` (NumPy's ``x.argpartition``)."""
    return _so.argpartition(self, kth, axis)


def _transpose(self, *axes):
    """Axes permuted (NumPy's ``x.transpose(*axes)``): reversed without arguments, else in the order given
    (``x.transpose(1, 0, 2)`` or ``x.transpose((1, 0, 2))``); a view."""
    if not axes or (len(axes) == 1 and axes[0] is None):
        return _viewof(new(self._data.transpose(), self._device), self)
    if len(axes) == 1 and axes[0].__class__ in (tuple, list):
        axes = axes[0]
    return _viewof(_sh.transpose(self, axes), self)


def _nonzero(self):
    """A tuple of index arrays of the nonzero elements, one per dimension (NumPy's ``x.nonzero()``)."""
    return _nonzero_fn(self)


def _compress(self, condition, axis=None, out=None):
    """The slices along ``axis`` where ``condition`` is true (NumPy's ``x.compress``)."""
    return _ix.compress(condition, self, axis, out)


def _conj(self):
    """The complex conjugate, element-wise (NumPy's ``x.conj()`` / ``x.conjugate()``)."""
    return _conjugate(self)


def _T(self):
    """NumPy's ``x.T``: every axis reversed, for any number of dimensions (a vector is returned unchanged in
    shape); a view."""
    r = new(self._data.T, self._device)
    r._base = self      # always a view of self's memory
    return r


def _get_real(self):
    """The real part (NumPy's ``x.real``; settable)."""
    return new(self._data.real, self._device)


def _set_real(self, value):
    check_writeable(self)
    v = data_or_scalar(value, self._device)
    if self._data.dtype.kind == "c":
        self._data.real = v
    else:
        self._data[...] = v


def _get_imag(self):
    """The imaginary part (NumPy's ``x.imag``: zeros of the same dtype for a real array; settable for complex
    arrays)."""
    d = self._data
    if d.dtype.kind == "c":
        return new(d.imag, self._device)
    return new(self._device.xp.zeros(d.shape, dtype=d.dtype), self._device)


def _set_imag(self, value):
    check_writeable(self)
    if self._data.dtype.kind != "c":
        raise TypeError("array does not have imaginary part to set")
    self._data.imag = data_or_scalar(value, self._device)


def _get_shape(self):
    """The shape, a tuple of ints. Settable as NumPy's (``x.shape = (3, 2)`` reshapes in place where a view can;
    ``AttributeError`` otherwise, ``ValueError`` for a shape of another size)."""
    return self._data.shape


def _set_shape(self, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    v = self._data.view()
    try:
        v.shape = shape   # a shape of another size: the backend's ValueError, as NumPy's
    except AttributeError:
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a copy with "
                             "the desired shape.") from None
    self._data = v


class flatiter:
    """``x.flat``: the array as one-dimensional, in C order, for reading, assignment and iteration."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def _flat(self):
        d = self.base._data
        return d.reshape(-1) if d.flags.c_contiguous else d.ravel()

    def __len__(self):
        return self.base._data.size

    def __getitem__(self, key):
        dev = self.base._device
        if key.__class__ is Array:
            key = key._data
        elif isinstance(key, list):
            key = dev.xp.asarray(key)
        return new(self._flat()[key], dev)

    def __setitem__(self, key, value):
        base = self.base
        check_writeable(base)
        dev = base._device
        d = base._data
        if key.__class__ is Array:
            key = key._data
        elif isinstance(key, list):
            key = dev.xp.asarray(key)
        v = data_or_scalar(value, dev)
        if d.flags.c_contiguous:
            d.reshape(-1)[key] = v
        else:
            tmp = d.ravel()
            tmp[key] = v
            d[...] = tmp.reshape(d.shape)

    def __iter__(self):
        dev = self.base._device
        f = self._flat()
        for i in range(f.shape[0]):
            yield new(f[i], dev)

    def copy(self):
        return new(self.base._data.flatten(), self.base._device)

    def __array__(self, dtype=None, copy=None):
        return _np.asarray(host(self.base).reshape(-1), dtype=dtype)


def _flat(self):
    """NumPy's ``x.flat``: a one-dimensional iterator over the elements in C order, indexable and assignable."""
    return flatiter(self)


def _set_flat(self, value):
    flatiter(self)[...] = value


def _round_builtin(self, ndigits=None):
    """Python's ``round(x)`` / ``round(x, n)`` as NumPy's: a 0-d array rounds as the NumPy scalar NumPy's reduction
    would have returned (``round(x)`` a Python int, ``round(x, n)`` a NumPy scalar of x's dtype, such as
    ``numpy.float64``, a float subclass: hashable and JSON-serialisable); arrays of one or more dimensions give an
    Array rounded half to even, as ``numpy.round``."""
    if self._data.ndim == 0:
        v = host(self)[()]
        if not hasattr(v, "__round__"):  # ml_dtypes' bfloat16 scalar: round its Python value
            v = v.item()
        return builtins.round(v, ndigits)
    return _lg.round(self, 0 if ndigits is None else ndigits)


def _contains(self, value):
    return builtins.bool((self == value)._data.any())


def _divmod(self, other):
    return (self // other, self % other)


def _rdivmod(self, other):
    return (other // self, other % self)


def _strides(self):
    """Bytes to step in each dimension (NumPy's ``x.strides``, of the backing array)."""
    return self._data.strides


def _nbytes(self):
    """The number of bytes the elements take (``size * itemsize``)."""
    return self._data.nbytes


def _itemsize(self):
    """The number of bytes of one element."""
    return self._data.itemsize


def _flags(self):
    """NumPy's ``x.flags`` (``C_CONTIGUOUS``, ``F_CONTIGUOUS``, ``OWNDATA``, ``WRITEABLE``, ...): the NumPy array's
    own on the CPU device; on a CUDA device a ``DeviceFlags`` whose ``writeable`` flag gpk_array keeps and checks
    (``x.flags.writeable = False``, then a write raises ``ValueError``), as CuPy's arrays have none."""
    if self._device is CPU:
        return self._data.flags
    return _mem.DeviceFlags(self)


def _cumsum(self, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (NumPy's ``x.cumsum``; over the flattened array when ``axis`` is None)."""
    return _rd.cumsum(self, axis, dtype, out)


def _cumprod(self, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (NumPy's ``x.cumprod``; over the flattened array when ``axis`` is
    None)."""
    return _rd.cumprod(self, axis, dtype, out)


def _ptp(self, axis=None, out=None, keepdims=False):
    """Peak to peak, ``max - min`` along ``axis`` (NumPy's ``ptp``)."""
    return _rd.ptp(self, axis, out, keepdims)


def _dot(self, b, out=None):
    """NumPy's ``dot(x, b)``: inner product of vectors, matrix product of 2-D arrays, sum product over the last
    axis of ``x`` and the second-to-last of ``b`` otherwise."""
    return _lf.dot(self, b, out)


def _trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal (NumPy's ``x.trace``)."""
    return _lf.trace(self, offset, axis1, axis2, dtype, out)


def _diagonal(self, offset=0, axis1=0, axis2=1):
    """The diagonal at ``offset`` between ``axis1`` and ``axis2`` (NumPy's ``x.diagonal``)."""
    return _lf.diagonal(self, offset, axis1, axis2)


def _choose(self, choices, out=None, mode="raise"):
    """NumPy's ``choose``: elements picked from ``choices`` by this integer array (``mode`` raise, wrap or clip)."""
    return _ix.choose(self, choices, out, mode)


def _put(self, indices, values, mode="raise"):
    """Set the flat positions ``indices`` to ``values`` in place (NumPy's ``x.put``; ``mode`` raise, wrap or
    clip)."""
    _ix.put(self, indices, values, mode)


def _take(self, indices, axis=None, out=None, mode="raise"):
    """Elements at ``indices`` along ``axis`` (NumPy's ``x.take``; the flattened array when ``axis`` is None)."""
    return _ix.take(self, indices, axis, out, mode)


def _searchsorted(self, v, side="left", sorter=None):
    """Insertion points of ``v`` in this sorted 1-D array (NumPy's ``x.searchsorted``)."""
    return _so.searchsorted(self, v, side, sorter)


def _clip(self, min=None, max=None, out=None, **kwargs):
    """Values limited to ``[min, max]`` (NumPy's ``x.clip``)."""
    return _ix.clip(self, min, max, out, **kwargs)


def _round(self, decimals=0, out=None):
    """Rounded to ``decimals`` decimals (NumPy's ``x.round``; halves to even)."""
    return _lg.round(self, decimals, out)


def _repeat(self, repeats, axis=None):
    """Each element repeated ``repeats`` times along ``axis`` (NumPy's ``x.repeat``; flattened when ``axis`` is
    None)."""
    return _sh.repeat(self, repeats, axis)


def _squeeze(self, axis=None):
    """Axes of length one removed (NumPy's ``x.squeeze``; all of them when ``axis`` is None)."""
    return _sh.squeeze(self, axis)


def _swapaxes(self, axis1, axis2):
    """A view with ``axis1`` and ``axis2`` interchanged (NumPy's ``x.swapaxes``)."""
    return _sh.swapaxes(self, axis1, axis2)


def _dump(self, file):
    """Pickle the array to ``file`` (a path or a binary file object), NumPy's ``x.dump``; ``pickle.load`` gives it
    back on its device."""
    import pickle
    if isinstance(file, str):
        with open(file, "wb") as f:
            pickle.dump(self, f)
    else:
        pickle.dump(self, file)


_nonzero_fn = std_fn("nonzero", _se)
_conjugate = None


def install(array_cls):
    """Add NumPy's ndarray methods and attributes to the Array class."""
    global _conjugate
    from .ufuncs import conjugate
    _conjugate = conjugate
    methods = {
        "reshape": _reshape, "astype": _astype, "flatten": _flatten, "ravel": _ravel, "copy": _copy,
        "fill": _fill, "view": _view, "item": _item, "tolist": _tolist, "tobytes": _tobytes, "tofile": _tofile,
        "dump": _dump, "sort": _sort, "argsort": _argsort, "partition": _partition, "argpartition": _argpartition,
        "transpose": _transpose, "nonzero": _nonzero, "compress": _compress, "conj": _conj, "conjugate": _conj,
        "sum": _rd.sum, "prod": _rd.prod, "mean": _rd.mean, "std": _rd.std, "var": _rd.var, "min": _rd.min,
        "max": _rd.max, "argmin": _rd.argmin, "argmax": _rd.argmax, "all": _rd.all, "any": _rd.any,
        "cumsum": _cumsum, "cumprod": _cumprod, "ptp": _ptp, "dot": _dot, "trace": _trace,
        "diagonal": _diagonal, "choose": _choose, "put": _put, "take": _take, "searchsorted": _searchsorted,
        "clip": _clip, "round": _round, "repeat": _repeat, "squeeze": _squeeze, "swapaxes": _swapaxes,
        "__round__": _round_builtin, "__contains__": _contains, "__divmod__": _divmod, "__rdivmod__": _rdivmod,
        "__repr__": _pr._repr, "__str__": _pr._str, "resize": _resize, "getfield": _mem.getfield,
        "setfield": _mem.setfield, "byteswap": _mem.byteswap, "setflags": _mem.setflags,
    }
    for name, fn in methods.items():
        setattr(array_cls, name, fn)
    props = {
        "T": property(_T), "real": property(_get_real, _set_real), "imag": property(_get_imag, _set_imag),
        "shape": property(_get_shape, _set_shape), "flat": property(_flat, _set_flat),
        "strides": property(_strides), "nbytes": property(_nbytes), "itemsize": property(_itemsize),
        "flags": property(_flags), "base": property(_base),
    }
    for name, p in props.items():
        setattr(array_cls, name, p)

