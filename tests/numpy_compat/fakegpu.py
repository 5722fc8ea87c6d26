"""A stand-in CUDA device for machines without a GPU: a device named cuda:0 whose backend module is NumPy dressed
as CuPy (arrays are an ndarray subclass with CuPy's ``.get()``; results of backend functions are such arrays,
never NumPy scalars; the module is not ``numpy``).

It exercises every branch gpk_array takes for a non-NumPy backend (``xp is not numpy``) with NumPy's arithmetic,
so the device-side code paths of gpk_array._numpy and gpk_array.random are tested on any machine. Where a real GPU
run found CuPy to differ from NumPy, the fake reproduces the difference: its ufuncs raise for the methods CuPy's lack
(reduce/accumulate beyond add and multiply, reduceat beyond add, ``at`` beyond CuPy's atomic scatters), and cov,
percentile/quantile, histogram, convolve/correlate, sinc and lcm refuse or round as CuPy's do. It does not reproduce
the GPU's flushing of float32 subnormals to zero, nor differences no real GPU run has shown yet: those runs (tests
marked gpu) still have the last word.
"""
import contextlib
import types

import numpy

import gpk_array
from gpk_array import _device


class FakeCudaArray(numpy.ndarray):
    """A NumPy array standing for a cupy.ndarray."""

    def get(self, stream=None, order="C", out=None):
        return numpy.array(self, copy=True).view(numpy.ndarray)

    def __getitem__(self, key):
        r = super().__getitem__(key)
        return numpy.asarray(r).view(FakeCudaArray) if isinstance(r, numpy.generic) else r

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        return numpy.asarray(obj).view(FakeCudaArray)


def _dev_result(r):
    if isinstance(r, numpy.ndarray):
        return r if isinstance(r, FakeCudaArray) else r.view(FakeCudaArray)
    if isinstance(r, numpy.generic):
        return numpy.asarray(r).view(FakeCudaArray)
    if isinstance(r, (list, tuple)) and any(isinstance(v, (numpy.ndarray, numpy.generic, list, tuple)) for v in r):
        return type(r)(_dev_result(v) for v in r) if not hasattr(r, "_fields") else type(r)(*map(_dev_result, r))
    return r


# What CuPy 14's ufuncs implement of NumPy's ufunc methods (cupy/_core/_kernel.pyx): reduce and accumulate only
# for add and multiply, reduceat only for add, ``at`` only as atomic scatters for these (ufunc, dtype) pairs
# (cupy/_core/_routines_indexing.pyx); everything else raises as below.
_UFUNC_REDUCE = {"add", "multiply"}
_UFUNC_ACCUMULATE = {"add", "multiply"}
_UFUNC_REDUCEAT = {"add"}
_UFUNC_AT = {
    "add": ("int32", "float16", "float32", "float64", "uint32", "uint64"),
    "subtract": ("int32", "uint32"),
    "maximum": ("int32", "float32", "float64", "uint32", "uint64"),
    "minimum": ("int32", "float32", "float64", "uint32", "uint64"),
}


# CuPy ufuncs whose kernels reach the CUDA compiler for operand types they have no loop for, so the call fails
# with cupy.cuda.compiler.CompileException instead of a TypeError (seen on the H200: nextafter of two complex64
# arrays, arctan2 of a complex Python scalar)
_UFUNC_COMPILE_FAILS = {"nextafter", "arctan2"}


class CompileException(Exception):
    """Stands for cupy.cuda.compiler.CompileException (gpk_array matches it by class name)."""


class FakeUfunc:
    """A NumPy ufunc standing for a cupy.ufunc: calls work; the methods CuPy lacks raise as CuPy's do."""

    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout, self.nargs, self.identity = uf.nin, uf.nout, uf.nargs, uf.identity

    def __repr__(self):
        return f"<fake cupy ufunc '{self.__name__}'>"

    def __call__(self, *args, **kwargs):
        with numpy.errstate(all="ignore"):  # a GPU raises no floating-point flags (gpk_array/_ops/_fperr.py)
            try:
                return _dev_result(self._uf(*args, **kwargs))
            except TypeError as e:
                if self.__name__ in _UFUNC_COMPILE_FAILS and ("loop" in str(e) or "input types" in str(e)):
                    raise CompileException(f"fake nvrtc: no instance of overloaded function "
                                           f"{self.__name__!r} matches the argument list") from None
                raise

    def _unsupported(self, method):
        raise NotImplementedError(f"`cupy_{self.__name__}.{method}` is not supported yet")

    def reduce(self, *args, **kwargs):
        if self.__name__ not in _UFUNC_REDUCE:
            self._unsupported("reduce")
        return _dev_result(self._uf.reduce(*args, **kwargs))

    def accumulate(self, *args, **kwargs):
        if self.__name__ not in _UFUNC_ACCUMULATE:
            self._unsupported("accumulate")
        return _dev_result(self._uf.accumulate(*args, **kwargs))

    def reduceat(self, *args, **kwargs):
        if self.__name__ not in _UFUNC_REDUCEAT:
            self._unsupported("reduceat")
        return _dev_result(self._uf.reduceat(*args, **kwargs))

    def outer(self, *args, **kwargs):
        return _dev_result(self._uf.outer(*args, **kwargs))

    def at(self, a, indices, b=None):
        dts = _UFUNC_AT.get(self.__name__)
        if dts is None or b is None:
            self._unsupported("at")
        v = numpy.asarray(b)
        if v.dtype.name not in dts:
            raise TypeError(f"cupy.{self.__name__}.at only supports {', '.join(dts)}, as data type")
        self._uf.at(a, indices, v)


def _wrap_fn(fn):
    def call(*args, **kwargs):
        return _dev_result(fn(*args, **kwargs))
    call.__name__ = getattr(fn, "__name__", "fn")
    return call


class _FakeModule(types.ModuleType):
    def __init__(self, name, base):
        super().__init__(name)
        self._base = base

    def __getattr__(self, name):
        obj = getattr(self._base, name)
        if isinstance(obj, types.ModuleType):
            return _FakeModule(f"{self.__name__}.{name}", obj)
        if isinstance(obj, numpy.ufunc):
            return FakeUfunc(obj)
        if isinstance(obj, type):
            return obj
        if callable(obj):
            return _wrap_fn(obj)
        return obj


fakecupy = _FakeModule("fakecupy", numpy)
fakecupy.ndarray = FakeCudaArray


def _fake_asarray(a, dtype=None, order=None, **kwargs):
    if hasattr(a, "_data") and hasattr(a, "_device"):
        raise TypeError("fake cupy.asarray got a gpk_array Array")
    return numpy.asarray(a, dtype=dtype, order=order).view(FakeCudaArray)


fakecupy.asarray = _fake_asarray
fakecupy.array = lambda a, dtype=None, copy=True, order="K", ndmin=0: numpy.array(
    a, dtype=dtype, copy=copy, order=order, ndmin=ndmin).view(FakeCudaArray)

# CuPy's sorts are stable (radix/merge sorts); NumPy's default quicksort is not
fakecupy.argsort = lambda a, axis=-1, kind=None: _dev_result(numpy.argsort(a, axis=axis, kind="stable"))
fakecupy.sort = lambda a, axis=-1, kind=None: _dev_result(numpy.sort(a, axis=axis, kind="stable"))


def _fake_matmul(a, b):
    return numpy.matmul(a, b)


# --- CuPy functions whose results or parameters differ from NumPy's -------------------------------------------------
def _fake_percentile(name):
    def fn(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
        if keepdims:
            # CuPy's keepdims=True loses dimensions (axis=None on a 1-D array with a list q gives (1,), not (1, 1))
            raise TypeError(f"fake cupy.{name}: keepdims=True gives wrong shapes on CuPy")
        # CuPy sorts the input in place with overwrite_input=True (NumPy partitions it): modified either way
        return _dev_result(getattr(numpy, name)(a, q, axis=axis, method=method, overwrite_input=overwrite_input))
    return fn


def _fake_cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if aweights is not None:
        raise TypeError("fake cupy.cov: CuPy's cov gives wrong results with aweights=")
    return _dev_result(numpy.cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype=dtype))


def _fake_histogram(x, bins=10, range=None, weights=None, density=False):
    if isinstance(bins, (int, numpy.integer)):
        # CuPy's uniform edges come from a fused multiply-add (one rounding, NumPy's two): a value on an edge can
        # land in the bin below NumPy's
        raise TypeError("fake cupy.histogram: integer bins place values on edges unlike NumPy; pass the edges")
    # with edges, CuPy finds each value's bin by binary search and adds its weight there (NumPy's own path for
    # edges sums sorted weights cumulatively and differences them, which rounds differently)
    x, e = numpy.asarray(x).reshape(-1), numpy.asarray(bins)
    nb = e.size - 1
    i = numpy.searchsorted(e, x, side="right") - 1
    i[x == e[-1]] = nb - 1
    ok = (i >= 0) & (i < nb)
    w = None if weights is None else numpy.asarray(weights).reshape(-1)[ok]
    h = numpy.bincount(i[ok], weights=w, minlength=nb)
    if density:
        h = h / numpy.diff(e) / h.sum()
    return _dev_result(h), _dev_result(e)


def _fft_full(a, v):
    a, v = numpy.asarray(a), numpy.asarray(v)
    n = a.size + v.size - 1
    r = numpy.fft.ifft(numpy.fft.fft(a, n) * numpy.fft.fft(v, n))
    dt = numpy.result_type(a.dtype, v.dtype)
    return (r if dt.kind == "c" else r.real).astype(dt)


def _fft_mode(f, n, m, mode):
    if mode == "full":
        return f
    if mode == "same":
        s = (m - 1) // 2
        return f[s:s + n]
    return f[m - 1:n]


def _fake_convolve(a, v, mode="full"):
    """CuPy's convolve may use FFTs: exact zeros of NumPy's direct sums come out as rounding noise."""
    a, v = (a, v) if numpy.size(a) >= numpy.size(v) else (v, a)
    return _dev_result(_fft_mode(_fft_full(a, v), numpy.size(a), numpy.size(v), mode))


def _fake_correlate(a, v, mode="valid"):
    a, v = numpy.asarray(a), numpy.asarray(v)
    if v.size > a.size:
        r = _fft_mode(_fft_full(v, numpy.conj(a[::-1])), v.size, a.size, mode)[::-1]
        return _dev_result(numpy.conj(r) if r.dtype.kind == "c" else r.copy())
    return _dev_result(_fft_mode(_fft_full(a, numpy.conj(v[::-1])), a.size, v.size, mode))


def _fake_sinc(x):
    """CuPy's sinc uses sinpi: exact zeros at the nonzero integers (NumPy's sin(pi * n) / (pi * n) is ~4e-17)."""
    x = numpy.asarray(x)
    r = numpy.array(numpy.sinc(x))
    r[(x == numpy.round(x)) & (x != 0)] = 0
    return _dev_result(r)


def _fake_lcm(a, b, *args, **kwargs):
    """CuPy's lcm returns the absolute value of an overflowed (wrapped) result; NumPy returns the wrapped one."""
    with numpy.errstate(over="ignore"):
        return _dev_result(numpy.abs(numpy.lcm(a, b, *args, **kwargs)))


fakecupy.percentile = _fake_percentile("percentile")
fakecupy.quantile = _fake_percentile("quantile")
fakecupy.cov = _fake_cov
fakecupy.histogram = _fake_histogram
fakecupy.convolve = _fake_convolve
fakecupy.correlate = _fake_correlate
fakecupy.sinc = _fake_sinc
class _FakeLcm(FakeUfunc):
    """cupy.lcm: a ufunc (reduce and the other methods as CuPy's: unsupported) whose calls are _fake_lcm."""

    def __call__(self, *args, **kwargs):
        return _fake_lcm(*args, **kwargs)


fakecupy.lcm = _FakeLcm(numpy.lcm)


@contextlib.contextmanager
def fake_cuda_device():
    """Install the stand-in cuda:0 for the duration (refused where a real CUDA device exists)."""
    if _device.cuda_device_count() > 0:
        raise RuntimeError("a real CUDA device exists; use it instead of the stand-in")
    dev = object.__new__(_device.Device)
    dev.kind, dev.index, dev.xp, dev._name = "cuda", 0, fakecupy, "cuda:0"
    saved = _device._DEVICES.get(("cuda", 0))
    _device._DEVICES[("cuda", 0)] = dev
    from gpk_array import _gpu
    saved_matmul, saved_reduce = _gpu.matmul, _gpu.reduce
    _gpu.matmul = _fake_matmul
    _gpu.reduce = lambda *args, **kwargs: None  # no RawModule kernels here: every reduction routed is CuPy's
    try:
        yield dev
    finally:
        _gpu.matmul, _gpu.reduce = saved_matmul, saved_reduce
        if saved is None:
            _device._DEVICES.pop(("cuda", 0), None)
        else:
            _device._DEVICES[("cuda", 0)] = saved
        if gpk_array._device._default is dev:
            gpk_array.set_default_device(None)
