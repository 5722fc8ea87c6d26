"""CUDA C++ from a ``@gpk_array.kernel`` function and one argument signature.

The typed lowering walks the same ``ast`` the CPU back end runs. Types come from ``types.py`` (NumPy's own
promotion, Python numbers weak), every operator casts its operands to the result type explicitly, so the GPU
computes in the types the CPU execution does. Arrays are passed as a pointer plus a shape and a stride (in
elements) per dimension; a C-contiguous array is indexed from its shape. A loop-domain kernel becomes a
grid-stride loop over the domain (the bounds guard), a ``work_size(n)`` kernel returns the threads past ``n``.
Helper functions become ``__device__`` functions, one per call signature (``<name>__<n>``).

A CUDA call's key ends with its launch class ``("R", unroll, noalias, cover)`` (``Kernel._launch_class``):
``unroll`` > 1 makes each thread of a 1-D loop domain run that many iterations ``blockDim.x`` apart in one tile
(the loads of all of them in flight together); ``noalias`` (no array the kernel writes overlaps another array
argument) marks the kernel's pointers ``__restrict__``, which lets the compiler issue those loads before the
stores; ``cover`` (the launch has a thread or tile per point) makes each domain loop run at most once, so no
64-bit loop counter stays live (fewer registers, more threads resident).
"""
from __future__ import annotations

import ast
import numpy as np

from . import types as T
from .types import WEAK_B, WEAK_I, ctype, kind
from .cexpr import ExprLowering, _binop
from .csource import (ArrayT, BOOL, DEBUG_PREAMBLE, DTypeT, PREAMBLE, SHARED_LIMIT, ShapeT, TupleT,
                      _C_KEYWORDS, _is_half, cast)


class FunctionGen(ExprLowering):
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
            try:
                self.stmt(st, depth)
            except TypeError as e:   # a type error from types.py / cast: give it the statement's line
                msg = str(e)
                if "\n  " in msg or "line " in msg:
                    raise
                self.err(st, msg.removeprefix("gpk_array.kernel: "))

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
            u = self.gen.unroll
            if u > 1:   # tiles of u * blockDim.x iterations, each thread's u of them blockDim.x apart
                if self.gen.cover:
                    self.emit(d, f"for (i64 __o = (i64)blockIdx.x * blockDim.x * {u} + threadIdx.x; __o < __n; "
                                 f"__o = __n) {{")
                else:
                    self.emit(d, f"for (i64 __o = (i64)blockIdx.x * blockDim.x * {u} + threadIdx.x; __o < __n; "
                                 f"__o += (i64)gridDim.x * blockDim.x * {u}) {{")
                # a thread's whole tile in range: no bound checks between its iterations (their loads can
                # issue together); the last tile checks each iteration
                self.emit(d + 1, f"if (__o + (i64)({u - 1}) * blockDim.x < __n) {{")
                self.emit(d + 2, "#pragma unroll")
                self.emit(d + 2, f"for (int __u = 0; __u < {u}; __u++) {{")
                self.emit(d + 3, "const i64 __t = __o + (i64)__u * blockDim.x;")
                self.emit(d + 3, f"{self.var_c(name)} = __a + __t * __s;")
                self.block(st.body, d + 3)
                self.emit(d + 2, "}")
                self.emit(d + 1, "} else {")
                self.emit(d + 2, f"for (int __u = 0; __u < {u}; __u++) {{")
                self.emit(d + 3, "const i64 __t = __o + (i64)__u * blockDim.x;")
                self.emit(d + 3, "if (__t >= __n) break;")
                self.emit(d + 3, f"{self.var_c(name)} = __a + __t * __s;")
                self.block(st.body, d + 3)
                self.emit(d + 2, "}")
                self.emit(d + 1, "}")
                self.emit(d, "}")
                return
            step = "__t = __n" if self.gen.cover else "__t += (i64)gridDim.x * blockDim.x"
            self.emit(d, f"for (i64 __t = (i64)blockIdx.x * blockDim.x + threadIdx.x; __t < __n; {step}) {{")
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
            step = f"__d{k} = __n{k}" if self.gen.cover else f"__d{k} += (i64)gridDim.{ax} * blockDim.{ax}"
            # (__d: new_tmp's temporaries are __t1, __t2, ...)
            self.emit(depth, f"for (i64 __d{k} = (i64)blockIdx.{ax} * blockDim.{ax} + threadIdx.{ax}; "
                             f"__d{k} < __n{k}; {step}) {{")
            depth += 1
            self.emit(depth, f"{self.var_c(n)} = __d{k};")
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


class Generator:
    """The CUDA C++ translation unit of one kernel specialization."""

    def __init__(self, ki, key, cname, debug=False):
        self.ki, self.key, self.cname, self.debug = ki, key, cname, debug
        self.array_names = []
        self.helpers = {}      # (func, sig) -> (cname, FunctionGen)
        self.helper_order = []
        self.uses_complex = any("complex" in str(k[1]) for k in key)
        fi = ki.main
        lc = key[len(fi.params)] if len(key) > len(fi.params) else ("R", 1, False, False)
        self.unroll, self.noalias, self.cover = lc[1], lc[2], lc[3]
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
                restrict = " __restrict__" if g.is_kernel and self.noalias else ""
                out.append(f"{ctype(t.dtype)}*{restrict} {p}")
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
            if type(t) is T.VecT:
                decls.append(f"    {t.cname} {g.var_c(name)} = make_{t.cname}({', '.join(['0'] * t.n)});")
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
