"""The namespace's elementwise functions and reductions on a CUDA device through gpk_array's own kernels
(gpk_array/_gpu.py routes arrays of OWN_KERNELS_MIN elements or more there; lowered to 0 here so that small odd
shapes, broadcasting and strided views take them too), against NumPy on the same data."""
import numpy as np
import pytest

import gpk_array as gp
from gpk_array import _gpu

pytestmark = [pytest.mark.gpu]


def _gpu_ok():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


if not _gpu_ok():
    pytest.skip("no CUDA GPU", allow_module_level=True)


@pytest.fixture
def routed(monkeypatch):
    """Every size goes to our kernels; counts the calls that did."""
    calls = {"binary": 0, "unary": 0, "reduce": 0}
    for name in calls:
        real = getattr(_gpu, name)

        def spy(*a, _real=real, _name=name, **k):
            r = _real(*a, **k)
            calls[_name] += r is not None
            return r
        monkeypatch.setattr(_gpu, name, spy)
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)
    return calls


DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int8", "uint16", "int64", "bool"]


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _data(rng, shape, dt):
    d = _np_dtype(dt)
    if d.kind == "b":
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(d)
    x = (rng.standard_normal(shape) * 3).astype(d)
    return x


def _dev(a):
    return gp.asarray(a, device="cuda:0") if a.dtype != _np_dtype("bfloat16") else \
        gp.astype(gp.asarray(a.astype(np.float32), device="cuda:0"), gp.bfloat16)


def _host(x):
    x = gp.astype(x, gp.float32) if x.dtype == gp.bfloat16 else x
    return np.asarray(x.to_device("cpu"))


def _close(got, want, dt, exact):
    want = np.asarray(want)
    if want.dtype == _np_dtype("bfloat16"):
        want = want.astype(np.float32)
    if exact:
        assert got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True), (got, want)
    else:  # relative to the largest value: sums near zero carry the rounding of their large terms
        tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5}.get(dt, 1e-12)
        g, w = got.astype(np.float64), want.astype(np.float64)
        assert g.shape == w.shape
        assert np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(np.isinf(g), np.isinf(w))
        fin = np.isfinite(w)
        scale = max(1.0, float(np.abs(w[fin]).max())) if fin.any() else 1.0
        assert float(np.abs(g[fin] - w[fin]).max(initial=0.0)) <= tol * scale, (g, w)


SHAPES = [((1001,), (1001,)), ((37, 65), (65,)), ((5, 1, 7), (1, 3, 7)), ((3, 4), ())]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and"]
NP_NAMES = {"pow": "power"}


@pytest.mark.parametrize("dt", DTYPES)
def test_binary(routed, dt):
    rng = np.random.default_rng(1)
    d = _np_dtype(dt)
    for sa, sb in SHAPES:
        a, b = _data(rng, sa, dt), _data(rng, sb, dt)
        if d.kind == "f" and a.size >= 3:
            a.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
        for op in BINARY:
            np_fn = getattr(np, NP_NAMES.get(op, op))
            try:
                with np.errstate(all="ignore"):
                    want = np_fn(a, b)
            except (TypeError, ValueError):  # e.g. integers to negative integer powers
                continue
            if op == "divide" and d.kind != "f" or op == "pow" and d.kind != "f":
                continue  # integer divide/pow promote or differ by design: not our kernels' business
            if op.startswith("logical") and d.kind != "b" or op.startswith("bitwise") and d.kind == "f":
                continue
            got = _host(getattr(gp, op)(_dev(a), _dev(b)))
            _close(got, want, dt, exact=op != "pow")  # IEEE operations, correctly rounded on both sides
    assert routed["binary"] > 0


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "float64"])
def test_unary_and_strided(routed, dt):
    rng = np.random.default_rng(2)
    a = _data(rng, (33, 70), dt)
    x = _dev(a)
    for op, np_fn in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin), ("negative", np.negative),
                      ("abs", np.abs), ("square", np.square), ("tanh", np.tanh), ("log1p", np.log1p)):
        with np.errstate(all="ignore"):
            want = np_fn(a.astype(np.float64)).astype(a.dtype)
        _close(_host(getattr(gp, op)(x)), want, dt, exact=op in ("negative", "abs"))
        _close(_host(getattr(gp, op)(x.T)), want.T, dt, exact=op in ("negative", "abs"))  # a strided view
    assert routed["unary"] > 0


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "float64", "int32", "uint8", "bool"])
def test_reductions(routed, dt):
    rng = np.random.default_rng(3)
    a = _data(rng, (17, 33, 9), dt)
    d = _np_dtype(dt)
    real = dt.startswith(("float", "bfloat"))
    x = _dev(a)
    # the oracle: float64 sums of floats (ours accumulate half precision in float32), the standard's default
    # accumulators for integers (int64, uint64 for unsigned: wrapping)
    wide = a.astype(np.float64) if real else a.astype(np.uint64 if d.kind == "u" else np.int64)
    for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
        for keepdims in (False, True):
            for op in ("sum", "prod", "max", "min", "mean", "var", "std"):
                if op in ("mean", "var", "std") and not real or op == "prod" and d.kind == "b":
                    continue
                kw = {"correction": 1} if op in ("var", "std") else {}
                got = getattr(gp, op)(x, axis=axis, keepdims=keepdims, **kw)
                np_kw = {"ddof": 1} if kw else {}
                with np.errstate(over="ignore"):
                    want = getattr(np, op)(a if op in ("max", "min") else wide, axis=axis, keepdims=keepdims,
                                           **np_kw)
                if real:
                    want = np.asarray(want).astype(d)
                    assert got.dtype == getattr(gp, dt)
                _close(_host(got), want, dt, exact=not real or op in ("max", "min"))
    assert routed["reduce"] > 0
