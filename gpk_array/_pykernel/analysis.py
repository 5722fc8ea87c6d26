"""The front end of ``@gpk_array.kernel``: parse a plain Python function, check that it is in the supported
subset, resolve the names it calls (builtins, ``math``, helper functions, translated recursively), find the
launch domain and the read/write effect on each array parameter (through aliases and helpers).

Everything here depends on the function only, not on the argument types: it runs once per kernel (at
decoration) and once per helper function. Errors name the file, the line and the construct: ``SyntaxError`` for
Python the kernel language does not have, ``TypeError`` for names it cannot use (mutable globals, closures over
mutable state, recursion, return values from kernels).
"""
from __future__ import annotations

import ast
import builtins as _pybuiltins
import inspect
import textwrap
import types

import numpy as np

from . import BUILTINS, VECTOR_TYPES, _Kernel

# functions of ``math`` (and the gpk_array elementwise functions of the same meaning) a kernel may call, by name
MATH = {
    "sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "fabs", "copysign", "hypot", "pow",
    "erf", "erfc", "isnan", "isinf", "isfinite", "fmod",
}
# gpk_array's elementwise functions that map to one of MATH (gpk_array.exp -> exp, gpk_array.abs -> fabs ...)
GPK_MATH = {n: n for n in MATH if n not in ("fabs", "erf", "erfc", "fmod")}
GPK_MATH.update({"abs": "fabs", "maximum": "max", "minimum": "min", "sign": "sign", "square": "square"})
PY_BUILTINS = {"abs", "min", "max", "float", "int", "bool", "range", "len"}
CONSTANT_TYPES = (bool, int, float, complex, np.generic)

_CONSTRUCTS = {  # node type -> how an error names it
    ast.Dict: "dicts", ast.DictComp: "dicts", ast.Set: "sets", ast.SetComp: "sets", ast.List: "lists",
    ast.ListComp: "lists", ast.GeneratorExp: "generators", ast.JoinedStr: "strings (f-strings)",
    ast.Try: "exceptions (try)", ast.Raise: "exceptions (raise)", ast.Assert: "exceptions (assert)",
    ast.Lambda: "lambdas (closures)", ast.FunctionDef: "nested functions (closures)",
    ast.AsyncFunctionDef: "nested functions (closures)", ast.ClassDef: "classes", ast.With: "with statements",
    ast.Global: "global statements", ast.Nonlocal: "nonlocal statements (closures over mutable state)",
    ast.Yield: "generators (yield)", ast.YieldFrom: "generators (yield)", ast.Await: "await",
    ast.Delete: "del", ast.Starred: "starred arguments", ast.Import: "import", ast.ImportFrom: "import",
    ast.NamedExpr: "assignment expressions (:=)", ast.Slice: "slices (index one element at a time)",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with", ast.Match: "match statements",
}
if hasattr(ast, "TryStar"):
    _CONSTRUCTS[ast.TryStar] = "exceptions (try)"

_ALLOWED = (
    ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.For, ast.While, ast.Break, ast.Continue,
    ast.Pass, ast.Return, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Constant,
    ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.keyword, ast.Load, ast.Store, ast.operator,
    ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context,
)


class Resolved:
    """A name the front end resolved statically: ``kind`` is 'builtin' (a gpk_array.kernel builtin), 'math',
    'py' (abs/min/max/float/int/bool/range/len), 'ndindex', 'helper' (a Python function), 'dtype', 'const'
    (a number), 'module' or 'object' (anything else, usable only as the base of a further attribute)."""
    __slots__ = ("kind", "name", "obj")

    def __init__(self, kind, name, obj):
        self.kind, self.name, self.obj = kind, name, obj

    def __repr__(self):
        return f"Resolved({self.kind}, {self.name})"

    def __deepcopy__(self, memo):
        return self   # immutable; its obj may be a module, which cannot be copied


def _dtype_of(obj):
    if isinstance(obj, np.dtype):
        return obj
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return np.dtype(obj)
    return None


class FunctionInfo:
    """One parsed function (the kernel or a helper)."""

    def __init__(self, func, is_kernel: bool):
        self.func = func
        self.is_kernel = is_kernel
        self.name = func.__name__
        code = func.__code__
        self.filename = code.co_filename
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError) as e:
            raise TypeError(f"gpk_array.kernel: cannot read the source of {self.name!r} ({e}); kernels and their "
                            f"helpers must be defined in a file") from None
        self.source_lines = lines
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, first - 1)
        fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not fdefs:
            raise TypeError(f"gpk_array.kernel: {self.name!r} is not a def function (lambdas are not supported)")
        self.tree = fdefs[0]
        self.first_line = first
        if isinstance(self.tree, ast.AsyncFunctionDef):
            self.error(self.tree, "async functions")
        self.tree.decorator_list = []
        self.globals = func.__globals__
        self.closure = {}
        if code.co_freevars:
            for name, cell in zip(code.co_freevars, func.__closure__ or ()):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    self.closure[name] = None
        a = self.tree.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.error(self.tree, "*args, **kwargs, keyword-only and positional-only parameters")
        if a.defaults:
            self.error(self.tree, "default parameter values")
        self.params = [p.arg for p in a.args]
        self.annotations = {p.arg: p.annotation for p in a.args if p.annotation is not None}
        body = self.tree.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]   # the docstring
        self.body = body
        self.locals = set(self.params)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
        self.resolved: dict[int, Resolved] = {}   # id(node) -> Resolved, for Name/Attribute nodes
        self.calls: dict[int, "FunctionInfo"] = {}  # id(Call node) -> helper info
        self.check()

    # ---- errors --------------------------------------------------------------------------------------
    def line(self, node) -> str:
        i = getattr(node, "lineno", self.first_line) - self.first_line
        return self.source_lines[i].rstrip("\n") if 0 <= i < len(self.source_lines) else ""

    def error(self, node, construct, exc=SyntaxError, what=None):
        lineno = getattr(node, "lineno", self.first_line)
        msg = what or (f"gpk_array.kernel: {construct} are not supported in a kernel "
                       f"(in {self.name!r}, line {lineno})")
        if exc is SyntaxError:
            raise SyntaxError(msg, (self.filename, lineno, getattr(node, "col_offset", 0) + 1, self.line(node)))
        raise exc(f"{msg}\n  {self.filename}, line {lineno}: {self.line(node).strip()}")

    # ---- names ---------------------------------------------------------------------------------------
    def lookup(self, name):
        if name in self.closure:
            return True, self.closure[name]
        if name in self.globals:
            return True, self.globals[name]
        if hasattr(_pybuiltins, name):
            return True, getattr(_pybuiltins, name)
        return False, None

    def classify(self, obj, name, node):
        from .. import ndindex as _gpk_ndindex
        if isinstance(obj, types.FunctionType) and obj in BUILTINS:
            return Resolved("builtin", BUILTINS[obj], obj)
        if obj is _pybuiltins.range or obj is np.ndindex or obj is _gpk_ndindex:
            return Resolved("py" if obj is _pybuiltins.range else "ndindex", "range" if obj is range else "ndindex",
                            obj)
        if isinstance(obj, types.BuiltinFunctionType) and getattr(obj, "__module__", None) == "math":
            if obj.__name__ not in MATH:
                self.error(node, None, TypeError, f"gpk_array.kernel: math.{obj.__name__} is not supported in a "
                                                  f"kernel (in {self.name!r}, line {node.lineno})")
            return Resolved("math", obj.__name__, obj)
        if isinstance(obj, types.BuiltinFunctionType) and getattr(obj, "__module__", None) == "builtins":
            if obj.__name__ not in PY_BUILTINS:
                self.error(node, None, TypeError, f"gpk_array.kernel: the builtin {obj.__name__}() is not supported "
                                                  f"in a kernel (in {self.name!r}, line {node.lineno})")
            return Resolved("py", obj.__name__, obj)
        if obj is _pybuiltins.float or obj is _pybuiltins.int or obj is _pybuiltins.bool:
            return Resolved("py", obj.__name__, obj)
        mod = getattr(obj, "__module__", None) or ""
        if callable(obj) and not isinstance(obj, type) and mod.startswith("gpk_array") \
                and getattr(obj, "__name__", None) in GPK_MATH:
            return Resolved("math", GPK_MATH[obj.__name__], obj)
        dt = _dtype_of(obj)
        if dt is not None:
            return Resolved("dtype", str(dt), dt)
        if isinstance(obj, types.FunctionType):
            return Resolved("helper", obj.__name__, obj)
        if isinstance(obj, classmethod):
            self.error(node, None, TypeError, f"gpk_array.kernel: {name} is a classmethod: a kernel cannot pass its "
                                              f"class; make it a staticmethod or a plain function (in {self.name!r}, "
                                              f"line {node.lineno})")
        if isinstance(obj, staticmethod):
            return Resolved("helper", obj.__func__.__name__, obj.__func__)
        if isinstance(obj, CONSTANT_TYPES):
            return Resolved("const", name, obj)
        if isinstance(obj, (types.ModuleType, type, _Kernel)):
            return Resolved("module", name, obj)
        if obj is None:
            return Resolved("const", name, None)
        return Resolved("object", name, obj)

    def resolve(self, node):
        """The Resolved of a Name/Attribute chain that does not start at a parameter or local, or None."""
        r = self.resolved.get(id(node))
        if r is not None:
            return r
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return None
            found, obj = self.lookup(node.id)
            if not found:
                self.error(node, None, NameError, f"gpk_array.kernel: name {node.id!r} is not defined "
                                                  f"(in {self.name!r}, line {node.lineno})")
            r = self.classify(obj, node.id, node)
        elif isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            if base.kind not in ("module", "object"):
                self.error(node, None, TypeError, f"gpk_array.kernel: attribute {node.attr!r} of {base.name!r} "
                                                  f"cannot be used in a kernel (line {node.lineno})")
            try:
                obj = inspect.getattr_static(base.obj, node.attr) if isinstance(base.obj, type) \
                    else getattr(base.obj, node.attr)
            except AttributeError:
                self.error(node, None, AttributeError, f"gpk_array.kernel: {base.name}.{node.attr} does not "
                                                       f"exist (in {self.name!r}, line {node.lineno})")
            r = self.classify(obj, f"{base.name}.{node.attr}", node)
        else:
            return None
        self.resolved[id(node)] = r
        node._gpk_r = r   # read by the back ends (it survives copy.deepcopy of the tree)
        return r

    # ---- the subset ----------------------------------------------------------------------------------
    def check(self):
        for node in (n for st in self.body for n in ast.walk(st)):
            kind = _CONSTRUCTS.get(type(node))
            if kind is not None:
                self.error(node, kind)
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                self.error(node, "strings")
            if not isinstance(node, _ALLOWED) and type(node).__name__ not in ("Index",):
                self.error(node, f"{type(node).__name__} nodes")
            if isinstance(node, ast.Return) and node.value is not None and self.is_kernel:
                self.error(node, None, TypeError,
                           f"gpk_array.kernel: a kernel returns no value: write results into an output array "
                           f"(in {self.name!r}, line {node.lineno})")
            if isinstance(node, (ast.For, ast.While)) and node.orelse:
                self.error(node, "else clauses of loops")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in self.locals:
                r = self.resolve(node)
                if r.kind == "object":
                    what = type(r.obj).__name__
                    self.error(node, None, TypeError,
                               f"gpk_array.kernel: {node.id!r} is a {what} captured from outside the kernel "
                               f"(closures over mutable state are not supported: pass it as an argument) "
                               f"(in {self.name!r}, line {node.lineno})")



class KernelInfo:
    """The kernel function and every helper it reaches, with the launch domain and the effects."""

    def __init__(self, func):
        self.functions: dict = {}     # function object -> FunctionInfo
        self.main = self._info(func, True, ())
        self.domain = find_domain(self.main)
        self.effects = effects(self.main, self)
        self.uses = builtin_uses(self)
        m = self.main
        if self.domain[0] in ("range", "ndindex"):
            bad = self.uses & {"barrier", "shfl", "shared", "ids"}
            if bad:
                self.main.error(self.domain[1], None, TypeError,
                                f"gpk_array.kernel: {self.main.name!r} uses {', '.join(sorted(bad))} inside a "
                                f"loop-domain kernel: use kernel.work_size(n) or an explicit k[(total, block)] "
                                f"launch with thread ids instead")
        for fi in self.functions.values():
            if fi is not m and fi.uses_sync:
                fi.error(fi.tree, None, TypeError,
                         f"gpk_array.kernel: barrier() and warp shuffles must be called in the kernel function "
                         f"itself, not in the helper {fi.name!r}")

    def _info(self, func, is_kernel, stack):
        if func in stack:
            fi = self.functions[func]
            fi.error(fi.tree, None, TypeError, f"gpk_array.kernel: recursion is not supported in a kernel "
                                               f"({' -> '.join(f.__name__ for f in stack + (func,))})")
        fi = self.functions.get(func)
        if fi is None:
            fi = FunctionInfo(func, is_kernel)
            self.functions[func] = fi
        stack = stack + (func,)
        fi.uses_sync = False
        for node in ast.walk(fi.tree):
            if isinstance(node, ast.Call):
                r = fi.resolve(node.func)
                if r is None:
                    if isinstance(node.func, ast.Attribute):
                        fi.error(node, None, TypeError, f"gpk_array.kernel: methods of arrays and locals "
                                                        f"({ast.unparse(node.func)}) are not supported "
                                                        f"(in {fi.name!r}, line {node.lineno})")
                    fi.error(node, None, TypeError, f"gpk_array.kernel: {ast.unparse(node.func)} is not a function "
                                                    f"a kernel can call (in {fi.name!r}, line {node.lineno})")
                if node.keywords:
                    fi.error(node, "keyword arguments in calls")
                if r.kind == "helper":
                    fi.calls[id(node)] = self._info(r.obj, False, stack)
                elif r.kind == "builtin" and (r.name == "barrier" or r.name.startswith(("shfl", "warp_"))):
                    fi.uses_sync = True
                elif r.kind in ("module", "object", "const"):
                    fi.error(node, None, TypeError, f"gpk_array.kernel: {ast.unparse(node.func)} is not a "
                                                    f"function a kernel can call (line {node.lineno})")
        return fi


def _is_call_to(fi, node, kinds):
    if not isinstance(node, ast.Call):
        return None
    r = fi.resolve(node.func)
    return r if r is not None and r.kind in kinds else None


def find_domain(fi):
    """('work_size', stmt) / ('range', for-node) / ('ndindex', for-node) / ('none', None)."""
    for st in fi.body:
        if isinstance(st, ast.Expr):
            r = _is_call_to(fi, st.value, ("builtin",))
            if r is not None and r.name == "work_size":
                if len(st.value.args) != 1:
                    fi.error(st, None, TypeError, "gpk_array.kernel: kernel.work_size takes one argument, the "
                                                  f"number of threads (line {st.lineno})")
                for n in ast.walk(st.value.args[0]):
                    if isinstance(n, ast.Name) and n.id in fi.locals and n.id not in fi.params:
                        fi.error(st, None, TypeError, "gpk_array.kernel: kernel.work_size(n) must depend on the "
                                                      f"kernel's parameters only (line {st.lineno})")
                return ("work_size", st)
    if fi.body and isinstance(fi.body[-1], ast.For):
        loop = fi.body[-1]
        if any(isinstance(s, (ast.For, ast.While)) for st in fi.body[:-1] for s in ast.walk(st)):
            return ("none", None)
        r = _is_call_to(fi, loop.iter, ("py", "ndindex"))
        if r is not None and r.name == "range" and isinstance(loop.target, ast.Name):
            if not 1 <= len(loop.iter.args) <= 3:
                fi.error(loop, None, TypeError, f"gpk_array.kernel: range() takes 1 to 3 arguments (line "
                                                f"{loop.lineno})")
            return ("range", loop)
        if r is not None and r.name == "ndindex":
            t = loop.target
            if not (isinstance(t, ast.Tuple) and 2 <= len(t.elts) <= 3 and all(isinstance(e, ast.Name)
                                                                                 for e in t.elts)):
                fi.error(loop, None, TypeError, "gpk_array.kernel: the launch domain loop over ndindex needs 2 or "
                                                f"3 loop variables, as in `for i, j in ndindex(shape)` (line "
                                                f"{loop.lineno})")
            return ("ndindex", loop)
    return ("none", None)


def _array_name(node):
    """The Name at the root of a subscript chain x[i] / x[i][j], or None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def effects(fi, ki, _memo=None):
    """{param: 'R' | 'W' | 'RW' | ''} for ``fi`` (through local aliases ``y = x`` and helper calls)."""
    memo = {} if _memo is None else _memo
    if fi.func in memo:
        return memo[fi.func]
    alias = {p: {p} for p in fi.params}
    pairs = []   # (target name, value expression) of every assignment
    for node in ast.walk(fi.tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Name):
                    pairs.append((t.id, node.value))
                elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                        and len(t.elts) == len(node.value.elts):   # a, b = out, x
                    pairs += [(e.id, v) for e, v in zip(t.elts, node.value.elts) if isinstance(e, ast.Name)]
    changed = True
    while changed:   # y = x, y = out if c else x, a, b = out, x: to a fixed point (any order, chains)
        changed = False
        for target, value in pairs:
            src = set()
            for name in _alias_sources(value):
                src |= alias.get(name, set())
            if src - alias.get(target, set()):
                alias.setdefault(target, set()).update(src)
                changed = True
    eff = {p: set() for p in fi.params}

    def mark(name, what):
        for p in alias.get(name, ()):
            eff[p].update(what)

    for node in ast.walk(fi.tree):
        if isinstance(node, ast.Subscript):
            name = _array_name(node)
            if name is None:
                continue
            if isinstance(node.ctx, ast.Store):
                mark(name, "W")
            else:
                mark(name, "R")
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
            mark(_array_name(node.target), "R")
        elif isinstance(node, ast.Call):
            r = _is_call_to(fi, node, ("builtin",))
            if r is not None and r.name.startswith("atomic_") and node.args:
                n = _array_name(node.args[0])
                if n is not None:
                    mark(n, "RW")
            helper = fi.calls.get(id(node))
            if helper is not None:
                sub = effects(helper, ki, memo)
                for a, p in zip(node.args, helper.params):
                    if isinstance(a, ast.Name):
                        mark(a.id, sub.get(p, ()))
    out = {p: "".join(c for c in "RW" if c in e) for p, e in eff.items()}
    memo[fi.func] = out
    return out


def _alias_sources(value):
    """The names an assignment's value may be the very object of: a name, either branch of a conditional."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, ast.IfExp):
        return _alias_sources(value.body) | _alias_sources(value.orelse)
    return set()


def builtin_uses(ki):
    """Which groups of builtins the kernel (and its helpers) use: 'barrier', 'shfl', 'shared', 'ids', 'atomic'."""
    uses = set()
    for fi in ki.functions.values():
        for node in ast.walk(fi.tree):
            r = _is_call_to(fi, node, ("builtin",))
            if r is None:
                continue
            n = r.name
            if n in ("barrier", "shared"):
                uses.add(n)
            elif n.startswith(("shfl", "warp_")):
                uses.add("shfl")
            elif n.startswith("atomic"):
                uses.add("atomic")
            elif n in VECTOR_TYPES:
                uses.add("vector")
            elif n != "work_size":
                uses.add("ids")
    return uses


def write_nodes(fi, param):
    """The first node where ``fi`` writes ``param`` (for error messages), or the function node."""
    for node in ast.walk(fi.tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _array_name(node) == param:
            return node
        if isinstance(node, ast.Call) and node.args and _array_name(node.args[0]) == param:
            r = _is_call_to(fi, node, ("builtin",))
            if r is not None and r.name.startswith("atomic_"):
                return node
    return fi.tree
