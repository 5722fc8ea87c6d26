"""Fixtures of the Dask tests (skipped as a whole where Dask is not installed).

``device`` runs a test on the CPU, on cuda:0 where a GPU exists (tests marked gpu), and, without one, on the stand-in
cuda:0 of tests/numpy_compat/fakegpu.py (NumPy dressed as CuPy), so the device paths of gpk_array.dask (no NumPy
meta, no NumPy element counts beside device chunks, no silent host copies) run on every machine. Dask runs with its
synchronous scheduler here; tests/dask/test_cluster.py runs the same cases on a LocalCluster of worker processes.
"""
import importlib.util

import pytest

import gpk_array

from ..numpy_compat.fakegpu import fake_cuda_device

try:
    _HAS_DASK = importlib.util.find_spec("dask.array") is not None
except ImportError:   # no dask package at all
    _HAS_DASK = False
if _HAS_DASK:
    import dask
    import gpk_array.dask  # noqa: F401  (registers gpk_array with Dask)
else:
    collect_ignore_glob = ["test_*.py"]   # the dask extra is not installed: nothing here to run

_HAS_GPU = any(d.kind == "cuda" for d in gpk_array.__array_namespace_info__().devices())

_PARAMS = [pytest.param("cpu", id="cpu"),
           pytest.param("cuda:0", id="cuda", marks=[pytest.mark.gpu,
                                                    pytest.mark.skipif(not _HAS_GPU, reason="no CUDA GPU")])]
if not _HAS_GPU:
    _PARAMS.append(pytest.param("fake", id="fakecuda"))


@pytest.fixture(params=_PARAMS)
def device(request):
    """The device under test (a Device); Dask's synchronous scheduler for the test's duration."""
    with dask.config.set(scheduler="synchronous"):
        if request.param == "fake":
            with fake_cuda_device() as d:
                yield d
            return
        yield gpk_array.Device(request.param)


@pytest.fixture(params=[p for p in _PARAMS if p.values[0] != "cpu"])
def cuda_device(request):
    """A CUDA device (cuda:0 where a GPU exists, else the stand-in), beside the CPU device in mixed-device tests."""
    with dask.config.set(scheduler="synchronous"):
        if request.param == "fake":
            with fake_cuda_device() as d:
                yield d
            return
        yield gpk_array.Device(request.param)
