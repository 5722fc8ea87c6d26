"""The type information of gpk_array's ufunc objects (``ufunc.types``, ``ntypes``, ``signature``,
``resolve_dtypes``), as NumPy reports it for the ufunc of the same name, restricted to gpk_array's dtypes.

A gpk_array ufunc computes with the backend's ufunc of the same name (NumPy's on the CPU device, CuPy's on CUDA),
so its loops are NumPy's for the dtypes gpk_array arrays can have: the entries of NumPy's ``types`` whose every
typecode is one of bool, the integers, float16/32/64 and complex64/128 (no object, long double, datetime or string
loops).
"""
import numpy as _np

from .. import _dtypes as _dt

_CODES = frozenset("?bBhHiIlLqQefdFD")
_CACHE = {}


def np_ufunc(bname):
    """NumPy's ufunc of that name (the loops gpk_array's ufunc of the same name computes with)."""
    u = getattr(_np, bname, None)
    if not isinstance(u, _np.ufunc):
        raise AttributeError(f"no NumPy ufunc named {bname!r}")
    return u


def types(bname):
    """NumPy's ``types`` of the ufunc, only the loops over gpk_array's dtypes ("ff->f", ...)."""
    r = _CACHE.get(bname)
    if r is None:
        r = _CACHE[bname] = [t for t in np_ufunc(bname).types if set(t.replace("->", "")) <= _CODES]
    return list(r)


def resolve_dtypes(bname, dtypes, signature=None, casting=None, reduction=False):
    """NumPy's ``ufunc.resolve_dtypes`` (input and output dtypes of a call with operands of these dtypes; None
    for outputs to find); dtypes gpk_array has no arrays of raise TypeError, as results that would need them do."""
    conv = tuple(None if d is None else (d if d in (int, float, complex, bool) else _dt.to_dtype(d)) for d in dtypes)
    kw = {"reduction": reduction}
    if signature is not None:
        kw["signature"] = signature
    if casting is not None:
        kw["casting"] = casting
    res = np_ufunc(bname).resolve_dtypes(conv, **kw)
    return tuple(_dt.to_dtype(d) for d in res)
