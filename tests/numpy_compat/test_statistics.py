"""Order statistics, averages, correlations, histograms and signal helpers against NumPy."""
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .helpers import compare

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def arr_axis(draw, nan=False, dtypes=(numpy.float64, numpy.float32, numpy.int32)):
    dt = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5))
    el = st.integers(-20, 20) if numpy.dtype(dt).kind in "iu" else st.floats(-50, 50, width=32, allow_subnormal=False)
    if nan and numpy.dtype(dt).kind == "f":
        el = st.one_of(el, st.just(float("nan")))
    x = draw(hnp.arrays(dt, shape, elements=el))
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    return x, axis


def _rtol(x):
    return 1e-4 if x.dtype == numpy.float32 else 1e-10


@SETTINGS
@given(data=st.data())
def test_median_percentile_quantile(data, device):
    x, axis = data.draw(arr_axis(), label="x/axis")
    q = data.draw(st.one_of(st.floats(0, 100), st.lists(st.floats(0, 100), min_size=1, max_size=3)), label="q")
    keepdims = data.draw(st.booleans(), label="keepdims")
    compare("median", x, axis, keepdims=keepdims, device=device, rtol=_rtol(x))
    compare("percentile", x, q, axis, keepdims=keepdims, device=device, rtol=_rtol(x))
    qq = numpy.asarray(q) / 100.0
    compare("quantile", x, qq, axis, device=device, rtol=_rtol(x))
    for method in ("lower", "higher", "nearest", "midpoint"):
        compare("percentile", x, q, axis, method=method, device=device, rtol=_rtol(x))


@SETTINGS
@given(data=st.data())
def test_nan_quantiles(data, device):
    x, axis = data.draw(arr_axis(nan=True, dtypes=(numpy.float64,)), label="x/axis")
    q = data.draw(st.one_of(st.floats(0, 100), st.lists(st.floats(0, 100), min_size=1, max_size=3)), label="q")
    keepdims = data.draw(st.booleans(), label="keepdims")
    with numpy.errstate(all="ignore"), _quiet():
        compare("nanpercentile", x, q, axis, keepdims=keepdims, device=device)
        compare("nanquantile", x, numpy.asarray(q) / 100, axis, device=device)
        compare("nanmedian", x, axis, device=device)


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *a):
        return self._w.__exit__(*a)


@SETTINGS
@given(data=st.data())
def test_average(data, device):
    x, axis = data.draw(arr_axis(dtypes=(numpy.float64, numpy.int32)), label="x/axis")
    compare("average", x, axis, device=device)
    n = x.size if axis is None else x.shape[axis]
    w = numpy.arange(1, n + 1, dtype=numpy.float64)
    if axis is None:
        w = w.reshape(x.shape)
    compare("average", x, axis, w, device=device)
    compare("average", x, axis, w, True, device=device)
    compare("average", x, axis, keepdims=True, device=device)


def test_cov_corrcoef(device):
    rng = numpy.random.default_rng(0)
    m = rng.normal(size=(3, 10))
    y = rng.normal(size=(2, 10))
    compare("cov", m, device=device)
    compare("cov", m, rowvar=False, device=device)
    compare("cov", m, y, device=device)
    compare("cov", m, bias=True, device=device)
    compare("cov", m, ddof=2, device=device)
    compare("cov", m[0], device=device)
    compare("cov", m, aweights=numpy.arange(1.0, 11.0), device=device)
    compare("cov", m, fweights=numpy.arange(1, 11), device=device)
    compare("corrcoef", m, device=device)
    compare("corrcoef", m[0], m[1], device=device)
    compare("corrcoef", m.T, rowvar=False, device=device)


@SETTINGS
@given(data=st.data())
def test_histogram(data, device):
    x = data.draw(hnp.arrays(numpy.float64, st.integers(1, 30), elements=st.floats(-10, 10)), label="x")
    bins = data.draw(st.integers(1, 8), label="bins")
    compare("histogram", x, bins, device=device)
    compare("histogram", x, bins, (-5, 5), device=device)
    compare("histogram", x, [-10, -1, 0, 2, 10], device=device)
    compare("histogram", x, bins, density=True, device=device)
    compare("histogram", x, bins, weights=numpy.abs(x), device=device)
    compare("histogram_bin_edges", x, bins, device=device)


def test_histogram_more(device):
    rng = numpy.random.default_rng(1)
    x = rng.normal(size=50)
    y = rng.normal(size=50)
    compare("histogram2d", x, y, device=device)
    compare("histogram2d", x, y, bins=4, device=device)
    compare("histogram2d", x, y, bins=[3, 5], device=device)
    compare("histogram2d", x, y, bins=[numpy.linspace(-3, 3, 4), numpy.linspace(-2, 2, 6)], device=device)
    compare("histogramdd", numpy.stack([x, y], axis=1), bins=3, device=device)
    if str(device) == "cpu":
        compare("histogram", x, "auto", device=device)
    compare("bincount", numpy.array([0, 1, 1, 3, 2, 1, 7]), device=device)
    compare("bincount", numpy.array([0, 1, 1, 3]), numpy.array([0.5, 1.0, 2.0, 0.25]), device=device)
    compare("bincount", numpy.array([0, 1]), minlength=5, device=device)
    compare("digitize", x, numpy.array([-1.0, 0.0, 1.0]), device=device)
    compare("digitize", x, numpy.array([-1.0, 0.0, 1.0]), right=True, device=device)


def test_interp_convolve_gradient(device):
    xp_ = numpy.array([0.0, 1.0, 2.5, 4.0])
    fp = numpy.array([1.0, 3.0, 2.0, 0.0])
    x = numpy.linspace(-1, 5, 13)
    compare("interp", x, xp_, fp, device=device)
    compare("interp", x, xp_, fp, left=-9.0, right=9.0, device=device)
    compare("interp", 1.5, xp_, fp, device=device)
    compare("interp", x, xp_, fp, period=4.0, device=device)
    a = numpy.array([1.0, 2.0, 3.0, 0.5])
    v = numpy.array([0.0, 1.0, 0.5])
    for mode in ("full", "same", "valid"):
        compare("convolve", a, v, mode, device=device)
        compare("correlate", a, v, mode, device=device)
    f = numpy.array([1.0, 2.0, 4.0, 7.0, 11.0, 16.0])
    compare("gradient", f, device=device)
    compare("gradient", f, 2.0, device=device)
    compare("gradient", f, edge_order=2, device=device)
    compare("gradient", f, numpy.array([0.0, 1.0, 1.5, 3.5, 4.0, 6.0]), device=device)
    compare("gradient", numpy.arange(12.0).reshape(3, 4) ** 2, device=device)
    compare("gradient", numpy.arange(12.0).reshape(3, 4) ** 2, axis=1, device=device)
    compare("trapezoid", f, device=device)
    compare("trapezoid", f, dx=0.5, device=device)
    compare("trapezoid", f, numpy.arange(6.0) ** 2, device=device)
    compare("trapezoid", numpy.arange(12.0).reshape(3, 4), axis=0, device=device)


@pytest.mark.parametrize("shape,axis", [((1, 1), 0), ((1, 3, 1), (0, 1)), ((1, 4), 1), ((2, 1, 3), 2)])
def test_quantile_when_kept_dims_are_one(shape, axis, device):
    """Reductions whose kept dimensions all have length 1 (CuPy's quantile reads past its data there)."""
    x = numpy.arange(numpy.prod(shape), dtype=float).reshape(shape) * 1.5 - 2
    compare("quantile", x, numpy.array([0.0, 0.3, 1.0]), axis, device=device)
    compare("percentile", x, [0.0, 30.0, 100.0], axis, keepdims=True, device=device)
    compare("quantile", x, 0.75, axis, device=device)
