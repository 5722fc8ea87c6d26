"""Precision of float32 matrix products on CUDA devices (TF32 TensorCores or full FP32).

"high" lets float32 GEMMs use TF32 (10-bit mantissa inputs, float32 accumulation, about 8x the FP32 rate on an
H200); "highest" keeps full FP32. The default is "highest", as in NumPy, CuPy and PyTorch: code written for NumPy
or the array API expects float32 products to float32 accuracy, and TF32 changes results in the fourth digit
without a word. ``GPK_TF32=1`` makes "high" the default (``GPK_NO_TF32=1`` keeps "highest" whatever else is set).
The CPU device always computes float32 products in full precision. The names and meanings follow
torch.set_float32_matmul_precision.
"""
import contextlib
import os

PRECISIONS = ("highest", "high")
_state = {"float32": "high" if os.environ.get("GPK_TF32", "") == "1" and os.environ.get("GPK_NO_TF32", "") != "1"
          else "highest"}


def set_float32_matmul_precision(precision):
    """"high": float32 GEMMs may use TF32 on CUDA; "highest": full FP32."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    _state["float32"] = precision


def get_float32_matmul_precision():
    return _state["float32"]


@contextlib.contextmanager
def float32_matmul_precision(precision):
    """``with gpk_array.float32_matmul_precision("highest"): ...``: the setting for a block, then the old one."""
    old = _state["float32"]
    set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        _state["float32"] = old


def tf32():
    """Whether float32 GEMMs may use TF32 now."""
    return _state["float32"] == "high"
