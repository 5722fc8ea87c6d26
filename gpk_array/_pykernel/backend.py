"""Compile generated CUDA C++ and load it: the one place the Python-kernel layer touches the compiler and the
driver (so that it can be pointed at another compile cache without touching the rest).

``compile_and_load(source, name, identity)`` compiles ``source`` for the current device through the run-time
compile cache ``gpk_array._jit.cache`` (NVRTC, else nvcc; content-hashed cubins under ``GPK_CACHE_DIR``, a lock
across processes, each compile's reason in ``gpk_array.kernel.cache_info()["disk"]``), loads the cubin with CuPy
and returns the ``extern "C"`` kernel ``name`` as a ``cupy.RawKernel``. ``compile_only(source, arch)`` compiles
to a cubin without a GPU (the CI checks).
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_modules: dict = {}   # (source, device) -> RawModule

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


def _compile_entry(source, arch, name, identity):
    """The compile cache's entry (``gpk_array._jit.cache``: lock across processes, why it compiled) for
    ``source``; NVRTC first, nvcc where NVRTC fails and nvcc is installed (both give the same key)."""
    from .. import _config
    from .._jit import cache
    from .._kernels import loader
    from .._kernels.errors import KernelCompileError
    kw = dict(name=f"{name}.cu", options=OPTIONS, arch=arch, identity=identity or name,
              include_dirs=_include_dirs(source))
    try:
        return cache.compile(source, **kw)
    except KernelCompileError:
        if _config.is_set("GPK_KERNEL_BACKEND") or loader.default_backend() == "nvcc" or not loader.nvcc_path():
            raise
        return cache.compile(source, backend="nvcc", **kw)


def load_module(source: str, name: str = "gpk_pykernel", identity: str | None = None):
    """The ``cupy.RawModule`` of ``source`` on the current device (compiled on a disk-cache miss, outside any
    process-wide lock, so that warmup's threads compile in parallel)."""
    from .._kernels import loader
    import cupy
    dev = loader.current_device_id()
    arch = loader.device_arch(dev)
    mkey = (source, dev)
    mod = _modules.get(mkey)
    if mod is not None:
        return mod
    entry = _compile_entry(source, arch, name, identity)
    with _lock:
        mod = _modules.get(mkey)
        if mod is None:
            mod = _modules[mkey] = cupy.RawModule(path=str(entry.path))
    return mod


def compile_and_load(source: str, name: str, identity: str | None = None):
    """The kernel ``name`` of ``source``, compiled for the current device (disk-cached) and loaded;
    ``identity`` names it in the compile cache's "why it compiled" records."""
    return load_module(source, name, identity).get_function(name)


def get_global(source: str, symbol: str, device: int):
    """The ``__device__`` variable ``symbol`` of the loaded ``source`` as a CuPy int64 array (debug records)."""
    import cupy
    mod = load_module(source)
    ptr = mod.get_global(symbol)
    return cupy.ndarray((5,), dtype=cupy.int64, memptr=ptr)
