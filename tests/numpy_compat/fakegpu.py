"""A stand-in CUDA device for machines without a GPU: a device named cuda:0 whose backend module is NumPy dressed
as CuPy (arrays are an ndarray subclass with CuPy's ``.get()``; results of backend functions are such arrays,
never NumPy scalars; the module is not ``numpy``).

It exercises every branch gpk_array takes for a non-NumPy backend (``xp is not numpy``) with NumPy's arithmetic,
so the device-side code paths of gpk_array._numpy and gpk_array.random are tested on any machine. It cannot catch
differences between CuPy's and NumPy's APIs: the real GPU runs (tests marked gpu) do that.
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
        if isinstance(obj, numpy.ufunc) or isinstance(obj, type):
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
    saved_matmul = _gpu.matmul
    _gpu.matmul = _fake_matmul
    try:
        yield dev
    finally:
        _gpu.matmul = saved_matmul
        if saved is None:
            _device._DEVICES.pop(("cuda", 0), None)
        else:
            _device._DEVICES[("cuda", 0)] = saved
        if gpk_array._device._default is dev:
            gpk_array.set_default_device(None)
