"""Errors raised by the kernel layer (one class for the whole library: ``gpk_array.KernelCompileError``, defined
in gpk_array/_errors.py so that ``import gpk_array`` exports it without loading the kernel layer)."""

from __future__ import annotations

from .._errors import KernelCompileError, _rebuild_compile_error as _rebuild  # noqa: F401

__all__ = ["KernelCompileError"]
