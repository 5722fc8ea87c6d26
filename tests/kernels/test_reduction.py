"""GPU tests of gpk_array._kernels.reduction against float64 NumPy references.

Covers full, row (warp and block, split and unsplit), column (small and wide inner, split K) and
batched-column reductions, multi-axis and non-adjacent axes (copy path), F-ordered and strided
inputs, misaligned row starts, empty arrays, keepdims, NaN and tie semantics, every dtype."""

import zlib

import numpy as np
import pytest


from tests.kernels._gpu_common import BF16, BOOL, FLOAT_DTYPES, INT_DTYPES, RTOL, gpu_marks  # noqa: E402,F401

pytestmark = gpu_marks()

# (shape, axis) cases; each exercises a different plan
CASES = [
    ((1,), None), ((7,), None), ((1000,), None), ((4097,), None), ((1 << 20) + 5, None),
    ((64, 1000), 1),          # row, warp per row
    ((8, 100003), 1),         # row, block per segment, split rows
    ((3, 5000), -1),          # row, block mode
    ((100000, 3), 0),         # column, narrow inner, split K
    ((1000, 512), 0),         # column, wide inner
    ((5, 3, 7), 1),           # batched column
    ((5, 3, 7), (0, 2)),      # non-adjacent axes: copy path
    ((5, 3, 7), (1, 2)),      # row over two axes
    ((5, 3, 7), (0, 1)),      # column over two axes
    ((3, 5), None),
    ((1 << 16, 4), 1),        # short rows: column kernel, thread per row
    ((1, 1000, 1), 1),        # extent-1 dims around the reduced axis
    ((2, 3, 1), 2),           # reducing an extent-1 axis
]


def _red():
    from gpk_array._kernels import reduction
    return reduction


def _seed(*parts):
    return zlib.crc32(repr(parts).encode())


def _rand(shape, dtype, rng, lo=-4.0, hi=4.0):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.3)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo_i = max(info.min, -50)
        return np.asarray(rng.integers(lo_i, 50, size=shape, dtype=dtype, endpoint=True))
    return np.asarray(rng.uniform(lo, hi, size=shape)).astype(dtype)


def _to_gpu(x):
    import cupy
    return cupy.asarray(np.array(x, order="C"))  # (np.ascontiguousarray would make 0-d arrays 1-d)


def _host(x):
    return np.asarray(x.get())


def _f64(x):
    return np.asarray(x).astype(np.float64)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis % ndim,)
    return tuple(a % ndim for a in axis)


def _check_sum_like(op, got, x, axis, dtype, keepdims=False):
    x64 = _f64(x)
    name = np.dtype(dtype).name
    rtol = RTOL[name]
    k = 1
    for a in _axes(axis, x.ndim):
        k *= x.shape[a]
    if op == "sum":
        ref = x64.sum(axis=axis, keepdims=keepdims)
        scale = np.abs(x64).sum(axis=axis, keepdims=keepdims)
    elif op == "mean":
        ref = x64.mean(axis=axis, keepdims=keepdims)
        scale = np.abs(x64).mean(axis=axis, keepdims=keepdims)
    else:  # prod
        ref = x64.prod(axis=axis, keepdims=keepdims)
        scale = np.abs(ref) * max(1, k) ** 0.5
    tol = rtol * (np.abs(ref) + scale) + 1e-30
    err = np.abs(_f64(got) - ref)
    assert got.shape == np.shape(ref)
    assert np.all(err <= tol), f"{op} {x.shape} axis={axis}: max err {np.max(err)} tol {np.min(tol)}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_float_sum_mean_prod(op, dtype):
    red = _red()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape, axis in CASES:
        if op == "prod":
            x = _rand(shape, dtype, rng, 0.999, 1.001)
        else:
            x = _rand(shape, dtype, rng)
        got = _host(red.reduce(op, _to_gpu(x), axis))
        assert got.dtype == dtype
        _check_sum_like(op, got, x, axis, dtype)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["var", "std"])
def test_float_var_std(op, dtype):
    red = _red()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape, axis in CASES:
        x = (_rand(shape, np.float64, rng) + 3.0).astype(dtype)  # non-zero mean
        for ddof in (0, 1):
            got = _host(red.reduce(op, _to_gpu(x), axis, ddof=ddof))
            with np.errstate(all="ignore"):
                ref = getattr(np, op)(_f64(x), axis=axis, ddof=ddof)
            np.testing.assert_allclose(_f64(got), ref, rtol=4 * RTOL[dtype.name], atol=1e-6 if dtype.itemsize > 2
                                       else RTOL[dtype.name], equal_nan=True)


def test_var_large_mean_small_spread():
    """The corrected two-pass form: a rounded center does not bias the result."""
    red = _red()
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float16):
        x = (1000.0 + rng.standard_normal(100000)).astype(dt)
        got = float(_host(red.reduce("var", _to_gpu(x))))
        ref = float(np.var(x.astype(np.float64)))
        assert abs(got - ref) <= 2e-2 * ref, (dt, got, ref)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [BOOL], ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(op, dtype):
    red = _red()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape, axis in CASES:
        x = _rand(shape, dtype, rng)
        got = _host(red.reduce(op, _to_gpu(x), axis))
        ref = getattr(np, "a" + op)(x if dtype != BF16 else _f64(x), axis=axis)
        assert got.dtype == dtype
        np.testing.assert_array_equal(_f64(got) if dtype == BF16 else got, ref)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [BOOL], ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dtype):
    red = _red()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape, axis in CASES:
        if isinstance(axis, tuple):
            continue
        x = _rand(shape, dtype, rng)
        if dtype.kind in "f" or dtype == BF16:
            # ties: quantize
            x = np.round(_f64(x) * 2).astype(dtype)
        got = _host(red.reduce(op, _to_gpu(x), axis))
        ref = getattr(np, op)(x if dtype != BF16 else _f64(x), axis=axis)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", INT_DTYPES + [BOOL], ids=lambda d: d.name)
def test_int_sum_prod(dtype):
    red = _red()
    rng = np.random.default_rng(_seed("isum", dtype.name))
    for shape, axis in CASES:
        x = _rand(shape, dtype, rng)
        got = _host(red.reduce("sum", _to_gpu(x), axis))
        acc = np.uint64 if dtype.kind == "u" else np.int64
        ref = np.sum(x, axis=axis, dtype=acc)
        assert got.dtype == acc
        np.testing.assert_array_equal(got, ref)
        if dtype != BOOL:
            xs = np.asarray(np.clip(x, -3, 3) if dtype.kind == "i" else np.minimum(x, 3)).astype(dtype)
            gotp = _host(red.reduce("prod", _to_gpu(xs), axis))
            with np.errstate(all="ignore"):
                refp = np.prod(xs, axis=axis, dtype=acc)
            np.testing.assert_array_equal(gotp, refp)


def test_int64_exact_large_values():
    red = _red()
    x = np.array([2 ** 62, 2 ** 62, -(2 ** 62), 5, 2 ** 40], dtype=np.int64)
    assert int(_host(red.reduce("sum", _to_gpu(x)))) == int(np.sum(x))
    u = np.array([2 ** 63, 2 ** 62, 7], dtype=np.uint64)
    assert int(_host(red.reduce("sum", _to_gpu(u)))) == int(np.sum(u))


def test_any_all():
    red = _red()
    rng = np.random.default_rng(1)
    for shape, axis in CASES:
        x = _rand(shape, BOOL, rng)
        np.testing.assert_array_equal(_host(red.reduce("any", _to_gpu(x), axis)), np.any(x, axis=axis))
        np.testing.assert_array_equal(_host(red.reduce("all", _to_gpu(x), axis)), np.all(x, axis=axis))
        ones = np.ones(shape, dtype=bool)
        np.testing.assert_array_equal(_host(red.reduce("all", _to_gpu(ones), axis)), np.all(ones, axis=axis))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_semantics():
    red = _red()
    for dt in FLOAT_DTYPES:
        x = np.zeros((4, 300), dtype=np.float64)
        x[1, 17] = np.nan
        x[1, 200] = np.nan
        x[2, 5] = np.inf
        x[3, :] = -np.inf
        x = x.astype(dt)
        for op in ("max", "min", "argmax", "argmin", "sum"):
            for axis in (None, 1):
                got = _host(red.reduce(op, _to_gpu(x), axis))
                with np.errstate(all="ignore"):
                    ref = getattr(np, "a" + op if op in ("max", "min") else op)(_f64(x), axis=axis)
                np.testing.assert_array_equal(_f64(got), _f64(ref))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int32)] + ([BF16] if BF16 else []),
                         ids=lambda d: d.name)
def test_layouts(dtype):
    """F-ordered, strided, transposed, and misaligned inputs; keepdims."""
    import cupy
    red = _red()
    rng = np.random.default_rng(3)
    base = _rand((50, 6000), dtype, rng)
    g = _to_gpu(base)
    views = [
        (cupy.asfortranarray(g), np.asfortranarray(base)),
        (g[:, ::3], base[:, ::3]),
        (g.T, base.T),
        (g[:, 1:], base[:, 1:]),        # every row starts misaligned
        (g.reshape(-1)[3:].reshape(-1), base.reshape(-1)[3:]),
        (g[::-1, 7:], base[::-1, 7:]),
    ]
    for gv, hv in views:
        for axis in ([None, 0, 1] if hv.ndim == 2 else [None, 0]):
            for keepdims in (False, True):
                got = _host(red.reduce("max", gv, axis, keepdims=keepdims))
                ref = np.amax(_f64(hv), axis=axis, keepdims=keepdims)
                assert got.shape == ref.shape
                np.testing.assert_array_equal(_f64(got), ref)
                gs = _host(red.reduce("sum", gv, axis, keepdims=keepdims))
                if dtype.kind in "iu":
                    np.testing.assert_array_equal(gs, np.sum(hv, axis=axis, keepdims=keepdims, dtype=np.int64))
                else:
                    _check_sum_like("sum", gs, hv, axis, dtype, keepdims=keepdims)
        ga = _host(red.reduce("argmax", gv, None))
        assert int(ga) == int(np.argmax(_f64(hv)))


def test_empty_and_identities():
    import cupy
    red = _red()
    e = cupy.empty((0,), cupy.float32)
    assert float(_host(red.reduce("sum", e))) == 0.0
    assert float(_host(red.reduce("prod", e))) == 1.0
    assert np.isnan(_host(red.reduce("mean", e)))
    with pytest.raises(ValueError):
        red.reduce("max", e)
    with pytest.raises(ValueError):
        red.reduce("argmax", e)
    z = cupy.empty((0, 5), cupy.float32)
    np.testing.assert_array_equal(_host(red.reduce("sum", z, 0)), np.zeros(5, np.float32))
    assert red.reduce("max", z, 1).shape == (0,)
    assert red.reduce("sum", cupy.empty((5, 0), cupy.int8), 0).shape == (0,)
    assert bool(_host(red.reduce("all", cupy.empty((0,), cupy.bool_)))) is True
    assert bool(_host(red.reduce("any", cupy.empty((0,), cupy.bool_)))) is False
    assert _host(red.reduce("sum", cupy.ones((2, 3, 4), cupy.float32), (0, 2), keepdims=True)).shape == (1, 3, 1)
    with pytest.raises(NotImplementedError):
        red.reduce("mean", cupy.ones(3, cupy.int32))
    with pytest.raises(NotImplementedError):
        red.reduce("sum", cupy.ones(3, cupy.complex64))
    with pytest.raises(NotImplementedError):
        red.reduce("argmax", cupy.ones((3, 3), cupy.float32), (0, 1))


def test_runs_on_current_stream_and_is_deterministic():
    import cupy
    red = _red()
    rng = np.random.default_rng(0)
    x = _to_gpu(rng.standard_normal(1 << 22).astype(np.float32))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        r1 = red.reduce("sum", x)
        r2 = red.reduce("sum", x)
        m = red.reduce("mean", x.reshape(1024, -1), 1)
    s.synchronize()
    assert _host(r1).tobytes() == _host(r2).tobytes()
    np.testing.assert_allclose(_host(m), _host(x).reshape(1024, -1).astype(np.float64).mean(1), rtol=1e-4,
                               atol=1e-6)


def test_large_full_sum():
    red = _red()
    import cupy
    n = (1 << 26) + 3
    x = cupy.ones(n, dtype=cupy.float32)
    # exact integer partial sums, then the one rounding of the float32 result (2**26 + 3 is not a float32)
    assert float(_host(red.reduce("sum", x))) == float(np.float32(n))
    h = cupy.ones(60000, dtype=cupy.float16)
    assert float(_host(red.reduce("sum", h))) == float(np.float16(60000))
    b = cupy.ones(n, dtype=cupy.bool_)
    assert int(_host(red.reduce("sum", b))) == n


@pytest.mark.parametrize("dtype", [np.float16] + ([BF16] if BF16 else []), ids=lambda d: np.dtype(d).name)
def test_warp_rows_with_fewer_warps_than_rows(dtype, monkeypatch):
    """16-bit warp-mode rows with half_warp_waves = 1 (a grid of one wave: on an H200 about 33,000 warps for 70,000
    rows, each striding over rows): the same bits as a warp per row (half_warp_waves = 0), and sum / max / argmax /
    mean against float64 NumPy."""
    red = _red()
    rng = np.random.default_rng(_seed("warp_rows", np.dtype(dtype).name))
    xh = _rand((70000, 96), dtype, rng)
    x = _to_gpu(xh)
    x64 = xh.astype(np.float64)
    for op in ("sum", "max", "argmax", "mean"):
        monkeypatch.setitem(red.CONFIG, "half_warp_waves", 0)
        a = red.reduce(op, x, axis=1)
        monkeypatch.setitem(red.CONFIG, "half_warp_waves", 1)
        b = red.reduce(op, x, axis=1)
        ha, hb = _host(a), _host(b)
        assert np.array_equal(ha.view(np.uint8), hb.view(np.uint8)), op
        got = hb.astype(np.float64)
        if op == "argmax":
            np.testing.assert_array_equal(got, x64.argmax(axis=1))
        else:
            want = {"sum": x64.sum(axis=1), "max": x64.max(axis=1), "mean": x64.mean(axis=1)}[op]
            # sums: float32 accumulation, then one rounding to the dtype; means near 0 land among float16's
            # subnormals (spacing 6e-8), hence the absolute floor
            atol = {"sum": 0.05, "max": 0.0, "mean": 1e-6}[op]
            np.testing.assert_allclose(got, want, rtol=RTOL[np.dtype(dtype).name], atol=atol)
