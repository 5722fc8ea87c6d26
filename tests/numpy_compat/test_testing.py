"""gpk_array.testing against numpy.testing: the same passes, the same failures (type and message), for Arrays on
every device, NumPy arrays and Python values."""
import re
import warnings

import numpy
import numpy.testing as nt
import pytest

import gpk_array as gp
import gpk_array.testing as gt


def _outcome(fn, *args, **kwargs):
    """None when fn passes, else (exception type, message)."""
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


def _same(name, np_args, gp_args, **kwargs):
    want = _outcome(getattr(nt, name), *np_args, **kwargs)
    got = _outcome(getattr(gt, name), *gp_args, **kwargs)
    assert got == want, f"{name}: {got} != {want}"
    return got


CASES = [
    ("assert_allclose", [1.0, 2.0, 3.0], [1.0, 2.0, 3.0 + 1e-9], {}),
    ("assert_allclose", [1.0, 2.0, 3.0], [1.0, 2.5, 3.0], {}),
    ("assert_allclose", [1.0, 2.0], [1.0, 2.1], {"rtol": 0.1}),
    ("assert_allclose", [1.0, numpy.nan], [1.0, numpy.nan], {}),
    ("assert_allclose", [1.0, numpy.nan], [1.0, numpy.nan], {"equal_nan": False}),
    ("assert_array_equal", [[1, 2], [3, 4]], [[1, 2], [3, 4]], {}),
    ("assert_array_equal", [[1, 2], [3, 4]], [[1, 2], [3, 5]], {"err_msg": "grid"}),
    ("assert_array_equal", [1, 2, 3], [1, 2], {}),
    ("assert_equal", [1, 2], [1, 2], {}),
    ("assert_equal", [1.5, 2.0], [1.5, 2.5], {}),
    ("assert_almost_equal", [1.0, 2.0], [1.0, 2.0000001], {}),
    ("assert_almost_equal", [1.0, 2.0], [1.0, 2.01], {"decimal": 3}),
    ("assert_array_almost_equal", [1.0, 2.0], [1.0, 2.0000001], {}),
    ("assert_array_almost_equal", [1.0, 2.0], [1.1, 2.0], {"decimal": 2}),
    ("assert_array_less", [1.0, 2.0], [2.0, 3.0], {}),
    ("assert_array_less", [1.0, 4.0], [2.0, 3.0], {}),
    ("assert_array_max_ulp", [1.0, 2.0], [1.0, 2.0], {}),
]


@pytest.mark.parametrize("name,a,b,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_assertions_on_arrays(device, name, a, b, kwargs):
    na, nb = numpy.array(a), numpy.array(b)
    ga, gb = gp.asarray(na, device=device), gp.asarray(nb, device=device)
    _same(name, (na, nb), (ga, gb), **kwargs)
    _same(name, (na, nb), (ga, nb), **kwargs)   # an Array against a NumPy array
    _same(name, (na, b), (ga, b), **kwargs)     # an Array against Python values


def test_scalars_and_reductions(device):
    x = numpy.arange(5)
    g = gp.asarray(x, device=device)
    _same("assert_equal", (x.sum(), 10), (g.sum(), 10))
    _same("assert_equal", (x.sum(), 11), (g.sum(), 11))
    _same("assert_approx_equal", (x.mean(), 2.0000001), (g.mean(), 2.0000001))
    _same("assert_approx_equal", (x.mean(), 2.1), (g.mean(), 2.1), significant=4)
    _same("assert_almost_equal", (x.std(), 1.41421356), (g.std(), 1.41421356))
    _same("assert_equal", ({"a": x, "b": [x, 2]}, {"a": x, "b": [x, 2]}),
          ({"a": g, "b": [g, 2]}, {"a": x, "b": [g, 2]}))
    _same("assert_equal", ((x, 1), (x + 1, 1)), ((g, 1), (g + 1, 1)))
    _same("assert_equal", ("abc", "abc"), ("abc", "abc"))


def test_assert_and_raises(device):
    g = gp.arange(3, device=device)
    gt.assert_(g.sum() == 3)
    with pytest.raises(AssertionError, match="^boom$"):
        gt.assert_(g.sum() == 4, "boom")
    with gt.assert_raises(ValueError):
        gp.reshape(g, (2, 2))
    gt.assert_raises(ValueError, gp.reshape, g, (2, 2))
    with gt.assert_raises_regex(ValueError, "shape|reshape"):
        gp.reshape(g, (2, 2))
    with pytest.raises(AssertionError):
        with gt.assert_raises(ValueError):
            gp.reshape(g, (3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2.4 deprecates assert_warns; ours is NumPy's
        with gt.assert_warns(RuntimeWarning):
            warnings.warn("w", RuntimeWarning)
    with gt.assert_no_warnings():
        gp.sum(g)


def test_messages_name_the_mismatch(device):
    g = gp.asarray([1.0, 2.0, 3.0], device=device)
    with pytest.raises(AssertionError, match=re.escape("Mismatched elements: 1 / 3")):
        gt.assert_allclose(g, [1.0, 2.0, 4.0])
    with pytest.raises(AssertionError, match="nan location mismatch"):
        gt.assert_array_equal(gp.asarray([1.0, numpy.nan], device=device), [1.0, 2.0])
