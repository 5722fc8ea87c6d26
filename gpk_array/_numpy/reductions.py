"""Reductions with NumPy's signatures: positional ``axis``/``dtype``/``out``, ``ddof``, ``initial``, ``where``; the
NaN-ignoring family; cumsum/cumprod (axis=None flattens); ptp, amax/amin, count_nonzero.

The standard's call forms (keyword axis/keepdims/dtype/correction) go to the standard's implementations.
"""
import numpy as _np

from .. import _dtypes as _dt
from .. import _hostdata
from .._array import Array
from .._ops import searching as _se
from .._ops import statistical as _st
from ._util import NoValue, data, finish, new, oom_guard, std_fn, to_array, acc_dtype

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "mean", "std", "var", "all", "any", "argmax", "argmin",
           "cumsum", "cumprod", "ptp", "count_nonzero", "nansum", "nanprod", "nanmax", "nanmin", "nanmean",
           "nanstd", "nanvar", "nanargmax", "nanargmin", "nancumsum", "nancumprod", "diff", "ediff1d"]

_sum = std_fn("sum", _st)
_prod = std_fn("prod", _st)
_max = std_fn("max", _st)
_min = std_fn("min", _st)
_mean = std_fn("mean", _st)
_std = std_fn("std", _st)
_var = std_fn("var", _st)
_all = std_fn("all", _st)
_any = std_fn("any", _st)
_diff = std_fn("diff", _st)
_argmax = std_fn("argmax", _se)
_argmin = std_fn("argmin", _se)
_count_nonzero = std_fn("count_nonzero", _se)


def _axis(axis):
    return tuple(axis) if axis.__class__ is list else axis


def _arr(a):
    """a as an Array (the standard's functions take Arrays and nested sequences; NumPy's any array-like: range,
    subclasses of ndarray)."""
    return a if a.__class__ is Array else to_array(a)


def _ret(r, out):
    return r if out is None else finish(r._data, r._device, out)


# --- sum / prod -----------------------------------------------------------------------------------------------
def _sumlike(x, fname, axis, dtype, keepdims, initial, where):
    """sum/prod with initial= and where= (NumPy's own on the CPU, an identity-filled reduction elsewhere)."""
    dev = x._device
    xp = dev.xp
    d = x._data
    dt = acc_dtype(d.dtype, dtype)
    if xp is _np:
        kw = {}
        if initial is not NoValue:
            kw["initial"] = initial
        if where is not True:
            kw["where"] = data(where, dev)
        return new(_np.asarray(getattr(_np, fname)(d, axis=axis, dtype=dt, keepdims=keepdims, **kw)), dev)
    ident = 0 if fname == "sum" else 1
    if where is not True:
        d = xp.where(data(where, dev), d, ident)
    r = getattr(xp, fname)(d, axis=axis, dtype=dt, keepdims=keepdims)
    if initial is not NoValue:
        r = (r + initial) if fname == "sum" else (r * initial)
        r = r.astype(dt, copy=False)
    return new(r, dev)


def sum(a, /, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True):
    """NumPy's ``sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=0, where=True)``."""
    if initial is NoValue and where is True:
        if a.__class__ is Array and out is None and axis.__class__ is not list:  # the common call, fewer calls
            return _sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
        return _ret(_sum(_arr(a), axis=_axis(axis), dtype=dtype, keepdims=keepdims), out)
    return _ret(_sumlike(to_array(a), "sum", _axis(axis), dtype, keepdims, initial, where), out)


def prod(a, /, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=True):
    """NumPy's ``prod`` (and the standard's)."""
    if initial is NoValue and where is True:
        if a.__class__ is Array and out is None and axis.__class__ is not list:  # the common call, fewer calls
            return _prod(a, axis=axis, dtype=dtype, keepdims=keepdims)
        return _ret(_prod(_arr(a), axis=_axis(axis), dtype=dtype, keepdims=keepdims), out)
    return _ret(_sumlike(to_array(a), "prod", _axis(axis), dtype, keepdims, initial, where), out)


# --- max / min ------------------------------------------------------------------------------------------------
def _extreme(x, fname, axis, keepdims, initial, where):
    dev = x._device
    xp = dev.xp
    d = x._data
    if xp is _np:
        kw = {}
        if initial is not NoValue:
            kw["initial"] = initial
        if where is not True:
            kw["where"] = data(where, dev)
        return new(_np.asarray(getattr(_np, fname)(d, axis=axis, keepdims=keepdims, **kw)), dev)
    if initial is NoValue:
        raise ValueError(f"reduction operation '{fname}imum' does not have an identity, so to use a where mask "
                         "one has to specify 'initial'")
    if where is not True:
        d = xp.where(data(where, dev), d, xp.asarray(initial, dtype=d.dtype))
    if d.size == 0:
        shape = _np.sum(_np.zeros(d.shape), axis=axis, keepdims=keepdims).shape
        return new(xp.full(shape, initial, dtype=d.dtype), dev)
    r = getattr(xp, fname)(d, axis=axis, keepdims=keepdims)
    r = (xp.maximum if fname == "max" else xp.minimum)(r, xp.asarray(initial, dtype=d.dtype))
    return new(r, dev)


def max(a, /, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
    """NumPy's ``max(a, axis=None, out=None, keepdims=False, initial=..., where=True)`` (and the standard's)."""
    if initial is NoValue and where is True:
        if a.__class__ is Array and out is None and axis.__class__ is not list:
            return _max(a, axis=axis, keepdims=keepdims)
        return _ret(_max(_arr(a), axis=_axis(axis), keepdims=keepdims), out)
    return _ret(_extreme(to_array(a), "max", _axis(axis), keepdims, initial, where), out)


def min(a, /, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
    """NumPy's ``min`` (and the standard's)."""
    if initial is NoValue and where is True:
        if a.__class__ is Array and out is None and axis.__class__ is not list:
            return _min(a, axis=axis, keepdims=keepdims)
        return _ret(_min(_arr(a), axis=_axis(axis), keepdims=keepdims), out)
    return _ret(_extreme(to_array(a), "min", _axis(axis), keepdims, initial, where), out)


amax = max
amin = min


@oom_guard
def ptp(a, axis=None, out=None, keepdims=False):
    """Range of values (maximum - minimum) along axis."""
    x = to_array(a)
    xp = x._device.xp
    ax = _axis(axis)
    r = xp.max(x._data, axis=ax, keepdims=keepdims) - xp.min(x._data, axis=ax, keepdims=keepdims)
    return finish(r, x._device, out)


# --- mean / std / var -----------------------------------------------------------------------------------------
def _masked_count(xp, mask, shape, axis, keepdims):
    m = xp.broadcast_to(mask, shape)
    return xp.sum(m, axis=axis, keepdims=keepdims)


def mean(a, /, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``mean`` (and the standard's); integer input gives float64, as NumPy."""
    ax = _axis(axis)
    if dtype is None and where is True:
        return _ret(_mean(_arr(a), axis=ax, keepdims=keepdims), out)
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    dt = None if dtype is None else _dt.to_dtype(dtype)
    if where is True:
        return finish(xp.mean(x._data, axis=ax, dtype=dt, keepdims=keepdims), dev, out)
    mask = data(where, dev)
    if xp is _np:
        return finish(_np.asarray(_np.mean(x._data, axis=ax, dtype=dt, keepdims=keepdims, where=mask)), dev, out)
    d = x._data if dt is None else x._data.astype(dt)
    if d.dtype.kind in "biu":
        d = d.astype(_np.float64)
    s = xp.sum(xp.where(mask, d, 0), axis=ax, keepdims=keepdims)
    n = _masked_count(xp, mask, d.shape, ax, keepdims)
    return finish((s / n).astype(d.dtype, copy=False), dev, out)


def _moment(fname, std_fn_, a, axis, dtype, out, ddof, keepdims, where, mean_, correction):
    if correction is not NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    ax = _axis(axis)
    if dtype is None and where is True and mean_ is NoValue:
        return _ret(std_fn_(a, axis=ax, correction=ddof, keepdims=keepdims), out)
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    dt = None if dtype is None else _dt.to_dtype(dtype)
    if xp is _np:
        kw = {}
        if where is not True:
            kw["where"] = data(where, dev)
        if mean_ is not NoValue:
            kw["mean"] = data(mean_, dev)
        r = getattr(_np, fname)(x._data, axis=ax, dtype=dt, ddof=ddof, keepdims=keepdims, **kw)
        return finish(_np.asarray(r), dev, out)
    d = x._data if dt is None else x._data.astype(dt)
    if d.dtype.kind in "biu":
        d = d.astype(_np.float64)
    if where is True:
        if mean_ is NoValue:
            return finish(getattr(xp, fname)(d, axis=ax, ddof=ddof, keepdims=keepdims), dev, out)
        mask = xp.ones((), dtype=bool)
    else:
        mask = data(where, dev)
    n = _masked_count(xp, mask, d.shape, ax, True)
    mu = data(mean_, dev) if mean_ is not NoValue else xp.sum(xp.where(mask, d, 0), axis=ax, keepdims=True) / n
    dev2 = xp.where(mask, d - mu, 0)
    sq = dev2.real ** 2 + dev2.imag ** 2 if d.dtype.kind == "c" else dev2 * dev2
    v = xp.sum(sq, axis=ax, keepdims=True) / xp.maximum(n - ddof, 0)
    if not keepdims:
        v = xp.squeeze(v, axis=ax if ax is not None else tuple(range(d.ndim)))
    r = xp.sqrt(v) if fname == "std" else v
    return finish(r, dev, out)


@oom_guard
def std(a, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=NoValue,
        correction=NoValue):
    """NumPy's ``std`` with ``ddof`` (and the standard's, with ``correction``)."""
    return _moment("std", _std, a, axis, dtype, out, ddof, keepdims, where, mean, correction)


@oom_guard
def var(a, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=NoValue,
        correction=NoValue):
    """NumPy's ``var`` with ``ddof`` (and the standard's, with ``correction``)."""
    return _moment("var", _var, a, axis, dtype, out, ddof, keepdims, where, mean, correction)


# --- all / any ------------------------------------------------------------------------------------------------
def all(a, /, axis=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``all`` (and the standard's)."""
    if where is True:
        return _ret(_all(_arr(a), axis=_axis(axis), keepdims=keepdims), out)
    x = to_array(a)
    xp = x._device.xp
    d = xp.where(data(where, x._device), x._data.astype(bool), True)
    return finish(xp.all(d, axis=_axis(axis), keepdims=keepdims), x._device, out)


def any(a, /, axis=None, out=None, keepdims=False, *, where=True):
    """NumPy's ``any`` (and the standard's)."""
    if where is True:
        return _ret(_any(_arr(a), axis=_axis(axis), keepdims=keepdims), out)
    x = to_array(a)
    xp = x._device.xp
    d = xp.where(data(where, x._device), x._data.astype(bool), False)
    return finish(xp.any(d, axis=_axis(axis), keepdims=keepdims), x._device, out)


# --- argmax / argmin / count_nonzero ------------------------------------------------------------------------------
def argmax(a, /, axis=None, out=None, *, keepdims=False):
    """NumPy's ``argmax(a, axis=None, out=None, *, keepdims=False)`` (and the standard's)."""
    return _ret(_argmax(_arr(a), axis=axis, keepdims=keepdims), out)


def argmin(a, /, axis=None, out=None, *, keepdims=False):
    """NumPy's ``argmin`` (and the standard's)."""
    return _ret(_argmin(_arr(a), axis=axis, keepdims=keepdims), out)


def count_nonzero(a, /, axis=None, *, keepdims=False):
    """Number of non-zero values (the standard's; axis may be positional, as NumPy)."""
    return _count_nonzero(a, axis=_axis(axis), keepdims=keepdims)


# --- cumulative -------------------------------------------------------------------------------------------------
def _cum(fname, a, axis, dtype, out):
    x = to_array(a)
    dev = x._device
    d = x._data
    if axis is None:
        d = d.reshape(-1)
        axis = 0
    dt = acc_dtype(d.dtype, dtype) if fname in ("cumsum", "cumprod", "nancumsum", "nancumprod") else None
    r = getattr(dev.xp, fname)(d, axis=axis, dtype=dt)
    return finish(r, dev, out)


@oom_guard
def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum; axis=None works on the flattened array (NumPy's ``cumsum``)."""
    return _cum("cumsum", a, axis, dtype, out)


@oom_guard
def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product; axis=None works on the flattened array (NumPy's ``cumprod``)."""
    return _cum("cumprod", a, axis, dtype, out)


@oom_guard
def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as zero; axis=None works on the flattened array (NumPy's ``nancumsum``)."""
    return _cum("nancumsum", a, axis, dtype, out)


@oom_guard
def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as one; axis=None works on the flattened array (NumPy's ``nancumprod``)."""
    return _cum("nancumprod", a, axis, dtype, out)


# --- NaN-ignoring reductions --------------------------------------------------------------------------------------
def _nan(fname, a, axis, out, keepdims, **kw):
    x = to_array(a)
    dev = x._device
    kw = {k: v for k, v in kw.items() if v is not None}
    if x._data.__class__ is _dt.HostData and out is None:
        # dates: NumPy's NaT-skipping path is the one for plain ndarrays (gpk_array/_hostdata.py)
        return _hostdata.results(getattr(_np, fname)(x._data.view(_np.ndarray), axis=_axis(axis),
                                                     keepdims=keepdims, **kw))
    r = getattr(dev.xp, fname)(x._data, axis=_axis(axis), keepdims=keepdims, **kw)
    return finish(dev.xp.asarray(r), dev, out)


@oom_guard
def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
    """Sum ignoring NaNs (NaN counts as zero), NumPy's ``nansum``; the accumulator dtype as ``sum``'s. Returns a 0-d
    array for a full reduction."""
    x = to_array(a)
    return _nan("nansum", x, axis, out, keepdims, dtype=acc_dtype(x._data.dtype, dtype))


@oom_guard
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
    """Product ignoring NaNs (NaN counts as one), NumPy's ``nanprod``."""
    x = to_array(a)
    return _nan("nanprod", x, axis, out, keepdims, dtype=acc_dtype(x._data.dtype, dtype))


@oom_guard
def nanmax(a, axis=None, out=None, keepdims=False):
    """Maximum ignoring NaNs, NumPy's ``nanmax`` (NaN where a slice holds only NaNs, as NumPy, which warns)."""
    return _nan("nanmax", a, axis, out, keepdims)


@oom_guard
def nanmin(a, axis=None, out=None, keepdims=False):
    """Minimum ignoring NaNs, NumPy's ``nanmin`` (NaN where a slice holds only NaNs)."""
    return _nan("nanmin", a, axis, out, keepdims)


@oom_guard
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Mean of the non-NaN values, NumPy's ``nanmean``."""
    return _nan("nanmean", a, axis, out, keepdims, dtype=None if dtype is None else _dt.to_dtype(dtype))


@oom_guard
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation of the non-NaN values with ``ddof`` degrees of freedom subtracted, NumPy's ``nanstd``."""
    return _nan("nanstd", a, axis, out, keepdims, dtype=None if dtype is None else _dt.to_dtype(dtype), ddof=ddof)


@oom_guard
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance of the non-NaN values with ``ddof`` degrees of freedom subtracted, NumPy's ``nanvar``."""
    return _nan("nanvar", a, axis, out, keepdims, dtype=None if dtype is None else _dt.to_dtype(dtype), ddof=ddof)


def _nanarg(fname, a, axis, out, keepdims):
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    if xp is _np:
        r = getattr(_np, fname)(x._data, axis=axis, keepdims=keepdims)
    else:
        r = getattr(xp, fname)(x._data, axis=axis)
        if keepdims:
            r = xp.expand_dims(r, axis) if axis is not None else r.reshape((1,) * x._data.ndim)
    return finish(xp.asarray(r).astype(_dt.I64, copy=False), dev, out)


@oom_guard
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the maximum ignoring NaNs, NumPy's ``nanargmax`` (a slice of only NaNs raises ``ValueError``, as
    NumPy)."""
    return _nanarg("nanargmax", a, axis, out, keepdims)


@oom_guard
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum ignoring NaNs, NumPy's ``nanargmin`` (a slice of only NaNs raises ``ValueError``, as
    NumPy)."""
    return _nanarg("nanargmin", a, axis, out, keepdims)


# --- differences ------------------------------------------------------------------------------------------------
def diff(a, /, n=1, axis=-1, prepend=None, append=None):
    """NumPy's ``diff(a, n=1, axis=-1, prepend, append)`` (and the standard's); scalars prepend/append too."""
    return _diff(a, axis=axis, n=n, prepend=prepend, append=append)


@oom_guard
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array, with optional ends."""
    x = to_array(ary)
    dev = x._device
    xp = dev.xp
    d = x._data.reshape(-1)
    r = d[1:] - d[:-1]
    parts = []
    if to_begin is not None:
        parts.append(data(to_begin, dev).reshape(-1).astype(r.dtype))
    parts.append(r)
    if to_end is not None:
        parts.append(data(to_end, dev).reshape(-1).astype(r.dtype))
    return new(xp.concatenate(parts) if len(parts) > 1 else r, dev)
