"""Compile generated CUDA C++ and load it: the one place the Python-kernel layer touches the compiler and the
driver (so that it can be pointed at another compile cache without touching the rest).

``compile_and_load(source, name)`` compiles ``source`` for the current device (NVRTC, else nvcc, through
``gpk_array._kernels.loader``, whose content-hashed disk cache under ``GPK_CACHE_DIR`` it shares), loads the cubin
with CuPy and returns the ``extern "C"`` kernel ``name`` as a ``cupy.RawKernel``. ``compile_only(source, arch)``
compiles to a cubin without a GPU (the CI checks).
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_modules: dict = {}   # (source hash key, device) -> RawModule

# the options every generated kernel is compiled with (the loader adds -std=c++17)
OPTIONS = ()


def _include_dirs(source):
    from .._kernels import loader
    if "cuda/std/" in source:
        d = loader.cccl_include_dir()
        return (d,) if d else ()
    return ()


def _compile(source, arch, name):
    """NVRTC (or the one GPK_KERNEL_BACKEND names), then nvcc where NVRTC fails and nvcc is installed."""
    from .. import _config
    from .._kernels import loader
    from .._kernels.errors import KernelCompileError
    inc = _include_dirs(source)
    try:
        return loader.compile_cubin(source, OPTIONS, arch, name=f"{name}.cu", include_dirs=inc)
    except KernelCompileError:
        if _config.is_set("GPK_KERNEL_BACKEND") or loader.default_backend() == "nvcc" or not loader.nvcc_path():
            raise
        return loader.compile_cubin(source, OPTIONS, arch, backend="nvcc", name=f"{name}.cu", include_dirs=inc)


def compile_only(source: str, arch="90a", backend=None) -> bytes:
    """The cubin of ``source`` for ``sm_<arch>``; no GPU needed. KernelCompileError with the log on failure."""
    from .._kernels import loader
    return loader.compile_cubin(source, OPTIONS, arch, backend=backend, name="gpk_pykernel.cu",
                                include_dirs=_include_dirs(source))


def load_module(source: str, name: str = "gpk_pykernel"):
    """The ``cupy.RawModule`` of ``source`` on the current device (compiled on a disk-cache miss)."""
    from .._kernels import loader
    import cupy
    dev = loader.current_device_id()
    arch = loader.device_arch(dev)
    key = loader.cache_key(source, OPTIONS, arch)
    mkey = (key, dev)
    mod = _modules.get(mkey)
    if mod is not None:
        return mod
    with _lock:
        mod = _modules.get(mkey)
        if mod is None:
            path = loader.cache_path(key, arch)
            if not path.is_file():
                loader.write_atomic(path, _compile(source, arch, name))
            mod = _modules[mkey] = cupy.RawModule(path=str(path))
    return mod


def compile_and_load(source: str, name: str):
    """The kernel ``name`` of ``source``, compiled for the current device (disk-cached) and loaded."""
    return load_module(source, name).get_function(name)


def get_global(source: str, symbol: str, device: int):
    """The ``__device__`` variable ``symbol`` of the loaded ``source`` as a CuPy int64 array (debug records)."""
    import cupy
    mod = load_module(source)
    ptr = mod.get_global(symbol)
    return cupy.ndarray((5,), dtype=cupy.int64, memptr=ptr)
