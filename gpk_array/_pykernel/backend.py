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
_loaded: dict = {}   # (source hash key, name, device) -> RawKernel

# the options every generated kernel is compiled with (the loader adds -std=c++17)
OPTIONS = ()


def _include_dirs(source):
    from .._kernels import loader
    if "cuda/std/" in source:
        d = loader.cccl_include_dir()
        return (d,) if d else ()
    return ()


def compile_only(source: str, arch="90a", backend=None) -> bytes:
    """The cubin of ``source`` for ``sm_<arch>``; no GPU needed. KernelCompileError with the log on failure."""
    from .._kernels import loader
    return loader.compile_cubin(source, OPTIONS, arch, backend=backend, name="gpk_pykernel.cu",
                                include_dirs=_include_dirs(source))


def compile_and_load(source: str, name: str):
    """The kernel ``name`` of ``source``, compiled for the current device (disk-cached) and loaded."""
    from .._kernels import loader
    import cupy
    dev = loader.current_device_id()
    arch = loader.device_arch(dev)
    key = loader.cache_key(source, OPTIONS, arch)
    fkey = (key, name, dev)
    fn = _loaded.get(fkey)
    if fn is not None:
        return fn
    with _lock:
        fn = _loaded.get(fkey)
        if fn is None:
            path = loader.cache_path(key, arch)
            if not path.is_file():
                cubin = loader.compile_cubin(source, OPTIONS, arch, name=f"{name}.cu",
                                             include_dirs=_include_dirs(source))
                loader.write_atomic(path, cubin)
            fn = cupy.RawModule(path=str(path)).get_function(name)
            _loaded[fkey] = fn
    return fn
