"""Sorting, searching and set functions with NumPy's signatures against NumPy."""
import numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match, compare

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def arr(draw, dtypes=(numpy.int32, numpy.float64, numpy.uint8, numpy.float32, numpy.int64), unique=False):
    dt = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5))
    el = st.integers(0, 200 if unique else 20) if numpy.dtype(dt).kind in "iu" else st.floats(-10, 10, width=32)
    return draw(hnp.arrays(dt, shape, elements=el, unique=unique))


@SETTINGS
@given(data=st.data())
def test_sort(data, device):
    x = data.draw(arr(), label="x")
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    kind = data.draw(st.sampled_from([None, "quicksort", "mergesort", "stable", "heapsort"]), label="kind")
    compare("sort", x, axis, kind, device=device)
    compare("sort", x, device=device)
    g = gp.asarray(x, device=device)
    if axis is not None:
        g.sort(axis)
        assert_match(g, numpy.sort(x, axis))


@SETTINGS
@given(data=st.data())
def test_argsort(data, device):
    x = data.draw(arr(unique=True), label="x")  # unique: NumPy's quicksort orders ties arbitrarily
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)), label="axis")
    kind = data.draw(st.sampled_from([None, "quicksort", "mergesort", "stable"]), label="kind")
    compare("argsort", x, axis, kind, device=device)
    assert_match(gp.asarray(x, device=device).argsort(axis if axis is not None else -1),
                 x.argsort(axis if axis is not None else -1))


def test_argsort_ties_stable(device):
    x = numpy.array([3, 1, 2, 1, 3, 0, 1] * 5)
    compare("argsort", x, kind="stable", device=device)
    assert_match(gp.argsort(gp.asarray(x, device=device)), numpy.argsort(x, kind="stable"))
    if str(device) == "cpu":
        compare("argsort", x, kind="quicksort", device=device)


def test_lexsort_partition(device):
    a = numpy.array([1, 5, 1, 4, 3, 4, 4])
    b = numpy.array([9, 4, 0, 4, 0, 2, 1])
    compare("lexsort", (b, a), device=device)
    compare("lexsort", [a, b], device=device)
    compare("lexsort", numpy.stack([b, a]), device=device)
    k2 = numpy.array([[3, 1, 2], [1, 1, 0]])
    k1 = numpy.array([[0, 5, 1], [2, 2, 7]])
    compare("lexsort", (k1, k2), device=device)
    compare("lexsort", (k1, k2), axis=0, device=device)
    x = numpy.array([7.0, 2.0, 9.0, 1.0, 5.0, 3.0])
    for k in (0, 2, 5, [1, 3]):
        p = gp.partition(gp.asarray(x, device=device), k)
        ph = numpy.asarray(p.to_device("cpu"))
        kk = [k] if isinstance(k, int) else k
        s = numpy.sort(x)
        for j in kk:
            assert ph[j] == s[j]
            assert (ph[:j] <= ph[j]).all() and (ph[j + 1:] >= ph[j]).all()
        idx = numpy.asarray(gp.argpartition(gp.asarray(x, device=device), k).to_device("cpu"))
        for j in kk:
            assert x[idx[j]] == s[j]
    compare("sort_complex", numpy.array([3, 1, 2]), device=device)
    compare("sort_complex", numpy.array([1 + 2j, 1 - 1j, 0.5 + 0j]), device=device)


@SETTINGS
@given(data=st.data())
def test_searchsorted(data, device):
    a = numpy.sort(data.draw(hnp.arrays(numpy.float64, st.integers(1, 8), elements=st.integers(0, 9).map(float)),
                             label="a"))
    v = data.draw(hnp.arrays(numpy.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
                             elements=st.integers(-1, 10).map(float)), label="v")
    compare("searchsorted", a, v, device=device)
    compare("searchsorted", a, v, "right", device=device)
    compare("searchsorted", a, 3.0, device=device)
    compare("searchsorted", a[::-1], v, sorter=numpy.argsort(a[::-1], kind="stable"), device=device)
    assert_match(gp.asarray(a, device=device).searchsorted(v, "right"), a.searchsorted(v, "right"))


@SETTINGS
@given(data=st.data())
def test_unique(data, device):
    x = data.draw(arr(dtypes=(numpy.int32, numpy.float64)), label="x")
    for flags in [(False, False, False), (True, False, False), (False, True, False), (False, False, True),
                  (True, True, True)]:
        compare("unique", x, *flags, device=device)
    if x.ndim >= 2:
        compare("unique", x, True, True, True, axis=0, device=device)


def test_unique_nan(device):
    x = numpy.array([1.0, numpy.nan, 2.0, numpy.nan, 1.0])
    compare("unique", x, device=device)
    compare("unique", x, equal_nan=False, device=device)
    compare("unique", x, return_counts=True, device=device)


def test_sets(device):
    a = numpy.array([5, 1, 3, 3, 9, 0])
    b = numpy.array([3, 4, 5, 7])
    compare("isin", a, b, device=device)
    compare("isin", a, b, invert=True, device=device)
    compare("isin", a, [1, 2], device=device)
    compare("intersect1d", a, b, device=device)
    compare("intersect1d", numpy.unique(a), b, True, True, device=device)
    compare("union1d", a, b, device=device)
    compare("setdiff1d", a, b, device=device)
    compare("setxor1d", a, b, device=device)
