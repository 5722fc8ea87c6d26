"""Precision of float32 matrix products on CUDA devices (TF32 TensorCores or full FP32).

"high" (the default) lets float32 GEMMs use TF32 (10-bit mantissa inputs, float32 accumulation), as cuBLAS and
PyTorch call it; "highest" keeps full FP32. ``GPK_NO_TF32=1`` makes "highest" the default. The CPU device always
computes float32 products in full precision. The names and meanings follow torch.set_float32_matmul_precision.
"""
import contextlib
import os

PRECISIONS = ("highest", "high")
_state = {"float32": "highest" if os.environ.get("GPK_NO_TF32", "") == "1" else "high"}


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
