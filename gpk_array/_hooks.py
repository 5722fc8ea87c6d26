"""Process-wide hooks the core calls; the scheduler (gpk_array.sched) installs them.

``alloc_hook``: ``None`` or a callable ``hook(data, device) -> None`` called with every backing array
(``numpy.ndarray`` or ``cupy.ndarray``) that the core wraps in a new ``Array``. The hook may raise
``gpk_array.OutOfMemoryError`` to refuse it. Views reach it too: the hook decides what owns memory (and whether
that memory was allocated where it counts: gpk_array.sched charges a CPU buffer only when NumPy allocated it while
a scheduler context was current).

``prealloc_hook``: ``None`` or a callable ``hook(nbytes, device) -> None`` that the creation functions call with
the size of the buffer they are about to allocate (zeros, ones, empty, full, the ``*_like`` functions, arange,
linspace, eye, copies made by asarray/array/astype/copy, random draws; on the CPU device also the results of
element-wise functions and operators and of matmul), before allocating it, so that a request
the scheduler would refuse raises ``gpk_array.OutOfMemoryError`` without the memory ever being taken. The
scheduler installs it only while one of its CPU contexts is entered somewhere in the process: otherwise a creation
pays one global ``None`` check (call sites compute the size only when the hook is set; see :func:`nbytes`).
"""
import numpy as _np

alloc_hook = None
prealloc_hook = None


def nbytes(shape, itemsize):
    """Bytes of a C array of ``shape`` (a tuple of non-negative ints, or one int) with ``itemsize``-byte elements."""
    n = itemsize
    if shape.__class__ is int:
        return n * shape
    for s in shape:
        n *= s
    return n


def precheck(shape, dtype, device):
    """Call ``prealloc_hook`` (when set) for a result of ``shape`` (a sequence of ints, or one int) and ``dtype``
    (anything ``numpy.dtype`` takes, or an int: the bytes per element) on ``device``; shapes and dtypes it cannot
    read are left to the allocation itself."""
    hook = prealloc_hook
    if hook is None:
        return
    try:
        dims = (shape,) if shape.__class__ is int else tuple(int(s) for s in shape)
        size = nbytes(dims, dtype if dtype.__class__ is int else _np.dtype(dtype).itemsize)
    except (TypeError, ValueError, OverflowError):
        return
    if min(dims, default=0) >= 0:
        hook(size, device)
