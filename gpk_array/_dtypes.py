"""Data types (standard section "Data Types") plus float16 and bfloat16.

The dtype constants are NumPy scalar types, as in NumPy and CuPy; ``Array.dtype`` returns a
``numpy.dtype``, which compares equal to them. ``bfloat16`` comes from ml_dtypes.
"""
import builtins

import numpy as np

try:
    import ml_dtypes as _ml
    bfloat16 = _ml.bfloat16
except ImportError:  # pragma: no cover - ml_dtypes is a hard dependency, kept soft for import
    _ml = None
    bfloat16 = None

bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

D = np.dtype
BOOL = D(np.bool_)
SIGNED = tuple(D(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED = tuple(D(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
INTEGER = SIGNED + UNSIGNED
REAL_FLOAT_STD = (D(np.float32), D(np.float64))
REAL_FLOAT = (D(np.float16),) + ((D(bfloat16),) if bfloat16 is not None else ()) + REAL_FLOAT_STD
COMPLEX = (D(np.complex64), D(np.complex128))
FLOAT = REAL_FLOAT + COMPLEX
NUMERIC = INTEGER + FLOAT
ALL = (BOOL,) + NUMERIC
SUPPORTED = frozenset(ALL)

BF16 = D(bfloat16) if bfloat16 is not None else None
F16, F32, F64 = D(np.float16), D(np.float32), D(np.float64)
C64, C128 = COMPLEX
I64 = D(np.int64)

# the categories of the standard, used by validation and isdtype
_KIND = {}
for _d in ALL:
    if _d == BOOL:
        _KIND[_d] = "b"
    elif _d in SIGNED:
        _KIND[_d] = "i"
    elif _d in UNSIGNED:
        _KIND[_d] = "u"
    elif _d in REAL_FLOAT:
        _KIND[_d] = "f"
    else:
        _KIND[_d] = "c"

CATEGORIES = {
    "bool": frozenset("b"),
    "signed integer": frozenset("i"),
    "unsigned integer": frozenset("u"),
    "integral": frozenset("iu"),
    "real floating": frozenset("f"),
    "complex floating": frozenset("c"),
    "numeric": frozenset("iufc"),
}

_COMPLEX_OF = {F16: C64, F32: C64, F64: C128}
if BF16 is not None:
    _COMPLEX_OF[BF16] = C64
_REAL_OF = {C64: F32, C128: F64}


def kind(dt):
    """One-letter category of a supported dtype: b, i, u, f or c."""
    return _KIND[dt]


def complex_of(dt):
    return _COMPLEX_OF[dt]


def real_of(dt):
    """The real dtype matching a complex dtype (itself for real dtypes)."""
    return _REAL_OF.get(dt, dt)


def name_of(dt):
    return "bfloat16" if dt == BF16 else np.dtype(dt).name


_NAMES = {name_of(d): d for d in ALL}
_NAMES.update({"bool_": BOOL, "float": F64, "int": I64, "complex": C128, "double": F64,
               "half": F16, "single": F32, "f4": F32, "f8": F64, "i4": D(np.int32), "i8": I64})


def to_dtype(dtype):
    """Normalize a dtype-like (our constants, numpy dtypes, Python types, names) to a supported numpy.dtype."""
    try:  # the common dtype-likes, looked up (the table holds _to_dtype's own answers)
        return _TO_DTYPE[dtype]
    except (KeyError, TypeError):  # TypeError: unhashable (a structured dtype's list of fields)
        return _to_dtype(dtype)


def _to_dtype(dtype):
    if dtype.__class__ is np.dtype:
        if dtype in SUPPORTED:
            return dtype
    else:
        try:
            if dtype is float:
                return F64
            if dtype is int:
                return I64
            if dtype is complex:
                return C128
            if dtype is builtins.bool:
                return BOOL
            if isinstance(dtype, str) and dtype in _NAMES:
                return _NAMES[dtype]
            d = np.dtype(dtype)
            if d in SUPPORTED:
                return d
        except TypeError:
            pass
    raise TypeError(f"unsupported dtype {dtype!r}{_host_only_kind(dtype)}: gpk_array supports "
                    f"{', '.join(name_of(d) for d in ALL)}")


_TO_DTYPE = {}
for _k in (*ALL, *(d.type for d in ALL), float, int, complex, builtins.bool, *_NAMES):
    _TO_DTYPE[_k] = _to_dtype(_k)
del _k


# host-only dtypes (gpk_array/_hostdata.py): strings, bytes, datetime64, timedelta64, void and structured; their
# arrays live on the CPU device with a HostData backing array (defined here, where Array._new can see it without
# running gpk_array/_hostdata.py at import)
HOST_KINDS = frozenset("USMmV")


class HostData(np.ndarray):
    """The backing array of an Array of a host-only dtype (a plain NumPy array otherwise): NumPy computes on it
    as on an ndarray; its class marks results to be sorted out by ``Array._new`` (by the rule of
    gpk_array/_hostdata.py)."""

    def __getitem__(self, key):
        r = np.ndarray.__getitem__(self, key)
        if isinstance(r, np.ndarray):
            return r
        # an element: a 0-d view, so that x[0]['age'] = 5 writes into x as NumPy's record scalars do
        try:
            return np.ndarray.__getitem__(self, (*key, Ellipsis) if key.__class__ is tuple else (key, Ellipsis))
        except (IndexError, TypeError, ValueError):
            return np.asarray(r).view(HostData)

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        return np.asarray(obj).view(HostData)

    def __reduce__(self):  # pickles as a plain ndarray (an Array's pickle rebuilds the mark)
        return np.asarray(self).__reduce__()

    # the index-valued methods NumPy's functions call (np.argmax(a) is a.argmax()) give plain ndarrays or scalars:
    # marked, so that their standard-dtype results go where the rule puts them
    def argmax(self, *args, **kwargs):
        return np.asarray(np.ndarray.argmax(self, *args, **kwargs)).view(HostData)

    def argmin(self, *args, **kwargs):
        return np.asarray(np.ndarray.argmin(self, *args, **kwargs)).view(HostData)

    def searchsorted(self, *args, **kwargs):
        return np.asarray(np.ndarray.searchsorted(self, *args, **kwargs)).view(HostData)

    def nonzero(self):
        return tuple(i.view(HostData) for i in np.ndarray.nonzero(self))


_HOST_ONLY_KINDS = {"V": "void", "M": "datetime64", "m": "timedelta64", "U": "string", "S": "bytes", "O": "object"}


def _host_only_kind(dtype):
    """What kind of NumPy dtype an unsupported one is, where NumPy knows it (structured, datetime64, strings...)."""
    try:
        d = np.dtype(dtype)
    except Exception:
        return ""
    if d.subdtype is not None and d.base.kind not in "USMmVO":
        return f" (a subarray dtype: give the shape instead, e.g. zeros((n, *{d.shape}), {d.base}))"
    kind = "structured" if d.names is not None else _HOST_ONLY_KINDS.get(d.kind)
    if kind is None:
        return ""
    if kind == "object":
        return " (object dtypes are not supported: arrays of Python objects live only in NumPy)"
    return (f" ({kind} dtypes are host-only: NumPy's functions (array, zeros, astype, ...) make such arrays on the "
            "CPU device; this function takes the standard's dtypes)")

