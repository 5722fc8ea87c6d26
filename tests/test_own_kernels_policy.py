"""Which reductions gpk_array/_gpu.py sends to our kernels (the policy alone, no GPU needed): REDUCE_ROUTE's table
(var/std always, float16/bfloat16 always, float32 by axis kind and size), everything in the checking mode
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


def _x(dtype, shape=(1 << 24,), c=True):
    strides = np.empty(0, dtype).reshape(0, *shape[1:]).strides if c else tuple(
        np.dtype(dtype).itemsize * int(np.prod(shape[:i])) for i in range(len(shape)))
    return types.SimpleNamespace(dtype=np.dtype(dtype), shape=shape, size=int(np.prod(shape)), strides=strides,
                                 flags=types.SimpleNamespace(c_contiguous=c))


@pytest.mark.parametrize("dtype,op,routed", [
    (np.float64, "sum", False), (np.int32, "sum", False), (np.float32, "var", True), (np.float64, "std", True),
    (np.float16, "sum", True), (ml_dtypes.bfloat16, "mean", True), (np.float16, "max", True), (np.int16, "sum", False),
    (np.float32, "prod", False)])
def test_reduction_policy(calls, monkeypatch, dtype, op, routed):
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    for shape, axes in (((1 << 24,), None), ((1 << 14, 1 << 10), (1,)), ((1 << 10, 1 << 14), (0,))):
        assert (_gpu.reduce(op, _x(dtype, shape), axes, False) == "r") == routed
        monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)  # the checking mode: every op our kernels cover
        assert _gpu.reduce(op, _x(dtype, shape), axes, False) == "r"
        monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)


@pytest.mark.parametrize("kind,shape,axes", [("full", (1 << 26,), None), ("rows", (1 << 16, 1 << 10), (1,)),
                                             ("cols", (1 << 10, 1 << 16), (0,))])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_float32_by_axis_kind_and_size(calls, monkeypatch, kind, shape, axes, op):
    """float32 follows REDUCE_ROUTE's entry for its axis kind: routed from that size on, never where it is None."""
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    least = _gpu.REDUCE_ROUTE[("f32", "*", kind)]
    for t in (None, 1 << 22, 1 << 27):
        monkeypatch.setitem(_gpu.REDUCE_ROUTE, ("f32", "*", kind), t)
        assert (_gpu.reduce(op, _x(np.float32, shape), axes, False) == "r") == (t is not None and (1 << 26) >= t)
    monkeypatch.setitem(_gpu.REDUCE_ROUTE, ("f32", "*", kind), least)


def test_axis_kinds():
    k = _gpu.reduce_axis_kind
    assert k((4, 5, 6), None) == "full" and k((1, 5, 1), (1,)) == "full"
    assert k((4, 5, 6), (2,)) == "rows" and k((4, 5, 6), (1, 2)) == "rows" and k((4, 5, 6), (-1,)) == "rows"
    assert k((4, 5, 1), (1,)) == "rows"
    assert k((4, 5, 6), (0,)) == "cols" and k((4, 5, 6), (0, 2)) == "cols"
    assert k((4, 5, 6), (2,), c_contiguous=False) == "cols"


def test_float32_mean_always_ours(calls, monkeypatch):
    """float32 mean goes to our kernels at every routed size and axis kind (CuPy's is a sum then a division)."""
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    for shape, axes in (((1 << 22,), None), ((1 << 12, 1 << 10), (1,)), ((1 << 10, 1 << 12), (0,))):
        assert _gpu.reduce("mean", _x(np.float32, shape), axes, False) == "r"
