"""The public entry points of the jit layer, bound by ``import gpk_array``: they import nothing until called (the
import-time budget, tests/test_import_time.py), then hand over to ``kernel``, ``cufile`` and ``cache``."""


def jit(source, name, *, options=(), name_expressions=None):
    """Compile the CUDA C++ kernel ``name`` of ``source`` and return a launchable kernel (CUDA devices only).

    ``name`` is an ``extern "C" __global__`` function of ``source``, or a name expression of a template kernel
    (``"scale<float, 2>"``); ``name_expressions`` lists more instantiations to compile into the same module.
    ``options`` are compiler options (``("-DN=4", "--use_fast_math")``). Compiling happens on the first launch (or
    ``k.compile()``), through gpk_array's compile cache (NVRTC, else nvcc; ``gpk_array.kernel_cache_info()``).

    Launch: ``k(grid, block, args, shared_mem=0, stream=None)``, or ``k[total, block](*args)`` for
    ``ceil(total / block)`` blocks. Arguments: gpk_array arrays on a CUDA device, CuPy arrays, any object with
    ``__cuda_array_interface__`` or ``__dlpack__`` (CUDA memory), NumPy scalars, Python ints/floats/bools. Where the
    kernel's parameter list can be read from the source, each argument is checked against it (a wrong count or a
    wrong type is a TypeError naming the parameter; a value out of an int parameter's range an OverflowError) and
    Python scalars are converted to the parameter's C type. Arrays on the CPU device raise TypeError. Grid, block
    and shared-memory sizes outside CUDA's or the device's limits raise ValueError before the launch. A source that
    does not compile raises ``gpk_array.KernelCompileError`` with the compiler log and the offending line.

    >>> k = gpk_array.jit(r'''
    ... extern "C" __global__ void scale(float* x, float a, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] *= a;
    ... }''', "scale")
    >>> k[x.size, 256](x, 0.5, x.size)            # doctest: +SKIP
    """
    from .kernel import jit as _jit
    return _jit(source, name, options=options, name_expressions=name_expressions)


def load_cu(path, *, options=(), include_dirs=()):
    """Load the ``.cu`` file at ``path`` as a module: every ``extern "C" __global__`` function is an attribute (a
    kernel as ``gpk_array.jit`` returns), every plain struct a NumPy structured dtype with C layout. The file
    compiles once (one cubin, on the first launch of any of its kernels) with ``options``; ``#include "..."`` is
    searched beside the file, then in ``include_dirs``. A ``.pyi`` stub is written beside the file where the
    directory is writable. Calling ``load_cu`` again returns the same module while the file and its includes are
    unchanged (by content hash) and updates it in place when they changed. ``import gpk_array.cuimport`` makes
    ``import name`` find ``name.cu`` on ``sys.path`` the same way."""
    from .cufile import load_cu as _load
    return _load(path, options=options, include_dirs=include_dirs)


def kernel_cache_info():
    """This process's use of the kernel compile cache: ``hits`` (cubins found on disk), ``misses`` (compiled),
    ``memory_hits``, ``compiles`` (per miss: ``identity``, ``key``, ``arch``, ``options``, ``reason``, ``seconds``;
    ``reason`` is "new source", "source changed", "options changed", "arch changed", "toolkit changed" or
    "not in cache"), ``reasons`` (counts) and ``dir`` (``GPK_CACHE_DIR`` or ``~/.cache/gpk_array/kernels``)."""
    from .cache import cache_info
    return cache_info()
