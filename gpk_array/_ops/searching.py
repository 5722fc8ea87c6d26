"""Searching functions (standard section "Searching Functions")."""
from .. import _dtypes as _dt
from .statistical import _own
from .elementwise import binary_operands
from ._common import CPU, PY_SCALARS, Array, as_array, new, normalize_axes, normalize_axis, oom_guard, plain_scalar


_LONG_ROW = 4096  # CuPy's argmax gives a long row to few threads: from this length on our kernel runs


def _arg(fname):
    @oom_guard
    def fn(x, /, *, axis=None, keepdims=False):
        x = as_array(x)
        xp = x._device.xp
        data = x._data
        if data.size == 0:
            # NumPy raises only where a reduced slice is empty: over axis -1 of shape (0, 4) there is no slice
            # at all, and the result is empty (shape (0,))
            if axis is None or data.shape[normalize_axis(axis, data.ndim)] == 0:
                raise ValueError(f"attempt to get {fname} of an empty sequence")
            ax = normalize_axis(axis, data.ndim)
            r = xp.moveaxis(data, ax, 0)[0].astype(_dt.I64)  # empty, on the array's own device
            return new(xp.expand_dims(r, ax) if keepdims else r, x._device)
        if axis is not None:
            axis = normalize_axis(axis, x.ndim)
            if x.ndim == 0:
                axis = None  # axis 0 or -1 of a 0-d array (normalize_axis allows them): its one element
            elif fname == "argmax" and axis == x.ndim - 1 and x._device.kind == "cuda" and x.shape[-1] >= _LONG_ROW:
                from .._gpu import argmax_last_axis
                r = argmax_last_axis(data)  # long rows (a vocabulary of logits): one block per row
                if r is not None:
                    return new(r[..., None] if keepdims else r, x._device)
        r = _own(fname, x, data, None if axis is None else (axis,), keepdims)  # where gpk_array/_gpu.py routes it
        if r is not None:
            return r
        if x._device is CPU:  # NumPy's methods (its module functions only forward to them)
            r = getattr(data.reshape(-1), fname)() if axis is None else \
                getattr(data, fname)(axis=axis, keepdims=keepdims)
        elif axis is None:
            r = getattr(xp, fname)(data.reshape(-1))
        else:
            r = getattr(xp, fname)(data, axis=axis, keepdims=keepdims)
        if axis is None and keepdims:
            r = r.reshape((1,) * x.ndim)
        return new(r.astype(_dt.I64, copy=False), x._device)
    fn.__name__ = fname
    fn.__doc__ = f"Indices of the first {fname[3:]}imum (standard: searching_functions.{fname})."
    return fn


argmax = _arg("argmax")
argmin = _arg("argmin")


@oom_guard
def count_nonzero(x, /, *, axis=None, keepdims=False):
    """Number of non-zero elements (standard: searching_functions.count_nonzero)."""
    x = as_array(x)
    axes = normalize_axes(axis, x.ndim)
    xp = x._device.xp
    return new(xp.sum(x._data != 0, axis=axes, keepdims=keepdims, dtype=_dt.I64), x._device)


@oom_guard
def nonzero(x, /):
    """Indices of non-zero elements, one array per axis (standard: searching_functions.nonzero)."""
    x = as_array(x)
    if x.ndim == 0:
        raise ValueError("nonzero is not defined for zero-dimensional arrays")
    return tuple(new(i.astype(_dt.I64, copy=False), x._device) for i in x._device.xp.nonzero(x._data))


@oom_guard
def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Insertion indices of x2 into sorted x1 (standard: searching_functions.searchsorted)."""
    x1 = as_array(x1)
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted needs a one-dimensional x1, got shape {x1.shape}")
    a, b, dev = binary_operands(x1, x2)
    s = None
    if sorter is not None:
        s = as_array(sorter, dev)._data
    xp = dev.xp
    r = xp.searchsorted(a, b, side=side, sorter=s)
    return new(xp.asarray(r, dtype=_dt.I64), dev)


@oom_guard
def _scalar_or_self(x):
    p = plain_scalar(x)
    return x if p is None else p


def where(condition, x1, x2=None, /):
    """Elements of x1 where condition, else x2 (standard: searching_functions.where).
    With one argument, NumPy's ``where(condition)`` = ``nonzero(condition)``."""
    if x2 is None and x1 is None:
        return nonzero(condition)
    c = condition
    if c.__class__ is not Array:
        dev = x1._device if x1.__class__ is Array else (x2._device if x2.__class__ is Array else None)
        c = as_array(c, dev)
    if x1.__class__ not in PY_SCALARS and x1.__class__ is not Array:
        x1 = _scalar_or_self(x1)
    if x2.__class__ not in PY_SCALARS and x2.__class__ is not Array:
        x2 = _scalar_or_self(x2)
    if x1.__class__ in PY_SCALARS and x2.__class__ in PY_SCALARS:
        from .creation import asarray
        x1 = asarray(x1, device=c._device)
    a, b, dev = binary_operands(x1, x2)
    if c._device is not dev:
        raise ValueError(f"condition is on {c._device}, the values on {dev}")
    r = dev.xp.where(c._data, a, b)
    return new(r, dev)
