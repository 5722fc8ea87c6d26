"""The kernel object ``@gpk_array.kernel`` returns: argument checks, the specialization cache, the launch
geometry, ``explain``, and the two back ends (cpu.py executes, codegen.py + backend.py generate and run CUDA)."""
from __future__ import annotations

import ast
import copy
import threading

import numpy as np

from .. import _config
from . import types as T
from .analysis import KernelInfo, write_nodes
from . import launch
from .cache import kernels
from .cpu import Lowered, run_threads

_MAX_BLOCK = (1024, 1024, 64)
_MAX_GRID = (2**31 - 1, 65535, 65535)
_DEFAULT_BLOCK = {1: (256, 1, 1), 2: (32, 8, 1), 3: (32, 4, 2)}


def make_kernel(func, **options):
    """``Kernel(func, **options)``; the entry point of ``@gpk_array.kernel``."""
    return Kernel(func, **options)


class Specialization:
    """One cache entry: a kernel for one argument signature (``key``). ``source`` is the generated CUDA C++
    (made on first use on CUDA, or by ``explain``), ``function`` the loaded CUDA kernels ({device index: kernel},
    None before the first CUDA call)."""

    __slots__ = ("key", "cname", "_source", "function", "calls", "shared_bytes", "_kernel", "reason",
                 "array_names", "binders")

    def __init__(self, kernel, key, index):
        self._kernel = kernel
        self.key = key
        self.cname = f"gpk_{kernel.__name__}_{index}"
        self._source = None
        self.function = None
        self.calls = 0
        self.shared_bytes = 0
        self.binders = {}   # device index -> launch.binder's function (or None)

    @property
    def identity(self):
        """What names this specialization across processes in the compile cache's records: the kernel's module,
        qualified name and key."""
        k = self._kernel
        return f"@kernel {k.__module__}.{k.__qualname__} {T.show_key(self.key)}"

    @property
    def source(self):
        """The CUDA C++ of this specialization."""
        if self._source is None:
            from .codegen import Generator
            g = Generator(self._kernel._info, self.key, self.cname, debug=self._kernel.debug)
            self._source = g.source()
            self.shared_bytes = g.shared_bytes
            self.array_names = g.array_names
        return self._source


class Kernel:
    """A ``@gpk_array.kernel`` function: call it with arrays and numbers (``k(x, y, out)``), or with an explicit
    launch geometry (``k[(total, block)](x, y, out)``, each an int or a tuple of up to 3). One specialization is
    made and cached per argument signature (``k.specializations``); ``k.explain(*args)`` shows what a call does.
    """

    def __init__(self, func, readonly=(), block=None, name=None, debug=None):
        self.__wrapped__ = func
        self.__name__ = name or func.__name__
        self.__qualname__ = getattr(func, "__qualname__", self.__name__)
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__
        code = func.__code__
        self.params = tuple(code.co_varnames[:code.co_argcount])
        self._nparams = len(self.params)
        if isinstance(readonly, str):
            readonly = (readonly,)
        for p in readonly:
            if p not in self.params:
                raise ValueError(f"gpk_array.kernel: readonly names {p!r}, which is not a parameter of "
                                 f"{self.__name__}{self.params}")
        self.readonly = tuple(readonly)
        self.block = _dims(block, "block") if block is not None else None
        self.debug = _config.get("GPK_KERNEL_DEBUG") if debug is None else bool(debug)
        self._specs: dict = {}
        self._lock = threading.Lock()
        self._host_geom = None
        self._bound = None   # the direct-call function of the last specialization launched on CUDA
        self._info = None
        try:
            self._build()
        except NameError:
            pass   # a name defined later in the module (a helper below the kernel): resolved at the first call

    def _build(self):
        """Parse and check the function, find the effects, rewrite it for the CPU (at decoration, or at the first
        call when a name it uses was not defined yet)."""
        func = self.__wrapped__
        info = KernelInfo(func)
        fi = info.main
        effects = info.effects
        for p in self.readonly:
            if "W" in effects[p]:
                node = write_nodes(fi, p)
                raise ValueError(f"gpk_array.kernel: {self.__name__!r} writes its argument {p!r}, declared "
                                 f"read-only (line {getattr(node, 'lineno', '?')}: "
                                 f"{fi.line(node).strip()})")
        self._effects = effects
        self._writes = tuple(i for i, p in enumerate(self.params) if "W" in effects[p])
        self._cpu = Lowered(info, debug=self.debug)
        self._annotations = None
        if fi.annotations:
            self._annotations = {p: _annotation(func, p) for p in fi.annotations}
        self._info = info

    # ---- public ---------------------------------------------------------------------------------------
    def __call__(self, *args):
        """Run the kernel on ``args`` (on their device)."""
        b = self._bound
        if b is not None and b(*args):
            return None
        return self._launch(args, None)

    def __getitem__(self, geometry):
        """``k[(total, block)]``: the kernel with an explicit launch of ``total`` threads (an int or a tuple of up
        to 3, x first) in blocks of ``block``."""
        if not (isinstance(geometry, tuple) and len(geometry) == 2):
            raise TypeError(f"gpk_array.kernel: launch geometry is k[(total, block)], got k[{geometry!r}]")
        total, block = _dims(geometry[0], "total", allow_zero=True), _dims(geometry[1], "block")
        return _Launch(self, (total, block))

    def __repr__(self):
        return f"<gpk_array.kernel {self.__name__}{self.params}: {len(self._specs)} specializations>"

    @property
    def effects(self):
        """``{parameter: 'R' | 'W' | 'RW' | ''}``: what the kernel does to each array argument."""
        if self._info is None:
            self._build()
        return dict(self._effects)

    @property
    def specializations(self):
        """``{key: Specialization}``: the cache, one entry per argument signature seen."""
        return dict(self._specs)

    def cache_info(self):
        """This kernel's cache: ``{"specializations": n, "hits": calls that found their specialization,
        "misses": calls that made one, "calls": {key: calls}, "why": {key: why that specialization was made}}``."""
        specs = list(self._specs.items())
        calls = sum(s.calls for _, s in specs)
        return {"specializations": len(specs), "hits": max(calls - len(specs), 0), "misses": len(specs),
                "calls": {T.show_key(k): s.calls for k, s in specs},
                "why": {T.show_key(k): s.reason for k, s in specs}}

    def explain(self, *args, file=None, print_=True):
        """What ``k(*args)`` does, without running it: the specialization (cache key), the device, the launch
        domain and geometry, the read/write effect on each argument, and the generated CUDA C++. Returns the
        text; prints it too unless ``print_=False``."""
        return self._explain(args, None, file, print_)

    # ---- calls ----------------------------------------------------------------------------------------
    def _prepare(self, args, geometry=None):
        if self._info is None:
            self._build()
        if len(args) != self._nparams:
            raise TypeError(f"{self.__name__}() takes {self._nparams} argument{'s' if self._nparams != 1 else ''} "
                            f"{self.params} but {len(args)} were given")
        normalize = T.normalize
        norm = [normalize(a, p) for a, p in zip(args, self.params)]
        key = tuple([a.key for a in norm])
        device = None
        for a, p in zip(norm, self.params):
            d = a.device
            if d is None or d is device:
                continue
            if device is None:
                device = d
            elif str(device) != str(d):
                raise ValueError(f"gpk_array.kernel: {self.__name__}() got arrays on different devices "
                                 f"({device} and {a.device} for {p!r}); move them with to_device()")
        if device is None:
            raise TypeError(f"gpk_array.kernel: {self.__name__}() needs at least one array argument (it decides "
                            f"the device the kernel runs on)")
        for i in self._writes:
            a = norm[i]
            p = self.params[i]
            if a.key[0] != "A":
                continue
            if not a.writable or p in self.readonly:
                node = write_nodes(self._info.main, p)
                raise ValueError(f"gpk_array.kernel: {self.__name__!r} writes its argument {p!r} "
                                 f"(line {getattr(node, 'lineno', '?')}), which is read-only")
        if str(device) != "cpu":
            key += (self._launch_class(norm, geometry),)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specialize(key, norm)
        return norm, key, spec, device

    def _launch_class(self, norm, geometry):
        """The last key entry of a CUDA call, ``("R", unroll, noalias, cover)`` (codegen's docstring says what each
        does): unroll is launch.UNROLL for a 1-D loop domain of at least launch.UNROLL_MIN iterations, else 1;
        noalias whether no array the kernel writes overlaps another array argument; cover whether the launch has a
        thread (a tile of unroll, in 1-D) for every point of a loop domain (the implicit geometry within CUDA's
        grid limits)."""
        unroll, cover = 1, False
        kind = self._info.domain[0]
        if kind in ("range", "ndindex"):
            try:
                dims = self._domain_dims([a.value for a in norm])
            except (TypeError, ValueError):
                dims = None   # the launch geometry raises the error
            if dims is not None:
                if kind == "range" and dims[0] >= launch.UNROLL_MIN:
                    unroll = launch.UNROLL
                cover = geometry is None and self._covers(dims, unroll)
        return ("R", unroll, launch.no_alias(norm, self._writes), cover)

    def _covers(self, dims, unroll):
        """Whether the implicit launch of a loop domain of ``dims`` has a thread (tile) for every point."""
        b = self.block or _DEFAULT_BLOCK[len(dims)]
        rev = list(dims[::-1])
        tile = (b[0] * unroll,) + b[1:]
        return all(-(-d // bb) <= g for d, bb, g in zip(rev, tile, _MAX_GRID))

    def _specialize(self, key, norm):
        with self._lock:
            spec = self._specs.get(key)
            if spec is None:
                if self._annotations:
                    for a, p in zip(norm, self.params):
                        ann = self._annotations.get(p)
                        if ann is not None:
                            T.check_annotation(ann, a, p)
                for a, p in zip(norm, self.params):
                    if a.key[0] == "S" and "W" in self._effects[p]:
                        node = write_nodes(self._info.main, p)
                        raise TypeError(f"gpk_array.kernel: {self.__name__!r} indexes or writes {p!r} "
                                        f"(line {getattr(node, 'lineno', '?')}) but got a number")
                spec = Specialization(self, key, len(self._specs))
                spec.reason = _why_new(self.params, key, list(self._specs))
                self._specs[key] = spec
                kernels.add(self)
        return spec

    def _launch(self, args, geometry):
        norm, key, spec, device = self._prepare(args, geometry)
        spec.calls += 1
        values = [a.value for a in norm]
        if str(device) == "cpu":
            self._run_cpu(spec, values, geometry)
        else:
            self._run_cuda(spec, norm, values, geometry, device)

    def _range_block(self):
        return self.block or _DEFAULT_BLOCK[1]

    def _host_geom_fn(self):
        if self._host_geom is None:
            self._host_geom = self._compile_host()
        return self._host_geom

    def _geometry(self, values, geometry, unroll=1):
        """(grid, block) of a CUDA launch (a loop domain's grid covers ``unroll`` iterations per thread); None:
        nothing to run."""
        kind = self._info.domain[0]
        if geometry is not None:
            total, block = geometry
            if any(t == 0 for t in total):
                return None
            return tuple(-(-t // b) for t, b in zip(total, block)), block
        if kind == "work_size":
            n = self._host_eval(values)
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
                raise TypeError(f"gpk_array.kernel: kernel.work_size(n) of {self.__name__!r} must be an int, "
                                f"got {type(n).__name__}")
            n = int(n)
            if n <= 0:
                return None
            b = self.block or (256, 1, 1)
            return (-(-n // b[0]), 1, 1), b
        if kind in ("range", "ndindex"):
            dims = self._domain_dims(values)
            if any(d <= 0 for d in dims):
                return None
            b = self.block or _DEFAULT_BLOCK[len(dims)]
            rev = list(dims[::-1]) + [1] * (3 - len(dims))
            tile = (b[0] * unroll,) + b[1:]
            grid = tuple(min(-(-d // bb), g) for d, bb, g in zip(rev, tile, _MAX_GRID))
            return grid, b
        raise TypeError(f"gpk_array.kernel: {self.__name__!r} has no launch domain: write its body as "
                        f"`for i in range(n):` (1-D) or `for i, j in gpk_array.ndindex(shape):`, add a "
                        f"`gpk_array.kernel.work_size(n)` statement, or launch it as k[(total, block)](...)")

    def _host_eval(self, values):
        return self._host_geom_fn()(*values)

    def _domain_dims(self, values):
        r = self._host_eval(values)
        kind = self._info.domain[0]
        if kind == "range":
            return (len(range(*(int(v) for v in r))),)
        if len(r) == 1 and not isinstance(r[0], (int, np.integer)):
            r = tuple(r[0])
        return tuple(int(v) for v in r)

    def _compile_host(self):
        """A Python function of the kernel's parameters that runs the prelude and returns the domain's bounds
        (range args / ndindex args) or the work_size argument, on the host."""
        fi = self._info.main
        kind, node = self._info.domain
        tree = copy.deepcopy(fi.tree)
        body = tree.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if kind == "work_size":
            idx = next(i for i, st in enumerate(fi.body) if st is node)
            arg = body[idx].value.args[0]
            tree.body = [ast.Return(value=arg)]
        else:
            loop = body[-1]
            tree.body = body[:-1] + [ast.Return(value=ast.Tuple(elts=loop.iter.args, ctx=ast.Load()))]
        low = self._cpu
        from .cpu import _Rewriter
        tree = _Rewriter(low, fi, None).visit(tree)
        tree.name = f"__gpk_host_{fi.name}"
        mod = ast.Module(body=[tree], type_ignores=[])
        ast.fix_missing_locations(mod)
        ns = {}
        exec(compile(mod, fi.filename, "exec"), low.globals, ns)
        return ns[tree.name]

    def _overlap(self, values):
        """Whether an array the kernel writes overlaps another array argument other than as the very same view
        (the NumPy lowering would then read values the loop has not written yet, or has)."""
        for i in self._writes:
            w = values[i]
            for j, v in enumerate(values):
                if j != i and type(v) is np.ndarray and np.may_share_memory(w, v):
                    same = (v.__array_interface__["data"][0] == w.__array_interface__["data"][0]
                            and v.strides == w.strides and v.shape == w.shape)
                    if not same:
                        return True
        return False

    def _check_geometry(self, grid, block):
        if int(np.prod(block)) > 1024:
            raise ValueError(f"gpk_array.kernel: a block of {block} threads is over the limit of 1024")
        for g, m, ax in zip(grid, _MAX_GRID, "xyz"):
            if g > m:
                raise ValueError(f"gpk_array.kernel: a grid of {g} blocks along {ax} is over the limit of {m}")

    def _run_cpu(self, spec, values, geometry):
        kind = self._info.domain[0]
        if kind in ("range", "ndindex"):
            low = self._cpu
            if geometry is not None:
                total, block = geometry
                self._check_geometry(tuple(-(-t // b) for t, b in zip(total, block)), block)
            if low.vector is not None and not self._overlap(values):
                low.vector(*values)
            else:
                low.scalar(*values)
            return
        g = self._geometry(values, geometry)
        if g is None:
            return
        grid, block = g
        self._check_geometry(grid, block)
        if "shared" in self._info.uses:
            spec.source   # shared-memory size check (same error on both devices)
        run_threads(self._cpu, values, grid, block)

    # ---- CUDA ------------------------------------------------------------------------------------------
    def _run_cuda(self, spec, norm, values, geometry, device):
        g = self._geometry(values, geometry, spec.key[-1][1])
        if g is None:
            return
        grid, block = g
        self._check_geometry(grid, block)
        import cupy
        s = str(device)
        idx = int(s.split(":")[1]) if ":" in s else 0
        fns = spec.function
        if fns is None:
            fns = spec.function = {}
        fn = fns.get(idx)
        if fn is None:
            from .backend import compile_and_load
            source = spec.source
            with cupy.cuda.Device(idx):
                fn = fns[idx] = compile_and_load(source, spec.cname, spec.identity)
        cargs = []
        for a in norm:
            k = a.key
            v = a.value
            if k[0] == "A":
                item = v.dtype.itemsize
                cargs.append(v)
                cargs += [np.int64(n) for n in v.shape]
                cargs += [np.int64(n // item) for n in v.strides]
            else:
                cargs.append(_c_scalar(v, k))
        if cupy.cuda.runtime.getDevice() == idx:
            fn(grid, block, tuple(cargs))      # on the current stream
        else:
            with cupy.cuda.Device(idx):
                fn(grid, block, tuple(cargs))
        if self.debug:
            self._check_device_error(spec, idx, norm)
            return
        # the next calls of this signature take the direct path
        bound = spec.binders.get(idx, False)
        if bound is False:
            bound = spec.binders[idx] = launch.make_binder(self, spec, idx, getattr(fn, "kernel", fn), device)
        self._bound = bound

    def _check_device_error(self, spec, idx, norm):
        """Debug mode on CUDA: read (and clear) the kernel's error record; IndexError for a bad index."""
        import cupy
        from .backend import get_global
        with cupy.cuda.Device(idx):
            rec = get_global(spec.source, "gpk_err", idx)
            err = cupy.asnumpy(rec)
            if not err[0]:
                return
            rec.fill(0)
        name = spec.array_names[int(err[1])]
        shape = None
        if name in self.params:
            shape = norm[self.params.index(name)].value.shape
        raise IndexError(f"gpk_array.kernel {self.__name__!r}: index {int(err[3])} is out of bounds for axis "
                         f"{int(err[2])} of argument {name!r}" + (f" of shape {shape}" if shape else "") +
                         f" (line {int(err[4])})")

    def _explain(self, args, geometry, file, print_):
        norm, key, spec, device = self._prepare(args, geometry)
        values = [a.value for a in norm]
        fi = self._info.main
        kind, node = self._info.domain
        lines = [f"kernel {self.__name__}{self.params}  ({fi.filename}:{fi.first_line})",
                 f"device: {device}",
                 f"cache key: {T.show_key(key)!r}",
                 f"specializations cached: {len(self._specs)}"]
        dom = {"range": "1-D loop `for ... in range(...)`", "ndindex": "loop over gpk_array.ndindex(...)",
               "work_size": "kernel.work_size(n)", "none": "none (needs k[(total, block)])"}[kind]
        lines.append(f"launch domain: {dom}" + (f", line {node.lineno}" if node is not None else ""))
        try:
            g = self._geometry(values, geometry, key[-1][1] if str(device) != "cpu" else 1)
            lines.append("launch geometry (CUDA): " + ("nothing to run" if g is None else
                                                        f"grid {g[0]}, block {g[1]}"))
        except TypeError as e:
            lines.append(f"launch geometry: {e}")
        cpu = "NumPy-vectorized loop" if (kind in ("range", "ndindex") and self._cpu.vector is not None) else \
            ("Python loop" if kind in ("range", "ndindex") else
             ("threads of a block as generators stepped to each barrier/shuffle" if self._cpu.is_generator
              else "one call per thread"))
        lines.append(f"CPU execution: {cpu}")
        lines.append("arguments:")
        for p, a in zip(self.params, norm):
            eff = self._effects[p] or "-"
            k = a.key
            what = f"array {k[1]} {k[2]}-d layout {k[3]}" if k[0] == "A" else f"number {T.name(T.key_type(k))}"
            ro = " (read-only)" if k[0] == "A" and (not a.writable or p in self.readonly) else ""
            lines.append(f"  {p}: {what}{ro}  access {eff}")
        lines.append("CUDA C++:")
        try:
            lines.append(spec.source)
        except (TypeError, ValueError, SyntaxError) as e:
            lines.append(f"  (no CUDA for this signature: {e})")
        text = "\n".join(lines)
        if print_:
            print(text, file=file)
        return text


class _Launch:
    """``k[(total, block)]``: call it with the kernel's arguments."""
    __slots__ = ("kernel", "geometry", "checked")

    def __init__(self, kernel, geometry):
        self.kernel, self.geometry = kernel, geometry
        # the CUDA (grid, block) for the direct path, () for nothing to run; None: the general path checks
        total, block = geometry
        if any(t == 0 for t in total):
            self.checked = ()
        else:
            grid = tuple(-(-t // b) for t, b in zip(total, block))
            try:
                kernel._check_geometry(grid, block)
                self.checked = (grid, block)
            except ValueError:
                self.checked = None

    def __call__(self, *args):
        """Run the kernel with this launch geometry."""
        k = self.kernel
        b = k._bound
        if b is not None and self.checked is not None and b(*args, _geom=self.checked):
            return None
        return k._launch(args, self.geometry)

    def explain(self, *args, file=None, print_=True):
        """``Kernel.explain`` with this launch geometry."""
        return self.kernel._explain(args, self.geometry, file, print_)


def _why_new(params, key, old_keys):
    """Why a call made a new specialization: the first call, or how its signature differs from the nearest
    cached one (``"x: float32 -> float64"``)."""
    if not old_keys:
        return "first call"
    def diff(old):
        out = []
        for p, a, b in zip(params, old, key):
            # (a dtype equals its character code: ("S", "f") == ("S", dtype("float32")) in Python)
            if a != b or any(type(x) is not type(y) for x, y in zip(a, b)):
                what = ("dtype", "ndim", "layout")
                if a[0] == b[0] == "A":
                    out += [f"{p}: {w} {x} -> {y}" for w, x, y in zip(what, a[1:], b[1:]) if x != y]
                else:
                    out.append(f"{p}: {_show(a)} -> {_show(b)}")
        if len(old) > len(params) and len(key) > len(params) and old[-1] != key[-1]:
            (_, u0, a0, c0), (_, u1, a1, c1) = old[-1], key[-1]
            if u0 != u1:
                out.append(f"iterations per thread {u0} -> {u1}")
            if a0 != a1:
                out.append("arrays overlap" if not a1 else "arrays no longer overlap")
            if c0 != c1:
                out.append("one thread per point" if c1 else "threads stride over the domain")
        return out
    best = min((diff(k) for k in old_keys), key=len)
    return "; ".join(best)


def _show(entry):
    if entry[0] == "A":
        return f"{entry[2]}-d {entry[1]} array ({entry[3]})"
    return f"{T.name(T.key_type(entry))} number"


def _annotation(func, param):
    ann = func.__annotations__.get(param)
    if isinstance(ann, str):   # from __future__ import annotations
        try:
            ann = eval(ann, func.__globals__)  # noqa: S307 - the user's own annotation, in their module
        except Exception as e:
            raise TypeError(f"gpk_array.kernel: the annotation {ann!r} of {param!r} cannot be evaluated ({e})") \
                from None
    return ann


def _dims(v, what, allow_zero=False):
    t = (v,) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v
    if not isinstance(t, tuple) or not 1 <= len(t) <= 3 or \
            not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in t):
        raise TypeError(f"gpk_array.kernel: {what} must be an int or a tuple of 1 to 3 ints, got {v!r}")
    t = tuple(int(x) for x in t) + (1,) * (3 - len(t))
    lo = 0 if allow_zero else 1
    if any(x < lo for x in t):
        raise ValueError(f"gpk_array.kernel: {what} must be {'non-negative' if allow_zero else 'positive'}, "
                         f"got {v!r}")
    if what == "block":
        for x, m, ax in zip(t, _MAX_BLOCK, "xyz"):
            if x > m:
                raise ValueError(f"gpk_array.kernel: a block of {x} threads along {ax} is over the limit of {m}")
        if t[0] * t[1] * t[2] > 1024:
            raise ValueError(f"gpk_array.kernel: a block of {t} threads is over the limit of 1024")
    return t


def _c_scalar(v, key):
    k = key[1]
    if isinstance(k, np.dtype):   # a NumPy scalar (compare dtypes before kind letters: dtype("int8") == "b")
        if k.itemsize == 2 and k.kind not in "iu":
            return np.float32(v)   # float16 / bfloat16 travel as float (the kernel converts)
        return v
    if k == "b":
        return np.bool_(v)
    if k == "i":
        return np.int64(v)
    if k == "f":
        return np.float64(v)
    return np.complex128(v)
