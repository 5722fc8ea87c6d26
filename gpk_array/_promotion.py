"""Type promotion (standard section "Type Promotion Rules"), extended with bfloat16.

Within a kind the standard's lattice; across kinds, where the standard is silent, NumPy 2's rules (NEP 50 for
Python scalars). NumPy knows no promotion between bfloat16 and float16; here it is float32, as in PyTorch.
"""
import builtins

import numpy as np

from . import _dtypes as _dt

_BF16 = _dt.BF16
_cache = {}


def _pair(d1, d2):
    key = (d1, d2)
    r = _cache.get(key)
    if r is None:
        if d1 == _BF16 or d2 == _BF16:
            other = d2 if d1 == _BF16 else d1
            k = _dt.kind(other)
            if other == _BF16 or k in "biu":
                r = _BF16
            elif other == _dt.F16:
                r = _dt.F32
            else:
                r = other  # float32, float64, complex64, complex128
        else:
            r = np.result_type(d1, d2)
        _cache[key] = r
    return r


def result_dtype(d1, d2):
    """The promoted dtype of two array dtypes."""
    if d1 is d2 or d1 == d2:
        return d1
    return _pair(d1, d2)


def scalar_result(dt, value):
    """Promotion of an array dtype with a Python scalar (the scalar is weak, as in the standard and NEP 50)."""
    c = value.__class__
    k = _dt.kind(dt)
    if c is builtins.bool:
        return dt
    if c is int:
        return dt if k != "b" else _dt.I64
    if c is float:
        return dt if k in "fc" else _dt.F64
    if c is complex:
        if k == "c":
            return dt
        if k == "f":
            return _dt.C128 if dt == _dt.F64 else _dt.C64
        return _dt.C128
    raise TypeError(f"unsupported operand type {c.__name__}")


def result_type(*args):
    """result_type over dtypes, arrays and Python scalars (scalars count only after the arrays)."""
    if not args:
        raise ValueError("at least one array or dtype is required")  # NumPy's words
    dts = []
    scalars = []
    for a in args:
        if isinstance(a, (builtins.bool, int, float, complex)):
            scalars.append(a)
        elif hasattr(a, "_data") and hasattr(a, "_device"):
            dts.append(a._data.dtype)
        else:
            dts.append(_dt.to_dtype(a))
    if not dts:
        raise ValueError("at least one array or dtype is required: Python scalars alone have no dtype")
    r = dts[0]
    for d in dts[1:]:
        r = result_dtype(r, d)
    for s in scalars:
        r = scalar_result(r, s)
    return r
