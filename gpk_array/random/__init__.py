"""Random sampling with NumPy's values on every device.

``gpk_array.random`` mirrors ``numpy.random``: the legacy functions (``seed``, ``rand``, ``randn``, ``randint``,
``normal``, ``choice``, ``shuffle``, ...) on a global ``RandomState``, and ``default_rng``/``Generator``. Samples
are drawn by NumPy's own generators on the host and then moved to the device, so a given seed gives exactly
NumPy's numbers on the CPU and on a GPU. Every sampling function takes ``device=`` (default: the default
device); a draw that NumPy returns as a Python or NumPy scalar (``size=None``) is returned as that scalar.

Shuffles and permutations of arrays already on a GPU draw only the permutation on the host and reorder the data on
the device.

When bit-equality with NumPy is not needed, ``fast_rng(seed, device=...)`` gives a generator that draws on the
device itself (``cupy.random`` on CUDA devices, NumPy's ``Generator`` on the CPU): much faster for large GPU
draws, different numbers.
"""
import inspect as _inspect

import numpy as _np

from .. import _hooks
from .._dtypes import HOST_KINDS
from .._array import Array
from .._device import CPU, as_device
from .._ops._common import new, oom_guard
from .._ops._common import normalize_axis as _normalize_axis
from .._ops.creation import asarray as _std_asarray

__all__ = ["RandomState", "Generator", "default_rng", "fast_rng", "FastGenerator", "SeedSequence", "BitGenerator",
           "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "seed", "get_state", "set_state", "random",
           "random_sample", "ranf", "sample", "rand", "randn", "randint", "random_integers", "bytes", "choice",
           "shuffle", "permutation"]

SeedSequence = _np.random.SeedSequence
BitGenerator = _np.random.BitGenerator
PCG64 = _np.random.PCG64
PCG64DXSM = _np.random.PCG64DXSM
MT19937 = _np.random.MT19937
Philox = _np.random.Philox
SFC64 = _np.random.SFC64


# --- moving draws and parameters ----------------------------------------------------------------------------------
def _param(v):
    """A distribution parameter for NumPy: Arrays become host NumPy arrays (parameters are read on the host)."""
    if v.__class__ is Array:
        return v._data if v._device is CPU else v._data.get()
    if v.__class__ is list or v.__class__ is tuple:
        if any(i.__class__ is Array for i in v):
            return [_param(i) for i in v]
    return v


def _size(size):
    if size.__class__ is Array:
        h = _param(size)
        return tuple(int(s) for s in h.reshape(-1)) if h.ndim else int(h)
    return size


def _out(v, device):
    """A draw on the host moved to the device (default device when None); scalars stay scalars. A draw of
    strings, dates or records (``choice`` of such values) stays on the CPU device (gpk_array/_hostdata.py)."""
    if isinstance(v, _np.ndarray):
        if v.dtype.kind in HOST_KINDS:
            from .. import _hostdata
            return _hostdata.host_array(v, device)
        return _std_asarray(v, device=as_device(device))
    return v


def _dev(device, default):
    return device if device is not None else default


_SIGNATURES = {}  # (generator type, method name) -> its signature, or None where it has none


def _precheck_draw(gen, name, args, kwargs, device):
    """Before a draw: the pre-allocation hook (only called while it is set) with a lower bound of the bytes the
    draw returns, ``prod(size) * itemsize`` (``dtype=`` where given, else the method's default dtype, else 8 bytes:
    NumPy's draws are float64 or int64 by default); draws whose size cannot be read are not checked."""
    key = (type(gen), name)
    sig = _SIGNATURES.get(key, False)
    if sig is False:
        try:
            sig = _inspect.signature(getattr(gen, name))
        except (TypeError, ValueError):
            sig = None
        _SIGNATURES[key] = sig
    if sig is None:
        return
    try:
        bound = sig.bind_partial(*args, **kwargs).arguments
        size = bound.get("size")
        if size is None:
            return
        dtype = bound.get("dtype")
        if dtype is None:
            p = sig.parameters.get("dtype")
            dtype = _np.float64 if p is None or p.default is _inspect.Parameter.empty else p.default
        itemsize = _np.dtype(dtype).itemsize
    except (TypeError, ValueError):
        return
    _hooks.precheck(size, itemsize, as_device(device))


def _method(name):
    def m(self, *args, device=None, **kwargs):
        if "size" in kwargs:
            kwargs["size"] = _size(kwargs["size"])
        out = kwargs.pop("out", None)
        if out is not None:
            kwargs["size"] = out.shape
        args = [_param(a) for a in args]
        kwargs = {k: _param(v) for k, v in kwargs.items()}
        if _hooks.prealloc_hook is not None:
            _precheck_draw(self._gen, name, args, kwargs, _dev(device, self._device))
        r = getattr(self._gen, name)(*args, **kwargs)
        if out is not None:
            out._data[...] = _out(r, out._device)._data
            return out
        return _out(r, _dev(device, self._device))
    m.__name__ = name
    m.__doc__ = f"NumPy's ``{name}`` drawn on the host, returned on ``device`` (default: the default device)."
    return oom_guard(m)


def _shuffle_array(gen, x, axis=0):
    """Shuffle an Array in place along axis with NumPy's sequence of swaps (a permutation drawn on the host)."""
    if x._device is CPU:
        if axis == 0:
            gen.shuffle(x._data)
        else:
            gen.shuffle(x._data, axis=axis)
        return
    d = x._data
    ax = _normalize_axis(axis, d.ndim)
    perm = gen.permutation(d.shape[ax])
    d[...] = x._device.xp.take(d, x._device.xp.asarray(perm), axis=ax)


def _permute_array(gen, x, axis=None):
    d = x._data
    if d.ndim < 1:
        raise IndexError("x must be an integer or at least 1-dimensional")
    if x._device is CPU:
        r = gen.permutation(d) if axis is None else gen.permutation(d, axis=axis)
        return new(r, CPU)
    ax = 0 if axis is None else _normalize_axis(axis, d.ndim)
    perm = gen.permutation(d.shape[ax])
    return new(x._device.xp.take(d, x._device.xp.asarray(perm), axis=ax), x._device)


def _choice_array(gen, a, size, replace, p, **kw):
    axis = kw.get("axis", 0)
    d = a._data
    if a._device is CPU:
        return new(_np.asarray(gen.choice(d, size, replace, p, **kw)), CPU)
    if d.ndim == 0:
        raise ValueError("a must be 1-dimensional or an integer")
    idx = gen.choice(d.shape[axis], size, replace, p, **kw)
    xp = a._device.xp
    if isinstance(idx, _np.ndarray):
        return new(xp.take(d, xp.asarray(idx), axis=axis), a._device)
    return new(xp.take(d, int(idx), axis=axis), a._device)


_LEGACY = ["random_sample", "random", "ranf", "sample", "randint", "random_integers", "uniform", "normal",
           "standard_normal", "exponential", "standard_exponential", "poisson", "binomial", "negative_binomial",
           "beta", "gamma", "standard_gamma", "lognormal", "laplace", "logistic", "gumbel", "geometric",
           "hypergeometric", "chisquare", "noncentral_chisquare", "f", "noncentral_f", "standard_t",
           "standard_cauchy", "pareto", "power", "rayleigh", "triangular", "vonmises", "wald", "weibull", "zipf",
           "logseries", "multinomial", "multivariate_normal", "dirichlet"]

_GENERATOR = ["random", "integers", "uniform", "normal", "standard_normal", "exponential", "standard_exponential",
              "poisson", "binomial", "negative_binomial", "beta", "gamma", "standard_gamma", "lognormal", "laplace",
              "logistic", "gumbel", "geometric", "hypergeometric", "chisquare", "noncentral_chisquare", "f",
              "noncentral_f", "standard_t", "standard_cauchy", "pareto", "power", "rayleigh", "triangular",
              "vonmises", "wald", "weibull", "zipf", "logseries", "multinomial", "multivariate_normal",
              "multivariate_hypergeometric", "dirichlet"]


# --- legacy RandomState -----------------------------------------------------------------------------------------
class RandomState:
    """NumPy's legacy ``RandomState`` (Mersenne Twister): same seed, same numbers; results on ``device``."""

    def __init__(self, seed=None, *, device=None):
        self._gen = seed._gen if isinstance(seed, RandomState) else _np.random.RandomState(_param(seed))
        self._device = device

    def seed(self, seed=None):
        """Reseed the generator (NumPy's ``RandomState.seed``; an Array seed is read on the host)."""
        self._gen.seed(_param(seed))

    def get_state(self, legacy=True):
        """The Mersenne Twister state, as NumPy's ``RandomState.get_state`` returns it."""
        return self._gen.get_state(legacy=legacy)

    def set_state(self, state):
        """Restore a state from ``get_state`` (NumPy's ``RandomState.set_state``)."""
        self._gen.set_state(state)

    def rand(self, *shape, device=None):
        """Uniform samples in [0, 1) of the given shape (a float without arguments)."""
        if _hooks.prealloc_hook is not None:
            _hooks.precheck(shape, 8, as_device(_dev(device, self._device)))
        return _out(self._gen.rand(*shape), _dev(device, self._device))

    def randn(self, *shape, device=None):
        """Standard normal samples of the given shape (a float without arguments)."""
        if _hooks.prealloc_hook is not None:
            _hooks.precheck(shape, 8, as_device(_dev(device, self._device)))
        return _out(self._gen.randn(*shape), _dev(device, self._device))

    def tomaxint(self, size=None, device=None):
        """Random integers in [0, 2**63 - 1), NumPy's legacy ``tomaxint``, on ``device``."""
        return _out(self._gen.randint(0, _np.iinfo(_np.int64).max, size=_size(size)), _dev(device, self._device))

    def bytes(self, length):
        """``length`` random bytes (a Python ``bytes``, NumPy's numbers)."""
        return self._gen.bytes(length)

    def choice(self, a, size=None, replace=True, p=None, *, device=None):
        """Random sample of a's elements (or of range(a))."""
        size = _size(size)
        p = _param(p)
        if a.__class__ is Array:
            return _choice_array(self._gen, a, size, replace, p)
        return _out(self._gen.choice(_param(a), size, replace, p), _dev(device, self._device))

    def shuffle(self, x):
        """Shuffle in place along the first axis."""
        if x.__class__ is Array:
            _shuffle_array(self._gen, x)
        else:
            self._gen.shuffle(x)

    def permutation(self, x, *, device=None):
        """A permuted copy of x (or of arange(x))."""
        if x.__class__ is Array:
            return _permute_array(self._gen, x)
        return _out(self._gen.permutation(_param(x)), _dev(device, self._device))

    def __repr__(self):
        return f"RandomState(MT19937) at 0x{id(self):X}"


for _n in _LEGACY:
    setattr(RandomState, _n, _method(_n))


# --- Generator --------------------------------------------------------------------------------------------------
class Generator:
    """NumPy's ``Generator``: the same bit generator and algorithms, so the same numbers; results on ``device``."""

    def __init__(self, bit_generator, *, device=None):
        self._gen = bit_generator if isinstance(bit_generator, _np.random.Generator) else \
            _np.random.Generator(bit_generator)
        self._device = device

    @property
    def bit_generator(self):
        """The NumPy bit generator underneath (``PCG64`` for ``default_rng``)."""
        return self._gen.bit_generator

    def spawn(self, n_children):
        """``n_children`` independent child generators on the same device (NumPy's ``Generator.spawn``)."""
        return [Generator(g, device=self._device) for g in self._gen.spawn(n_children)]

    def bytes(self, length):
        """``length`` random bytes (a Python ``bytes``, NumPy's numbers)."""
        return self._gen.bytes(length)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True, *, device=None):
        """Random sample of a's entries along axis (or of range(a))."""
        size = _size(size)
        p = _param(p)
        if a.__class__ is Array:
            return _choice_array(self._gen, a, size, replace, p, axis=axis, shuffle=shuffle)
        return _out(self._gen.choice(_param(a), size, replace, p, axis=axis, shuffle=shuffle),
                    _dev(device, self._device))

    def shuffle(self, x, axis=0):
        """Shuffle in place along axis."""
        if x.__class__ is Array:
            _shuffle_array(self._gen, x, axis)
        else:
            self._gen.shuffle(x, axis=axis)

    def permutation(self, x, axis=0, *, device=None):
        """A permuted copy of x along axis (or a permutation of arange(x))."""
        if x.__class__ is Array:
            return _permute_array(self._gen, x, axis)
        return _out(self._gen.permutation(_param(x), axis=axis), _dev(device, self._device))

    def permuted(self, x, *, axis=None, out=None):
        """x with each slice along axis shuffled independently (all elements when axis is None)."""
        if x.__class__ is not Array:
            return _out(self._gen.permuted(_np.asarray(x), axis=axis), self._device)
        dev = x._device
        d = x._data
        if dev is CPU:
            r = self._gen.permuted(d, axis=axis)
        else:
            xp = dev.xp
            if axis is None:
                idx = self._gen.permuted(_np.arange(d.size))
                r = d.reshape(-1)[xp.asarray(idx)].reshape(d.shape)
            else:
                ax = _normalize_axis(axis, d.ndim)
                shape = [1] * d.ndim
                shape[ax] = d.shape[ax]
                base = _np.broadcast_to(_np.arange(d.shape[ax]).reshape(shape), d.shape).copy()
                idx = self._gen.permuted(base, axis=ax)
                r = xp.take_along_axis(d, xp.asarray(idx), axis=ax)
        if out is not None:
            out._data[...] = r
            return out
        return new(r, dev)

    def __repr__(self):
        return f"Generator({type(self._gen.bit_generator).__name__})"


for _n in _GENERATOR:
    setattr(Generator, _n, _method(_n))


def default_rng(seed=None, *, device=None):
    """A ``Generator`` with NumPy's default bit generator (PCG64) seeded as NumPy's ``default_rng(seed)``."""
    if isinstance(seed, Generator):
        return seed
    return Generator(_np.random.default_rng(_param(seed)), device=device)


# --- the global legacy state and its functions --------------------------------------------------------------------
_rand = RandomState()


def seed(seed=None):
    """Seed the global legacy generator (as ``numpy.random.seed``)."""
    _rand.seed(seed)


def get_state(legacy=True):
    """The global legacy generator's state (as ``numpy.random.get_state``)."""
    return _rand.get_state(legacy)


def set_state(state):
    """Restore the global legacy generator's state (as ``numpy.random.set_state``)."""
    _rand.set_state(state)


def rand(*shape, device=None):
    """Uniform samples in [0, 1) of the given shape (a float without arguments)."""
    return _rand.rand(*shape, device=device)


def randn(*shape, device=None):
    """Standard normal samples of the given shape (a float without arguments)."""
    return _rand.randn(*shape, device=device)


def bytes(length):
    """``length`` random bytes from the global legacy generator (as ``numpy.random.bytes``)."""
    return _rand.bytes(length)


def choice(a, size=None, replace=True, p=None, *, device=None):
    """Random sample of a's elements (or of range(a)) from the global legacy generator."""
    return _rand.choice(a, size, replace, p, device=device)


def shuffle(x):
    """Shuffle x in place along its first axis."""
    _rand.shuffle(x)


def permutation(x, *, device=None):
    """A permuted copy of x (or a permutation of arange(x))."""
    return _rand.permutation(x, device=device)


def _global(name):
    def fn(*args, device=None, **kwargs):
        return getattr(_rand, name)(*args, device=device, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"NumPy's legacy ``numpy.random.{name}`` on the global state, returned on ``device``."
    return fn


for _n in _LEGACY:
    globals()[_n] = _global(_n)
    if _n not in __all__:
        __all__.append(_n)


# --- fast device-side generator ------------------------------------------------------------------------------------
class FastGenerator:
    """Draws on the device: ``cupy.random`` on a CUDA device, NumPy's ``Generator`` (PCG64) on the CPU.

    Seeded draws are reproducible per device, but the numbers differ from NumPy's. Method names follow
    ``Generator``: random, integers, standard_normal, normal, uniform, exponential, poisson, gamma, beta,
    binomial, choice, permutation, shuffle; ``dtype=`` is honoured for the floating draws.
    """

    def __init__(self, seed=None, device=None):
        self._device = as_device(device)
        if self._device is CPU:
            self._gen = _np.random.default_rng(seed)
            self._cupy = False
        else:
            xp = self._device.xp
            with xp.cuda.Device(self._device.index):
                self._gen = xp.random.RandomState(seed)
            self._cupy = True

    @property
    def device(self):
        """The device the draws are made on and returned on."""
        return self._device

    def _pre(self, size, dtype=_np.float64):
        """The pre-allocation hook for a draw of ``size`` (only called while it is set)."""
        if size is not None:
            _hooks.precheck(size, dtype, self._device)

    def _wrap(self, r):
        xp = self._device.xp
        if not isinstance(r, xp.ndarray):
            r = xp.asarray(r)
        return new(r, self._device)

    def _p(self, v):
        if v.__class__ is Array:
            if v._device is not self._device:
                raise ValueError(f"parameter is on {v._device}, the generator on {self._device}")
            return v._data
        return v

    def _ctx(self):
        if self._cupy:
            return self._device.xp.cuda.Device(self._device.index)
        return _Null()

    def random(self, size=None, dtype=_np.float64):
        """Uniform floats in [0, 1) of ``size`` (a 0-d Array when None) and ``dtype``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, dtype)
        with self._ctx():
            if self._cupy:
                return self._wrap(self._gen.random_sample(size=size, dtype=dtype))
            return self._wrap(self._gen.random(size=size, dtype=dtype))

    def integers(self, low, high=None, size=None, dtype=_np.int64, endpoint=False):
        """Integers in [low, high) (``endpoint=True``: [low, high]; one bound: [0, low)) of ``size`` and ``dtype``,
        drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, dtype)
        with self._ctx():
            if self._cupy:
                if high is None:
                    low, high = 0, low
                if endpoint:
                    high = high + 1
                return self._wrap(self._gen.randint(low, high, size=size, dtype=dtype))
            return self._wrap(self._gen.integers(low, high, size=size, dtype=dtype, endpoint=endpoint))

    def standard_normal(self, size=None, dtype=_np.float64):
        """Standard normal samples of ``size`` and ``dtype``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, dtype)
        with self._ctx():
            return self._wrap(self._gen.standard_normal(size=size, dtype=dtype))

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=_np.float64):
        """Normal samples with mean ``loc`` and standard deviation ``scale`` (scalars or Arrays on the generator's
        device)."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, dtype)
        with self._ctx():
            if self._cupy:
                return self._wrap(self._gen.normal(self._p(loc), self._p(scale), size=size, dtype=dtype))
            return self._wrap(self._gen.normal(loc, scale, size=size).astype(dtype, copy=False))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=_np.float64):
        """Uniform samples in [low, high) of ``size`` and ``dtype``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, dtype)
        with self._ctx():
            if self._cupy:
                return self._wrap(self._gen.uniform(self._p(low), self._p(high), size=size, dtype=dtype))
            return self._wrap(self._gen.uniform(low, high, size=size).astype(dtype, copy=False))

    def exponential(self, scale=1.0, size=None):
        """Exponential samples with the given ``scale``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, _np.float64)
        with self._ctx():
            return self._wrap(self._gen.exponential(self._p(scale), size=size))

    def poisson(self, lam=1.0, size=None):
        """Poisson samples with rate ``lam``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, _np.int64)
        with self._ctx():
            return self._wrap(self._gen.poisson(self._p(lam), size=size))

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma samples with ``shape`` and ``scale``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, _np.float64)
        with self._ctx():
            return self._wrap(self._gen.gamma(self._p(shape), self._p(scale), size=size))

    def beta(self, a, b, size=None):
        """Beta samples with parameters ``a`` and ``b``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, _np.float64)
        with self._ctx():
            return self._wrap(self._gen.beta(self._p(a), self._p(b), size=size))

    def binomial(self, n, p, size=None):
        """Binomial samples of ``n`` trials with success probability ``p``, drawn on the device."""
        if _hooks.prealloc_hook is not None:
            self._pre(size, _np.int64)
        with self._ctx():
            return self._wrap(self._gen.binomial(self._p(n), self._p(p), size=size))

    def choice(self, a, size=None, replace=True, p=None):
        """A random sample of ``a``'s elements (or of ``range(a)``), with or without replacement, optionally
        weighted by ``p``."""
        with self._ctx():
            return self._wrap(self._gen.choice(self._p(a), size=size, replace=replace, p=self._p(p)))

    def permutation(self, x):
        """A permuted copy of ``x`` (or a permutation of ``range(x)`` for an int)."""
        with self._ctx():
            return self._wrap(self._gen.permutation(self._p(x)))

    def shuffle(self, x):
        """Shuffle the Array ``x`` (on the generator's device) in place along its first axis."""
        if x.__class__ is not Array or x._device is not self._device:
            raise TypeError("FastGenerator.shuffle takes an Array on the generator's device")
        with self._ctx():
            self._gen.shuffle(x._data)

    def __repr__(self):
        return f"FastGenerator(device='{self._device}')"


for _cls in (RandomState, Generator, FastGenerator):  # a draw too large for memory raises OutOfMemoryError
    for _n, _f in list(vars(_cls).items()):
        if not _n.startswith("_") and callable(_f) and not hasattr(_f, "__wrapped__"):
            setattr(_cls, _n, oom_guard(_f))


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def fast_rng(seed=None, device=None):
    """A device-side generator (not bit-equal to NumPy): ``cupy.random`` on CUDA, NumPy's PCG64 on the CPU."""
    return FastGenerator(seed, device)
