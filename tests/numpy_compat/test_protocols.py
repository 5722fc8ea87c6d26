"""NumPy's protocols on gpk_array Arrays (issue 22, item 1): NEP 13 ``__array_ufunc__`` and NEP 18
``__array_function__`` against NumPy itself, on the CPU device and a CUDA device (the stand-in where no GPU exists).

Every NumPy ufunc and a broad set of NumPy functions called on Arrays give what NumPy gives on the same data (values,
dtypes, shapes), as Arrays on the operands' device; out=, where=, dtype= and the ufunc methods work; what
gpk_array lacks runs on NumPy on the CPU device and raises TypeError naming the function on CUDA (never a host
copy); NumPy arrays mix with Arrays on the CPU device and raise with a CUDA one (CuPy's rules).
"""
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match, to_numpy

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
UFUNCS = sorted(n for n in dir(numpy) if isinstance(getattr(numpy, n), numpy.ufunc) and n != "isnat")
# the data each ufunc takes (by its loops): floats in (0.1, 0.9) suit every real function's domain
_F = numpy.asarray([[0.125, 0.25, 0.5], [0.75, 0.375, 0.625]])
_I = numpy.asarray([[1, 2, 3], [4, 5, 6]], dtype=numpy.int64)
_B = numpy.asarray([[True, False, True], [False, False, True]])


def _inputs(uf):
    """The inputs for the ufunc uf, in the first of float64/int64/bool it has loops for."""
    if uf.__name__ == "ldexp":
        return [_F, _I]
    for data, code in ((_F, "d"), (_I, "q"), (_B, "?")):
        sig = code * uf.nin + "->"
        if any(t.startswith(sig) for t in uf.types):
            args = [data] + [data[::-1] if data.dtype != bool else ~data for _ in range(uf.nin - 1)]
            if uf.__name__ in ("matmul", "vecdot", "matvec", "vecmat"):
                args = [data, data.T] if uf.__name__ == "matmul" else [data, data if uf.__name__ == "vecdot"
                                                                      else data[0]]
                if uf.__name__ == "vecmat":
                    args = [data[:, 0], data]
            return args
    raise AssertionError(f"no float64/int64/bool loop for {uf.__name__}")


@pytest.mark.parametrize("name", UFUNCS)
def test_every_numpy_ufunc_on_arrays(device, name):
    uf = getattr(numpy, name)
    args = _inputs(uf)
    with numpy.errstate(all="ignore"):
        want = uf(*args)
        got = uf(*(gp.asarray(a, device=device) for a in args))
    for r in (got if isinstance(got, tuple) else (got,)):
        assert isinstance(r, gp.Array), f"{name}: {type(r).__name__}"
        assert r.device == device
    assert_match(got, want, device, what=name)


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "arctan2", "hypot", "logaddexp",
                                  "equal", "less", "fmod", "copysign", "power"])
@SETTINGS
@given(data=st.data())
def test_binary_ufuncs_broadcast_and_promote_as_numpy(device, name, data):
    """Broadcasting shapes, float32/float64 operands, Python and NumPy scalars (NEP 50's weak and strong)."""
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), label="shapes")
    dts = data.draw(st.tuples(st.sampled_from([numpy.float32, numpy.float64]),
                              st.sampled_from([numpy.float32, numpy.float64])), label="dtypes")
    elems = st.floats(0.5, 4.0, width=32)
    a = data.draw(hnp.arrays(dts[0], shapes.input_shapes[0], elements=elems), label="a")
    b = data.draw(hnp.arrays(dts[1], shapes.input_shapes[1], elements=elems), label="b")
    uf = getattr(numpy, name)
    xa, xb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    assert_match(uf(xa, xb), uf(a, b), device, what=name)
    assert_match(uf(xa, 1.5), uf(a, 1.5), device, what=f"{name} python scalar")          # weak
    assert_match(uf(numpy.float64(1.5), xa), uf(numpy.float64(1.5), a), device, what=f"{name} numpy scalar")


def test_ufunc_call_forms(device):
    a = numpy.asarray([0.5, 1.5, 2.5, -3.5])
    x = gp.asarray(a, device=device)
    out = gp.zeros(4, device=device)
    r = numpy.exp(x, out=out)
    assert r is out
    assert_match(out, numpy.exp(a), device)
    r = numpy.add(x, x, out)                       # positional out
    assert r is out
    assert_match(out, a + a, device)
    mask = numpy.asarray([True, False, True, False])
    out = gp.full(4, -1.0, device=device)
    want = numpy.full(4, -1.0)
    with numpy.errstate(invalid="ignore"):   # gpk_array computes the masked-out sqrt(-3.5) too
        numpy.sqrt(x, out=out, where=gp.asarray(mask, device=device))
        numpy.sqrt(a, out=want, where=mask)
    assert_match(out, want, device)
    assert_match(numpy.multiply(x, 3, dtype=numpy.float32), numpy.multiply(a, 3, dtype=numpy.float32), device)
    q, r = numpy.divmod(x, 2.0)
    assert_match((q, r), numpy.divmod(a, 2.0), device)
    o1, o2 = gp.empty(4, device=device), gp.empty(4, device=device)
    res = numpy.modf(x, out=(o1, o2))
    assert res[0] is o1 and res[1] is o2
    assert_match((o1, o2), numpy.modf(a), device)
    m, e = numpy.frexp(x)
    assert_match((m, e), numpy.frexp(a), device)


def test_ufunc_methods(device):
    a = numpy.arange(1.0, 13.0).reshape(3, 4)
    x = gp.asarray(a, device=device)
    for name in ("add", "multiply", "maximum", "minimum", "subtract", "logaddexp", "hypot"):
        uf = getattr(numpy, name)
        assert_match(uf.reduce(x), uf.reduce(a), device, what=f"{name}.reduce")
        assert_match(uf.reduce(x, axis=1, keepdims=True), uf.reduce(a, axis=1, keepdims=True), device,
                     what=f"{name}.reduce axis")
        assert_match(uf.accumulate(x, axis=1), uf.accumulate(a, axis=1), device, what=f"{name}.accumulate")
        assert_match(uf.reduceat(x, [0, 2, 3], axis=1), uf.reduceat(a, [0, 2, 3], axis=1), device,
                     what=f"{name}.reduceat")
        assert_match(uf.outer(x[0], x[:, 0]), uf.outer(a[0], a[:, 0]), device, what=f"{name}.outer")
    assert_match(numpy.add.reduce(x, axis=None), numpy.add.reduce(a, axis=None), device)
    assert_match(numpy.add.reduce(x, axis=0, initial=10.0), numpy.add.reduce(a, axis=0, initial=10.0), device)
    w = numpy.asarray([[True, False, True, True]] * 3)
    assert_match(numpy.add.reduce(x, axis=1, where=gp.asarray(w, device=device)),
                 numpy.add.reduce(a, axis=1, where=w), device)
    assert_match(numpy.logical_and.reduce(x > 2, axis=0), numpy.logical_and.reduce(a > 2, axis=0), device)
    out = gp.empty(4, device=device)
    assert numpy.add.reduce(x, axis=0, out=out) is out
    assert_match(out, a.sum(axis=0), device)


@pytest.mark.parametrize("name,dtype", [("add", "float64"), ("add", "int32"), ("maximum", "float32"),
                                        ("minimum", "int64"), ("multiply", "float64"), ("subtract", "int64")])
def test_ufunc_at_accumulates_repeated_indices(device, name, dtype):
    a = numpy.arange(6).astype(dtype)
    idx = [0, 1, 1, 4, 1, 0]
    vals = numpy.asarray([3, 4, 5, 6, 7, 8]).astype(dtype)
    x = gp.asarray(a, device=device)
    assert getattr(numpy, name).at(x, idx, gp.asarray(vals, device=device)) is None
    getattr(numpy, name).at(a, idx, vals)
    assert_match(x, a, device)
    y = gp.asarray(numpy.arange(4.0), device=device)
    numpy.negative.at(y, [0, 2])
    assert_match(y, numpy.asarray([-0.0, 1.0, -2.0, 3.0]), device)


def test_numpy_operators_route_to_arrays(device):
    """NumPy scalars on the left (NumPy hands scalars to comparisons as 0-d arrays): Arrays, as NumPy's values."""
    a = numpy.asarray([1.0, 2.0, 3.0], dtype=numpy.float32)
    x = gp.asarray(a, device=device)
    for got, want in [(numpy.float64(2) * x, numpy.float64(2) * a), (numpy.float32(2) - x, numpy.float32(2) - a),
                      (numpy.float64(2) < x, numpy.float64(2) < a), (numpy.int64(2) == x, numpy.int64(2) == a)]:
        assert isinstance(got, gp.Array) and got.device == device
        assert_match(got, want, device)


def test_numpy_arrays_mix_on_the_cpu_device():
    a = numpy.asarray([1.0, 2.0, 3.0])
    x = gp.asarray([10.0, 20.0, 30.0], device="cpu")
    for got, want in [(a + x, a + 10 * a), (numpy.add(a, x), a + 10 * a), (a < x, a < 10 * a),
                      (numpy.maximum.reduce(x), numpy.float64(30.0))]:
        assert isinstance(got, gp.Array)
        assert_match(got, want)
    h = a.copy()
    h += x                                        # NumPy's in-place operator: writes into the NumPy array
    assert isinstance(h, numpy.ndarray) and h.tolist() == [11.0, 22.0, 33.0]
    o = numpy.empty(3)
    assert numpy.multiply(x, 2, out=o) is o and o.tolist() == [20.0, 40.0, 60.0]
    assert_match(numpy.concatenate([x, a]), numpy.asarray([10.0, 20.0, 30.0, 1.0, 2.0, 3.0]))


def test_numpy_arrays_with_cuda_arrays_raise(device):
    """CuPy's rule: a NumPy array (host memory) with a device array is an error, in ufuncs and functions."""
    if str(device) == "cpu":
        pytest.skip("the CPU device mixes with NumPy arrays")
    a = numpy.asarray([1.0, 2.0, 3.0])
    x = gp.asarray(a, device=device)
    for call in (lambda: a + x, lambda: numpy.add(a, x), lambda: numpy.add(x, 1.0, out=numpy.empty(3)),
                 lambda: numpy.concatenate([x, a]), lambda: numpy.where(x > 1, a, x)):
        with pytest.raises(TypeError, match="NumPy array"):
            call()
    assert_match(numpy.add(x, numpy.float64(1.0)), a + 1.0, device)   # NumPy scalars are values: fine
    assert_match(numpy.add(x, numpy.asarray(1.0)), a + 1.0, device)   # and 0-d NumPy arrays


class _Other:
    """A type of another library that implements both protocols."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("other", ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        return ("other", func.__name__)


def test_other_overriding_types_answer_themselves(device):
    x = gp.ones(3, device=device)
    assert numpy.add(x, _Other()) == ("other", "add")
    assert numpy.concatenate([x, _Other()]) == ("other", "concatenate")


# --- __array_function__ ---------------------------------------------------------------------------------------------
_A = numpy.asarray([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]])
_V = numpy.asarray([3.0, -1.0, 2.0, 2.0, 0.0, 7.5])
FUNCTIONS = {
    "mean": lambda m, a, v: m.mean(a, axis=0),
    "sum": lambda m, a, v: m.sum(a, axis=1, keepdims=True),
    "std": lambda m, a, v: m.std(v, ddof=1),
    "var": lambda m, a, v: m.var(a, axis=0),
    "prod": lambda m, a, v: m.prod(v),
    "max": lambda m, a, v: m.max(a, axis=1),
    "amin": lambda m, a, v: m.amin(a),
    "argmax": lambda m, a, v: m.argmax(v),
    "cumsum": lambda m, a, v: m.cumsum(a, axis=1),
    "concatenate": lambda m, a, v: m.concatenate([a, a], axis=1),
    "stack": lambda m, a, v: m.stack([v, v]),
    "vstack": lambda m, a, v: m.vstack([a, a]),
    "where": lambda m, a, v: m.where(a > 1, a, 0.0),
    "clip": lambda m, a, v: m.clip(v, 0.5, 3.0),
    "sort": lambda m, a, v: m.sort(v),
    "argsort": lambda m, a, v: m.argsort(v, kind="stable"),
    "unique": lambda m, a, v: m.unique(v),
    "reshape": lambda m, a, v: m.reshape(v, (2, 3)),
    "transpose": lambda m, a, v: m.transpose(a),
    "dot": lambda m, a, v: m.dot(a, a),
    "einsum": lambda m, a, v: m.einsum("ij,jk->ik", a, a),
    "outer": lambda m, a, v: m.outer(v, v),
    "zeros_like": lambda m, a, v: m.zeros_like(a),
    "full_like": lambda m, a, v: m.full_like(v, 2.5),
    "empty_like shape": lambda m, a, v: m.empty_like(a, shape=(0, 2)),
    "diff": lambda m, a, v: m.diff(v),
    "pad": lambda m, a, v: m.pad(v, 2),
    "median": lambda m, a, v: m.median(v),
    "percentile": lambda m, a, v: m.percentile(v, 30.0),
    "searchsorted": lambda m, a, v: m.searchsorted(m.sort(v), 2.0),
    "nonzero": lambda m, a, v: m.nonzero(v),
    "count_nonzero": lambda m, a, v: m.count_nonzero(v),
    "round": lambda m, a, v: m.round(v / 3, 2),
    "allclose": lambda m, a, v: m.allclose(a, a),
    "array_equal": lambda m, a, v: m.array_equal(a, a.T),
    "shape": lambda m, a, v: m.shape(a),
    "ndim": lambda m, a, v: m.ndim(a),
    "result_type": lambda m, a, v: m.result_type(a, m.float32),
    "can_cast": lambda m, a, v: m.can_cast(a, m.float32, casting="same_kind"),
    "tril": lambda m, a, v: m.tril(a),
    "trace": lambda m, a, v: m.trace(a),
    "diagonal": lambda m, a, v: m.diagonal(a),
    "linalg.norm": lambda m, a, v: m.linalg.norm(a),
    "linalg.norm axis": lambda m, a, v: m.linalg.norm(a, axis=1),
    "linalg.inv": lambda m, a, v: m.linalg.inv(a),
    "linalg.det": lambda m, a, v: m.linalg.det(a),
    "linalg.solve": lambda m, a, v: m.linalg.solve(a, v[:3]),
    "linalg.cholesky": lambda m, a, v: m.linalg.cholesky(a),
    "linalg.eigvalsh": lambda m, a, v: m.linalg.eigvalsh(a),
    "linalg.eigvalsh U": lambda m, a, v: m.linalg.eigvalsh(m.triu(a), UPLO="U"),
    "linalg.eigh U values": lambda m, a, v: m.linalg.eigh(m.triu(a), "U")[0],
    "linalg.qr r": lambda m, a, v: m.abs(m.linalg.qr(a)[1]),
    "fft.fft n": lambda m, a, v: m.fft.fft(v, 8),
    "fft.rfft": lambda m, a, v: m.fft.rfft(v, norm="ortho"),
    "fft.ifft": lambda m, a, v: m.fft.ifft(v, None, -1, None),
    "fft.fft2": lambda m, a, v: m.fft.fft2(a),
    "fft.irfft2": lambda m, a, v: m.fft.irfft2(a),
    "fft.fftn": lambda m, a, v: m.fft.fftn(a, s=(4, 4), axes=(0, 1)),
    "fft.fftshift": lambda m, a, v: m.fft.fftshift(v),
}


@pytest.mark.parametrize("case", sorted(FUNCTIONS))
def test_numpy_functions_on_arrays(device, case):
    f = FUNCTIONS[case]
    want = f(numpy, _A, _V)
    got = f(numpy, gp.asarray(_A, device=device), gp.asarray(_V, device=device))
    for r in (got if isinstance(got, tuple) else (got,)):
        if isinstance(r, gp.Array):
            assert r.device == device, case
        else:
            assert not isinstance(r, numpy.ndarray), f"{case}: a NumPy array came back"
    if case.startswith("empty_like"):
        assert got.shape == want.shape and got.dtype == want.dtype
        return
    if case in ("shape", "ndim", "allclose", "array_equal", "can_cast"):
        assert got == want
        return
    if case == "result_type":
        assert numpy.dtype(got) == want
        return
    assert_match(got, want, device, rtol=1e-10 if str(device) == "cpu" else 1e-9, what=case)


def test_like_creates_on_the_like_arrays_device(device):
    x = gp.ones(2, device=device)
    for got, want in [(numpy.zeros(3, like=x), numpy.zeros(3)), (numpy.asarray([1, 2], like=x), numpy.asarray([1, 2])),
                      (numpy.arange(4, like=x), numpy.arange(4)), (numpy.full(2, 7.0, like=x), numpy.full(2, 7.0)),
                      (numpy.array([[1.0]], like=x), numpy.array([[1.0]]))]:
        assert isinstance(got, gp.Array) and got.device == device
        assert_match(got, want, device)


def test_functions_gpk_array_lacks_run_on_numpy_on_the_cpu():
    """nansum(where=), nanprod(where=) and nanmean(where=) (arguments ours lack): NumPy computes on the Arrays'
    memory; the results are Arrays on the CPU device; out= gives back the caller's Array."""
    v = numpy.asarray([0.0, 1.0, 2.0, 0.0])
    x = gp.asarray(v, device="cpu")
    assert_match(numpy.nansum(x, where=x > 0.5), numpy.nansum(v, where=v > 0.5))
    assert_match(numpy.nanprod(x, where=x > 0.5), numpy.nanprod(v, where=v > 0.5))
    assert_match(numpy.nanmean(x, where=x > 0.5), numpy.nanmean(v, where=v > 0.5))
    out = gp.empty(4, device="cpu")
    assert numpy.cumulative_sum(x, out=out) is out
    assert_match(out, numpy.cumulative_sum(v))
    # a ufunc of another library (scipy.special.erf is a NumPy ufunc): SciPy computes it on the CPU device
    import scipy.special._ufuncs as su
    got = su.erf(x)
    assert isinstance(got, gp.Array)
    assert_match(got, su.erf(v))


@pytest.mark.parametrize("call,name", [
    (lambda x: numpy.is_busday(x), "numpy.is_busday"),
    (lambda x: numpy.nansum(x, where=x > 0.5), "numpy.nansum"),
    (lambda x: numpy.nanmean(x, where=x > 0.5), "numpy.nanmean"),
    (lambda x: numpy.frompyfunc(lambda a: a, 1, 1)(x), "numpy.<lambda>"),
])
def test_what_gpk_array_lacks_raises_on_cuda_naming_it(device, call, name):
    """Bad input (issue 22): a NumPy function gpk_array does not implement, on a CUDA array: TypeError naming the
    function and the way out, never an implicit device-to-host copy."""
    if str(device) == "cpu":
        pytest.skip("the CPU device falls back to NumPy")
    x = gp.asarray([0.0, 1.0, 2.0, 0.0], device=device)
    with pytest.raises(TypeError) as err:
        call(x)
    msg = str(err.value)
    assert name in msg and 'x.to_device("cpu")' in msg and str(device) in msg


def test_cuda_fallback_never_copies_to_the_host(device, monkeypatch):
    from .fakegpu import FakeCudaArray
    x = gp.asarray([0.0, 1.0, 2.0, 0.0], device=device)
    if not isinstance(x._data, FakeCudaArray):
        pytest.skip("the stand-in CUDA device (its arrays' get() can be watched)")
    calls = []
    monkeypatch.setattr(type(x._data), "get", lambda self, *a, **k: calls.append(1), raising=False)
    with pytest.raises(TypeError):
        numpy.is_busday(x)
    with pytest.raises(TypeError):
        numpy.nanmean(x, where=x > 0.5)
    assert calls == []


def test_results_are_arrays_the_same_as_the_namespaces():
    """The protocols call the same implementations as gpk_array's namespace: same values for the same call."""
    x = gp.asarray(_A, device="cpu")
    assert_match(numpy.mean(x, axis=1), to_numpy(gp.mean(x, axis=1)))
    assert_match(numpy.exp(x), to_numpy(gp.exp(x)))
    assert_match(numpy.linalg.norm(x, axis=0), to_numpy(gp.linalg.norm(x, axis=0)))


def test_tolerance_arrays_pass_through_isclose(device):
    """SciPy's tests call numpy.isclose/allclose with an Array atol=: no recursion, NumPy's values."""
    a = numpy.asarray([1.0, 1.05, 2.0])
    x = gp.asarray(a, device=device)
    tol = gp.asarray(0.1, device=device)
    assert_match(numpy.isclose(x, gp.asarray([1.0, 1.0, 1.0], device=device), atol=tol),
                 numpy.isclose(a, numpy.ones(3), atol=0.1), device)
    assert numpy.allclose(x, x, rtol=tol) is True


def test_an_implementation_handing_arrays_back_to_numpy_does_not_recurse(device, monkeypatch):
    """Our implementation of a NumPy function that calls the same NumPy function on Arrays again gets NumPy's
    implementation there (CPU device), or HostOnlyError (CUDA), never a RecursionError."""
    from gpk_array import _protocols

    def reentrant(a, axis=None, out=None, keepdims=False):
        return numpy.ptp(a, axis=axis)            # back to NumPy with the Array itself
    monkeypatch.setitem(_protocols._FUNCS, numpy.ptp, (reentrant, 4, frozenset({"a", "axis", "out", "keepdims"}),
                                                       False))
    a = numpy.asarray([3.0, -1.0, 4.0])
    x = gp.asarray(a, device=device)
    if str(device) == "cpu":
        assert_match(numpy.ptp(x), numpy.ptp(a))
    else:
        with pytest.raises(gp.HostOnlyError):
            numpy.ptp(x)
