"""Precision of float32 matrix products on CUDA devices (TF32 TensorCores or full FP32).

"high" lets float32 GEMMs use TF32 (10-bit mantissa inputs, float32 accumulation, about 8x the FP32 rate on an
H200); "highest" keeps full FP32. The default is "highest", as in NumPy, CuPy and PyTorch: code written for NumPy
or the array API expects float32 products to float32 accuracy, and TF32 changes results in the fourth digit
without a word. ``GPK_TF32=1`` makes "high" the default (``GPK_NO_TF32=1`` keeps "highest" whatever else is set).
The CPU device always computes float32 products in full precision. The names and meanings follow
torch.set_float32_matmul_precision.
"""
import contextlib
import contextvars

from . import _config

PRECISIONS = ("highest", "high")
_state = {"float32": "high" if _config.get("GPK_TF32") and not _config.get("GPK_NO_TF32")
          else "highest"}


_override = contextvars.ContextVar("gpk_float32_matmul_precision", default=None)


def set_float32_matmul_precision(precision):
    """"high": float32 GEMMs may use TF32 on CUDA; "highest": full FP32. Process-wide (a
    ``float32_matmul_precision`` block in force in a thread or task still takes precedence there)."""
    _check(precision)
    _state["float32"] = precision


def get_float32_matmul_precision():
    """The setting in force here: the innermost ``float32_matmul_precision`` block of this thread or task, else the
    process-wide one."""
    o = _override.get()
    return _state["float32"] if o is None else o


@contextlib.contextmanager
def float32_matmul_precision(precision):
    """``with gpk_array.float32_matmul_precision("highest"): ...``: the setting for a block, in this thread or
    asyncio task only (a model forcing full FP32 does not change what another thread computes)."""
    _check(precision)
    token = _override.set(precision)
    try:
        yield
    finally:
        _override.reset(token)


def _check(precision):
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")


def tf32():
    """Whether float32 GEMMs may use TF32 here and now."""
    return get_float32_matmul_precision() == "high"
