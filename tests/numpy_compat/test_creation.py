"""Array creation with NumPy's signatures against NumPy (positional dtype, order, ndmin, retstep, ...)."""
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpk_array as gp

from .helpers import assert_match, compare

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
DTYPES = [None, int, float, bool, complex, "float32", "int32", "uint8", numpy.float32, numpy.int16, gp.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_positional_dtype(name, dtype, dev):
    got = getattr(gp, name)((2, 3), dtype)
    want = getattr(numpy, name)((2, 3), dtype)
    assert got.shape == want.shape and got.dtype == want.dtype
    if name != "empty":
        assert_match(got, want, dev)
    assert_match(getattr(gp, name)(4, dtype=dtype).shape, getattr(numpy, name)(4, dtype=dtype).shape)


@pytest.mark.parametrize("dtype", DTYPES)
def test_full(dtype, dev):
    compare("full", (2, 2), 3, dtype, device=dev)
    compare("full", (3,), 2.5, device=dev)
    compare("full", (2, 3), [1.0, 2.0, 3.0], device=dev)
    compare("full", 2, numpy.float32(1.5), device=dev)
    compare("full", (2, 2), True, device=dev)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like(name, dev):
    a = numpy.arange(6, dtype=numpy.int32).reshape(2, 3)
    g = gp.asarray(a)
    for args in [(), (float,), ("float32",)]:
        got = getattr(gp, name)(g, *args)
        want = getattr(numpy, name)(a, *args)
        assert got.shape == want.shape and got.dtype == want.dtype and got.device == dev
        if name != "empty_like":
            assert_match(got, want)
    got = getattr(gp, name)(g, shape=(4,))
    assert got.shape == (4,)
    assert_match(gp.full_like(g, 7.9), numpy.full_like(a, 7.9))
    assert_match(gp.full_like(g, 0.5, float), numpy.full_like(a, 0.5, float))
    assert_match(gp.zeros_like([[1, 2]]), numpy.zeros_like([[1, 2]]))


def test_array(dev):
    for obj in [[1, 2, 3], [[1.0, 2.0], [3.0, 4.0]], 5, 2.5, [True, False], (1, 2.5), [1, 2 + 1j], range(5),
                numpy.arange(4, dtype=numpy.uint16)]:
        assert_match(gp.array(obj), numpy.array(obj))
    assert_match(gp.array([1, 2, 3], float), numpy.array([1, 2, 3], float))
    assert_match(gp.array([1, 2, 3], dtype="float32"), numpy.array([1, 2, 3], dtype="float32"))
    assert_match(gp.array([1, 2], ndmin=3), numpy.array([1, 2], ndmin=3))
    a = gp.asarray([1.0, 2.0])
    b = gp.array(a)
    b[0] = 9.0
    assert float(a[0]) == 1.0
    c = gp.array(a, copy=None)
    assert c is a or float(c[0]) == 1.0
    parts = [gp.asarray([1.0, 2.0]), gp.asarray([3.0, 4.0])]
    assert_match(gp.array(parts), numpy.array([[1.0, 2.0], [3.0, 4.0]]))
    assert gp.array(parts).device == dev
    assert_match(gp.array([gp.sum(parts[0]), 5.0]), numpy.array([3.0, 5.0]))
    # strings: a host-only dtype, on the CPU device (gpk_array/_hostdata.py; tests/numpy_compat/test_hostdtypes.py)
    s = gp.array(["a", "b"])
    assert s.device == gp.Device("cpu")
    assert_match(s, numpy.array(["a", "b"]))
    with pytest.raises(TypeError):
        gp.array([1, None])


def test_asarray(dev):
    assert_match(gp.asarray([1, 2], float), numpy.asarray([1, 2], float))
    assert_match(gp.asarray(numpy.arange(3), "int8"), numpy.asarray(numpy.arange(3), "int8"))
    g = gp.asarray([1, 2])
    assert gp.asarray(g) is g
    assert_match(gp.asanyarray([1.5]), numpy.asanyarray([1.5]))
    assert_match(gp.ascontiguousarray(gp.asarray([[1, 2], [3, 4]]).T), numpy.ascontiguousarray([[1, 3], [2, 4]]))
    assert_match(gp.copy(g), numpy.copy([1, 2]))


@SETTINGS
@given(start=st.integers(-20, 20), stop=st.integers(-20, 40), step=st.integers(1, 5),
       dtype=st.sampled_from([None, float, "int32", numpy.float32, int]))
def test_arange(start, stop, step, dtype):
    assert_match(gp.arange(start, stop, step, dtype, device="cpu"), numpy.arange(start, stop, step, dtype))
    assert_match(gp.arange(stop, device="cpu"), numpy.arange(stop))


def test_arange_float_and_scalars(dev):
    for args in [(0, 1, 0.1), (1.5,), (0.5, 3.7), (-1, 1, 0.25), (10, 0, -3)]:
        assert_match(gp.arange(*args), numpy.arange(*args))
    n = gp.sum(gp.asarray([1, 2, 3]))
    assert_match(gp.arange(n), numpy.arange(6))
    assert_match(gp.arange(numpy.int32(4)), numpy.arange(numpy.int32(4)))
    assert_match(gp.arange(5, dtype=float), numpy.arange(5, dtype=float))


@SETTINGS
@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), num=st.integers(0, 12), endpoint=st.booleans(),
       dtype=st.sampled_from([None, "float32", float]))
def test_linspace(start, stop, num, endpoint, dtype):
    compare("linspace", start, stop, num, endpoint, dtype=dtype, device="cpu")


def test_linspace_variants(dev):
    compare("linspace", 0, 1, device=dev)
    got, step = gp.linspace(0, 2, 5, retstep=True)
    want, wstep = numpy.linspace(0, 2, 5, retstep=True)
    assert_match(got, want)
    assert step == wstep
    compare("linspace", -3, 7, 6, dtype=int, device=dev)
    compare("linspace", numpy.array([0.0, 1.0]), numpy.array([1.0, 5.0]), 4, device=dev)
    compare("linspace", numpy.array([0.0, 1.0]), 2.0, 3, axis=1, device=dev)
    compare("logspace", 0, 3, 4, device=dev)
    compare("logspace", 0, 3, 4, base=2.0, device=dev)
    compare("logspace", 1, 2, 5, endpoint=False, device=dev)
    compare("geomspace", 1, 1000, 4, device=dev)
    compare("geomspace", -1, -1000, 5, device=dev)
    compare("geomspace", 2, 0.5, 7, device=dev)


def test_eye_identity(dev):
    compare("eye", 3, device=dev)
    compare("eye", 3, 4, 1, device=dev)
    compare("eye", 3, dtype=int, device=dev)
    compare("eye", 4, k=-2, dtype="float32", device=dev)
    compare("identity", 4, device=dev)
    compare("identity", 2, int, device=dev)


def test_meshgrid(dev):
    x = numpy.arange(3)
    y = numpy.linspace(0, 1, 4)
    compare("meshgrid", x, y, device=dev)
    compare("meshgrid", x, y, indexing="ij", device=dev)
    compare("meshgrid", x, y, sparse=True, device=dev)
    compare("meshgrid", x, y, x, device=dev)
    compare("meshgrid", numpy.arange(4).reshape(2, 2), y, device=dev)
    compare("meshgrid", x, device=dev)


def test_indices_tri_diag(dev):
    compare("indices", (2, 3), device=dev)
    compare("indices", (2, 3), sparse=True, device=dev)
    m = numpy.arange(16.0).reshape(4, 4)
    for k in (-1, 0, 2):
        compare("tril", m, k, device=dev)
        compare("triu", m, k, device=dev)
        compare("diag", m, k, device=dev)
        compare("diag", numpy.arange(3), k, device=dev)
        compare("tri", 3, 4, k, device=dev)
    compare("tril", numpy.arange(3), device=dev)
    compare("tril", numpy.arange(24).reshape(2, 3, 4), device=dev)
    compare("diagflat", [[1, 2], [3, 4]], device=dev)
    compare("vander", numpy.array([1, 2, 3]), device=dev)
    compare("vander", numpy.array([1.0, 2.0, 3.0]), 4, True, device=dev)


def test_fromfunction_fromiter(dev):
    got = gp.fromfunction(lambda i, j: i + 10 * j, (3, 4))
    assert_match(got, numpy.fromfunction(lambda i, j: i + 10 * j, (3, 4)))
    got = gp.fromfunction(lambda i, j: i * j, (2, 3), dtype=int)
    assert_match(got, numpy.fromfunction(lambda i, j: i * j, (2, 3), dtype=int))
    assert_match(gp.fromiter((i * i for i in range(5)), float), numpy.fromiter((i * i for i in range(5)), float))


def test_standard_forms_still_work(dev):
    assert gp.zeros((2,), dtype=gp.float32, device=dev).dtype == gp.float32
    assert gp.arange(0, 10, 2, dtype=gp.int32).dtype == gp.int32
    assert gp.linspace(0, 1, num=5, endpoint=False).shape == (5,)
    assert gp.eye(2, 3, k=1, dtype=gp.int8).dtype == gp.int8
    assert gp.full_like(gp.ones(3), fill_value=2).dtype == gp.float64
    assert len(gp.meshgrid(gp.arange(2), gp.arange(3), indexing="ij")) == 2
    assert gp.tril(gp.ones((3, 3)), k=1).shape == (3, 3)
