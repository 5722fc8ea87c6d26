"""Exceptions raised by the scheduler.

``AdmissionError`` and ``ContextDestroyedError`` live here (the core re-exports them).
``OutOfMemoryError`` belongs to the core (``gpk_array._errors``); :func:`out_of_memory_error` imports it on first
use and falls back to a local class of the same name where that import fails.
"""

__all__ = ["AdmissionError", "ContextDestroyedError", "out_of_memory_error"]


class AdmissionError(RuntimeError):
    """A context or partition could not be admitted: its reservation does not fit the device."""


class ContextDestroyedError(RuntimeError):
    """The context was destroyed; it can no longer be entered, launch work or be awaited."""


class _FallbackOutOfMemoryError(MemoryError):
    """Stand-in for ``gpk_array.OutOfMemoryError`` until the core defines it."""


_FallbackOutOfMemoryError.__name__ = "OutOfMemoryError"
_FallbackOutOfMemoryError.__qualname__ = "OutOfMemoryError"

_resolved = None


def out_of_memory_error():
    """The class to raise for a refused allocation: ``gpk_array._errors.OutOfMemoryError`` when it exists."""
    global _resolved
    if _resolved is not None:
        return _resolved
    try:
        from gpk_array._errors import OutOfMemoryError as cls  # noqa: PLC0415 (lazy: on first use, not at import)
    except ImportError:
        return _FallbackOutOfMemoryError
    _resolved = cls
    return cls
