"""NumPy's dtype object, scalar-type names and abstract type hierarchy, error-state and print options.

The dtype constants of gpk_array are NumPy's scalar types and ``Array.dtype`` is a ``numpy.dtype``, so these are
NumPy's own objects: ``x.dtype == np.float32``, ``np.issubdtype(x.dtype, np.floating)`` and ``np.dtype("f4")``
behave exactly as in NumPy.
"""
import operator

import numpy as _np

from .. import _dtypes as _dt
from .. import _hostdata  # a lazy submodule: run on first use
from .._array import Array
from .._ops.data_type import result_type as _std_result_type

_PY_SCALARS = (bool, int, float, complex)

__all__ = ["dtype", "float_", "int_", "intp", "uintp", "double", "single", "half", "longlong", "ulonglong", "intc",
           "uintc", "short", "ushort", "byte", "ubyte", "cdouble", "csingle", "complex_", "bool_", "number",
           "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating", "inexact", "generic",
           "issubdtype", "promote_types", "min_scalar_type", "result_type", "getbufsize", "setbufsize", "geterrcall",
           "seterrcall", "typename", "ndarray", "errstate", "seterr", "geterr",
           "euler_gamma", "PINF", "NINF", "NAN", "NZERO", "PZERO", "little_endian", "mintypecode", "common_type",
           "sctypeDict", "typecodes", "finfo", "iinfo", "True_", "False_", "ScalarType", "long", "ulong", "uint",
           "longdouble", "clongdouble", "character", "flexible", "bytes_", "str_", "object_", "void", "datetime64",
           "timedelta64", "exceptions", "iterable", "datetime_as_string", "datetime_data", "isnat", "busday_count",
           "busday_offset", "is_busday", "busdaycalendar"]

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
typename = _np.typename
sctypeDict = _np.sctypeDict
typecodes = _np.typecodes
little_endian = _np.little_endian
True_ = _np.True_
False_ = _np.False_
ScalarType = _np.ScalarType
long = _np.long
ulong = _np.ulong
uint = _np.uint
exceptions = _np.exceptions
iterable = _np.iterable
# NumPy scalar types with no gpk_array array dtype: the scalars are NumPy's own (``np.datetime64('today')``); arrays
# of them (``np.zeros(3, np.str_)``, ``dtype='datetime64[D]'``) raise a TypeError naming the dtype
longdouble = _np.longdouble
clongdouble = _np.clongdouble
character = _np.character
flexible = _np.flexible
bytes_ = _np.bytes_
str_ = _np.str_
object_ = _np.object_
void = _np.void
datetime64 = _np.datetime64
timedelta64 = _np.timedelta64

euler_gamma = 0.5772156649015329
PINF = float("inf")
NINF = float("-inf")
NAN = float("nan")
NZERO = -0.0
PZERO = 0.0

class _NdarrayMeta(type):
    """``isinstance(x, ndarray)`` holds for every gpk_array Array (NumPy scripts test arrays that way)."""

    def __instancecheck__(cls, obj):
        if cls is ndarray:
            return isinstance(obj, Array)
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        if cls is ndarray:
            return isinstance(sub, type) and issubclass(sub, Array)
        return type.__subclasscheck__(cls, sub)


def _buffer_view(buf, shape, dt, offset, strides, order):
    """The backing array ``ndarray(shape, dt, buffer=buf, offset, strides, order)`` views (NumPy's checks)."""
    d = buf._data
    if isinstance(d, _np.ndarray):   # host memory (or NumPy dressed as a device array): NumPy's own view
        return _np.ndarray(shape, dt, d, offset, strides, order).view(type(d))
    if not d.flags.c_contiguous:
        raise TypeError("buffer= needs a C-contiguous array")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if strides is None:
        extent = int(_np.prod(shape)) * dt.itemsize
    else:
        extent = dt.itemsize + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0 and s > 0) \
            if all(n > 0 for n in shape) else 0
    if offset < 0 or offset + extent > d.nbytes:
        raise TypeError("buffer is too small for requested array")
    xp = type(d)
    return xp(shape, dt, memptr=d.data + offset, strides=strides, order=order or "C")


class ndarray(Array, metaclass=_NdarrayMeta):
    """NumPy's ``ndarray``: ``ndarray(shape, dtype=float)`` makes an uninitialized array on the default device
    (``buffer=`` reads host memory, as NumPy's; a host-only dtype makes it on the CPU device);
    ``isinstance(x, ndarray)`` holds for every Array; subclasses (with ``__array_finalize__``) are made by
    ``x.view(Subclass)``."""

    __slots__ = ()

    def __new__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        from .._device import default_device
        from ._util import new
        hd = _hostdata.host_dtype(dtype)
        if hd is not None:  # strings, dates, records: on the CPU device (gpk_array/_hostdata.py)
            r = _hostdata.host_array(_np.ndarray(shape, hd, buffer, offset, strides, order))
            return r if cls is ndarray else r.view(cls)
        dev = default_device()
        dt = _dt.to_dtype(dtype)
        if buffer is None:
            r = new(dev.xp.empty(shape, dtype=dt, order=order or "C"), dev)
        elif isinstance(buffer, Array):   # a view of the Array's memory, on its device
            r = new(_buffer_view(buffer, shape, dt, offset, strides, order), buffer._device)
        else:
            from .._ops.creation import asarray
            r = asarray(_np.ndarray(shape, dt, buffer, offset, strides, order), device=dev)
        if cls is not ndarray:
            r = r.view(cls)
        return r

    def __init__(self, *args, **kwargs):
        pass

    def __array_finalize__(self, obj):
        pass

# floating-point error handling applies to host (NumPy) computations; CUDA kernels raise no FP errors
errstate = _np.errstate
seterr = _np.seterr
geterr = _np.geterr
seterrcall = _np.seterrcall
geterrcall = _np.geterrcall
# the buffer size of NumPy's ufunc loops (host computations); CuPy has no such buffers
getbufsize = _np.getbufsize
setbufsize = _np.setbufsize


def min_scalar_type(a, /):
    """NumPy's ``min_scalar_type``: the smallest dtype holding the value of a scalar or 0-d array (a 0-d Array on
    a CUDA device is read back to the host, as NumPy needs its value); an array of more dimensions gives its dtype.
    """
    if a.__class__ is Array or isinstance(a, Array):
        d = a._data
        if d.ndim:
            return d.dtype
        return _np.min_scalar_type(d if a._device.kind == "cpu" else d.get())
    return _np.min_scalar_type(a)


def mintypecode(typechars, typeset="GDFgdf", default="d"):
    """NumPy's ``mintypecode``: the typecode of the smallest type in ``typeset`` that the types of ``typechars``
    (typecode strings, dtypes, arrays: an Array's dtype, never its values) can be safely cast to."""
    if typechars.__class__ is Array or isinstance(typechars, Array):
        chars = [typechars.dtype.char] if typechars.size else []
    else:
        chars = [t if isinstance(t, str) else (t.dtype.char if isinstance(t, Array) else _np.asarray(t).dtype.char)
                 for t in typechars]
    return _np.mintypecode(chars, typeset, default)


def result_type(*arrays_and_dtypes):
    """The dtype of combining the arguments (the standard's ``result_type``); Python scalars alone give NumPy's
    answer, their default dtypes promoted (``result_type(1, 2.0)`` is float64)."""
    for a in arrays_and_dtypes:
        if a.__class__ not in _PY_SCALARS:
            return _std_result_type(*arrays_and_dtypes)
    if not arrays_and_dtypes:
        return _std_result_type()
    return _dt.to_dtype(_np.result_type(*arrays_and_dtypes))


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



_LIMIT_TYPES = {}


def _scalar_ops(f, sc):
    """The forward and reflected operator f computed on the NumPy scalar sc(self)."""
    return (lambda self, other: f(sc(self), other)), (lambda self, other: f(other, sc(self)))


def _limit_type(dt):
    """The type of finfo's values for dt: Python floats (the standard's type) behaving as NumPy's scalars of dt
    (NumPy's finfo gives those): float64's are numpy.float64 (a float subclass); float32's and float16's a float
    subclass that prints as, and computes as, a NumPy scalar of dt (``eps * x`` keeps a float32 array float32)."""
    if dt == _np.float64:
        return _np.float64
    t = _LIMIT_TYPES.get(dt)
    if t is None:
        sc = dt.type
        ns = {"__slots__": (), "__repr__": lambda self: repr(sc(self)), "__str__": lambda self: str(sc(self)),
              "__doc__": f"A Python float computing and printing as numpy.{dt.name}."}
        for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
            ns[f"__{op}__"], ns[f"__r{op}__"] = _scalar_ops(getattr(operator, op), sc)
        ns["__neg__"] = lambda self: -sc(self)
        ns["__abs__"] = lambda self: abs(sc(self))
        t = type(f"{dt.name}_limit", (float,), ns)
        _LIMIT_TYPES[dt] = t
    return t


class finfo:
    """Machine limits of a floating dtype: the standard's ``finfo`` (bits, eps, max, min, smallest_normal, dtype:
    Python floats) with NumPy's further attributes (tiny, resolution, precision, epsneg, nmant, ...) and printing.
    Takes dtypes, NumPy's scalar types, Python float/complex (and their values) and Arrays."""

    def __init__(self, dtype):
        if dtype.__class__ is Array:
            dt = dtype._data.dtype
        elif isinstance(dtype, (float, complex)) and not isinstance(dtype, type):
            dt = _np.dtype(type(dtype))
        else:
            dt = _dt.to_dtype(dtype)
        if dt.kind not in "fcV" and dt != _dt.BF16:
            raise ValueError(f"data type {dt} not inexact")
        if dt.kind == "c":
            dt = _dt.real_of(dt)
        self.dtype = dt
        if dt == _dt.BF16:
            import ml_dtypes
            fi = ml_dtypes.finfo(dt)
            lt = float
        else:
            fi = _np.finfo(dt)
            lt = _limit_type(dt)
        self._fi = fi
        self.bits = int(fi.bits)
        for name in ("eps", "epsneg", "max", "min", "resolution", "tiny", "smallest_normal", "smallest_subnormal"):
            setattr(self, name, lt(float(getattr(fi, name))))
        for name in ("precision", "nmant", "nexp", "maxexp", "minexp", "machep", "negep", "iexp"):
            setattr(self, name, int(getattr(fi, name)))

    def __str__(self):
        return str(self._fi)

    def __repr__(self):
        return repr(self._fi)


def iinfo(int_type):
    """Machine limits of an integer dtype (NumPy's iinfo object: ints, NumPy's printing); takes Arrays too."""
    if int_type.__class__ is Array:
        int_type = int_type._data.dtype
    return _np.iinfo(int_type)


# --- functions of the datetime64 type: NumPy's on the host, results placed by the rule of host-only dtypes
# (gpk_array/_hostdata.py: dates on the CPU device, counts and masks on the default device) ---------------------
busdaycalendar = _np.busdaycalendar
datetime_data = _np.datetime_data


def datetime_as_string(arr, unit=None, timezone="naive", casting="same_kind"):
    """NumPy's ``datetime_as_string``: dates as ISO 8601 strings (an array on the CPU device)."""
    return _hostdata.call(_np.datetime_as_string, arr, unit=unit, timezone=timezone, casting=casting)


def isnat(x, /):
    """NumPy's ``isnat``: which datetime64/timedelta64 values are NaT (a boolean array on the default device)."""
    return _hostdata.call(_np.isnat, x)


def _cal(weekmask, holidays, busdaycal):
    """The calendar keywords NumPy takes: a calendar, or a weekmask and holidays (NumPy refuses both)."""
    if busdaycal is not None:
        return {"busdaycal": busdaycal}
    return {"weekmask": weekmask, "holidays": [] if holidays is None else holidays}


def busday_count(begindates, enddates, weekmask="1111100", holidays=None, busdaycal=None):
    """NumPy's ``busday_count``: the valid days between two dates (end excluded), on the default device."""
    return _hostdata.call(_np.busday_count, begindates, enddates, **_cal(weekmask, holidays, busdaycal))


def busday_offset(dates, offsets, roll="raise", weekmask="1111100", holidays=None, busdaycal=None):
    """NumPy's ``busday_offset``: dates moved by a number of valid days (an array on the CPU device)."""
    return _hostdata.call(_np.busday_offset, dates, offsets, roll=roll, **_cal(weekmask, holidays, busdaycal))


def is_busday(dates, weekmask="1111100", holidays=None, busdaycal=None):
    """NumPy's ``is_busday``: which dates are valid days (a boolean array on the default device)."""
    return _hostdata.call(_np.is_busday, dates, **_cal(weekmask, holidays, busdaycal))
