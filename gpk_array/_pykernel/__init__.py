"""``gpk_array.kernel``: plain Python functions as GPU kernels, and the same kernels on the CPU device.

This module is what ``import gpk_array`` loads of the kernel layer: the decorator object and the device builtins
(thread ids, ``barrier``, shared arrays, atomics, warp shuffles), no ``ast`` and no CUDA. Decorating a function
imports ``gpk_array._pykernel.api`` (the parser, the specialization cache, the two back ends).

The builtins are ordinary functions: on the CPU device the kernel's own code calls them, and they read the
current thread's ids from ``_state`` (set by gpk_array._pykernel.cpu for each simulated thread); ``barrier`` and
the shuffles are rewritten into ``yield`` points there, so calling them outside a kernel is an error.
"""
import _thread  # threading.local without importing threading (not loaded by `import gpk_array`)

_state = _thread._local()   # tid, bid, bdim, gdim: 3-tuples of ints for the thread the CPU runs now



def _disk_cache_info():
    from .._jit.cache import cache_info
    return cache_info()


# name -> callable returning a dict: more figures for gpk_array.kernel.cache_info(); "disk": the on-disk compile
# cache's lookups by gpk_array.jit and .cu modules (gpk_array.kernel_cache_info())
CACHE_INFO_PROVIDERS = {"disk": _disk_cache_info}

WARP_SIZE = 32


def _ids(name):
    ids = getattr(_state, name, None)
    if ids is None:
        raise RuntimeError("gpk_array.kernel: thread and block ids exist only inside a running kernel with an "
                           "explicit launch (k[(total, block)](...)) or kernel.work_size(n)")
    return ids


def _outside(name):
    raise RuntimeError(f"gpk_array.kernel.{name}() is a device builtin: call it inside a @gpk_array.kernel "
                       f"function (the kernel's own body)")


class _Kernel:
    """``@gpk_array.kernel`` or ``@gpk_array.kernel(readonly=(...), block=256, name=None)``: make a kernel of a
    plain Python function, specialized per argument signature at call time and run on the arguments' device (CUDA
    C++ generated and compiled for cuda arrays; the same function executed for CPU-device and NumPy arrays).

    The launch domain comes from the kernel body: a top-level ``for i in range(n)`` (1-D) or
    ``for i, j in gpk_array.ndindex(shape)`` (2-D/3-D) loop, a ``kernel.work_size(n)`` statement (gid-style:
    threads ``0..n-1``), or an explicit ``k[(total, block)](...)``. The attributes of this object are the device
    builtins (``thread_id``, ``block_id``, ``block_dim``, ``grid_dim``, ``global_id``, ``lane_id``, ``barrier``,
    ``shared``, ``atomic_add``/``min``/``max``/``exch``/``cas``, ``shfl_down``/``up``/``xor``/``shfl``,
    ``warp_sum``/``min``/``max``, ``work_size``, vector constructors ``float2`` .. ``uint4``), ``readonly(x)``,
    which marks an argument read-only for one call, ``cache_info()`` and ``warmup(k, signatures)``. See
    docs/kernels-python.md.
    """

    WARP_SIZE = WARP_SIZE

    def __call__(self, func=None, /, **options):
        """Decorate ``func`` (``@kernel``), or return a decorator that takes options (``@kernel(block=128)``)."""
        from .api import make_kernel
        if func is None:
            return lambda f: make_kernel(f, **options)
        return make_kernel(func, **options)

    def __repr__(self):
        return "gpk_array.kernel"

    @staticmethod
    def cache_info():
        """The specialization caches of this process's kernels: counts of kernels, specializations, hits and
        misses, and per kernel why each specialization was made (which argument's dtype, ndim or layout changed)."""
        from .cache import cache_info
        return cache_info()

    @staticmethod
    def warmup(k, signatures, max_workers=None):
        """Make ``k``'s specializations for ``signatures`` (tuples of example arguments) ahead of the first call;
        on CUDA they are compiled in parallel and loaded."""
        from .cache import warmup
        return warmup(k, signatures, max_workers)

    # ---- launch domain and argument marks ----------------------------------------------------------
    @staticmethod
    def work_size(n):
        """Declare the number of threads of a gid-style kernel (a statement at the top of the kernel body): the
        launch covers ``n`` threads, and threads past ``n`` return at once."""
        _outside("work_size")

    @staticmethod
    def readonly(x):
        """Mark the array ``x`` read-only for one call (``k(kernel.readonly(x), out)``): a kernel that writes it
        is refused before launch."""
        from .types import ReadOnly
        return ReadOnly(x)

    # ---- ids -----------------------------------------------------------------------------------------
    @staticmethod
    def thread_id(dim=0):
        """The thread's index in its block along ``dim`` (0 = x, 1 = y, 2 = z): CUDA ``threadIdx``."""
        return _ids("tid")[dim]

    @staticmethod
    def block_id(dim=0):
        """The block's index in the grid along ``dim``: CUDA ``blockIdx``."""
        return _ids("bid")[dim]

    @staticmethod
    def block_dim(dim=0):
        """The number of threads of a block along ``dim``: CUDA ``blockDim``."""
        return _ids("bdim")[dim]

    @staticmethod
    def grid_dim(dim=0):
        """The number of blocks of the grid along ``dim``: CUDA ``gridDim``."""
        return _ids("gdim")[dim]

    @staticmethod
    def global_id(dim=0):
        """``block_id(dim) * block_dim(dim) + thread_id(dim)``."""
        return _ids("bid")[dim] * _ids("bdim")[dim] + _ids("tid")[dim]

    @staticmethod
    def lane_id():
        """The thread's lane in its warp (0..31), from its linear index in the block."""
        t, b = _ids("tid"), _ids("bdim")
        return (t[0] + b[0] * (t[1] + b[1] * t[2])) % WARP_SIZE

    # ---- synchronization and shared memory (rewritten by the CPU back end) ---------------------------
    @staticmethod
    def barrier():
        """Wait until every thread of the block gets here (CUDA ``__syncthreads()``)."""
        _outside("barrier")

    @staticmethod
    def shared(shape, dtype):
        """A shared-memory array of static ``shape`` (an int or a tuple of ints) and ``dtype``, one per block."""
        _outside("shared")

    @staticmethod
    def shfl_down(value, delta):
        """The ``value`` of lane ``lane_id() + delta`` of this warp (this lane's own past the end)."""
        _outside("shfl_down")

    @staticmethod
    def shfl_up(value, delta):
        """The ``value`` of lane ``lane_id() - delta`` of this warp (this lane's own before the start)."""
        _outside("shfl_up")

    @staticmethod
    def shfl_xor(value, mask):
        """The ``value`` of lane ``lane_id() ^ mask`` of this warp (butterfly exchange)."""
        _outside("shfl_xor")

    @staticmethod
    def shfl(value, lane):
        """The ``value`` of lane ``lane`` of this warp (broadcast)."""
        _outside("shfl")

    @staticmethod
    def warp_sum(value):
        """The sum of ``value`` over the lanes of this warp, to every lane (a butterfly of ``shfl_xor`` with
        offsets 16, 8, 4, 2, 1: both devices add in that order; every lane of the warp must call it)."""
        _outside("warp_sum")

    @staticmethod
    def warp_min(value):
        """The least ``value`` of the lanes of this warp, to every lane (the same butterfly): NaN if any lane's is
        NaN, -0.0 before +0.0."""
        _outside("warp_min")

    @staticmethod
    def warp_max(value):
        """The greatest ``value`` of the lanes of this warp, to every lane: NaN if any lane's is NaN, +0.0 before
        -0.0."""
        _outside("warp_max")

    # ---- atomics (each returns the old value) --------------------------------------------------------
    @staticmethod
    def atomic_add(a, index, value):
        """``a[index] += value`` as one atomic operation; returns the old value."""
        old = a[index]
        a[index] = old + value
        return old

    @staticmethod
    def atomic_min(a, index, value):
        """``a[index] = min(a[index], value)`` atomically; returns the old value."""
        old = a[index]
        if value < old:
            a[index] = value
        return old

    @staticmethod
    def atomic_max(a, index, value):
        """``a[index] = max(a[index], value)`` atomically; returns the old value."""
        old = a[index]
        if value > old:
            a[index] = value
        return old

    @staticmethod
    def atomic_exch(a, index, value):
        """Store ``value`` in ``a[index]`` atomically; returns the old value."""
        old = a[index]
        a[index] = value
        return old

    @staticmethod
    def atomic_cas(a, index, compare, value):
        """Store ``value`` in ``a[index]`` if it equals ``compare``, atomically; returns the old value."""
        old = a[index]
        if old == compare:
            a[index] = value
        return old


class _Vec:
    """A vector value on the CPU device (float2 .. uint4): components ``.x .y .z .w``, swizzled reads
    (``v.xy``, ``v.zyx``), componentwise ``+ - * /`` with vectors of the same length and with numbers."""
    __slots__ = ("c",)

    def __init__(self, comps):
        self.c = comps

    def __getattr__(self, name):
        try:
            idx = ["xyzw".index(ch) for ch in name]
        except ValueError:
            raise AttributeError(f"a vector has no attribute {name!r} (components x, y, z, w)") from None
        if not idx or len(idx) > 4 or max(idx) >= len(self.c):
            raise AttributeError(f"a {len(self.c)}-vector has no attribute {name!r}")
        if len(idx) == 1:
            return self.c[idx[0]]
        return _Vec(tuple(self.c[i] for i in idx))

    def _op(self, other, f):
        if type(other) is _Vec:
            if len(other.c) != len(self.c):
                raise TypeError("gpk_array.kernel: vectors of different lengths")
            return _Vec(tuple(f(a, b) for a, b in zip(self.c, other.c)))
        return _Vec(tuple(f(a, other) for a in self.c))

    def _rop(self, other, f):
        return _Vec(tuple(f(other, a) for a in self.c))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._rop(o, lambda a, b: a + b)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._rop(o, lambda a, b: a - b)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._rop(o, lambda a, b: a * b)

    def __truediv__(self, o):
        return self._op(o, lambda a, b: a / b)

    def __rtruediv__(self, o):
        return self._rop(o, lambda a, b: a / b)

    def __neg__(self):
        return _Vec(tuple(-a for a in self.c))

    def __pos__(self):
        return self

    def __repr__(self):
        return f"vec{tuple(self.c)}"


def _vector_ctor(base, n):
    import numpy as np
    dt = {"float": np.float32, "double": np.float64, "int": np.int32, "uint": np.uint32}[base]

    def make(*comps):
        if len(comps) != n:
            raise TypeError(f"gpk_array.kernel.{base}{n}() takes {n} components, got {len(comps)}")
        return _Vec(tuple(dt(c) for c in comps))
    make.__name__ = make.__qualname__ = f"{base}{n}"
    make.__doc__ = (f"A {base}{n} vector of {n} {np.dtype(dt).name} components (CUDA's make_{base}{n}): ``.x`` "
                    f"``.y`` ... reads, swizzles (``v.yx``), componentwise ``+ - * /``.")
    return staticmethod(make)


VECTOR_TYPES = tuple(f"{b}{n}" for b in ("float", "double", "int", "uint") for n in (2, 3, 4))
for _name in VECTOR_TYPES:
    setattr(_Kernel, _name, _vector_ctor(_name[:-1], int(_name[-1])))
del _name

kernel = _Kernel()

# names of the builtins, by object, for the front end (analysis.py resolves calls to them)
BUILTINS = {getattr(_Kernel, n): n for n in (
    "work_size", "thread_id", "block_id", "block_dim", "grid_dim", "global_id", "lane_id", "barrier", "shared",
    "shfl_down", "shfl_up", "shfl_xor", "shfl", "warp_sum", "warp_min", "warp_max", "atomic_add", "atomic_min",
    "atomic_max", "atomic_exch", "atomic_cas") + VECTOR_TYPES}
