"""gpk_array's CUDA kernel layer: a loader with a disk cache, elementwise and reduction kernels.

Functions here take and return ``cupy.ndarray``; importing this package never touches the GPU.

- ``loader.get_function(cu_file, name, options=())``: a ``cupy.RawKernel`` from ``cuda/<cu_file>``.
- ``elementwise.binary(op, a, b, out=None)``, ``elementwise.unary(op, x, out=None)``.
- ``reduction.reduce(op, x, axis=None, keepdims=False, ddof=0)``: sum, prod, max, min, mean, var, std,
  argmax, argmin (and any/all on bool).
- ``prebuild(arch=None)``: compile every kernel module into the disk cache.
- ``KernelCompileError``: raised with the compiler log when a kernel does not compile.
"""

from .errors import KernelCompileError

__all__ = ["KernelCompileError", "prebuild", "get_function"]


def get_function(cu_file, name, options=()):
    from .loader import get_function as _get
    return _get(cu_file, name, options)


def prebuild(arch=None, **kwargs):
    """Compile every kernel module for ``arch`` (default: the local GPU) into the disk cache;
    returns one dict per module (file, options, arch, path, cached, seconds). Keyword arguments:
    jobs, verbose, force, variants."""
    from .prebuild import prebuild as _prebuild
    return _prebuild(arch, **kwargs)
