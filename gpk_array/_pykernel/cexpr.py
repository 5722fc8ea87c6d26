"""Expressions of the CUDA back end of ``@gpk_array.kernel``: each ``e_<Node>`` returns (C code, type), with
explicit casts to NumPy's result type; array elements, math, Python builtins and the device builtins."""
from __future__ import annotations

import ast

import numpy as np

from . import types as T
from .csource import (ArrayT, BOOL, DTypeT, ShapeT, TupleT, _MATH_C, _is_half, cast, literal)
from .types import WEAK_B, WEAK_F, WEAK_I, ctype, is_weak, kind


class ExprLowering:
    """The expression half of ``codegen.FunctionGen`` (a mixin: it uses the function's params, vars, errors)."""

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
            if type(t) is T.VecT:
                return self.swizzle(node, code, t)
            self.err(node, f"the attribute {node.attr!r} of {node.value.id!r}")
        if not isinstance(node.value, (ast.Name, ast.Attribute)) or self.fi.resolve(node.value) is None:
            code, t = self.expr(node.value)
            if type(t) is T.VecT:
                return self.swizzle(node, code, t)
            self.err(node, f"the attribute {node.attr!r} of {ast.unparse(node.value)}")
        return self.resolved(node)

    def swizzle(self, node, code, t):
        comps = node.attr
        if not comps or len(comps) > 4 or any(ch not in "xyzw"[:t.n] for ch in comps):
            self.err(node, f"a {t} has no attribute {comps!r} (components {', '.join('xyzw'[:t.n])})",
                     AttributeError)
        if len(comps) == 1:
            return (f"({code}).{comps}", t.dtype)
        rt = T.VecT(t.dtype, len(comps))
        v = self.new_tmp()
        parts = ", ".join(f"{v}.{ch}" for ch in comps)
        return (f"([&]() {{ {t.cname} {v} = {code}; return make_{rt.cname}({parts}); }}())", rt)

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
        if type(res) is T.VecT:
            a_, b_ = self.new_tmp(), self.new_tmp()
            et = res.dtype
            ca = f"{ctype(lt)} {a_} = {lc};"
            cb = f"{ctype(rt)} {b_} = {rc};"
            comp = []
            for ch in "xyzw"[:res.n]:
                x = cast(f"{a_}.{ch}", lt.dtype, et) if type(lt) is T.VecT else cast(a_, lt, et)
                y = cast(f"{b_}.{ch}", rt.dtype, et) if type(rt) is T.VecT else cast(b_, rt, et)
                comp.append(f"{x} {op} {y}")
            return (f"([&]() {{ {ca} {cb} return make_{res.cname}({', '.join(comp)}); }}())", res)
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
        if type(t) is T.VecT:
            if op == "+":
                return (c, t)
            v = self.new_tmp()
            return (f"([&]() {{ {t.cname} {v} = {c}; return make_{t.cname}("
                    f"{', '.join(f'-{v}.{ch}' for ch in 'xyzw'[:t.n])}); }}())", t)
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
            if type(left[1]) is T.VecT or type(right[1]) is T.VecT:
                self.err(node, "comparisons of vectors (compare the components)")
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
            c_t = ctype(rt)
            acc_c = f"([&]() {{ {c_t} {ta} = {a}; {c_t} {tb} = {b}; return ({tb} {cmp} {ta}) ? {tb} : {ta}; }}())"
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
        if name in T.VEC_NAMES:
            base, n = name[:-1], int(name[-1])
            vt = T.VecT(T.VEC_BASES[base], n)
            if len(args) != n:
                self.err(node, f"kernel.{name}() takes {n} components, got {len(args)}")
            comps = []
            for a in args:
                c, t = self.expr(a)
                if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)) or kind(t) in "cv":
                    self.err(node, f"the components of kernel.{name}() are real numbers")
                comps.append(cast(c, t, vt.dtype))
            return (f"make_{name}({', '.join(comps)})", vt)
        warp = name in ("warp_sum", "warp_min", "warp_max")
        if name.startswith("shfl") or warp:
            if len(args) != (1 if warp else 2):
                self.err(node, f"kernel.{name}(value) takes one argument" if warp else
                         f"kernel.{name}(value, n) takes two arguments")
            c, t = self.expr(args[0])
            a, at = self.expr(args[1]) if not warp else ("0", WEAK_I)
            if isinstance(t, (ArrayT, ShapeT, TupleT, DTypeT)) or kind(t) in "cv":
                self.err(node, f"kernel.{name} of {T.name(t) if not isinstance(t, ArrayT) else 'an array'}")
            st = t
            if kind(t) == "b":
                st = np.dtype(np.int32)
            elif is_weak(t):
                st = np.dtype(np.float64) if t == WEAK_F else np.dtype(np.int64)
            elif t.itemsize < 4 and not _is_half(t):
                st = np.dtype(np.int32)
            if warp:   # bool as int32 and cast back: sum and max a logical or, min an and, as NumPy's
                if name != "warp_sum" and _is_half(st):
                    st = np.dtype(np.float32)   # the least / greatest is one of the values: exact in float
                code = f"gpk_{name}<{ctype(st)}>({cast(c, t, st)})"
                return (cast(code, st, t) if st != t else code, t)
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


def _binop(op, node):
    m = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
         ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}.get(type(op))
    if m is None:
        raise SyntaxError(f"gpk_array.kernel: the operator {type(op).__name__} is not supported "
                          f"(line {getattr(node, 'lineno', '?')})")
    return m
