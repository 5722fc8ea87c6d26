"""SciPy on the GPU (issue 22, item 2): scipy.special's ufuncs on CUDA Arrays reach cupyx.scipy.special through
``Array.__array_ufunc__`` (as they do for CuPy arrays), SciPy finds ``gpk_array.special`` as ``xp.special``, and
``gpk_array.scipy`` runs SciPy's functions on both devices (SciPy's own on the CPU device and wherever SciPy
computes with the array API; CuPy's cupyx.scipy on CUDA where SciPy would compute on the host).

The stand-in CUDA device (fakegpu.py) has a stand-in cupyx.scipy (fakecupyx.py) whose functions accept only device
memory and record their calls, so these tests prove the routing without a GPU; tests marked gpu run the same calls
on a real device and compare with SciPy on host copies.
"""
import contextlib

import numpy
import pytest
import scipy.fft
import scipy.interpolate
import scipy.linalg
import scipy.ndimage
import scipy.signal
import scipy.special
import scipy.special._ufuncs as su
import scipy.stats

import gpk_array as gp

from .fakecupyx import fake_cupyx
from .helpers import assert_match, to_numpy

_X = numpy.asarray([[0.1, 0.25, 0.4], [0.55, 0.7, 0.9]])
_CUPYX = {"special": ["erf", "gammaln", "xlogy", "expit", "logsumexp"], "ndimage": ["gaussian_filter"],
          "signal": ["convolve"]}


@pytest.fixture
def fake(device):
    if str(device) == "cpu" or gp._device.cuda_device_count() > 0:
        pytest.skip("the stand-in cupyx.scipy serves the stand-in CUDA device")
    with fake_cupyx(_CUPYX) as calls:
        yield device, calls


def test_special_ufuncs_route_to_cupyx_through_array_ufunc(fake):
    device, calls = fake
    x = gp.asarray(_X, device=device)
    for name in ("erf", "gammaln", "expit"):
        got = getattr(su, name)(x)          # the ufunc itself: NumPy calls Array.__array_ufunc__
        assert isinstance(got, gp.Array) and got.device == device
        assert_match(got, getattr(su, name)(_X), device, what=name)
    assert_match(su.xlogy(x, x), su.xlogy(_X, _X), device)
    assert calls == [("special", "erf"), ("special", "gammaln"), ("special", "expit"), ("special", "xlogy")]
    out = gp.empty((2, 3), device=device)
    assert su.erf(x, out=out) is out
    assert_match(out, su.erf(_X), device)


def test_special_ufunc_cupyx_lacks_raises_naming_it(fake):
    device, calls = fake
    x = gp.asarray(_X, device=device)
    with pytest.raises(gp.HostOnlyError) as err:
        su.i0e(x)
    assert isinstance(err.value, TypeError)
    assert "scipy.special.i0e" in str(err.value) and 'x.to_device("cpu")' in str(err.value)
    assert calls == []


def _scipy_looks_for_xp_special():
    """Whether this SciPy's special functions look for ``xp.special`` (SciPy 1.17 does)."""
    import inspect
    try:
        from scipy.special import _support_alternative_backends as sab
        return "xp.special" in inspect.getsource(sab)
    except (ImportError, OSError):
        return False


def test_scipy_finds_gpk_array_special_as_xp_special(fake):
    """SCIPY_ARRAY_API=1 (tests/conftest.py sets it): SciPy's own scipy.special.erf reaches gpk_array.special."""
    if not _scipy_looks_for_xp_special():
        pytest.skip("this SciPy does not look for xp.special")
    device, calls = fake
    x = gp.asarray(_X, device=device)
    assert {"erf", "gammaln", "i0e", "airy", "logsumexp", "xlogy"} <= set(dir(gp.special))
    got = scipy.special.erf(x)
    assert isinstance(got, gp.Array) and got.device == device
    assert_match(got, su.erf(_X), device)
    assert ("special", "erf") in calls
    got = scipy.special.logsumexp(x, axis=1)
    assert_match(got, scipy.special.logsumexp(_X, axis=1), device)
    with pytest.raises(gp.HostOnlyError) as err:           # CuPy has no i0e: the hook says so, naming it
        scipy.special.i0e(x)
    assert "scipy.special.i0e" in str(err.value) and 'x.to_device("cpu")' in str(err.value)


def test_gpk_array_special_on_the_cpu_is_scipys_on_numpy():
    """The hook on the CPU device: SciPy's own functions on the Arrays' memory, with or without CuPy; SciPy's
    compositions of other special functions (stdtr of integers through betainc) are not taken there."""
    x = gp.asarray(_X, device="cpu")
    for name in ("erf", "gammaln", "i0e", "expit"):
        got = getattr(gp.special, name)(x)
        assert isinstance(got, gp.Array) and got.device == gp.Device("cpu")
        assert_match(got, getattr(su, name)(_X))
    df = numpy.asarray([1, 2, 5, 2**40])
    t = numpy.asarray([-3, 0, 4, 2**40])
    assert_match(gp.special.stdtr(gp.asarray(df, device="cpu"), gp.asarray(t, device="cpu")), su.stdtr(df, t))
    assert_match(scipy.special.stdtr(gp.asarray(df, device="cpu"), gp.asarray(t, device="cpu")), su.stdtr(df, t))
    assert "erf" in dir(gp.special) and gp.special.erf.__doc__
    with pytest.raises(AttributeError):
        gp.special.no_such_function


def test_gpk_array_scipy_routes_what_scipy_cannot_run_on_the_device(fake):
    device, calls = fake
    x = gp.asarray(_X, device=device)
    got = gp.scipy.ndimage.gaussian_filter(x, 1.0)         # SciPy's is compiled code: CuPy's
    assert isinstance(got, gp.Array) and got.device == device
    assert_match(got, scipy.ndimage.gaussian_filter(_X, 1.0), device)
    assert calls[-1] == ("ndimage", "gaussian_filter")
    v = gp.asarray(_X[0], device=device)
    assert_match(gp.scipy.signal.convolve(v, v), scipy.signal.convolve(_X[0], _X[0]), device)
    assert calls[-1] == ("signal", "convolve")
    n = len(calls)
    z = gp.scipy.stats.zscore(x, axis=1)                  # SciPy computes it with the array API, on the device
    assert z.device == device
    assert_match(z, scipy.stats.zscore(_X, axis=1), device)
    assert_match(gp.scipy.fft.fft(v), scipy.fft.fft(_X[0]), device)
    assert len(calls) == n
    with pytest.raises(gp.HostOnlyError) as err:           # neither SciPy on the device nor CuPy: the way out
        gp.scipy.ndimage.zoom(x, 2)
    assert "scipy.ndimage.zoom" in str(err.value) and 'x.to_device("cpu")' in str(err.value)


def test_gpk_array_scipy_never_copies_device_memory_to_the_host(fake, monkeypatch):
    device, calls = fake
    from .fakegpu import FakeCudaArray
    gets = []
    monkeypatch.setattr(FakeCudaArray, "get", lambda self, *a, **k: gets.append(1))
    x = gp.asarray(_X, device=device)
    gp.scipy.ndimage.gaussian_filter(x, 1.0)
    su.erf(x)
    with pytest.raises(gp.HostOnlyError):
        gp.scipy.ndimage.zoom(x, 2)
    with pytest.raises(gp.HostOnlyError):
        su.i0e(x)
    assert gets == []


# --- the functions the issue probed, on every device ---------------------------------------------------------------
def _probe_calls():
    x2 = _X
    v = numpy.linspace(0.1, 0.9, 32)
    return {
        "special.erf": (lambda s, a: s.special.erf(a), x2),
        "special.gammaln": (lambda s, a: s.special.gammaln(a), x2),
        "special.logsumexp": (lambda s, a: s.special.logsumexp(a, axis=1), x2),
        "special.softmax": (lambda s, a: s.special.softmax(a, axis=1), x2),
        "stats.zscore": (lambda s, a: s.stats.zscore(a, axis=1), x2),
        "stats.skew": (lambda s, a: s.stats.skew(a, axis=1), x2),
        "stats.moment": (lambda s, a: s.stats.moment(a, order=3, axis=1), x2),
        "stats.describe": (lambda s, a: tuple(s.stats.describe(a[0]))[2:], x2),
        "stats.ttest_1samp": (lambda s, a: tuple(s.stats.ttest_1samp(a[0], 0.3)), x2),
        "signal.convolve": (lambda s, a: s.signal.convolve(a, a), v),
        "signal.welch": (lambda s, a: s.signal.welch(a, nperseg=8), v),
        "fft.fft": (lambda s, a: s.fft.fft(a), v),
        "fft.dct": (lambda s, a: s.fft.dct(a), v),
        "ndimage.gaussian_filter": (lambda s, a: s.ndimage.gaussian_filter(a, 1.0), x2),
        "ndimage.zoom": (lambda s, a: s.ndimage.zoom(a, 2, order=1), x2),
        "cluster.vq.whiten": (lambda s, a: s.cluster.vq.whiten(a), x2),
        "linalg.det": (lambda s, a: s.linalg.det(a[:, :2].T @ a[:, :2]), x2),
        "integrate.trapezoid": (lambda s, a: s.integrate.trapezoid(a), v),
    }


@contextlib.contextmanager
def _nothing():
    yield


class _SciPy:
    """scipy's modules by attribute, as gpk_array.scipy has them (cluster.vq as an attribute)."""

    def __getattr__(self, name):
        import importlib
        m = importlib.import_module(f"scipy.{name}")
        if name == "cluster":
            importlib.import_module("scipy.cluster.vq")
        return m


# what CuPy's cupyx.scipy has of the functions the probed calls reach (CuPy 15's source), for the stand-in; and
# stdtr, which CuPy lacks: on a GPU SciPy's own dispatch for the CuPy memory composes it of CuPy's betainc (the
# first route of gpk_array.scipy._bridge.on_device), a route the stand-in cannot take (SciPy sees NumPy arrays)
_CUPYX_OF_PROBE = {"special": ["erf", "gammaln", "logsumexp", "softmax", "betainc", "ndtr", "xlogy", "stdtr"],
                   "signal": ["convolve", "welch"], "fft": ["dct", "fft"], "ndimage": ["gaussian_filter", "zoom"],
                   "stats": ["zscore"]}


@pytest.mark.parametrize("case", sorted(_probe_calls()))
def test_the_issues_probed_functions_through_gpk_array_scipy(dev, case):
    """The 18 functions the issue found failing on the GPU, through gpk_array.scipy, on every device (the
    stand-in with a stand-in of CuPy's cupyx.scipy): the result equals SciPy's on NumPy data, on the device."""
    device = dev
    f, data = _probe_calls()[case]
    want = f(_SciPy(), data)
    fake = str(device) != "cpu" and gp._device.cuda_device_count() == 0
    with fake_cupyx(_CUPYX_OF_PROBE) if fake else _nothing():
        got = f(gp.scipy, gp.asarray(data, device=device))
    for r in (got if isinstance(got, tuple) else (got,)):
        if isinstance(r, gp.Array):
            assert r.device == device, case
    tol = 1e-12 if str(device) == "cpu" else 1e-9
    assert_match(got, want, device, rtol=tol, atol=1e-12, check_dtype=False, what=case)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["erf", "erfc", "gammaln", "expit", "logit", "ndtr", "i0e", "xlogy", "entr"])
def test_special_ufuncs_on_a_real_gpu_against_scipy(device, name):
    if str(device) == "cpu" or gp._device.cuda_device_count() == 0:
        pytest.skip("a real CUDA device")
    uf = getattr(su, name)
    args = [_X] * uf.nin
    got = uf(*(gp.asarray(a, device=device) for a in args))
    assert isinstance(got, gp.Array) and got.device == device
    assert_match(got, uf(*args), device, rtol=1e-9)
    if _scipy_looks_for_xp_special():
        got = getattr(scipy.special, name)(*(gp.asarray(a, device=device) for a in args))   # SciPy's own entry
        assert_match(got, uf(*args), device, rtol=1e-9)


def test_cpu_device_results_equal_scipys_on_numpy():
    x = gp.asarray(_X, device="cpu")
    assert_match(gp.scipy.linalg.solve(x[:, :2].T @ x[:, :2], x[0, :2]),
                 numpy.linalg.solve(_X[:, :2].T @ _X[:, :2], _X[0, :2]))
    res = gp.scipy.stats.ttest_1samp(x[0], 0.3)
    want = scipy.stats.ttest_1samp(_X[0], 0.3)
    t, p = res
    assert_match((t, p), (want.statistic, want.pvalue), check_dtype=False)
    cs = gp.scipy.interpolate.CubicSpline(gp.arange(5.0, device="cpu"), gp.arange(5.0, device="cpu") ** 2)
    ws = scipy.interpolate.CubicSpline(numpy.arange(5.0), numpy.arange(5.0) ** 2)
    got = cs(gp.asarray([0.5, 2.5], device="cpu"))
    assert isinstance(got, gp.Array)
    assert_match(got, ws(numpy.asarray([0.5, 2.5])))
    w = gp.scipy.signal.windows.hann(8)                    # no Arrays: SciPy's as called, as an Array
    assert_match(w, scipy.signal.windows.hann(8))
    assert to_numpy(gp.scipy.special.erf(x)).tolist() == su.erf(_X).tolist()


def test_gpk_array_scipy_layout():
    for name in ("special", "stats", "signal", "fft", "ndimage", "linalg", "cluster", "integrate", "interpolate",
                 "spatial"):
        assert getattr(gp.scipy, name).__name__ == f"gpk_array.scipy.{name}"
    import gpk_array.scipy.cluster.vq as vq
    import gpk_array.scipy.spatial.distance as dist
    assert gp.scipy.cluster.vq is vq and gp.scipy.spatial.distance is dist
    assert gp.scipy.signal.windows.__name__ == "gpk_array.scipy.signal.windows"
    assert gp.scipy.optimize.__name__ == "gpk_array.scipy.optimize"
    assert gp.scipy.linalg.LinAlgError is scipy.linalg.LinAlgError   # exceptions are SciPy's own
    assert "erf" in dir(gp.scipy.special) and gp.scipy.special.erf.__doc__
    with pytest.raises(AttributeError):
        gp.scipy.special.no_such_function
