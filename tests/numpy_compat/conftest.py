"""Fixtures of the NumPy-compatibility tests.

``device`` runs a test on the CPU, on a real CUDA device (tests marked gpu, skipped without one), and, where no
GPU exists, on a stand-in cuda:0 whose backend is NumPy dressed as CuPy (fakegpu.py) so that the device-side code
paths run everywhere. ``dev`` is the same device, also made the default device for the test.
"""
import pytest

import gpk_array

from .fakegpu import fake_cuda_device

_HAS_GPU = any(d.kind == "cuda" for d in gpk_array.__array_namespace_info__().devices())


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: runs on a CUDA device (skipped without one)")


_PARAMS = [pytest.param("cpu", id="cpu"),
           pytest.param("cuda:0", id="cuda", marks=[pytest.mark.gpu,
                                                    pytest.mark.skipif(not _HAS_GPU, reason="no CUDA GPU")])]
if not _HAS_GPU:
    _PARAMS.append(pytest.param("fake", id="fakecuda"))


@pytest.fixture(params=_PARAMS)
def device(request):
    if request.param == "fake":
        with fake_cuda_device() as d:
            yield d
        return
    yield gpk_array.Device(request.param)


@pytest.fixture
def dev(device):
    """The device under test, also made the default device for the test's duration."""
    old = gpk_array._device._default
    gpk_array.set_default_device(device)
    yield device
    gpk_array._device._default = old
