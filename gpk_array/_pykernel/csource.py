"""The C++ text the CUDA back end of ``@gpk_array.kernel`` is made of: the value kinds of the typed lowering
(arrays, shapes, tuples, dtypes), the preamble of helpers every kernel gets (Python's floor division and modulo,
integer powers, atomics by compare-and-swap), the debug-mode index check, literals and type conversions."""
from __future__ import annotations

import math

import numpy as np

from . import types as T
from .types import WEAK_B, WEAK_I, WEAK_F, WEAK_C, ctype, kind

BOOL = np.dtype(bool)
SHARED_LIMIT = 48 * 1024   # bytes of static shared memory a block may declare


class ArrayT:
    """An array value: element dtype, ndim, layout ('C', 'F', 'S'), and its C pieces (pointer, shape and
    stride expressions). Shared arrays have constant shapes."""

    def __init__(self, dtype, ndim, layout, ptr, shape, stride, space="global"):
        self.dtype, self.ndim, self.layout = dtype, ndim, layout
        self.ptr, self.shape, self.stride, self.space = ptr, list(shape), list(stride), space

    def sig(self):
        return ("A", self.dtype.name, self.ndim, self.layout, self.space)


class ShapeT:
    def __init__(self, arr):
        self.arr = arr


class TupleT:
    def __init__(self, items):
        self.items = items   # [(code, type)]


class DTypeT:
    def __init__(self, dtype):
        self.dtype = dtype


_C_KEYWORDS = {"int", "float", "double", "char", "short", "long", "unsigned", "signed", "void", "auto", "const",
               "static", "struct", "union", "switch", "case", "default", "goto", "do", "register", "volatile",
               "extern", "sizeof", "typedef", "enum", "inline", "new", "delete", "this", "template", "typename",
               "namespace", "class", "private", "public", "operator", "bool", "true", "false"}

_MATH_C = {"sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
           "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
           "atan": "atan", "atan2": "atan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh",
           "acosh": "acosh", "atanh": "atanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "fabs": "fabs",
           "copysign": "copysign", "hypot": "hypot", "pow": "pow", "erf": "erf", "erfc": "erfc", "fmod": "fmod"}

PREAMBLE = r"""
typedef long long i64;
template <typename T> __device__ __forceinline__ T gpk_floordiv(T a, T b) {
    if (b == 0) return 0; T q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1; return q; }
template <typename T> __device__ __forceinline__ T gpk_mod(T a, T b) {
    if (b == 0) return 0; T r = a % b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }
__device__ __forceinline__ float gpk_floordiv(float a, float b) { float m = fmodf(a, b);
    float d = (a - m) / b; if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) d -= 1.0f;
    if (d == 0.0f) return copysignf(0.0f, a / b);
    float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return b == 0.0f ? a / b : f; }
__device__ __forceinline__ double gpk_floordiv(double a, double b) { double m = fmod(a, b);
    double d = (a - m) / b; if (m != 0.0 && ((b < 0.0) != (m < 0.0))) d -= 1.0;
    if (d == 0.0) return copysign(0.0, a / b);
    double f = floor(d); if (d - f > 0.5) f += 1.0; return b == 0.0 ? a / b : f; }
__device__ __forceinline__ float gpk_mod(float a, float b) { float m = fmodf(a, b);
    if (b == 0.0f) return m;
    if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; } else m = copysignf(0.0f, b); return m; }
__device__ __forceinline__ double gpk_mod(double a, double b) { double m = fmod(a, b);
    if (b == 0.0) return m; if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; } else m = copysign(0.0, b); return m; }
template <typename T> __device__ __forceinline__ T gpk_ipow(T a, T b) {
    if (b < 0) return 0; T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
template <typename T> __device__ __forceinline__ T gpk_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, o);
    return v; }
// warp_min / warp_max: commutative (every lane ends with the same value): NaN wins, -0.0 is the lesser zero
template <typename T> __device__ __forceinline__ T gpk_wmin(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T gpk_wmax(T a, T b) { return b > a ? b : a; }
template <> __device__ __forceinline__ float gpk_wmin(float a, float b) {
    return (b < a || b != b || (b == a && signbit(b))) ? b : a; }
template <> __device__ __forceinline__ double gpk_wmin(double a, double b) {
    return (b < a || b != b || (b == a && signbit(b))) ? b : a; }
template <> __device__ __forceinline__ float gpk_wmax(float a, float b) {
    return (b > a || b != b || (b == a && !signbit(b))) ? b : a; }
template <> __device__ __forceinline__ double gpk_wmax(double a, double b) {
    return (b > a || b != b || (b == a && !signbit(b))) ? b : a; }
template <typename T> __device__ __forceinline__ T gpk_warp_min(T v) {
    for (int o = 16; o > 0; o >>= 1) v = gpk_wmin(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v; }
template <typename T> __device__ __forceinline__ T gpk_warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) v = gpk_wmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v; }
template <typename T> __device__ __forceinline__ T gpk_atomic_add(T* p, T v) { return atomicAdd(p, v); }
template <> __device__ __forceinline__ long long gpk_atomic_add(long long* p, long long v) {
    return (long long)atomicAdd((unsigned long long*)p, (unsigned long long)v); }
template <typename T, typename W, typename F> __device__ __forceinline__ T gpk_atomic_cas_loop(T* p, F f) {
    W* w = (W*)p; W old = *w, assumed;
    do { assumed = old; T cur = *(T*)&assumed; T nv = f(cur); old = atomicCAS(w, assumed, *(W*)&nv); }
    while (assumed != old);
    return *(T*)&old; }
template <typename T> struct gpk_word { typedef unsigned int type; };
template <> struct gpk_word<double> { typedef unsigned long long type; };
template <> struct gpk_word<long long> { typedef unsigned long long type; };
template <> struct gpk_word<unsigned long long> { typedef unsigned long long type; };
template <typename T> __device__ __forceinline__ T gpk_atomic_min(T* p, T v) {
    return gpk_atomic_cas_loop<T, typename gpk_word<T>::type>(p, [v](T c) { return v < c ? v : c; }); }
template <typename T> __device__ __forceinline__ T gpk_atomic_max(T* p, T v) {
    return gpk_atomic_cas_loop<T, typename gpk_word<T>::type>(p, [v](T c) { return v > c ? v : c; }); }
template <> __device__ __forceinline__ int gpk_atomic_min(int* p, int v) { return atomicMin(p, v); }
template <> __device__ __forceinline__ int gpk_atomic_max(int* p, int v) { return atomicMax(p, v); }
template <> __device__ __forceinline__ unsigned int gpk_atomic_min(unsigned int* p, unsigned int v) {
    return atomicMin(p, v); }
template <> __device__ __forceinline__ unsigned int gpk_atomic_max(unsigned int* p, unsigned int v) {
    return atomicMax(p, v); }
template <> __device__ __forceinline__ long long gpk_atomic_min(long long* p, long long v) { return atomicMin(p, v); }
template <> __device__ __forceinline__ long long gpk_atomic_max(long long* p, long long v) { return atomicMax(p, v); }
template <typename T> __device__ __forceinline__ T gpk_atomic_exch(T* p, T v) {
    return gpk_atomic_cas_loop<T, typename gpk_word<T>::type>(p, [v](T c) { return v; }); }
template <typename T> __device__ __forceinline__ T gpk_atomic_cas(T* p, T cmp, T v) {
    typedef typename gpk_word<T>::type W; W old = atomicCAS((W*)p, *(W*)&cmp, *(W*)&v); return *(T*)&old; }
"""


# GPK_KERNEL_DEBUG: every index is checked; the first bad one is recorded (flag, array, axis, index, line) and
# replaced by 0, and the host raises IndexError after the launch
DEBUG_PREAMBLE = r"""
__device__ long long gpk_err[5];
__device__ __forceinline__ long long gpk_idx(long long i, long long n, int arr, int axis, int line) {
    if (i >= 0 && i < n) return i;
    if (atomicCAS((unsigned long long*)&gpk_err[0], 0ULL, 1ULL) == 0ULL) {
        gpk_err[1] = arr; gpk_err[2] = axis; gpk_err[3] = i; gpk_err[4] = line; __threadfence(); }
    return 0; }
"""


def _lit_float(v):
    if math.isnan(v):
        return "__longlong_as_double(0x7ff8000000000000LL)"
    if math.isinf(v):
        return "__longlong_as_double(0x7ff0000000000000LL)" if v > 0 else \
            "__longlong_as_double(0xfff0000000000000LL)"
    r = repr(float(v))
    if "e" not in r and "." not in r:
        r += ".0"
    return r


def literal(v):
    """(C code, type) of a Python or NumPy number."""
    if isinstance(v, (bool, np.bool_)):
        return ("true" if v else "false", WEAK_B if type(v) is bool else BOOL)
    if isinstance(v, int):
        if not -2**63 <= v < 2**63:
            raise TypeError(f"gpk_array.kernel: the integer {v} does not fit in 64 bits")
        return (f"{v}LL" if v != -2**63 else "(-9223372036854775807LL - 1)", WEAK_I)
    if isinstance(v, float):
        return (_lit_float(v), WEAK_F)
    if isinstance(v, complex):
        return (f"cuda::std::complex<double>({_lit_float(v.real)}, {_lit_float(v.imag)})", WEAK_C)
    if isinstance(v, np.generic):
        dt = v.dtype
        if dt.kind == "c":
            return (f"{ctype(dt)}({_lit_float(float(v.real))}, {_lit_float(float(v.imag))})", dt)
        if dt.kind in "iu":
            code, _ = literal(int(v))
            if dt.kind == "u":
                code = f"{int(v)}ULL"
            return (f"(({ctype(dt)}){code})", dt)
        return (cast(_lit_float(float(v)), WEAK_F, dt), dt)
    raise TypeError(f"gpk_array.kernel: {v!r} is not a number a kernel can use")


def _is_half(t):
    return isinstance(t, np.dtype) and t.name in ("float16", "bfloat16")


def cast(code, src, dst):
    """C code converting ``code`` of type ``src`` to ``dst``."""
    if src == dst or ctype(src) == ctype(dst):
        return code
    if type(src) is T.VecT or type(dst) is T.VecT:
        raise TypeError(f"gpk_array.kernel: a {T.name(src)} value cannot be converted to {T.name(dst)}")
    kd, ks = kind(dst), kind(src)
    if ks == "c" and kd != "c":
        raise TypeError(f"gpk_array.kernel: a complex value cannot be converted to {T.name(dst)}")
    if kd == "b":
        if _is_half(src):
            return f"(((float)({code})) != 0.0f)"
        return f"(({code}) != 0)"
    if _is_half(dst):
        if dst.name == "float16" and ctype(src) == "double":
            return f"__double2half({code})"        # one rounding, as NumPy's float64 -> float16
        # float16 <-> bfloat16, integers, and float64 -> bfloat16 through float (as ml_dtypes does)
        return f"{ctype(dst)}((float)({code}))"
    if _is_half(src):
        return f"(({ctype(dst)})((float)({code})))"
    if kd == "c":
        return f"{ctype(dst)}({code})"
    return f"(({ctype(dst)})({code}))"
