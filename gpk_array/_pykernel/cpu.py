"""The CPU device's execution of a ``@gpk_array.kernel`` function.

The kernel's own Python runs, rewritten (``ast``) so that it means what the CUDA version means:

* ``math.*`` and gpk_array's elementwise functions keep the dtype of NumPy scalars and arrays (``math.exp`` of a
  float32 is a float32, as ``expf`` on the GPU), Python numbers stay Python numbers (weak, NEP 50);
* helper functions are rewritten the same way, recursively;
* kernels with thread ids (an explicit ``k[(total, block)]`` launch or ``kernel.work_size(n)``) run once per
  simulated thread; ``barrier()`` and the warp shuffles become ``yield`` points, and the threads of a block are
  generators stepped together from one to the next (a barrier releases when every live thread of the block is
  waiting at one; a shuffle when every live lane of the warp is at one);
* a loop-domain kernel whose loop body is straight-line elementwise code (assignments, arithmetic, ``math``,
  pure helpers; arrays written only at the loop index) is lowered to NumPy array operations over the whole domain
  (``vectorizable``); everything else runs as the Python loop it is.

``GPK_KERNEL_DEBUG=1`` (read at decoration) rewrites every subscript into a checked load or store that raises
IndexError naming the kernel, the argument, the index and the shape.
"""
from __future__ import annotations

import ast
import copy
import math as _math
import numpy as np

from . import _state, WARP_SIZE
from .analysis import MATH

_WEAK = (bool, int, float, complex)

# ---- dtype-keeping math -------------------------------------------------------------------------------
_NP_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
             "atanh": "arctanh", "atan2": "arctan2", "pow": "power", "fabs": "abs"}


def _unary(name):
    pyf = getattr(_math, name)
    npf = getattr(np, _NP_NAMES.get(name, name))

    def f(x):
        if type(x) in _WEAK:
            return pyf(x)
        return npf(x)
    f.__name__ = name
    return f


def _binary(name):
    pyf = getattr(_math, name)
    npf = getattr(np, _NP_NAMES.get(name, name))

    def f(x, y):
        if type(x) in _WEAK and type(y) in _WEAK:
            return pyf(x, y)
        return npf(x, y)
    f.__name__ = name
    return f


def _erf_like(name):
    pyf = getattr(_math, name)
    vf = np.frompyfunc(pyf, 1, 1)

    def f(x):
        if type(x) in _WEAK:
            return pyf(x)
        if isinstance(x, np.ndarray):
            return vf(x).astype(x.dtype if x.dtype.kind == "f" else np.float64)
        return (x.dtype.type if x.dtype.kind == "f" else np.float64)(pyf(float(x)))
    f.__name__ = name
    return f


def _sign(x):
    return np.sign(x)


def _square(x):
    return x * x


def _min(*a):
    return min(*a) if not any(isinstance(v, np.ndarray) for v in a) else np.minimum(*a)


def _max(*a):
    return max(*a) if not any(isinstance(v, np.ndarray) for v in a) else np.maximum(*a)


MATH_SHIMS = {}
for _n in MATH:
    if _n in ("erf", "erfc"):
        MATH_SHIMS[_n] = _erf_like(_n)
    elif _n in ("atan2", "copysign", "hypot", "pow", "fmod"):
        MATH_SHIMS[_n] = _binary(_n)
    else:
        MATH_SHIMS[_n] = _unary(_n)
MATH_SHIMS.update(sign=_sign, square=_square, min=_min, max=_max)


# ---- debug mode: checked loads and stores --------------------------------------------------------------
def _check(kname, aname, a, idx, line):
    if not isinstance(a, np.ndarray):
        return
    t = idx if isinstance(idx, tuple) else (idx,)
    if len(t) != a.ndim or any(not (0 <= int(k) < n) for k, n in zip(t, a.shape)):
        shown = tuple(int(k) for k in t)
        raise IndexError(f"gpk_array.kernel {kname!r}: index {shown if len(shown) != 1 else shown[0]} is out of "
                         f"bounds for argument {aname!r} of shape {a.shape} (line {line})")


def _make_debug(kname):
    def ld(a, idx, aname, line):
        _check(kname, aname, a, idx, line)
        return a[idx]

    def st(a, idx, v, aname, line):
        _check(kname, aname, a, idx, line)
        a[idx] = v

    def at(fn, aname, line, a, idx, *rest):   # an atomic: its index checked like a store's
        _check(kname, aname, a, idx, line)
        return fn(a, idx, *rest)
    return ld, st, at


# ---- the rewrite ---------------------------------------------------------------------------------------
def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


class _Rewriter(ast.NodeTransformer):
    def __init__(self, low, fi, vector_loop=None):
        self.low, self.fi, self.vec = low, fi, vector_loop
        self.sites = 0

    def visit_Call(self, node):
        self.generic_visit(node)
        r = getattr(node.func, "_gpk_r", None)
        if r is None:
            return node
        if r.kind == "math":
            node.func = _name(self.low.bind(f"__gpk_m_{r.name}", MATH_SHIMS[r.name]))
        elif r.kind == "py" and r.name in ("min", "max") and self.vec is not None:
            node.func = _name(self.low.bind(f"__gpk_m_{r.name}", MATH_SHIMS[r.name]))
        elif r.kind == "helper":
            node.func = _name(self.low.helper(r.obj, self.vec is not None))
        elif r.kind == "builtin":
            n = r.name
            if n == "barrier":
                return ast.Yield(value=ast.Tuple(elts=[ast.Constant("barrier"), ast.Constant(node.lineno)],
                                                 ctx=ast.Load()))
            if n in ("warp_sum", "warp_min", "warp_max"):
                return ast.Yield(value=ast.Tuple(elts=[ast.Constant("warp"), ast.Constant(n[5:])] + node.args,
                                                 ctx=ast.Load()))
            if n.startswith("shfl"):
                kind = n[5:] or "idx"
                return ast.Yield(value=ast.Tuple(elts=[ast.Constant("shfl"), ast.Constant(kind)] + node.args,
                                                 ctx=ast.Load()))
            if n == "shared":
                self.sites += 1
                node.func = _name("__gpk_shared")
                node.args = [ast.Constant((self.fi.name, node.lineno, node.col_offset))] + node.args
            else:
                node.func = _name(self.low.bind(f"__gpk_b_{n}", r.obj))
                if self.low.debug and n.startswith("atomic") and node.args and isinstance(node.args[0], ast.Name):
                    node.args = [node.func, ast.Constant(node.args[0].id), ast.Constant(node.lineno)] + node.args
                    node.func = _name("__gpk_at")
        elif r.kind == "dtype":
            node.func = _name(self.low.bind(f"__gpk_dt_{r.obj.name}", r.obj.type))
        return node

    def visit_Expr(self, node):
        v = node.value
        r = getattr(getattr(v, "func", None), "_gpk_r", None)
        if r is not None and r.kind == "builtin" and r.name == "work_size":
            # threads past n return at once
            gid = ast.Call(func=_name(self.low.bind("__gpk_b_global_id", _global_id0)), args=[], keywords=[])
            return ast.copy_location(ast.If(test=ast.Compare(left=gid, ops=[ast.GtE()],
                                                             comparators=[self.visit(v.args[0])]),
                                            body=[ast.Return(value=None)], orelse=[]), node)
        self.generic_visit(node)
        return node

    # debug mode: checked subscripts
    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not self.low.debug or not isinstance(node.ctx, ast.Load) or not isinstance(node.value, ast.Name):
            return node
        return ast.Call(func=_name("__gpk_ld"), args=[node.value, node.slice, ast.Constant(node.value.id),
                                                      ast.Constant(node.lineno)], keywords=[])

    def _store(self, target, value, node):
        return ast.copy_location(ast.Expr(value=ast.Call(
            func=_name("__gpk_st"), args=[target.value, target.slice, value, ast.Constant(target.value.id),
                                          ast.Constant(node.lineno)], keywords=[])), node)

    def visit_Assign(self, node):
        self.generic_visit(node)
        if self.low.debug and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript) \
                and isinstance(node.targets[0].value, ast.Name):
            return self._store(node.targets[0], node.value, node)
        return node

    def visit_AugAssign(self, node):
        if self.low.debug and isinstance(node.target, ast.Subscript) and isinstance(node.target.value, ast.Name):
            t = node.target
            self.generic_visit(node)
            load = ast.Call(func=_name("__gpk_ld"), args=[t.value, t.slice, ast.Constant(t.value.id),
                                                          ast.Constant(node.lineno)], keywords=[])
            return self._store(t, ast.BinOp(left=load, op=node.op, right=node.value), node)
        self.generic_visit(node)
        if self.vec is not None and isinstance(node.target, ast.Name):
            # t += v on a NumPy array would write through a view (t = x[i] is a view of x in the vector
            # lowering, a copy in the loop): rebind instead
            return ast.copy_location(ast.Assign(targets=[node.target], value=ast.BinOp(
                left=ast.Name(id=node.target.id, ctx=ast.Load()), op=node.op, right=node.value)), node)
        return node


def _global_id0():
    return _state.bid[0] * _state.bdim[0] + _state.tid[0]


class Lowered:
    """The rewritten kernel and helpers, compiled to Python functions: ``scalar`` (per thread or the loop as
    written) and, where the loop body allows it, ``vector`` (the loop as NumPy array operations)."""

    def __init__(self, ki, debug=False):
        self.ki, self.debug = ki, debug
        fi = ki.main
        self._dicts = {}          # function -> the globals its rewritten code runs in (its module's, a copy)
        self._debug_fns = _make_debug(fi.name)
        self.globals = self._globals_for(fi)
        self._cur = self.globals  # where bind() puts names: the namespace of the function being rewritten
        self.helpers = {}         # (function, vector) -> compiled helper
        self.scalar = self.compile(fi, None)
        self.is_generator = ki.uses & {"barrier", "shfl"} != set()
        self.vector = None
        if ki.domain[0] in ("range", "ndindex") and not debug and vectorizable(ki):
            self.vector = self.compile(fi, ki.domain[1])

    def _globals_for(self, fi):
        g = self._dicts.get(fi.func)
        if g is None:
            g = dict(fi.globals)
            g.update(fi.closure)
            ld, st, at = self._debug_fns
            g.update(__gpk_shared=_shared, __gpk_ld=ld, __gpk_st=st, __gpk_at=at)
            self._dicts[fi.func] = g
        return g

    def bind(self, name, obj):
        self._cur[name] = obj
        return name

    def helper(self, func, vector):
        key = (func, vector)
        fn = self.helpers.get(key)
        if fn is None:
            fi = self.ki.functions[func]
            fn = self.helpers[key] = self.compile(fi, None, vector=vector,
                                                  helper_name=f"__gpk_h_{func.__name__}{'_v' if vector else ''}")
        return self.bind(f"__gpk_h{list(self.helpers).index(key)}_{func.__name__}{'_v' if vector else ''}", fn)

    def compile(self, fi, vector_loop, vector=False, helper_name=None):
        saved = self._cur
        self._cur = g = self._globals_for(fi)
        try:
            tree = copy.deepcopy(fi.tree)
            rw = _Rewriter(self, fi, vector_loop if vector_loop is not None else (True if vector else None))
            tree = rw.visit(tree)
            if vector_loop is not None:
                tree.body[-1] = _vector_loop(tree.body[-1], self)
            tree.name = helper_name or f"__gpk_kernel_{fi.name}"
            mod = ast.Module(body=[tree], type_ignores=[])
            ast.fix_missing_locations(mod)
            code = compile(mod, fi.filename, "exec")
            ns = {}
            exec(code, g, ns)
            return ns[tree.name]
        finally:
            self._cur = saved


# ---- vectorized loops ----------------------------------------------------------------------------------
def vectorizable(ki) -> bool:
    """Whether the domain loop's body is straight-line elementwise code the NumPy lowering computes exactly as
    the loop does."""
    fi, loop = ki.main, ki.domain[1]
    if ki.uses:
        return False
    targets = [loop.target.id] if isinstance(loop.target, ast.Name) else [e.id for e in loop.target.elts]
    index = set(targets)
    written = {}
    for st in loop.body:
        if not isinstance(st, (ast.Assign, ast.AugAssign)):
            return False
        tg = st.targets if isinstance(st, ast.Assign) else [st.target]
        if len(tg) != 1:
            return False
        t = tg[0]
        if isinstance(t, ast.Subscript):
            if not (isinstance(t.value, ast.Name) and _is_index(t.slice, targets)):
                return False
            written[t.value.id] = True
        elif isinstance(t, ast.Name):
            if t.id in index or t.id in fi.params:
                return False
        else:
            return False
    for st in loop.body:
        for n in ast.walk(st):
            if isinstance(n, (ast.If, ast.IfExp, ast.BoolOp, ast.For, ast.While, ast.Return)):
                return False
            if isinstance(n, ast.Call) and not _pure_call(ki, n):
                return False
            if isinstance(n, ast.Subscript):
                if not isinstance(n.value, ast.Name):
                    return False
                if n.value.id in written and not _is_index(n.slice, targets):
                    return False   # a cross-iteration read of an array the loop writes
            if isinstance(n, ast.Name) and n.id in index and isinstance(n.ctx, ast.Load):
                if not _inside_subscript_index(st, n):
                    return False   # the index as a value: int64 arrays would change the promotion
    return True


def _is_index(sl, targets):
    if len(targets) == 1:
        return isinstance(sl, ast.Name) and sl.id == targets[0]
    return isinstance(sl, ast.Tuple) and [getattr(e, "id", None) for e in sl.elts] == targets


def _inside_subscript_index(root, name):
    for n in ast.walk(root):
        if isinstance(n, ast.Subscript) and any(m is name for m in ast.walk(n.slice)):
            return True
    return False


def _pure_helper(ki, func):
    fi = ki.functions[func]
    for i, st in enumerate(fi.body):
        last = i == len(fi.body) - 1
        if isinstance(st, ast.Assign) and all(isinstance(t, ast.Name) for t in st.targets):
            pass
        elif isinstance(st, ast.Return) and last and st.value is not None:
            pass
        else:
            return False
        for n in ast.walk(st):
            if isinstance(n, (ast.Subscript, ast.IfExp, ast.BoolOp)):
                return False
            if isinstance(n, ast.Call) and not _pure_call(ki, n):
                return False
    return True


def _pure_call(ki, call):
    """Whether a call is one the NumPy lowering can apply to whole arrays: math, min/max/abs, or a pure helper."""
    r = getattr(call.func, "_gpk_r", None)
    if r is None or r.kind not in ("math", "py", "helper") or (r.kind == "py" and r.name not in ("min", "max", "abs")):
        return False
    return r.kind != "helper" or _pure_helper(ki, r.obj)


class _Index(ast.NodeTransformer):
    def __init__(self, targets, slname):
        self.targets, self.slname = targets, slname

    def visit_Subscript(self, node):
        if _is_index(node.slice, self.targets):
            node.slice = _name(self.slname)
            node.value = self.visit(node.value)
            return node
        self.generic_visit(node)
        return node


def _vector_loop(loop, low):
    """``for i in range(a, b, s): body`` -> ``__gpk_sl, i = __gpk_vdomain(...)`` then the body once."""
    it = loop.iter
    if isinstance(loop.target, ast.Name):
        targets = [loop.target.id]
        head = ast.Call(func=_name(low.bind("__gpk_vrange", _vrange)), args=it.args, keywords=[])
    else:
        targets = [e.id for e in loop.target.elts]
        head = ast.Call(func=_name(low.bind("__gpk_vgrid", _vgrid)),
                        args=[ast.Constant(len(targets))] + it.args, keywords=[])
    body = [_Index(targets, "__gpk_sl").visit(st) for st in loop.body]
    assign = ast.Assign(targets=[ast.Tuple(elts=[_name("__gpk_sl", ast.Store())] +
                                           [_name(t, ast.Store()) for t in targets], ctx=ast.Store())],
                        value=head)
    guard = ast.If(test=ast.Compare(left=_name("__gpk_sl"), ops=[ast.IsNot()], comparators=[ast.Constant(None)]),
                   body=body, orelse=[])
    return ast.copy_location(ast.If(test=ast.Constant(True), body=[assign, guard], orelse=[]), loop)


def _vrange(*args):
    r = range(*(int(a) for a in args))
    if len(r) == 0:
        return None, None
    idx = np.arange(r.start, r.stop, r.step)
    if min(r[0], r[-1]) < 0:
        return idx, idx   # negative indices wrap one by one, as in the loop: index with the array itself
    return slice(r.start, r.stop if r.stop >= 0 else None, r.step), idx


def _vgrid(nd, *args):
    shape = tuple(int(s) for s in (args[0] if len(args) == 1 and not isinstance(args[0], (int, np.integer))
                                   else args))
    if len(shape) != nd:
        raise ValueError(f"gpk_array.kernel: the loop has {nd} variables but ndindex got the {len(shape)}-d "
                         f"shape {shape}")
    if 0 in shape:
        return (None,) + (None,) * nd
    sl = tuple(slice(0, s) for s in shape)
    grids = tuple(np.arange(s).reshape((1,) * d + (s,) + (1,) * (nd - d - 1)) for d, s in enumerate(shape))
    return (sl,) + grids


# ---- shared memory and the block scheduler -------------------------------------------------------------
def _shared(site, shape, dtype):
    blk = _state.shared
    a = blk.get(site)
    if a is None:
        a = blk[site] = np.zeros(shape, dtype=dtype)
    return a


def _lanes(tid, bdim):
    return tid[0] + bdim[0] * (tid[1] + bdim[1] * tid[2])


_EXACT = (bool, int, np.integer, np.bool_)


def _wmin(a, b):
    if not isinstance(b, _EXACT):   # floats, float16, bfloat16
        return b if (b < a or b != b or (b == a and np.signbit(b))) else a
    return b if b < a else a


def _wmax(a, b):
    if not isinstance(b, _EXACT):
        return b if (b > a or b != b or (b == a and not np.signbit(b))) else a
    return b if b > a else a


_WARP_OPS = {"sum": lambda a, b: a + b, "min": _wmin, "max": _wmax}   # as csource's gpk_warp_* combine lanes


def _shfl_src(kind, lane, arg):
    arg = int(arg)
    if kind == "down":
        return lane + arg
    if kind == "up":
        return lane - arg
    if kind == "xor":
        return lane ^ arg
    return arg


def run_threads(low, args, grid, block):
    """Run the kernel once per thread of ``grid`` x ``block`` (3-tuples, x first)."""
    fn = low.scalar
    st = _state
    st.gdim, st.bdim = grid, block
    tids = [(x, y, z) for z in range(block[2]) for y in range(block[1]) for x in range(block[0])]
    try:
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    st.bid = (bx, by, bz)
                    st.shared = {}
                    if not low.is_generator:
                        for t in tids:
                            st.tid = t
                            fn(*args)
                    else:
                        _run_block(fn, args, tids, block, low.ki.main.name)
    finally:
        st.tid = st.bid = st.bdim = st.gdim = None
        st.shared = None


def _run_block(fn, args, tids, block, kname):
    st = _state
    gens, reqs = {}, {}
    for t in tids:
        st.tid = t
        g = fn(*args)
        try:
            reqs[t] = g.send(None)
            gens[t] = g
        except StopIteration:
            pass

    def resume(t, value):
        st.tid = t
        try:
            reqs[t] = gens[t].send(value)
        except StopIteration:
            del gens[t]
            del reqs[t]

    while gens:
        # warp shuffles first: a warp whose live lanes all wait at one exchanges values
        warps = {}
        for t in gens:
            warps.setdefault(_lanes(t, block) // WARP_SIZE, []).append(t)
        progressed = False
        for w, members in warps.items():
            if all(reqs[t][0] == "warp" and reqs[t][1] == reqs[members[0]][1] for t in members):
                # the butterfly CUDA's gpk_warp_sum / _min / _max runs, in its order
                op = _WARP_OPS[reqs[members[0]][1]]
                by_lane = {_lanes(t, block) % WARP_SIZE: t for t in members}
                vals = {lane: reqs[t][2] for lane, t in by_lane.items()}
                for off in (16, 8, 4, 2, 1):
                    vals = {lane: op(v, vals.get(lane ^ off, v)) for lane, v in vals.items()}
                for lane, t in by_lane.items():
                    resume(t, vals[lane])
                progressed = True
                continue
            if all(reqs[t][0] == "shfl" for t in members):
                by_lane = {_lanes(t, block) % WARP_SIZE: t for t in members}
                out = {}
                for lane, t in by_lane.items():
                    _, kind, value, arg = reqs[t]
                    src = _shfl_src(kind, lane, arg)
                    s = by_lane.get(src) if 0 <= src < WARP_SIZE else None
                    out[t] = reqs[s][2] if s is not None else value
                for t, v in out.items():
                    resume(t, v)
                progressed = True
        if progressed:
            continue
        if len({r[:2] for r in reqs.values()}) == 1 and next(iter(reqs.values()))[0] == "barrier":
            for t in list(gens):
                resume(t, None)
            continue
        waiting = sorted({f"barrier() of line {r[1]}" if r[0] == "barrier" else "a warp shuffle or reduction"
                          for r in reqs.values()})
        raise RuntimeError(f"gpk_array.kernel {kname!r}: the threads of block {st.bid} wait at different "
                           f"synchronization points ({', '.join(waiting)}): a barrier() or shuffle inside a branch "
                           f"that not every thread of the block (or lane of the warp) takes")
