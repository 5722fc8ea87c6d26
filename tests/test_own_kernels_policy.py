"""Which reductions gpk_array/_gpu.py sends to our kernels (the policy alone, no GPU needed): REDUCE_ROUTE's table
(by dtype class, op, axis kind and size), everything in the checking mode (OWN_KERNELS_MIN = 0)."""
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


SHAPES = (((1 << 24,), None), ((1 << 14, 1 << 10), (1,)), ((1 << 10, 1 << 14), (0,)))  # full, rows, cols


@pytest.mark.parametrize("dtype,op,routed", [
    (np.float64, "sum", (False, True, True)), (np.int32, "sum", (True, True, True)),
    (np.float32, "var", (True,) * 3), (np.float64, "std", (True,) * 3), (np.float16, "sum", (True,) * 3),
    (ml_dtypes.bfloat16, "mean", (True,) * 3), (np.float16, "max", (False,) * 3),
    (ml_dtypes.bfloat16, "min", (True, True, False)), (np.int16, "prod", (False,) * 3),
    (np.float32, "prod", (False,) * 3),
    (np.float32, "argmax", (True,) * 3), (np.float16, "argmin", (True, True, False)),
    (np.float64, "max", (False, True, True)), (np.bool_, "sum", (True, True, True))])
def test_reduction_policy(calls, monkeypatch, dtype, op, routed):
    """At 2^24 elements (over all elements, rows, columns): REDUCE_ROUTE's answer; everything in the checking mode."""
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    for (shape, axes), want in zip(SHAPES, routed):
        assert (_gpu.reduce(op, _x(dtype, shape), axes, False) == "r") == want, (shape, axes)
        monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)  # the checking mode: every op our kernels cover
        assert _gpu.reduce(op, _x(dtype, shape), axes, False) == "r"
        monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)


@pytest.mark.parametrize("dtype,op,n", [(np.float16, "sum", 1), (np.float32, "mean", 1 << 10),
                                        (np.float64, "var", 7), (np.float32, "argmax", 1 << 10),
                                        (ml_dtypes.bfloat16, "max", 1 << 10)])
def test_small_arrays_routed(calls, monkeypatch, dtype, op, n):
    """Routes whose least size is 0 take every size: REDUCE_ROUTE's sizes are absolute, not on top of
    OWN_KERNELS_MIN (which gates the elementwise kernels alone)."""
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    assert _gpu.reduce_floor(op, np.dtype(dtype)) == 0
    assert _gpu.reduce(op, _x(dtype, (n,)), None, False) == "r"


def test_floor_is_the_least_over_axis_kinds(monkeypatch):
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    assert _gpu.reduce_floor("sum", np.dtype(np.float32)) == _gpu.REDUCE_F32_AXIS_MIN
    assert _gpu.reduce_floor("prod", np.dtype(np.float32)) is None
    assert _gpu.reduce_floor("sum", np.dtype(np.complex64)) is None  # no kernel
    monkeypatch.setitem(_gpu.REDUCE_ROUTE, ("f32", "sum", "cols"), 5)  # a change of the table is seen at once
    assert _gpu.reduce_floor("sum", np.dtype(np.float32)) == 5
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)
    assert _gpu.reduce_floor("prod", np.dtype(np.float32)) == 0


@pytest.mark.parametrize("kind,shape,axes", [("full", (1 << 26,), None), ("rows", (1 << 16, 1 << 10), (1,)),
                                             ("cols", (1 << 10, 1 << 16), (0,))])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_float32_by_axis_kind_and_size(calls, monkeypatch, kind, shape, axes, op):
    """float32 follows REDUCE_ROUTE's entry for its op and axis kind: routed from that size on, never where it is
    None."""
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    key = ("f32", op, kind) if ("f32", op, kind) in _gpu.REDUCE_ROUTE else ("f32", "*", kind)
    for t in (None, 1 << 22, 1 << 27):
        monkeypatch.setitem(_gpu.REDUCE_ROUTE, key, t)
        assert (_gpu.reduce(op, _x(np.float32, shape), axes, False) == "r") == (t is not None and (1 << 26) >= t)


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


def test_off_switch(calls, monkeypatch):
    """OWN_REDUCTIONS = False (GPK_OWN_REDUCTIONS=0): every reduction to CuPy; the checking mode still overrides."""
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 1 << 22)
    assert _gpu.reduce("var", _x(np.float32, (1 << 10,)), None, False) == "r"
    monkeypatch.setattr(_gpu, "OWN_REDUCTIONS", False)
    assert _gpu.reduce_floor("var", np.dtype(np.float32)) is None
    for op, dtype in (("var", np.float32), ("sum", np.float16), ("argmax", np.float32), ("sum", np.float32)):
        assert _gpu.reduce(op, _x(dtype, (1 << 26,)), None, False) is None
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)
    assert _gpu.reduce("var", _x(np.float32, (1 << 10,)), None, False) == "r"
