"""Process-wide hooks the core calls; the scheduler (gpk_array.sched) installs them.

``alloc_hook``: ``None`` or a callable ``hook(data, device) -> None`` called with every backing array
(``numpy.ndarray`` or ``cupy.ndarray``) that the core wraps in a new ``Array``. The hook may raise
``gpk_array.OutOfMemoryError`` to refuse it. Views reach it too: the hook decides what owns memory.
"""

alloc_hook = None
