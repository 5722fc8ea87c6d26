"""Which reductions gpk_array/_gpu.py sends to our kernels (the policy alone, no GPU needed): var/std always, the
others for float16/bfloat16 only (where ours measured faster on the H200), everything in the checking mode
(OWN_KERNELS_MIN = 0)."""
import types

import ml_dtypes
import numpy as np
import pytest

from gpk_array import _gpu


@pytest.fixture
def calls(monkeypatch):
    seen = []
    monkeypatch.setattr(_gpu._red, "reduce", lambda op, x, **kw: seen.append((op, np.dtype(x.dtype).name)) or "r")
    return seen


@pytest.mark.parametrize("dtype,op,routed", [
    (np.float32, "sum", False), (np.float32, "max", False), (np.float32, "mean", False), (np.float64, "sum", False),
    (np.int32, "sum", False), (np.float32, "var", True), (np.float64, "std", True), (np.float16, "sum", True),
    (ml_dtypes.bfloat16, "mean", True), (np.float16, "max", True), (np.int16, "sum", False)])
def test_reduction_policy(calls, monkeypatch, dtype, op, routed):
    x = types.SimpleNamespace(dtype=np.dtype(dtype))
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    assert (_gpu.reduce(op, x, None, False) == "r") == routed
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)  # the checking mode: every op our kernels cover
    assert _gpu.reduce(op, x, None, False) == "r"
