"""NumPy's dtype object, scalar-type names and abstract type hierarchy, error-state and print options.

The dtype constants of gpk_array are NumPy's scalar types and ``Array.dtype`` is a ``numpy.dtype``, so these are
NumPy's own objects: ``x.dtype == np.float32``, ``np.issubdtype(x.dtype, np.floating)`` and ``np.dtype("f4")``
behave exactly as in NumPy.
"""
import numpy as _np

from .._array import Array

__all__ = ["dtype", "float_", "int_", "intp", "uintp", "double", "single", "half", "longlong", "ulonglong", "intc",
           "uintc", "short", "ushort", "byte", "ubyte", "cdouble", "csingle", "complex_", "bool_", "number",
           "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating", "inexact", "generic",
           "issubdtype", "promote_types", "min_scalar_type", "typename", "ndarray", "errstate", "seterr", "geterr",
           "euler_gamma", "PINF", "NINF", "NAN", "NZERO", "PZERO", "little_endian", "mintypecode", "common_type",
           "sctypeDict", "typecodes"]

dtype = _np.dtype
float_ = _np.float64
int_ = _np.int64
intp = _np.intp
uintp = _np.uintp
double = _np.float64
single = _np.float32
half = _np.float16
longlong = _np.longlong
ulonglong = _np.ulonglong
intc = _np.intc
uintc = _np.uintc
short = _np.short
ushort = _np.ushort
byte = _np.byte
ubyte = _np.ubyte
cdouble = _np.complex128
csingle = _np.complex64
complex_ = _np.complex128
bool_ = _np.bool_
number = _np.number
integer = _np.integer
signedinteger = _np.signedinteger
unsignedinteger = _np.unsignedinteger
floating = _np.floating
complexfloating = _np.complexfloating
inexact = _np.inexact
generic = _np.generic
promote_types = _np.promote_types
min_scalar_type = _np.min_scalar_type
typename = _np.typename
mintypecode = _np.mintypecode
sctypeDict = _np.sctypeDict
typecodes = _np.typecodes
little_endian = _np.little_endian

euler_gamma = 0.5772156649015329
PINF = float("inf")
NINF = float("-inf")
NAN = float("nan")
NZERO = -0.0
PZERO = 0.0

ndarray = Array

# floating-point error handling applies to host (NumPy) computations; CUDA kernels raise no FP errors
errstate = _np.errstate
seterr = _np.seterr
geterr = _np.geterr


def issubdtype(arg1, arg2):
    """NumPy's ``issubdtype``; also takes Arrays (their dtype)."""
    if arg1.__class__ is Array:
        arg1 = arg1._data.dtype
    if arg2.__class__ is Array:
        arg2 = arg2._data.dtype
    return _np.issubdtype(arg1, arg2)


def common_type(*arrays):
    """The floating scalar type common to the arrays (NumPy's ``common_type``)."""
    prec = []
    cplx = False
    for a in arrays:
        dt = a._data.dtype if a.__class__ is Array else _np.asarray(a).dtype
        k = dt.kind
        if k == "c":
            cplx = True
            prec.append(dt.itemsize // 2)
        elif k == "f":
            prec.append(dt.itemsize)
        elif k in "biu":
            prec.append(8)
        else:
            raise TypeError("common_type takes numeric arrays")
    p = max(prec) if prec else 2
    if cplx:
        return _np.complex64 if p <= 4 else _np.complex128
    return {2: _np.float16, 4: _np.float32}.get(p, _np.float64)

