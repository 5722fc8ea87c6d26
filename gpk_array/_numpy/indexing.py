"""Indexing helpers with NumPy's signatures: where with one argument, take with ``mode=``, put, copyto, choose,
select, fill_diagonal, index grids (mgrid, ogrid, r_, c_, ix_), triangle and diagonal indices, apply_along_axis,
vectorize, piecewise, clip with ``a_min``/``a_max``."""
import numpy as _np

from .. import _dtypes as _dt
from .. import _hostdata
from .._array import Array, check_writeable
from .._device import CPU, as_device, default_device
from .._ops import elementwise as _ew
from .._ops import indexing as _ix
from .._ops import searching as _se
from ._util import (NoValue, PY_SCALARS, data, data_or_scalar, dev_of, finish, new, normalize_axis, oom_guard,
                    std_fn, to_array)

__all__ = ["where", "argwhere", "flatnonzero", "take", "take_along_axis", "put", "put_along_axis", "putmask",
           "place", "extract", "compress", "choose", "select", "copyto", "fill_diagonal", "diag_indices",
           "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from",
           "unravel_index", "ravel_multi_index", "ix_", "mgrid", "ogrid", "r_", "c_", "s_", "index_exp", "ndindex",
           "ndenumerate", "apply_along_axis", "vectorize", "piecewise", "clip", "apply_over_axes",
           "mask_indices"]

_where = std_fn("where", _se)
_nonzero = std_fn("nonzero", _se)
_take = std_fn("take", _ix)
_take_along_axis = std_fn("take_along_axis", _ix)
_clip = std_fn("clip", _ew)

s_ = _np.s_
index_exp = _np.index_exp
ndindex = _np.ndindex


def where(condition, x=None, y=None, /):
    """NumPy's ``where``: ``where(cond, x, y)`` picks element-wise (the standard's), ``where(cond)`` is
    ``nonzero(cond)``."""
    if x is None and y is None:
        return _nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    try:
        return _where(condition, x, y)
    except (TypeError, ValueError) as e:  # strings, dates (gpk_array/_hostdata.py); DeviceError is a ValueError
        return _hostdata.fallback(e, _np.where, condition, x, y)


@oom_guard
def argwhere(a):
    """Indices of non-zero elements, one row per element: shape (N, a.ndim)."""
    x = to_array(a)
    return new(x._device.xp.argwhere(x._data).astype(_dt.I64, copy=False), x._device)


@oom_guard
def flatnonzero(a):
    """Indices of non-zero elements of the flattened array."""
    x = to_array(a)
    return new(x._device.xp.flatnonzero(x._data).astype(_dt.I64, copy=False), x._device)


@oom_guard
def take(a, indices, /, axis=None, out=None, mode="raise"):
    """NumPy's ``take`` (and the standard's): axis=None takes from the flattened array; ``mode`` wrap/clip."""
    x = to_array(a)
    dev = x._device
    if axis is None and x._data.ndim != 1:
        x = new(x._data.reshape(-1), dev)
        axis = 0
    if mode == "raise":
        if axis is None:
            axis = 0
        r = _take(x, indices, axis=axis)
        return r if out is None else finish(r._data, dev, out)
    if mode not in ("wrap", "clip"):
        raise ValueError(f"mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    xp = dev.xp
    ax = 0 if axis is None else normalize_axis(axis, x.ndim)
    n = x._data.shape[ax]
    idx = data(indices, dev)
    idx = idx % n if mode == "wrap" else xp.clip(idx, 0, n - 1)
    return finish(xp.take(x._data, idx, axis=ax), dev, out)


@oom_guard
def take_along_axis(arr, indices, /, axis=-1):
    """NumPy's ``take_along_axis(arr, indices, axis=-1)`` (and the standard's); axis=None flattens arr."""
    if axis is None:
        x = to_array(arr)
        return _take_along_axis(new(x._data.reshape(-1), x._device), indices, axis=0)
    return _take_along_axis(arr, indices, axis=axis)


def _check_bounds(idx, n, xp):
    bad = (idx < -n) | (idx >= n)
    if bool(bad.any()):
        raise IndexError(f"index out of bounds for size {n}")


def put(a, ind, v, mode="raise"):
    """Set the flattened a at indices ind to v (repeated as needed), in place."""
    if a.__class__ is not Array:
        raise TypeError("put needs a gpk_array Array to modify in place")
    check_writeable(a)
    dev = a._device
    xp = dev.xp
    idx = data(ind, dev)
    vals = data_or_scalar(v, dev)
    if xp is _np:
        _np.put(a._data, idx, vals, mode=mode)
        return
    n = a._data.size
    if mode == "raise":
        _check_bounds(idx, n, xp)
        mode = "wrap"
    xp.put(a._data, idx, vals, mode=mode)


def put_along_axis(arr, indices, values, axis):
    """Set values at indices along axis, in place (NumPy's ``put_along_axis``)."""
    if arr.__class__ is not Array:
        raise TypeError("put_along_axis needs a gpk_array Array to modify in place")
    check_writeable(arr)
    dev = arr._device
    d = arr._data
    idx = data(indices, dev)
    if axis is None:
        flat = d.reshape(-1)
        dev.xp.put_along_axis(flat, idx, data_or_scalar(values, dev), 0)
        if not d.flags.c_contiguous:
            d[...] = flat.reshape(d.shape)
        return
    dev.xp.put_along_axis(d, idx, data_or_scalar(values, dev), normalize_axis(axis, d.ndim))


def putmask(a, mask, values):
    """Set a[mask] from values (repeated as needed), in place."""
    if a.__class__ is not Array:
        raise TypeError("putmask needs a gpk_array Array to modify in place")
    check_writeable(a)
    dev = a._device
    dev.xp.putmask(a._data, data(mask, dev), data_or_scalar(values, dev))


def place(arr, mask, vals):
    """Set arr[mask] to the first values of vals (repeated as needed), in place."""
    if arr.__class__ is not Array:
        raise TypeError("place needs a gpk_array Array to modify in place")
    check_writeable(arr)
    dev = arr._device
    dev.xp.place(arr._data, data(mask, dev), data(vals, dev))


@oom_guard
def extract(condition, arr):
    """The elements of arr where condition is true (both flattened)."""
    x = to_array(arr)
    dev = x._device
    return new(dev.xp.extract(data(condition, dev), x._data), dev)


@oom_guard
def compress(condition, a, axis=None, out=None):
    """The slices of a along axis where condition is true."""
    x = to_array(a)
    dev = x._device
    c = data(condition, dev)
    d = x._data if axis is not None else x._data.reshape(-1)
    r = dev.xp.compress(c, d, axis=axis if axis is not None else 0)
    return finish(r, dev, out)


@oom_guard
def choose(a, choices, out=None, mode="raise"):
    """Pick from choices[a[i]] element-wise."""
    x = to_array(a)
    dev = x._device
    ch = [data(c, dev) for c in choices] if choices.__class__ is not Array else choices._data
    if isinstance(ch, list) and ch:
        ch = dev.xp.stack(dev.xp.broadcast_arrays(*ch))
    r = dev.xp.choose(x._data, ch, mode=mode)
    return finish(r, dev, out)


@oom_guard
def select(condlist, choicelist, default=0):
    """Element-wise, the choice for the first true condition, else default (NumPy's ``select``)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    dev = dev_of(*condlist, *choicelist, default)
    xp = dev.xp
    conds = [data(c, dev) for c in condlist]
    choices = [data_or_scalar(c, dev) for c in choicelist]
    dflt = data_or_scalar(default, dev)
    if xp is _np:
        return new(_np.asarray(_np.select(conds, choices, dflt)), dev)
    for c in conds:
        if c.dtype != _np.bool_:
            raise TypeError("invalid entry in condlist: should be boolean ndarray")
    dt = _np.result_type(*[c if c.__class__ in PY_SCALARS else c.dtype for c in choices + [dflt]])
    shape = _np.broadcast_shapes(*[c.shape for c in conds], *[getattr(c, "shape", ()) for c in choices],
                                 getattr(dflt, "shape", ()))
    r = xp.empty(shape, dtype=dt)
    r[...] = dflt
    for c, v in zip(reversed(conds), reversed(choices)):
        r = xp.where(c, xp.asarray(v, dtype=dt), r)
    return new(r, dev)


def copyto(dst, src, casting="same_kind", where=True):
    """Copy src into dst (broadcasting), where ``where`` is true, under NumPy's casting rule."""
    if dst.__class__ is not Array:
        raise TypeError("copyto needs a gpk_array Array as dst")
    check_writeable(dst)
    dev = dst._device
    xp = dev.xp
    s = data_or_scalar(src, dev)
    if s.__class__ in PY_SCALARS:
        s = xp.asarray(s, dtype=_np.result_type(dst._data.dtype, s) if casting != "unsafe" else dst._data.dtype)
    if where is True:
        xp.copyto(dst._data, s, casting=casting)
    else:
        xp.copyto(dst._data, s, casting=casting, where=data(where, dev))


def fill_diagonal(a, val, wrap=False):
    """Fill the main diagonal of a (in place); values repeat cyclically."""
    if a.__class__ is not Array:
        raise TypeError("fill_diagonal needs a gpk_array Array to modify in place")
    check_writeable(a)
    dev = a._device
    dev.xp.fill_diagonal(a._data, data_or_scalar(val, dev), wrap=wrap)


def _dev(device):
    return default_device() if device is None else as_device(device)


def diag_indices(n, ndim=2, *, device=None):
    """Indices of the main diagonal of an ``ndim``-dimensional array of side ``n``: a tuple of ``ndim`` equal arrays
    ``arange(n)`` (NumPy's ``diag_indices``; ``device=`` as in the standard)."""
    dev = _dev(device)
    i = dev.xp.arange(n)
    return tuple(new(i, dev) for _ in range(ndim))


def diag_indices_from(arr):
    """``diag_indices`` for ``arr``, whose dimensions must all have the same length."""
    x = to_array(arr)
    if x.ndim < 2 or len(set(x.shape)) != 1:
        raise ValueError("all dimensions of the input must be of equal length")
    i = x._device.xp.arange(x.shape[0])
    return tuple(new(i, x._device) for _ in range(x.ndim))


def tril_indices(n, k=0, m=None, *, device=None):
    """Row and column indices of the lower triangle (on and below diagonal ``k``) of an (n, m) array, int64 (NumPy's
    ``tril_indices``; ``device=`` as in the standard)."""
    dev = _dev(device)
    return tuple(new(i.astype(_dt.I64, copy=False), dev) for i in dev.xp.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None, *, device=None):
    """Row and column indices of the upper triangle (on and above diagonal ``k``) of an (n, m) array, int64 (NumPy's
    ``triu_indices``; ``device=`` as in the standard)."""
    dev = _dev(device)
    return tuple(new(i.astype(_dt.I64, copy=False), dev) for i in dev.xp.triu_indices(n, k, m))


def mask_indices(n, mask_func, k=0, *, device=None):
    """The indices of the nonzero entries of ``mask_func(ones((n, n), int), k)`` (``mask_func`` e.g. ``triu`` or
    ``tril``), as NumPy's ``mask_indices``; on the default device (``device=`` picks another)."""
    dev = _dev(device)
    m = new(dev.xp.ones((n, n), dtype=_dt.I64), dev)
    a = to_array(mask_func(m, k), dev)
    return tuple(new(i.astype(_dt.I64, copy=False), dev) for i in dev.xp.nonzero(a._data != 0))


def tril_indices_from(arr, k=0):
    """``tril_indices`` for the shape of the 2-D array ``arr``, on its device."""
    x = to_array(arr)
    if x.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(x.shape[-2], k=k, m=x.shape[-1], device=x._device)


def triu_indices_from(arr, k=0):
    """``triu_indices`` for the shape of the 2-D array ``arr``, on its device."""
    x = to_array(arr)
    if x.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(x.shape[-2], k=k, m=x.shape[-1], device=x._device)


@oom_guard
def unravel_index(indices, shape, order="C"):
    """Convert flat indices to a tuple of coordinate arrays (of NumPy integers for a Python integer index, as
    NumPy's: no array, so no device, is involved)."""
    if isinstance(indices, (int, _np.integer)) and not isinstance(indices, bool):
        return _np.unravel_index(indices, tuple(shape), order)
    dev = dev_of(indices)
    idx = data(indices, dev)
    return tuple(new(r.astype(_dt.I64, copy=False), dev) for r in dev.xp.unravel_index(idx, tuple(shape), order))


@oom_guard
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Convert a tuple of coordinate arrays to flat indices (a NumPy integer for Python integer coordinates)."""
    if all(isinstance(i, (int, _np.integer)) and not isinstance(i, bool) for i in multi_index):
        return _np.ravel_multi_index(tuple(multi_index), tuple(dims), mode=mode, order=order)
    dev = dev_of(*multi_index)
    idx = tuple(data(i, dev) for i in multi_index)
    if dev.xp is _np:
        r = _np.ravel_multi_index(idx, tuple(dims), mode=mode, order=order)
    else:
        r = dev.xp.ravel_multi_index(idx, tuple(dims), mode="wrap" if mode == "raise" else mode, order=order)
    return new(dev.xp.asarray(r).astype(_dt.I64, copy=False), dev)


def ix_(*args):
    """Open mesh from sequences: index arrays that broadcast to the cross product."""
    dev = dev_of(*args)
    return tuple(new(r, dev) for r in dev.xp.ix_(*[data(a, dev) for a in args]))


# --- index grids ------------------------------------------------------------------------------------------------
def _slice_values(sl, xp):
    start = 0 if sl.start is None else sl.start
    step = 1 if sl.step is None else sl.step
    stop = sl.stop
    if isinstance(step, complex):
        num = int(abs(step))
        return xp.linspace(start, stop, num)
    if any(isinstance(v, float) for v in (start, stop, step)):
        n = int(_np.ceil((stop - start) / step))
        return xp.arange(n, dtype=_np.float64) * step + start
    return xp.arange(start, stop, step)


class _Grid:
    """``mgrid[...]`` (dense) and ``ogrid[...]`` (open) index grids on the default device."""

    __slots__ = ("_sparse",)

    def __init__(self, sparse):
        self._sparse = sparse

    def __getitem__(self, key):
        dev = default_device()
        xp = dev.xp
        if isinstance(key, slice):
            return new(_slice_values(key, xp), dev)
        parts = [_slice_values(k, xp) for k in key]
        dt = _np.result_type(*[p.dtype for p in parts])
        parts = [p.astype(dt, copy=False) for p in parts]
        n = len(parts)
        shaped = [p.reshape((1,) * i + (p.shape[0],) + (1,) * (n - i - 1)) for i, p in enumerate(parts)]
        if self._sparse:
            return tuple(new(p, dev) for p in shaped)
        shape = tuple(p.shape[0] for p in parts)
        return new(xp.stack([xp.broadcast_to(p, shape) for p in shaped]), dev)


mgrid = _Grid(False)
ogrid = _Grid(True)


class _Concat:
    """``r_[...]`` (along the first axis) and ``c_[...]`` (along the last axis, 1-D items as columns); a leading
    string "axis[,ndmin[,trans1d]]" sets where items of fewer than ndmin dimensions put their own axes, as NumPy's
    AxisConcatenator does (trans1d -1: last, the default of r_; 0: first, that of c_)."""

    __slots__ = ("_axis", "_ndmin", "_trans1d")

    def __init__(self, axis, ndmin, trans1d):
        self._axis = axis
        self._ndmin = ndmin
        self._trans1d = trans1d

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self._axis, self._ndmin, self._trans1d
        if key and isinstance(key[0], str):
            spec = key[0].split(",")
            if spec[0] in ("r", "c"):   # a matrix: the concatenation as a row (or a 1-D one as a column)
                from .matrix import as_r_result
                return as_r_result(self[key[1:]], spec[0] == "c")
            try:
                axis = int(spec[0])
                if len(spec) > 1:
                    ndmin = int(spec[1])
                if len(spec) > 2:
                    trans1d = int(spec[2])
            except ValueError:
                raise ValueError(f"unknown special directive {key[0]!r}") from None
            key = key[1:]
        dev = dev_of(*key)
        xp = dev.xp
        parts = []
        for k in key:
            if isinstance(k, slice):
                p = _slice_values(k, xp)
            elif k.__class__ in PY_SCALARS or isinstance(k, _np.generic):
                p = xp.asarray([k])
            else:
                p = data(k, dev)
                if p.ndim == 0:
                    p = p.reshape(1)
            if p.ndim < ndmin:
                p = _promote(p, ndmin, trans1d)
            parts.append(p)
        if not parts:
            return new(xp.empty((0,)), dev)
        dt = _np.result_type(*[p.dtype for p in parts])
        return new(xp.concatenate([p.astype(dt, copy=False) for p in parts], axis=axis), dev)


def _promote(p, ndmin, trans1d):
    """p with ones prepended to ndmin dimensions, its own axes then moved to start at trans1d (-1: stay last)."""
    k2 = ndmin - p.ndim
    p = p.reshape((1,) * k2 + p.shape)
    if trans1d == -1:
        return p
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return p.transpose(axes[:k1] + axes[k2:] + axes[k1:k2])


r_ = _Concat(0, 1, -1)
c_ = _Concat(-1, 2, 0)


def ndenumerate(arr):
    """Iterate over (index, value) pairs; values are read on the host (Python iteration over elements)."""
    x = to_array(arr)
    h = x._data if x._device is CPU else x._data.get()
    return _np.ndenumerate(h)


# --- functional -------------------------------------------------------------------------------------------------
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to the 1-D slices of arr along axis; results assembled as NumPy does."""
    x = to_array(arr)
    dev = x._device
    xp = dev.xp
    axis = normalize_axis(axis, x.ndim)
    d = xp.moveaxis(x._data, axis, -1)
    outer = d.shape[:-1]
    res = [data(func1d(new(d[idx], dev), *args, **kwargs), dev) for idx in _np.ndindex(*outer)]
    if not res:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    dt = _np.result_type(*[r.dtype for r in res])
    stacked = xp.stack([r.astype(dt, copy=False) for r in res]).reshape(outer + res[0].shape)
    k = res[0].ndim
    if k:
        src = tuple(range(len(outer), stacked.ndim))
        stacked = xp.moveaxis(stacked, src, tuple(range(axis, axis + k)))
    return new(stacked, dev)


def apply_over_axes(func, a, axes):
    """func(a, axis) applied over each of axes in turn, the result kept at a's number of dimensions."""
    val = to_array(a)
    dev = val._device
    nd = val.ndim
    for axis in ([axes] if isinstance(axes, int) else axes):
        axis = axis + nd if axis < 0 else axis
        res = to_array(func(val, axis), dev)
        if res.ndim == val.ndim:
            val = res
        elif res.ndim == val.ndim - 1:
            val = new(dev.xp.expand_dims(res._data, axis), dev)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return val


class vectorize:
    """A Python function applied element by element. On the CPU through ``numpy.vectorize``; on a CUDA device
    through ``cupy.vectorize``, which compiles the function (a subset of Python) into a kernel."""

    def __init__(self, pyfunc=NoValue, otypes=None, doc=None, excluded=None, cache=False, signature=None):
        self.pyfunc = pyfunc
        self.otypes = otypes
        self.excluded = excluded
        self.signature = signature
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)
        self._np = None
        self._cp = None

    def __call__(self, *args, **kwargs):
        if self.pyfunc is NoValue:
            return vectorize(args[0], otypes=self.otypes, excluded=self.excluded, signature=self.signature)
        dev = dev_of(*args, *kwargs.values())
        ins = [data(a, dev) if not isinstance(a, (str, type(None))) and not callable(a) else a for a in args]
        kw = {k: (data(v, dev) if not isinstance(v, (str, type(None))) and not callable(v) else v)
              for k, v in kwargs.items()}
        if dev.xp is _np:
            if self._np is None:
                self._np = _np.vectorize(self.pyfunc, otypes=self.otypes, excluded=self.excluded,
                                         signature=self.signature)
            r = self._np(*ins, **kw)
        else:
            if self._cp is None:
                self._cp = dev.xp.vectorize(self.pyfunc, otypes=self.otypes)
            r = self._cp(*ins, **kw)
        if isinstance(r, tuple):
            return tuple(new(dev.xp.asarray(v), dev) for v in r)
        return new(dev.xp.asarray(r), dev)


@oom_guard
def piecewise(x, condlist, funclist, *args, **kw):
    """Values from funclist[i] where condlist[i] holds; an extra function is the 'otherwise' case."""
    a = to_array(x)
    dev = a._device
    xp = dev.xp
    if isinstance(condlist, (Array, _np.ndarray)) and condlist.ndim == a.ndim or \
            not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    conds = [data(c, dev).astype(bool) for c in condlist]
    if len(funclist) == len(conds) + 1:
        other = ~xp.any(xp.stack(conds), axis=0) if conds else xp.ones(a.shape, dtype=bool)
        conds.append(other)
    elif len(funclist) != len(conds):
        raise ValueError(f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} functions "
                         f"are expected")
    y = xp.zeros(a.shape, dtype=a._data.dtype)
    for c, f in zip(conds, funclist):
        c = xp.broadcast_to(c, a.shape)
        if callable(f):
            vals = f(new(a._data[c], dev), *args, **kw)
            y[c] = data_or_scalar(vals, dev)
        else:
            y[c] = data_or_scalar(f, dev)
    return new(y, dev)


@oom_guard
def clip(a, /, min=None, max=None, out=None, *, a_min=NoValue, a_max=NoValue, **kwargs):
    """NumPy's ``clip(a, a_min, a_max, out=None)`` with ``min=``/``max=`` (and the standard's ``clip``)."""
    if a_min is not NoValue:
        min = a_min
    if a_max is not NoValue:
        max = a_max
    return _clip(a, min, max, out=out)

