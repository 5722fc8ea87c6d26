"""Data type functions (standard section "Data Type Functions")."""
from dataclasses import dataclass

import numpy as np

from .. import _dtypes as _dt
from .. import _hooks
from .. import _promotion
from ._common import Array, as_array, new, oom_guard


@oom_guard
def astype(x, dtype, /, *, copy=True, device=None):
    """Copy (or view) x as dtype (standard: data_type_functions.astype). Complex to real raises TypeError."""
    if x.__class__ is not Array:
        x = as_array(x)
    dt = _dt.to_dtype(dtype)
    if device is not None:
        from .creation import asarray
        x = asarray(x, device=device)
    src = x._data.dtype
    if _dt.kind(src) == "c" and _dt.kind(dt) != "c":
        raise TypeError(f"casting complex {src} to real {_dt.name_of(dt)} would discard the imaginary part: "
                        "use real() or imag() first")
    if src == dt and not copy:
        return x
    if _hooks.prealloc_hook is not None:
        _hooks.precheck(x._data.shape, dt, x._device)
    return new(x._data.astype(dt, copy=True), x._device)


def can_cast(from_, to, /):
    """Whether from_ casts to `to` by the promotion rules (standard: data_type_functions.can_cast)."""
    if from_ is None or to is None:
        raise TypeError(f"can_cast takes a dtype or an array, got None (from_={from_!r}, to={to!r})")
    try:
        f = from_._data.dtype if from_.__class__ is Array else _dt.to_dtype(from_)
        t = _dt.to_dtype(to)
    except TypeError:
        # a host-only dtype (strings, dates, records: NumPy-facing arrays only) is NumPy's question
        from .._hostdata import is_host_dtype
        pair = (from_._data.dtype if from_.__class__ is Array else from_, to)
        try:
            dts = [np.dtype(d) for d in pair]
        except TypeError:
            raise TypeError(f"can_cast takes dtypes or an array, got from_={from_!r}, to={to!r}") from None
        if not any(is_host_dtype(d) for d in dts):
            raise
        return bool(np.can_cast(dts[0], dts[1], casting="safe"))
    if f == t:
        return True
    if _dt.BF16 is not None and (f == _dt.BF16 or t == _dt.BF16):
        return _promotion.result_dtype(f, t) == t
    return bool(np.can_cast(f, t, casting="safe"))


@dataclass(frozen=True)
class finfo_object:
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: object
    resolution: float
    tiny: float


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: object


def _dtype_of(t):
    if t.__class__ is Array:
        return t._data.dtype
    return _dt.to_dtype(t)


def finfo(type, /):
    """Machine limits of a floating dtype (standard: data_type_functions.finfo)."""
    dt = _dtype_of(type)
    if _dt.kind(dt) not in "fc":
        raise TypeError(f"finfo needs a floating-point dtype, got {dt}")
    if dt == _dt.BF16:
        import ml_dtypes
        fi = ml_dtypes.finfo(dt)
    else:
        fi = np.finfo(dt)
    real = _dt.real_of(dt)
    return finfo_object(bits=int(fi.bits), eps=float(fi.eps), max=float(fi.max), min=float(fi.min),
                        smallest_normal=float(fi.smallest_normal), dtype=real,
                        resolution=float(fi.resolution), tiny=float(fi.tiny))


def iinfo(type, /):
    """Machine limits of an integer dtype (standard: data_type_functions.iinfo)."""
    dt = _dtype_of(type)
    if _dt.kind(dt) not in "iu":
        raise TypeError(f"iinfo needs an integer dtype, got {dt}")
    ii = np.iinfo(dt)
    return iinfo_object(bits=int(ii.bits), max=int(ii.max), min=int(ii.min), dtype=dt)


def isdtype(dtype, kind):
    """Whether dtype is of kind: a dtype, a category name or a tuple of them (standard:
    data_type_functions.isdtype)."""
    if dtype is None:
        raise TypeError("isdtype takes a dtype, got None")
    dt = _dt.to_dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    if dt not in _dt.SUPPORTED:
        raise TypeError(f"unsupported dtype {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        cats = {"bool", "signed integer", "unsigned integer", "integral", "real floating",
                "complex floating", "numeric"}
        if kind not in cats:
            raise ValueError(f"unknown dtype kind {kind!r}: use one of {sorted(cats)}")
        return _dt.kind(dt) in _dt.CATEGORIES[kind]
    return dt == _dt.to_dtype(kind)


def result_type(*arrays_and_dtypes):
    """Dtype from applying the promotion rules (standard: data_type_functions.result_type)."""
    return _promotion.result_type(*arrays_and_dtypes)
