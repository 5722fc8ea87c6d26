"""Whole-array comparisons, predicates, math helpers, polynomials, dtype names, printing, errstate, stride tricks."""
import warnings

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match, compare, to_gpk

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(data=st.data())
def test_isclose_allclose(data, device):
    shape = data.draw(hnp.array_shapes(max_dims=2, max_side=4), label="shape")
    a = data.draw(hnp.arrays(numpy.float64, shape, elements=st.floats(-10, 10)), label="a")
    noise = data.draw(hnp.arrays(numpy.float64, shape, elements=st.sampled_from([0.0, 1e-9, 1e-6, 1e-3])),
                      label="noise")
    b = a + noise
    compare("isclose", a, b, device=device)
    compare("isclose", a, b, 1e-8, 0.0, device=device)
    compare("isclose", a, 1.0, device=device)
    for args in [(a, b), (a, b, 1e-10, 0.0), (a, a)]:
        got = gp.allclose(*to_gpk(list(args), device))
        assert got is numpy.allclose(*args) or got == numpy.allclose(*args)
        assert isinstance(got, bool)
    assert gp.array_equal(*to_gpk([a, a], device)) is True
    assert gp.array_equal(*to_gpk([a, b], device)) == numpy.array_equal(a, b)
    assert gp.array_equiv(*to_gpk([a, a[None]], device)) == numpy.array_equiv(a, a[None])


def test_nan_comparisons(device):
    a = numpy.array([1.0, numpy.nan, 3.0])
    b = numpy.array([1.0, numpy.nan, 3.0 + 1e-9])
    compare("isclose", a, b, equal_nan=True, device=device)
    assert gp.allclose(*to_gpk([a, b], device), equal_nan=True) is True
    assert gp.allclose(*to_gpk([a, b], device)) is False
    assert gp.array_equal(*to_gpk([a, a], device)) is False
    assert gp.array_equal(*to_gpk([a, a], device), equal_nan=True) is True
    assert gp.array_equal(*to_gpk([a, a[:2]], device)) is False


def test_predicates(device):
    g = gp.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert not gp.isscalar(g) and gp.isscalar(1.5) and gp.isscalar(numpy.float32(1)) and not gp.isscalar([1])
    assert gp.shape(g) == (2, 2) and gp.shape([1, 2, 3]) == (3,) and gp.ndim(g) == 2 and gp.ndim(5) == 0
    assert gp.size(g) == 4 and gp.size(g, 1) == 2 and gp.size([[1, 2, 3]]) == 3
    z = numpy.array([1 + 0j, 2 + 1e-20j, 3 - 1j])
    assert gp.iscomplexobj(gp.asarray(z, device=device)) and gp.isrealobj(g)
    compare("iscomplex", z, device=device)
    compare("isreal", z, device=device)
    compare("isreal", numpy.arange(3.0), device=device)
    x = numpy.array([numpy.inf, -numpy.inf, numpy.nan, 1.0, -0.0])
    compare("isneginf", x, device=device)
    compare("isposinf", x, device=device)
    compare("nan_to_num", x, device=device)
    compare("nan_to_num", x, nan=-1.0, posinf=9.0, neginf=-9.0, device=device)
    gx = gp.asarray(x.copy(), device=device)
    r = gp.nan_to_num(gx, copy=False)
    assert r is gx
    assert_match(gx, numpy.nan_to_num(x))
    compare("real_if_close", numpy.array([1 + 1e-15j, 2 - 1e-16j]), device=device)
    compare("real_if_close", z, device=device)


def test_math_helpers(device):
    x = numpy.linspace(-3, 3, 13)
    for name in ("sinc", "i0", "fix"):
        compare(name, x, device=device)
    compare("angle", numpy.array([1 + 1j, -1, 1j, -2 - 2j]), device=device)
    compare("angle", numpy.array([1 + 1j, -1, 1j]), deg=True, device=device)
    compare("angle", numpy.array([-2, 3]), device=device)
    compare("unwrap", numpy.array([0.0, 3.0, 6.5, 0.2, -3.0]), device=device)
    compare("unwrap", numpy.array([0, 3, 6, 9, 2]), period=6, device=device)
    for dec in (0, 1, 2, -1):
        compare("round", x * 10.37, dec, device=device)
        compare("around", x * 10.37, dec, device=device)
    compare("round", numpy.array([0.5, 1.5, 2.5, -0.5]), device=device)
    compare("real", numpy.array([1 + 2j]), device=device)
    compare("imag", numpy.array([1 + 2j]), device=device)


def test_polynomials(device):
    x = numpy.linspace(-2, 2, 11)
    y = 3 * x ** 2 - 2 * x + 1 + 0.01 * numpy.sin(7 * x)
    for deg in (1, 2, 3):
        compare("polyfit", x, y, deg, device=device, rtol=1e-8)
    got = gp.polyfit(*to_gpk([x, y], device), 2, full=True)
    want = numpy.polyfit(x, y, 2, full=True)
    assert_match(got[0], want[0], rtol=1e-8)
    compare("polyval", [3.0, -2.0, 1.0], x, device=device)
    compare("polyval", numpy.array([1, 0, -1]), 2.0, device=device)
    compare("roots", [1.0, -3.0, 2.0], device=device)
    compare("roots", [1.0, 0.0, 1.0], device=device)
    compare("roots", [0.0, 1.0, -6.0, 11.0, -6.0, 0.0], device=device)
    compare("poly", [1.0, 2.0], device=device)
    compare("poly", [1j, -1j], device=device)
    compare("polyder", [1.0, 2.0, 3.0, 4.0], device=device)
    compare("polyder", [1.0, 2.0, 3.0, 4.0], 2, device=device)
    compare("polyint", [3.0, 2.0, 1.0], device=device)
    compare("polyint", [3.0, 2.0, 1.0], 2, [1.0, 2.0], device=device)
    compare("polyadd", [1.0, 2.0], [1.0, 0.0, 3.0], device=device)
    compare("polysub", [1.0, 2.0], [1.0, 0.0, 3.0], device=device)
    compare("polymul", [1.0, 2.0], [1.0, 0.0, 3.0], device=device)
    p = gp.poly1d(gp.asarray([1.0, -3.0, 2.0], device=device))
    q = numpy.poly1d([1.0, -3.0, 2.0])
    assert_match(p(gp.asarray(x, device=device)), q(x))
    assert_match(p.roots, q.roots)
    assert p.order == q.order and str(p) == str(q)
    assert_match((p * p + 1).coeffs, (q * q + 1).coeffs)
    assert_match(p.deriv().coeffs, q.deriv().coeffs)
    assert_match(p.integ().coeffs, q.integ().coeffs)
    assert_match((p - p ** 2).c, (q - q ** 2).c)
    assert_match(gp.poly1d([2.0, 3.0], r=True).c, numpy.poly1d([2.0, 3.0], r=True).c)


def test_dtype_names():
    assert gp.dtype("float32") == numpy.float32 and gp.dtype(gp.int16) == numpy.int16
    assert gp.float_ is numpy.float64 and gp.int_ is numpy.int64 and gp.bool_ is numpy.bool_
    assert gp.issubdtype(gp.asarray([1.0]).dtype, gp.floating)
    assert gp.issubdtype(gp.int8, gp.integer) and not gp.issubdtype(gp.float32, gp.integer)
    assert gp.issubdtype(gp.asarray([1]), gp.signedinteger)
    assert gp.promote_types(gp.int8, gp.uint8) == numpy.int16
    assert gp.finfo(gp.float32).eps == float(numpy.finfo(numpy.float32).eps)
    assert gp.finfo(float).max == numpy.finfo(float).max and gp.iinfo(gp.int16).max == 32767
    assert gp.iinfo(int).min == numpy.iinfo(int).min
    assert isinstance(gp.asarray([1]), gp.ndarray)
    assert gp.pi == numpy.pi and gp.e == numpy.e and gp.newaxis is None and numpy.isnan(gp.nan)
    assert gp.inf == numpy.inf and gp.euler_gamma == numpy.euler_gamma
    assert gp.common_type(gp.asarray([1], dtype=gp.float32)) is numpy.float32
    assert gp.result_type(gp.int32, gp.float32) == numpy.float64
    assert gp.can_cast(gp.int8, gp.int64)


def test_printing():
    for a in [numpy.arange(5), numpy.linspace(0, 1, 4), numpy.array([[1.5, 2.25], [3.0, -4.0]]),
              numpy.array([True, False]), numpy.arange(3, dtype=numpy.float32), numpy.array(3.5),
              numpy.array([1 + 2j]), numpy.zeros((0, 3)), numpy.arange(2000)]:
        g = gp.asarray(a, device="cpu")
        assert repr(g) == repr(a)
        assert str(g) == str(a)
    with gp.printoptions(precision=2, suppress=True):
        a = numpy.array([1.23456, 1e-9])
        assert str(gp.asarray(a, device="cpu")) == str(a)
        assert gp.array2string(gp.asarray(a, device="cpu")) == numpy.array2string(a)
    old = gp.get_printoptions()
    gp.set_printoptions(precision=3)
    try:
        assert repr(gp.asarray([1 / 3], device="cpu")) == repr(numpy.array([1 / 3]))
    finally:
        gp.set_printoptions(**old)
    assert f"{gp.asarray(2.5, device='cpu'):.2f}" == "2.50"


def test_printing_device(device):
    """repr and str are NumPy's on every device: a script prints the same text on the GPU (as with CuPy)."""
    for v in ([1.0, 2.0], [[1, 2], [3, 4]], [True, False], 2.5):
        g = gp.asarray(v, device=device)
        assert repr(g) == repr(numpy.asarray(v))
        assert str(g) == str(numpy.asarray(v))
    assert repr(gp.nonzero(gp.asarray([1, 0, 3], device=device))) == repr(numpy.nonzero(numpy.array([1, 0, 3])))


def test_errstate():
    with gp.errstate(divide="ignore", invalid="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gp.asarray([1.0, 0.0], device="cpu") / 0.0
    old = gp.seterr(all="ignore")
    try:
        assert gp.geterr()["divide"] == "ignore"
    finally:
        gp.seterr(**old)


def test_stride_tricks(device):
    from gpk_array.lib.stride_tricks import as_strided, sliding_window_view
    x = numpy.arange(10.0)
    g = gp.asarray(x, device=device)
    assert_match(sliding_window_view(g, 3), numpy.lib.stride_tricks.sliding_window_view(x, 3))
    m = numpy.arange(20.0).reshape(4, 5)
    assert_match(gp.lib.stride_tricks.sliding_window_view(gp.asarray(m, device=device), (2, 2)),
                 numpy.lib.stride_tricks.sliding_window_view(m, (2, 2)))
    assert_match(sliding_window_view(gp.asarray(m, device=device), 3, axis=1),
                 numpy.lib.stride_tricks.sliding_window_view(m, 3, axis=1))
    s = as_strided(g, shape=(4, 3), strides=(16, 8))
    assert_match(s, numpy.lib.stride_tricks.as_strided(x, shape=(4, 3), strides=(16, 8)))


@pytest.mark.parametrize("name", ["shares_memory", "may_share_memory"])
def test_memory(name, device):
    g = gp.asarray(numpy.arange(6.0), device=device)
    assert getattr(gp, name)(g, g[2:]) is True
    assert getattr(gp, name)(g, gp.asarray(numpy.arange(6.0), device=device)) is False
