"""Argument signatures of ``@gpk_array.kernel`` calls and the kernel language's types.

A call's specialization key has one entry per argument: ``("A", dtype name, ndim, layout)`` for an array (layout
"C" C-contiguous, "F" Fortran-contiguous, "S" strided), ``("S", kind)`` for a Python number (kind "b", "i", "f",
"c": weak, NEP 50, like NumPy's Python scalars), ``("S", dtype name)`` for a NumPy scalar (strong).

The types of the kernel language: a ``numpy.dtype`` (strong) or one of ``WEAK`` (Python bool/int/float/complex).
Result types of operators and functions are NumPy's own (asked of NumPy on 0-d samples, cached), so the CPU
execution (NumPy scalars) and the generated CUDA agree on every type.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from .. import _array as _arr
from .._array import Array
from .._device import Device
from .._dtypes import SUPPORTED

_CPU = Device("cpu")

WEAK_B, WEAK_I, WEAK_F, WEAK_C = "weak_b", "weak_i", "weak_f", "weak_c"
WEAK = (WEAK_B, WEAK_I, WEAK_F, WEAK_C)
_WEAK_OF_KIND = {"b": WEAK_B, "i": WEAK_I, "f": WEAK_F, "c": WEAK_C}
_SAMPLE_WEAK = {WEAK_B: True, WEAK_I: 1, WEAK_F: 1.0, WEAK_C: 1.0 + 0j}
_PY_KIND = {bool: "b", int: "i", float: "f", complex: "c"}
INDEX = np.dtype(np.int64)   # loop indices, thread ids, shapes


class ReadOnly:
    """An argument marked read-only for one call (``gpk_array.kernel.readonly(x)``)."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __repr__(self):
        return f"readonly({self.array!r})"


class Arg:
    """One normalized argument: the backing array or the number, its device kind ('cpu', 'cuda' or None for
    numbers), whether it may be written, its key entry."""
    __slots__ = ("value", "device", "writable", "key", "original")

    def __init__(self, value, device, writable, key, original):
        self.value, self.device, self.writable, self.key, self.original = value, device, writable, key, original


def _layout(a):
    if a.flags.c_contiguous:
        return "C"
    if a.flags.f_contiguous:
        return "F"
    return "S"


def normalize(value, param):
    """``Arg`` of one call argument; TypeError naming ``param`` for anything a kernel cannot take."""
    readonly = False
    if type(value) is ReadOnly:
        value, readonly = value.array, True
    t = type(value)
    if t is Array:
        dev = value._device
        data = value._data
        if _arr._any_readonly and dev is not _CPU and _arr.readonly(value):
            readonly = True   # x.flags.writeable = False on a CUDA device (NumPy keeps its own flag)
        return _array(data, dev, readonly, param, value, dev)
    if t is np.ndarray:
        return _array(value, _CPU, readonly or not value.flags.writeable, param, value, None)
    if t in _PY_KIND:
        return Arg(value, None, False, ("S", _PY_KIND[t]), value)
    if isinstance(value, np.generic):
        dt = value.dtype
        if dt not in SUPPORTED:
            raise TypeError(f"gpk_array.kernel: argument {param!r} has the unsupported dtype {dt}")
        return Arg(value, None, False, ("S", dt), value)
    mod = getattr(t, "__module__", "") or ""
    if mod.startswith("cupy") and hasattr(value, "__cuda_array_interface__"):
        return _array(value, f"cuda:{value.device.id}", readonly, param, value, None)
    raise TypeError(f"gpk_array.kernel: argument {param!r} is a {t.__name__}: a kernel takes arrays (gpk_array, "
                    f"NumPy, CuPy) and numbers (bool, int, float, complex, NumPy scalars)")


def _array(data, kind, readonly, param, original, dev):
    dt = data.dtype
    if dt not in SUPPORTED:
        raise TypeError(f"gpk_array.kernel: argument {param!r} has the unsupported dtype {dt}")
    return Arg(data, kind, not readonly, ("A", dt, data.ndim, _layout(data)), original)


def key_type(key):
    """The language type of a scalar key entry, or the element dtype of an array entry."""
    k = key[1]
    if isinstance(k, np.dtype):
        return k
    return _WEAK_OF_KIND[k]


def show_key(key):
    """The key with dtype names (for messages and ``explain``)."""
    return tuple(tuple(str(v) if isinstance(v, np.dtype) else v for v in k) for k in key)


def is_weak(t):
    return isinstance(t, str)


# ---- vector types (float2 .. uint4) ------------------------------------------------------------------------
VEC_BASES = {"float": np.dtype(np.float32), "double": np.dtype(np.float64), "int": np.dtype(np.int32),
             "uint": np.dtype(np.uint32)}
_VEC_C = {(dt.name, n): f"{b}{n}" for b, dt in VEC_BASES.items() for n in (2, 3, 4)}
VEC_NAMES = frozenset(_VEC_C.values())


class VecT:
    """A vector type of the kernel language: ``n`` (2..4) components of ``dtype`` (CUDA's float2 .. uint4)."""
    __slots__ = ("dtype", "n")

    def __init__(self, dtype, n):
        if (dtype.name, n) not in _VEC_C:
            raise TypeError(f"gpk_array.kernel: there is no CUDA vector type of {n} {dtype} components (vectors "
                            f"are float, double, int and uint, 2 to 4 components)")
        self.dtype, self.n = dtype, n

    def __eq__(self, other):
        return type(other) is VecT and other.dtype == self.dtype and other.n == self.n

    def __hash__(self):
        return hash((self.dtype, self.n))

    def __repr__(self):
        return _VEC_C[(self.dtype.name, self.n)]

    @property
    def cname(self):
        return _VEC_C[(self.dtype.name, self.n)]


def _sample(t):
    return _SAMPLE_WEAK[t] if is_weak(t) else np.zeros((), dtype=t)[()]


def _type_of_value(v):
    if type(v) in _PY_KIND:
        return _WEAK_OF_KIND[_PY_KIND[type(v)]]
    return np.asarray(v).dtype if not isinstance(v, np.generic) else v.dtype


_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
           "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}


@functools.lru_cache(maxsize=4096)
def binop_type(op, a, b):
    """The type of ``a <op> b``: NumPy's answer on samples (TypeError where NumPy has none); componentwise for
    vectors."""
    if type(a) is VecT or type(b) is VecT:
        if op not in ("+", "-", "*", "/"):
            raise TypeError(f"gpk_array.kernel: operator {op} is not defined for vectors (+ - * / are)")
        if type(a) is VecT and type(b) is VecT and a.n != b.n:
            raise TypeError(f"gpk_array.kernel: {a} {op} {b}: vectors of different lengths")
        n = a.n if type(a) is VecT else b.n
        ea = a.dtype if type(a) is VecT else a
        eb = b.dtype if type(b) is VecT else b
        return VecT(binop_type(op, ea, eb), n)
    with np.errstate(all="ignore"):
        try:
            r = _BINOPS[op](_sample(a), _sample(b))
        except TypeError:
            raise TypeError(f"gpk_array.kernel: operator {op} is not defined for {name(a)} and {name(b)}") from None
    return _type_of_value(r)


@functools.lru_cache(maxsize=1024)
def unary_type(op, a):
    """The type of ``-a``, ``+a``, ``~a``."""
    if type(a) is VecT:
        if op == "~":
            raise TypeError("gpk_array.kernel: ~ is not defined for vectors")
        return a
    s = _sample(a)
    fn = {"-": operator.neg, "+": operator.pos, "~": operator.invert}[op]
    try:
        return _type_of_value(fn(s))
    except TypeError:
        raise TypeError(f"gpk_array.kernel: operator {op} is not defined for {name(a)}") from None


@functools.lru_cache(maxsize=2048)
def math_type(fname, *args):
    """The type of ``math.<fname>(*args)`` as the CPU back end computes it."""
    from .cpu import MATH_SHIMS
    if any(type(a) is VecT for a in args):
        raise TypeError(f"gpk_array.kernel: {fname}() of a vector (apply it to the components)")
    with np.errstate(all="ignore"):
        try:
            r = MATH_SHIMS[fname](*(_sample(a) for a in args))
        except (TypeError, ValueError):
            raise TypeError(f"gpk_array.kernel: {fname}() is not defined for "
                            f"{', '.join(name(a) for a in args)}") from None
    return _type_of_value(r)


def name(t):
    """A readable name of a language type."""
    if type(t) is VecT:
        return str(t)
    return {WEAK_B: "bool", WEAK_I: "int", WEAK_F: "float", WEAK_C: "complex"}.get(t, None) or str(t)


def common(a, b):
    """The type a variable assigned values of types ``a`` and ``b`` gets (NumPy promotion)."""
    if a == b:
        return a
    if type(a) is VecT or type(b) is VecT:
        raise TypeError(f"gpk_array.kernel: a variable holds both {name(a)} and {name(b)}")
    return binop_type("+", a, b) if not (a in (WEAK_B,) and b in (WEAK_B,)) else WEAK_B


# ---- CUDA C++ names --------------------------------------------------------------------------------------
CTYPES = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
    "uint64": "unsigned long long", "float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
    "float64": "double", "complex64": "cuda::std::complex<float>", "complex128": "cuda::std::complex<double>",
    WEAK_B: "bool", WEAK_I: "long long", WEAK_F: "double", WEAK_C: "cuda::std::complex<double>",
}


def ctype(t):
    """The C++ type of a language type."""
    if type(t) is VecT:
        return t.cname
    return CTYPES[t if is_weak(t) else t.name]


def is_float_kind(t):
    return (t == WEAK_F) or (not is_weak(t) and t.kind == "f") or (not is_weak(t) and t.name == "bfloat16")


def kind(t):
    """'b', 'i', 'u', 'f' or 'c' ('v' for a vector)."""
    if type(t) is VecT:
        return "v"
    if is_weak(t):
        return {WEAK_B: "b", WEAK_I: "i", WEAK_F: "f", WEAK_C: "c"}[t]
    if t.name == "bfloat16":
        return "f"
    return t.kind


def check_annotation(ann, arg, param):
    """TypeError if ``arg`` does not fit the annotation object ``ann``: a Python number type (float, int, bool,
    complex: a number of that kind), a dtype (an array or NumPy scalar of that dtype), ``gpk_array.Array`` (an
    array)."""
    key = arg.key
    if ann in (float, int, bool, complex):
        want = _PY_KIND[ann]
        t = key_type(key) if key[0] == "S" else None
        ok = t is not None and (t == _WEAK_OF_KIND[want] or (not is_weak(t) and kind(t) == want))
        if not ok:
            raise TypeError(f"gpk_array.kernel: argument {param!r} is annotated {ann.__name__} but got "
                            f"{_describe(arg)}")
        return
    if ann is Array or ann is np.ndarray:
        if key[0] != "A":
            raise TypeError(f"gpk_array.kernel: argument {param!r} is annotated as an array but got {_describe(arg)}")
        return
    try:
        dt = np.dtype(ann)
    except TypeError:
        raise TypeError(f"gpk_array.kernel: the annotation of {param!r} ({ann!r}) is not a number type, a dtype "
                        f"or gpk_array.Array") from None
    got = key_type(key)
    if is_weak(got) or got != dt:
        raise TypeError(f"gpk_array.kernel: argument {param!r} is annotated {dt} but got {_describe(arg)}")


def _describe(arg):
    k = arg.key
    if k[0] == "A":
        return f"a {k[2]}-d {k[1]} array"
    return f"a {name(key_type(k))} number"

