"""Fixtures of the jit tests: a private compile-cache directory per test and a clean in-process cache state."""
import pytest

from gpk_array._kernels import loader


def have_compiler():
    """Whether a CUDA compiler (nvcc, or NVRTC through CuPy) is usable here."""
    return bool(loader.nvcc_path()) or loader.nvrtc_available()


requires_compiler = pytest.mark.skipif(not have_compiler(), reason="neither nvcc nor NVRTC is available")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """GPK_CACHE_DIR pointed at an empty directory, and the jit cache's counters reset."""
    from gpk_array._jit import cache
    d = tmp_path / "kcache"
    monkeypatch.setenv("GPK_CACHE_DIR", str(d))
    cache.cache_clear()
    yield d
    cache.cache_clear()
