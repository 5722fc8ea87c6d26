"""CUDA C++ from a ``@gpk_array.kernel`` function and one argument signature.

The typed lowering walks the same ``ast`` the CPU back end runs. Types come from ``types.py`` (NumPy's own
promotion, Python numbers weak), every operator casts its operands to the result type explicitly, so the GPU
computes in the types the CPU execution does. Arrays are passed as a pointer plus a shape and a stride (in
elements) per dimension; a C-contiguous array is indexed from its shape. A loop-domain kernel becomes a
grid-stride loop over the domain (the bounds guard), a ``work_size(n)`` kernel returns the threads past ``n``.
Helper functions become ``__device__`` functions, one per call signature (``<name>__<n>``).
"""
from __future__ import annotations

import ast
import math

import numpy as np

from . import types as T
from .types import WEAK_B, WEAK_I, WEAK_F, WEAK_C, is_weak, ctype, kind

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
    if (d == 0.0f) return copysignf(0.0f, a / b); float f = floorf(d); if (d - f > 0.5f) f += 1.0f; return b == 0.0f ? a / b : f; }
__device__ __forceinline__ double gpk_floordiv(double a, double b) { double m = fmod(a, b);
    double d = (a - m) / b; if (m != 0.0 && ((b < 0.0) != (m < 0.0))) d -= 1.0;
    if (d == 0.0) return copysign(0.0, a / b); double f = floor(d); if (d - f > 0.5) f += 1.0; return b == 0.0 ? a / b : f; }
__device__ __forceinline__ float gpk_mod(float a, float b) { float m = fmodf(a, b);
    if (b == 0.0f) return m; if (m != 0.0f) { if ((b < 0.0f) != (m < 0.0f)) m += b; } else m = copysignf(0.0f, b); return m; }
__device__ __forceinline__ double gpk_mod(double a, double b) { double m = fmod(a, b);
    if (b == 0.0) return m; if (m != 0.0) { if ((b < 0.0) != (m < 0.0)) m += b; } else m = copysign(0.0, b); return m; }
template <typename T> __device__ __forceinline__ T gpk_ipow(T a, T b) {
    if (b < 0) return 0; T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
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
template <> __device__ __forceinline__ unsigned int gpk_atomic_min(unsigned int* p, unsigned int v) { return atomicMin(p, v); }
template <> __device__ __forceinline__ unsigned int gpk_atomic_max(unsigned int* p, unsigned int v) { return atomicMax(p, v); }
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
    return not is_weak(t) and t.name in ("float16", "bfloat16")


def cast(code, src, dst):
    """C code converting ``code`` of type ``src`` to ``dst``."""
    if src == dst or ctype(src) == ctype(dst):
        return code
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


class FunctionGen:
    """Types and lowers one function (the kernel or a helper specialization)."""

    def __init__(self, gen, fi, arg_types, is_kernel, cname):
        self.gen, self.fi, self.is_kernel, self.cname = gen, fi, is_kernel, cname
        self.params = dict(zip(fi.params, arg_types))
        self.vars = {}          # local name -> type (numbers) or ArrayT (aliases, shared)
        self.shared = []        # declarations
        self.ret = None
        self.tmp = 0
        self.loop_vars = set()
        self.domain = fi.is_kernel and gen.ki.domain or ("none", None)
        self._infer()

    # ---- errors ---------------------------------------------------------------------------------------
    def err(self, node, msg, exc=TypeError):
        self.fi.error(node, None, exc, f"gpk_array.kernel: {msg} (in {self.fi.name!r}, line "
                                       f"{getattr(node, 'lineno', '?')})")

    # ---- inference: iterate to a fixpoint of local variable types ---------------------------------
    def _infer(self):
        self.inferring = True
        for _ in range(10):
            before = dict(self.vars)
            self.ret_types = []
            self.lines = []
            self.block(self.fi.body, 0)
            if self.vars.keys() == before.keys() and all(_same(self.vars[k], before[k]) for k in self.vars):
                break
        self.inferring = False
        rt = None
        for t in self.ret_types:
            rt = t if rt is None else T.common(rt, t)
        self.ret = rt

    def new_tmp(self):
        self.tmp += 1
        return f"__t{self.tmp}"

    def var_c(self, name):
        return f"v_{name}" if name not in _C_KEYWORDS else f"v__{name}"

    def assign_type(self, name, t, node):
        if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
            old = self.vars.get(name)
            if old is not None and not _same(old, t):
                self.err(node, f"{name!r} is assigned different arrays; an array variable names one array")
            self.vars[name] = t
            return
        if name in self.params:
            self.err(node, f"assigning to the parameter {name!r}: use a local variable")
        old = self.vars.get(name)
        if isinstance(old, ArrayT):
            self.err(node, f"{name!r} names an array and cannot be assigned a number")
        self.vars[name] = t if old is None else T.common(old, t)

    # ---- statements -----------------------------------------------------------------------------------
    def emit(self, depth, line):
        self.lines.append("    " * depth + line)

    def block(self, stmts, depth):
        for st in stmts:
            self.stmt(st, depth)

    def stmt(self, st, d):
        if isinstance(st, ast.Expr):
            v = st.value
            if isinstance(v, ast.Constant):
                return
            r = getattr(getattr(v, "func", None), "_gpk_r", None)
            if r is not None and r.kind == "builtin" and r.name == "work_size":
                code, t = self.expr(v.args[0])
                self.emit(d, f"if ((i64)blockIdx.x * blockDim.x + threadIdx.x >= {cast(code, t, WEAK_I)}) return;")
                return
            code, t = self.expr(v)
            self.emit(d, f"{code};")
        elif isinstance(st, (ast.Assign, ast.AnnAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if st.value is None:
                return
            if len(targets) == 1:
                self.assign(targets[0], st.value, d)
            else:
                code, t = self.expr(st.value)
                tmp = self.new_tmp()
                if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                    self.err(st, "chained assignment of arrays or tuples")
                self.emit(d, f"{ctype(t)} {tmp} = {code};")
                for tg in targets:
                    self.store(tg, tmp, t, d, st)
        elif isinstance(st, ast.AugAssign):
            op = _binop(st.op, st)
            if isinstance(st.target, ast.Name):
                load = ast.Name(id=st.target.id, ctx=ast.Load())
            else:
                load = ast.Subscript(value=st.target.value, slice=st.target.slice, ctx=ast.Load())
            ast.copy_location(load, st)
            node = ast.copy_location(ast.BinOp(left=load, op=st.op, right=st.value), st)
            code, t = self.binop(node, op)
            self.store(st.target, code, t, d, st)
        elif isinstance(st, ast.If):
            code, t = self.expr(st.test)
            self.emit(d, f"if ({self.truth(code, t)}) {{")
            self.block(st.body, d + 1)
            if st.orelse:
                self.emit(d, "} else {")
                self.block(st.orelse, d + 1)
            self.emit(d, "}")
        elif isinstance(st, ast.While):
            code, t = self.expr(st.test)
            self.emit(d, f"while ({self.truth(code, t)}) {{")
            self.block(st.body, d + 1)
            self.emit(d, "}")
        elif isinstance(st, ast.For):
            if self.domain[1] is st:
                self.domain_loop(st, d)
            else:
                self.for_range(st, d)
        elif isinstance(st, ast.Break):
            self.emit(d, "break;")
        elif isinstance(st, ast.Continue):
            self.emit(d, "continue;")
        elif isinstance(st, ast.Pass):
            pass
        elif isinstance(st, ast.Return):
            if st.value is None:
                self.emit(d, "return;")
            else:
                code, t = self.expr(st.value)
                if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                    self.err(st, "helpers return numbers, not arrays or tuples")
                self.ret_types.append(t)
                rt = self.ret if self.ret is not None else t
                self.emit(d, f"return {cast(code, t, rt)};")
        else:
            self.err(st, f"the statement {type(st).__name__}", SyntaxError)

    def assign(self, target, value, d):
        r = getattr(getattr(value, "func", None), "_gpk_r", None)
        if r is not None and r.kind == "builtin" and r.name == "shared":
            if not isinstance(target, ast.Name) or not self.is_kernel:
                self.err(value, "kernel.shared(...) must be assigned to a name in the kernel function")
            self.shared_decl(target.id, value)
            return
        if isinstance(target, ast.Tuple):
            code, t = self.expr(value)
            if isinstance(t, ShapeT):
                items = [(s, WEAK_I) for s in t.arr.shape]
            elif isinstance(t, TupleT):
                items = t.items
            else:
                self.err(target, "unpacking a value that is not a tuple or a shape")
            if len(items) != len(target.elts):
                self.err(target, f"unpacking {len(items)} values into {len(target.elts)} names")
            tmps = []
            for c, ty in items:
                tmp = self.new_tmp()
                self.emit(d, f"{ctype(ty)} {tmp} = {c};")
                tmps.append((tmp, ty))
            for tg, (c, ty) in zip(target.elts, tmps):
                self.store(tg, c, ty, d, target)
            return
        code, t = self.expr(value)
        self.store(target, code, t, d, value)

    def store(self, target, code, t, d, node):
        if isinstance(target, ast.Name):
            name = target.id
            self.assign_type(name, t, node)
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                return
            vt = self.vars[name]
            self.emit(d, f"{self.var_c(name)} = {cast(code, t, vt)};")
        elif isinstance(target, ast.Subscript):
            ref, et = self.element(target)
            self.emit(d, f"{ref} = {cast(code, t, et)};")
        else:
            self.err(node, "this assignment target", SyntaxError)

    def shared_decl(self, name, call):
        if len(call.args) != 2:
            self.err(call, "kernel.shared(shape, dtype) takes two arguments")
        shape = self.const_shape(call.args[0])
        _, dt = self.expr(call.args[1])
        if not isinstance(dt, DTypeT):
            self.err(call, "the dtype of kernel.shared must be a dtype (gpk_array.float32, x.dtype)")
        dt = dt.dtype
        n = int(np.prod(shape))
        nbytes = n * dt.itemsize
        stride = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
        cn = f"s_{name}"
        arr = ArrayT(dt, len(shape), "C", cn, [f"{s}LL" for s in shape], [f"{s}LL" for s in stride], "shared")
        arr.nbytes = nbytes
        if name not in self.vars:
            self.vars[name] = arr
        if not self.inferring:
            self.shared.append((f"__shared__ {ctype(dt)} {cn}[{n}];", nbytes, call))

    def const_shape(self, node):
        vals = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for v in vals:
            c = self.const_eval(v)
            if type(c) is not int and not isinstance(c, np.integer):
                self.err(node, "the shape of kernel.shared must be constant ints (literals, module constants "
                               "and arithmetic on them)")
            out.append(int(c))
        if any(s <= 0 for s in out):
            self.err(node, f"the shape of kernel.shared must be positive, got {tuple(out)}", ValueError)
        return out

    def const_eval(self, node):
        """The value of a constant expression (literals, module constants, + - * // % ** on them), or None."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Name) and (node.id in self.params or node.id in self.fi.locals):
                return None
            r = self.fi.resolve(node)
            return r.obj if r is not None and r.kind == "const" else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.const_eval(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp):
            a, b = self.const_eval(node.left), self.const_eval(node.right)
            if a is None or b is None:
                return None
            op = _binop(node.op, node)
            from .types import _BINOPS
            try:
                return _BINOPS[op](a, b)
            except (ArithmeticError, TypeError):
                return None
        return None

    def truth(self, code, t):
        if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
            return "true"
        return cast(code, t, BOOL) if kind(t) != "b" else code

    def for_tuple(self, st, d):
        items = [self.expr(e) for e in st.iter.elts]
        if not items:
            return
        t = items[0][1]
        for _, ti in items[1:]:
            t = T.common(t, ti)
        if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
            self.err(st, "loops over tuples of numbers only")
        name = st.target.id
        self.assign_type(name, t, st)
        arr, k = self.new_tmp(), self.new_tmp()
        self.emit(d, "{")
        self.emit(d + 1, f"const {ctype(t)} {arr}[{len(items)}] = {{{', '.join(cast(c, ti, t) for c, ti in items)}}};")
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int {k} = 0; {k} < {len(items)}; ++{k}) {{")
        self.emit(d + 2, f"{self.var_c(name)} = {cast(f'{arr}[{k}]', t, self.vars[name])};")
        self.block(st.body, d + 2)
        self.emit(d + 1, "}")
        self.emit(d, "}")

    def for_range(self, st, d):
        if isinstance(st.iter, ast.Tuple) and isinstance(st.target, ast.Name):
            return self.for_tuple(st, d)
        r = getattr(getattr(st.iter, "func", None), "_gpk_r", None)
        if r is None or r.kind != "py" or r.name != "range" or not isinstance(st.target, ast.Name):
            self.err(st, "loops inside a kernel must be `for name in range(...)` or over a tuple of numbers "
                         "(ndindex is for the launch domain only)", SyntaxError)
        args = [self.expr(a) for a in st.iter.args]
        if not 1 <= len(args) <= 3:
            self.err(st, "range() takes 1 to 3 arguments")
        for c, t in args:
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)) or kind(t) not in "iub":
                self.err(st, "range() takes integers")
        a = [cast(c, t, WEAK_I) for c, t in args]
        start, stop, step = ("0LL", a[0], "1LL") if len(a) == 1 else (a[0], a[1], a[2] if len(a) == 3 else "1LL")
        name = st.target.id
        self.assign_type(name, WEAK_I, st)
        v = self.var_c(name)
        e, s = self.new_tmp(), self.new_tmp()
        self.emit(d, "{")
        self.emit(d + 1, f"const i64 {e} = {stop}; const i64 {s} = {step};")
        const_step = len(st.iter.args) < 3 or (isinstance(st.iter.args[2], ast.Constant))
        if const_step:
            stepv = 1 if len(st.iter.args) < 3 else st.iter.args[2].value
            cond = f"{v} < {e}" if stepv > 0 else f"{v} > {e}"
        else:
            cond = f"({s} > 0 ? {v} < {e} : {v} > {e})"
        self.emit(d + 1, f"for ({v} = {start}; {cond}; {v} += {s}) {{")
        self.block(st.body, d + 2)
        self.emit(d + 1, "}")
        self.emit(d, "}")

    def domain_loop(self, st, d):
        kind_, loop = self.domain
        for n in (m for b in st.body for m in ast.walk(b)):
            if isinstance(n, (ast.Return, ast.Break)) and not _inside_inner_loop(st, n):
                self.err(n, f"{type(n).__name__.lower()} inside the launch-domain loop (its iterations run in "
                            f"parallel): use continue", SyntaxError)
        if kind_ == "range":
            args = [self.expr(a) for a in st.iter.args]
            a = [cast(c, t, WEAK_I) for c, t in args]
            start, stop, step = ("0LL", a[0], "1LL") if len(a) == 1 else \
                (a[0], a[1], a[2] if len(a) == 3 else "1LL")
            name = st.target.id
            self.assign_type(name, WEAK_I, st)
            self.emit(d, f"const i64 __a = {start}, __b = {stop}, __s = {step};")
            self.emit(d, "const i64 __n = __s > 0 ? (__b > __a ? (__b - __a + __s - 1) / __s : 0) "
                         ": (__a > __b ? (__a - __b - __s - 1) / (-__s) : 0);")
            self.emit(d, "for (i64 __t = (i64)blockIdx.x * blockDim.x + threadIdx.x; __t < __n; "
                         "__t += (i64)gridDim.x * blockDim.x) {")
            self.emit(d + 1, f"{self.var_c(name)} = __a + __t * __s;")
            self.block(st.body, d + 1)
            self.emit(d, "}")
            return
        names = [e.id for e in st.target.elts]
        dims = self.ndindex_dims(st.iter, len(names))
        axes = ["x", "y", "z"][:len(names)][::-1]   # the last loop variable varies fastest: threadIdx.x
        for k, n in enumerate(names):
            self.assign_type(n, WEAK_I, st)
            self.emit(d, f"const i64 __n{k} = {dims[k]};")
        depth = d
        for k, (n, ax) in enumerate(zip(names, axes)):
            self.emit(depth, f"for (i64 __t{k} = (i64)blockIdx.{ax} * blockDim.{ax} + threadIdx.{ax}; "
                             f"__t{k} < __n{k}; __t{k} += (i64)gridDim.{ax} * blockDim.{ax}) {{")
            depth += 1
            self.emit(depth, f"{self.var_c(n)} = __t{k};")
        self.block(st.body, depth)
        for k in range(len(names)):
            depth -= 1
            self.emit(depth, "}")

    def ndindex_dims(self, call, nd):
        args = [self.expr(a) for a in call.args]
        if len(args) == 1 and isinstance(args[0][1], ShapeT):
            dims = args[0][1].arr.shape
        elif len(args) == 1 and isinstance(args[0][1], TupleT):
            dims = [cast(c, t, WEAK_I) for c, t in args[0][1].items]
        else:
            dims = [cast(c, t, WEAK_I) for c, t in args]
        if len(dims) != nd:
            self.err(call, f"the loop has {nd} variables but ndindex gets {len(dims)} dimensions", ValueError)
        return dims

    # ---- expressions ----------------------------------------------------------------------------------
    def expr(self, node):
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            self.err(node, f"the expression {type(node).__name__}", SyntaxError)
        return m(node)

    def e_Constant(self, node):
        return literal(node.value)

    def e_Name(self, node):
        n = node.id
        if n in self.params:
            t = self.params[n]
            if isinstance(t, ArrayT):
                return (n, t)
            return (f"p_{n}", t)
        if n in self.vars:
            t = self.vars[n]
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                return (n, t)
            return (self.var_c(n), t)
        if n in self.fi.locals:
            if self.inferring:
                return ("0", WEAK_I)
            self.err(node, f"the local {n!r} is read before it is assigned", NameError)
        return self.resolved(node)

    def resolved(self, node):
        r = self.fi.resolve(node)
        if r is None:
            self.err(node, f"{ast.unparse(node)} cannot be used here")
        if r.kind == "const":
            if r.obj is None:
                self.err(node, f"{r.name} is None")
            return literal(r.obj)
        if r.kind == "dtype":
            return ("", DTypeT(r.obj))
        self.err(node, f"{r.name} cannot be used as a value")

    def e_Attribute(self, node):
        if isinstance(node.value, ast.Name) and (node.value.id in self.params or node.value.id in self.vars):
            code, t = self.expr(node.value)
            if isinstance(t, ArrayT):
                if node.attr == "shape":
                    return ("", ShapeT(t))
                if node.attr == "ndim":
                    return (f"{t.ndim}LL", WEAK_I)
                if node.attr == "size":
                    return ("(" + " * ".join(t.shape or ["1LL"]) + ")", WEAK_I)
                if node.attr == "dtype":
                    return ("", DTypeT(t.dtype))
            if node.attr in ("real", "imag") and not isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                if kind(t) == "c":
                    rt = np.dtype(np.float32) if ctype(t) == "cuda::std::complex<float>" else \
                        (WEAK_F if is_weak(t) else np.dtype(np.float64))
                    return (f"({code}).{node.attr}()", rt)
                return (code, t) if node.attr == "real" else literal(0)
            self.err(node, f"the attribute {node.attr!r} of {node.value.id!r}")
        return self.resolved(node)

    def e_Tuple(self, node):
        items = []
        for e in node.elts:
            c, t = self.expr(e)
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                self.err(node, "tuples of numbers only")
            items.append((c, t))
        return ("", TupleT(items))

    def e_Subscript(self, node):
        code, t = self.expr(node.value)
        if isinstance(t, ShapeT):
            k = node.slice
            if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and isinstance(k.operand, ast.Constant):
                k = -k.operand.value
            elif isinstance(k, ast.Constant):
                k = k.value
            else:
                self.err(node, "shape indices must be constant ints")
            if not -t.arr.ndim <= k < t.arr.ndim:
                self.err(node, f"shape index {k} out of range for a {t.arr.ndim}-d array", IndexError)
            return (t.arr.shape[k], WEAK_I)
        if isinstance(t, TupleT):
            k = node.slice
            if not isinstance(k, ast.Constant) or type(k.value) is not int:
                self.err(node, "tuple indices must be constant ints")
            return t.items[k.value]
        return self.element(node)

    def element(self, node):
        """(C lvalue, element type) of ``a[i, j]``."""
        base = node.value
        code, t = self.expr(base)
        if not isinstance(t, ArrayT):
            self.err(node, f"{ast.unparse(base)} is not an array and cannot be indexed")
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(idx) != t.ndim:
            self.err(node, f"{ast.unparse(base)} is {t.ndim}-d but is indexed with {len(idx)} indices "
                           f"(index one element at a time)", IndexError)
        parts = []
        for k, e in enumerate(idx):
            if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) \
                    and type(e.operand.value) is int:
                parts.append(f"({t.shape[k]} - {e.operand.value}LL)")
                continue
            c, ty = self.expr(e)
            if isinstance(ty, (ArrayT, ShapeT, TupleT, DTypeT)) or kind(ty) not in "iub":
                self.err(node, "array indices must be integers")
            parts.append(cast(c, ty, WEAK_I))
        if self.gen.debug:
            aid = self.gen.array_id(t.ptr[2:] if t.space == "shared" else t.ptr)
            parts = [f"gpk_idx({p}, {t.shape[k]}, {aid}, {k}, {getattr(node, 'lineno', 0)})"
                     for k, p in enumerate(parts)]
        if t.layout == "C":
            off = parts[0]
            for k in range(1, len(parts)):
                off = f"({off}) * {t.shape[k]} + {parts[k]}"
        else:
            off = " + ".join(f"({p}) * {s}" for p, s in zip(parts, t.stride)) or "0"
        return (f"{t.ptr}[{off}]", t.dtype)

    def binop(self, node, op):
        lc, lt = self.expr(node.left)
        rc, rt = self.expr(node.right)
        for t in (lt, rt):
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                self.err(node, "arithmetic on whole arrays (index one element at a time)")
        res = T.binop_type(op, lt, rt)
        if op == "/":
            a, b = cast(lc, lt, res), cast(rc, rt, res)
            return (self.halfop(res, f"{a}", f"{b}", "/"), res)
        if op in ("//", "%"):
            fn = "gpk_floordiv" if op == "//" else "gpk_mod"
            if kind(res) == "c":
                self.err(node, f"{op} on complex numbers")
            if _is_half(res):
                return (cast(f"{fn}((float)({cast(lc, lt, res)}), (float)({cast(rc, rt, res)}))",
                             np.dtype(np.float32), res), res)
            return (f"{fn}<{ctype(res)}>({cast(lc, lt, res)}, {cast(rc, rt, res)})" if kind(res) in "iub"
                    else f"{fn}({cast(lc, lt, res)}, {cast(rc, rt, res)})", res)
        if op == "**":
            if kind(res) in "iu":
                return (f"gpk_ipow<{ctype(res)}>({cast(lc, lt, res)}, {cast(rc, rt, res)})", res)
            if kind(res) == "c":
                return (f"cuda::std::pow({cast(lc, lt, res)}, {cast(rc, rt, res)})", res)
            return (self.mathcall("pow", res, [cast(lc, lt, res), cast(rc, rt, res)]), res)
        if op in ("<<", ">>", "&", "|", "^"):
            if kind(res) not in "iub":
                self.err(node, f"{op} on {T.name(res)}")
            return (f"(({ctype(res)})({cast(lc, lt, res)} {op} {cast(rc, rt, res)}))", res)
        return (self.halfop(res, cast(lc, lt, res), cast(rc, rt, res), op), res)

    def halfop(self, res, a, b, op):
        if kind(res) == "b" and op in "+-*":
            return f"(({a}) {'|' if op == '+' else '&'} ({b}))" if op != "-" else f"(({a}) != ({b}))"
        return f"({a} {op} {b})"

    def e_BinOp(self, node):
        return self.binop(node, _binop(node.op, node))

    def e_UnaryOp(self, node):
        c, t = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return (f"(!{self.truth(c, t)})", BOOL)
        op = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[type(node.op)]
        rt = T.unary_type(op, t)
        if op == "~" and kind(t) == "b":
            return (f"(!{c})", rt)
        return (f"({op}{cast(c, t, rt)})", rt)

    def e_BoolOp(self, node):
        op = " && " if isinstance(node.op, ast.And) else " || "
        parts = []
        for v in node.values:
            c, t = self.expr(v)
            parts.append(self.truth(c, t))
        return ("(" + op.join(parts) + ")", BOOL)

    def e_Compare(self, node):
        parts = []
        left = self.expr(node.left)
        for op, comp in zip(node.ops, node.comparators):
            right = self.expr(comp)
            cop = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}.get(
                type(op))
            if cop is None:
                self.err(node, f"the comparison {type(op).__name__} (is, in)", SyntaxError)
            ct = T.binop_type("+", left[1], right[1]) if not (kind(left[1]) == "b" and kind(right[1]) == "b") \
                else BOOL
            a, b = cast(left[0], left[1], ct), cast(right[0], right[1], ct)
            parts.append(f"({a} {cop} {b})")
            left = right
        return ("(" + " && ".join(parts) + ")", BOOL)

    def e_IfExp(self, node):
        c, t = self.expr(node.test)
        a, at = self.expr(node.body)
        b, bt = self.expr(node.orelse)
        rt = T.common(at, bt)
        return (f"({self.truth(c, t)} ? {cast(a, at, rt)} : {cast(b, bt, rt)})", rt)

    def mathcall(self, fname, t, args):
        """``fname`` of ``args`` (already of type ``t``, a float or complex type) in C."""
        base = _MATH_C[fname]
        if kind(t) == "c":
            return f"cuda::std::{base}({', '.join(args)})"
        if _is_half(t):
            inner = f"{base}f({', '.join(f'(float)({a})' for a in args)})"
            return f"{ctype(t)}({inner})"
        if ctype(t) == "float":
            return f"{base}f({', '.join(args)})"
        return f"{base}({', '.join(args)})"

    def e_Call(self, node):
        r = getattr(node.func, "_gpk_r", None)
        if r is None:
            self.err(node, f"{ast.unparse(node.func)} is not callable in a kernel")
        args = node.args
        if r.kind == "math":
            vals = [self.expr(a) for a in args]
            for c, t in vals:
                if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                    self.err(node, f"{r.name}() of an array (index one element at a time)")
            return self.math(node, r.name, vals)
        if r.kind == "py":
            return self.pybuiltin(node, r.name, args)
        if r.kind == "dtype":
            if len(args) != 1:
                self.err(node, f"{r.name}(x) takes one argument")
            c, t = self.expr(args[0])
            return (cast(c, t, r.obj), r.obj)
        if r.kind == "helper":
            return self.gen.call_helper(self, node, r.obj)
        if r.kind == "builtin":
            return self.builtin(node, r.name, args)
        self.err(node, f"{r.name} is not callable in a kernel")

    def math(self, node, name, vals):
        types_ = [t for _, t in vals]
        if name in ("min", "max"):
            return self.minmax(node, name, vals)
        rt = T.math_type(name, *types_)
        if name in ("isnan", "isinf", "isfinite"):
            c, t = vals[0]
            if kind(t) in "iub":
                return ("false" if name != "isfinite" else "true", rt)
            if kind(t) == "c":
                self.err(node, f"{name}() of complex numbers on CUDA")
            ft = t if not _is_half(t) else np.dtype(np.float32)
            return (f"{name}({cast(c, t, ft)})", rt)
        if name == "sign":
            c, t = vals[0]
            c = cast(c, t, rt)
            zero = cast("0", WEAK_I, rt)
            return (cast(f"((int)(({c}) > {zero}) - (int)(({c}) < {zero}))", np.dtype(np.int32), rt), rt)
        if name == "square":
            c, t = vals[0]
            c = cast(c, t, rt)
            return (f"({c} * {c})", rt)
        if name in ("floor", "ceil", "trunc") and rt == WEAK_I:
            c, t = vals[0]
            return (f"((i64){_MATH_C[name]}({cast(c, t, WEAK_F)}))", WEAK_I)
        if kind(rt) in "iub":
            c, t = vals[0]
            return (cast(c, t, rt), rt) if name in ("floor", "ceil", "trunc") else \
                self.err(node, f"{name}() of {T.name(t)}")
        if name == "fabs" and kind(rt) == "c":
            self.err(node, "math.fabs of complex numbers")
        cargs = [cast(c, t, rt) for c, t in vals]
        return (self.mathcall(name, rt, cargs), rt)

    def minmax(self, node, name, vals):
        if len(vals) < 2:
            self.err(node, f"{name}() takes two or more numbers in a kernel")
        acc_c, acc_t = vals[0]
        for c, t in vals[1:]:
            rt = T.common(acc_t, t)
            a, b = cast(acc_c, acc_t, rt), cast(c, t, rt)
            ta, tb = self.new_tmp(), self.new_tmp()
            cmp = "<" if name == "min" else ">"
            # Python's min/max: the first of the smallest; NaN in the first place stays
            acc_c = f"([&]() {{ {ctype(rt)} {ta} = {a}; {ctype(rt)} {tb} = {b}; return ({tb} {cmp} {ta}) ? {tb} : {ta}; }}())"
            acc_t = rt
        return (acc_c, acc_t)

    def pybuiltin(self, node, name, args):
        if name in ("min", "max"):
            vals = [self.expr(a) for a in args]
            return self.minmax(node, name, vals)
        if name == "range":
            self.err(node, "range() outside a for loop")
        if name == "len":
            c, t = self.expr(args[0])
            if not isinstance(t, ArrayT):
                self.err(node, "len() of a non-array")
            return (t.shape[0], WEAK_I)
        if len(args) != 1:
            self.err(node, f"{name}() takes one argument in a kernel")
        c, t = self.expr(args[0])
        if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
            self.err(node, f"{name}() of an array")
        if name == "abs":
            rt = T.unary_type("-", t) if kind(t) != "b" else WEAK_I
            if kind(t) == "c":
                ft = np.dtype(np.float32) if ctype(t) == "cuda::std::complex<float>" else np.dtype(np.float64)
                return (f"cuda::std::abs({c})", ft if not is_weak(t) else WEAK_F)
            if kind(rt) == "f":
                return (self.mathcall("fabs", rt, [cast(c, t, rt)]), rt)
            x = self.new_tmp()
            return (f"([&]() {{ {ctype(rt)} {x} = {cast(c, t, rt)}; return {x} < 0 ? ({ctype(rt)})(-{x}) : {x}; }}())",
                    rt)
        if name == "float":
            return (cast(c, t, WEAK_F), WEAK_F)
        if name == "int":
            if kind(t) == "c":
                self.err(node, "int() of a complex number")
            return (cast(c, t, WEAK_I), WEAK_I)
        if name == "bool":
            return (self.truth(c, t), WEAK_B)
        self.err(node, f"{name}()")

    def builtin(self, node, name, args):
        ids = {"thread_id": "threadIdx", "block_id": "blockIdx", "block_dim": "blockDim", "grid_dim": "gridDim"}
        if name in ids or name == "global_id":
            dim = 0
            if args:
                if not isinstance(args[0], ast.Constant) or args[0].value not in (0, 1, 2):
                    self.err(node, f"kernel.{name}(dim): dim must be 0, 1 or 2")
                dim = args[0].value
            ax = "xyz"[dim]
            if name == "global_id":
                return (f"((i64)blockIdx.{ax} * blockDim.{ax} + threadIdx.{ax})", WEAK_I)
            return (f"((i64){ids[name]}.{ax})", WEAK_I)
        if name == "lane_id":
            return ("((i64)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31))", WEAK_I)
        if name == "barrier":
            return ("__syncthreads()", WEAK_B)
        if name == "shared":
            self.err(node, "kernel.shared(...) must be assigned to a name: s = kernel.shared(shape, dtype)")
        if name.startswith("shfl"):
            if len(args) != 2:
                self.err(node, f"kernel.{name}(value, n) takes two arguments")
            c, t = self.expr(args[0])
            a, at = self.expr(args[1])
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)) or kind(t) == "c":
                self.err(node, f"kernel.{name} of {T.name(t) if not isinstance(t, ArrayT) else 'an array'}")
            st = t
            if kind(t) == "b":
                st = np.dtype(np.int32)
            elif is_weak(t):
                st = np.dtype(np.float64) if t == WEAK_F else np.dtype(np.int64)
            elif t.itemsize < 4 and not _is_half(t):
                st = np.dtype(np.int32)
            fn = {"shfl_down": "__shfl_down_sync", "shfl_up": "__shfl_up_sync", "shfl_xor": "__shfl_xor_sync",
                  "shfl": "__shfl_sync"}[name]
            code = f"{fn}(0xffffffffu, {cast(c, t, st)}, (int)({cast(a, at, WEAK_I)}))"
            return (cast(code, st, t) if st != t else code, t)
        if name.startswith("atomic_"):
            want = 4 if name == "atomic_cas" else 3
            if len(args) != want:
                self.err(node, f"kernel.{name} takes {want} arguments")
            sub = ast.copy_location(ast.Subscript(value=args[0], slice=args[1], ctx=ast.Load()), node)
            ref, et = self.element(sub)
            if kind(et) == "c" or (et.itemsize < 4 and not (name == "atomic_add" and _is_half(et))):
                self.err(node, f"kernel.{name} on {et} arrays (atomics need 4- or 8-byte types; add also "
                               f"takes float16/bfloat16)")
            vals = [self.expr(a) for a in args[2:]]
            cv = [cast(c, t, et) for c, t in vals]
            return (f"gpk_{name}<{ctype(et)}>(&{ref}, {', '.join(cv)})", et)
        if name == "work_size":
            self.err(node, "kernel.work_size(n) must be a statement at the top of the kernel body")
        self.err(node, f"kernel.{name}")


def _inside_inner_loop(domain, node):
    for n in ast.walk(domain):
        if n is not domain and isinstance(n, (ast.For, ast.While)) and any(m is node for m in ast.walk(n)):
            return isinstance(node, ast.Break) or False
    return False


def _same(a, b):
    if isinstance(a, ArrayT) and isinstance(b, ArrayT):
        return a.sig() == b.sig() and a.ptr == b.ptr
    if isinstance(a, (ShapeT, TupleT, DTypeT)) or isinstance(b, (ShapeT, TupleT, DTypeT)):
        return type(a) is type(b)
    return a == b


def _binop(op, node):
    m = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
         ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}.get(type(op))
    if m is None:
        raise SyntaxError(f"gpk_array.kernel: the operator {type(op).__name__} is not supported "
                          f"(line {getattr(node, 'lineno', '?')})")
    return m


class Generator:
    """The CUDA C++ translation unit of one kernel specialization."""

    def __init__(self, ki, key, cname, debug=False):
        self.ki, self.key, self.cname, self.debug = ki, key, cname, debug
        self.array_names = []
        self.helpers = {}      # (func, sig) -> (cname, FunctionGen)
        self.helper_order = []
        self.uses_complex = any("complex" in str(k[1]) for k in key)
        fi = ki.main
        types_, self.params = [], []
        for p, k in zip(fi.params, key):
            if k[0] == "A":
                dt = T.key_type(k)
                nd = k[2]
                arr = ArrayT(dt, nd, k[3], p, [f"{p}_s{d}" for d in range(nd)], [f"{p}_t{d}" for d in range(nd)])
                types_.append(arr)
            else:
                types_.append(T.key_type(k))
        self.main = FunctionGen(self, fi, types_, True, cname)
        self.arg_types = types_

    def array_id(self, name):
        if name not in self.array_names:
            self.array_names.append(name)
        return self.array_names.index(name)

    def call_helper(self, caller, node, func):
        hfi = self.ki.functions[func]
        vals = [caller.expr(a) for a in node.args]
        if len(vals) != len(hfi.params):
            caller.err(node, f"{hfi.name}() takes {len(hfi.params)} arguments but {len(vals)} were given")
        sig, types_ = [], []
        for p, (c, t) in zip(hfi.params, vals):
            if isinstance(t, ArrayT):
                sig.append(t.sig())
                types_.append(ArrayT(t.dtype, t.ndim, t.layout, p, [f"{p}_s{d}" for d in range(t.ndim)],
                                     [f"{p}_t{d}" for d in range(t.ndim)], t.space))
            elif isinstance(t, (ShapeT, TupleT, DTypeT)):
                caller.err(node, f"passing a shape, tuple or dtype to the helper {hfi.name!r}")
            else:
                sig.append(t)
                types_.append(t)
        hk = (func, tuple(sig))
        entry = self.helpers.get(hk)
        if entry is None:
            cname = f"{hfi.name}__{len(self.helpers)}"
            self.helpers[hk] = entry = (cname, None)
            g = FunctionGen(self, hfi, types_, False, cname)
            self.helpers[hk] = entry = (cname, g)
            self.helper_order.append(hk)
        cname, g = entry
        if g is None:
            caller.err(node, f"recursion through {hfi.name!r}")
        used = getattr(self, "used", None)
        if used is not None and not caller.inferring and hk not in used:
            used.append(hk)
        cargs = []
        for (c, t), ht in zip(vals, types_):
            if isinstance(t, ArrayT):
                cargs += [t.ptr] + t.shape + t.stride
            else:
                cargs.append(cast(c, t, ht))
        rt = g.ret if g.ret is not None else WEAK_B
        code = f"{cname}({', '.join(cargs)})"
        return (code, rt if g.ret is not None else WEAK_B)

    def _params_c(self, g):
        out = []
        for p in g.fi.params:
            t = g.params[p]
            if isinstance(t, ArrayT):
                out.append(f"{ctype(t.dtype)}* {p}")
                out += [f"const i64 {p}_s{d}" for d in range(t.ndim)]
                out += [f"const i64 {p}_t{d}" for d in range(t.ndim)]
            elif _is_half(t):
                out.append(f"const float p_{p}_f")
            else:
                out.append(f"const {ctype(t)} p_{p}")
        return out

    def _body(self, g):
        g.lines = []
        g.tmp = 0
        g.ret_types = []
        g.shared = []
        g.block(g.fi.body, 1)
        decls = []
        for p in g.fi.params:
            t = g.params[p]
            if not isinstance(t, ArrayT) and _is_half(t):
                decls.append(f"    const {ctype(t)} p_{p} = {ctype(t)}(p_{p}_f);")
        for name, t in g.vars.items():
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)):
                continue
            decls.append(f"    {ctype(t)} {g.var_c(name)} = {cast('0', WEAK_I, t)};")
        for decl, _, _ in g.shared:
            decls.insert(0, "    " + decl)
        return decls + g.lines

    def source(self):
        self.used = []
        main = self._body(self.main)
        nshared = sum(b for _, b, _ in self.main.shared)
        if nshared > SHARED_LIMIT:
            node = self.main.shared[-1][2]
            self.main.err(node, f"the kernel declares {nshared} bytes of shared memory, over the "
                                f"{SHARED_LIMIT}-byte limit of static shared memory", ValueError)
        self.shared_bytes = nshared
        parts = [f"// generated by gpk_array.kernel from {self.ki.main.name} "
                 f"({self.ki.main.filename}:{self.ki.main.first_line})", PREAMBLE]
        if self.uses_complex:
            parts.insert(1, "#include <cuda/std/complex>")
        if self.debug:
            parts.append(DEBUG_PREAMBLE)
        protos, defs, done = [], [], set()
        while len(done) < len(self.used):
            for hk in list(self.used):
                if hk in done:
                    continue
                done.add(hk)
                cname, g = self.helpers[hk]
                body = self._body(g)
                rt = "void" if g.ret is None else ctype(g.ret)
                head = f"__device__ __forceinline__ {rt} {cname}({', '.join(self._params_c(g))})"
                protos.append(head + ";")
                defs += [head + " {"] + body + ["}"]
        parts += protos + defs
        parts.append(f'extern "C" __global__ void {self.cname}({", ".join(self._params_c(self.main))}) {{')
        parts += main
        parts.append("}")
        text = "\n".join(parts) + "\n"
        # the half-precision headers only where used (they are most of a small kernel's compile time)
        heads = [h for h, t in (("#include <cuda_fp16.h>", "__half"), ("#include <cuda_bf16.h>", "__nv_bfloat16"))
                 if t in text]
        if heads:
            first, rest = text.split("\n", 1)
            text = first + "\n" + "\n".join(heads) + "\n" + rest
        return text
