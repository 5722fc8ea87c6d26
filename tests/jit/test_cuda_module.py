"""gpk_array.cuda without a GPU: importing it needs none; using it raises gpk_array.DeviceError."""
import os
import subprocess
import sys

import pytest

import gpk_array as gp

from ..conftest import HAS_GPU


def test_import_needs_no_gpu_and_loads_no_cupy():
    code = ("import sys, gpk_array.cuda as c, gpk_array.cuimport; "
            "assert 'cupy' not in sys.modules, 'cupy imported'; print(sorted(c.__all__)[:2])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "GPK_DEVICE": "cpu"})
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
@pytest.mark.parametrize("make", [lambda c: c.Device(0), lambda c: c.Stream(), lambda c: c.Event(),
                                  lambda c: c.malloc(16), lambda c: c.pinned(4), lambda c: c.current_stream(),
                                  lambda c: c.graph().__enter__()])
def test_use_without_gpu_is_a_device_error(make):
    with pytest.raises(gp.DeviceError, match="gpk_array.cuda"):
        make(gp.cuda)
    assert gp.cuda.device_count() == 0


def test_bad_arguments_are_checked_before_the_device():
    with pytest.raises(ValueError, match="non-negative int"):
        gp.cuda.malloc(-1)
    with pytest.raises(FileNotFoundError):
        gp.cuda.Module("/nonexistent/file.cubin")
    with pytest.raises(ValueError, match="empty image"):
        gp.cuda.Module(b"")
