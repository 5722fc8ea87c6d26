"""GPU tests of the CUTLASS SM80 GEMM instances (gpk_array._kernels.gemm) against float64 NumPy products of the same
rounded inputs.

Covers both instances of both dtypes (forced with key=) on a sweep of M in (1, 3, 17, 1000) x N, K in (8, 24, 768,
3072, 1000) plus 2048^3, alpha/beta with C (and C aliasing the output), strided and misaligned operands, a
non-default stream and a CUDA-graph capture on it, the automatic choice, the refusals (K=60, float32, misaligned:
None, or ValueError with key=), and the GPK_GEMM=cutlass routing of gpk_array.linear / matmul.

Tolerance, relative to max|ref|: float16 2e-3, bfloat16 1e-2. Why: the products of two float16/bfloat16 values are
exact in float32 and accumulate in float32 (errors of order 2^-24 of the partial sums: below 1e-5 of max|ref| for
these sizes), so the error is dominated by the one rounding of D to the output type, at most half an ulp: 2^-11
(float16) and 2^-8 (bfloat16) of max|ref|, twice that where a bias is added after the GEMM. The bounds sit 2.5x to 4x
above that; a wrong tile, a lost K tail or a float16 accumulator misses them by far. (test_blas_gpu.py's 5e-2 / 8e-2
are looser than needed here.)"""

import numpy as np
import pytest

from tests.kernels._gpu_common import BF16, gpu_marks

pytestmark = gpu_marks()

DTYPES = [np.dtype(np.float16)] + ([BF16] if BF16 is not None else [])
TOL = {"float16": 2e-3, "bfloat16": 1e-2}
SIZES_M = (1, 3, 17, 1000)
SIZES_NK = (8, 24, 768, 3072, 1000)
SHAPES = [(m, n, k) for m in SIZES_M for n in SIZES_NK for k in SIZES_NK] + [(2048, 2048, 2048)]


def _code(dt):
    return "f16" if dt.name == "float16" else "bf16"


def _keys(dt):
    return [f"gemm/{_code(dt)}/tn/{fam}/sm80" for fam in ("small", "large")]


def _rand(rng, shape, dt, scale=1.0):
    return (rng.uniform(-1, 1, shape) * scale).astype(dt)


def _f64(a):
    return np.asarray(a.get() if hasattr(a, "get") else a).astype(np.float64)


def _bits(a):
    """The raw 16-bit patterns of a float16/bfloat16 array, on the host (exact comparisons without CuPy kernels)."""
    return np.asarray(a.get() if hasattr(a, "get") else a).view(np.uint16)


def _check(got, ref, dt, what=""):
    got = _f64(got)
    assert got.shape == ref.shape, what
    assert np.isfinite(got).all(), what
    scale = max(float(np.abs(ref).max()), 1e-30)
    err = float(np.abs(got - ref).max()) / scale
    assert err <= TOL[dt.name], f"{what}: max error {err:.3g} of max|ref| (tolerance {TOL[dt.name]})"


@pytest.fixture(scope="module")
def gemm():
    from gpk_array._kernels import gemm, loader
    if int(loader.device_arch().rstrip("af")) < 80:
        pytest.skip("the SM80 instances need compute capability 8.0 or later")
    return gemm


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sweep_both_instances(gemm, shape, dt):
    import cupy
    m, n, k = shape
    rng = np.random.default_rng(m * 1_000_003 + n * 1009 + k)
    x, w = _rand(rng, (m, k), dt), _rand(rng, (n, k), dt)
    ref = _f64(x) @ _f64(w).T
    gx, gw = cupy.asarray(x), cupy.asarray(w)
    for key in _keys(dt):
        y = gemm.linear_tn(gx, gw, key=key)
        assert y.dtype == dt and y.shape == (m, n) and y.flags.c_contiguous
        _check(y, ref, dt, f"{key} {shape}")
    auto = gemm.linear_tn(gx, gw)
    assert auto is not None
    _check(auto, ref, dt, f"auto {shape}")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_alpha_beta_with_c_and_in_place(gemm, dt):
    import cupy
    rng = np.random.default_rng(1)
    m, n, k = 300, 264, 776
    x, w, c = _rand(rng, (m, k), dt), _rand(rng, (n, k), dt), _rand(rng, (m, n), dt, 8.0)
    for key in _keys(dt):
        for alpha, beta in ((1.0, 1.0), (0.5, -2.0), (-1.5, 0.25), (2.0, 0.0)):
            ref = alpha * (_f64(x) @ _f64(w).T) + beta * _f64(c)
            gc = cupy.asarray(c)
            y = gemm.linear_tn(cupy.asarray(x), cupy.asarray(w), alpha=alpha, beta=beta, c=gc, key=key)
            _check(y, ref, dt, f"{key} alpha={alpha} beta={beta}")
            assert np.array_equal(_bits(gc), _bits(c))  # c untouched
            d = cupy.asarray(c)  # D = alpha * x @ w.T + beta * D, in place
            r = gemm.linear_tn(cupy.asarray(x), cupy.asarray(w), out=d, alpha=alpha, beta=beta, c=d, key=key)
            assert r is d
            _check(d, ref, dt, f"{key} in place alpha={alpha} beta={beta}")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_beta_zero_ignores_nan_in_out(gemm, dt):
    import cupy
    rng = np.random.default_rng(2)
    x, w = _rand(rng, (70, 96), dt), _rand(rng, (40, 96), dt)
    for key in _keys(dt):
        out = cupy.asarray(np.full((70, 40), np.nan, dtype=dt))
        gemm.linear_tn(cupy.asarray(x), cupy.asarray(w), out=out, key=key)
        _check(out, _f64(x) @ _f64(w).T, dt, key)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_strided_operands_and_out(gemm, dt):
    import cupy
    rng = np.random.default_rng(3)
    m, n, k = 129, 136, 264
    xb, wb = cupy.asarray(_rand(rng, (m, k + 16), dt)), cupy.asarray(_rand(rng, (n, k + 40), dt))
    x, w = xb[:, 8:8 + k], wb[:, :k]                      # row strides k+16, k+40; 16-byte aligned starts
    ref = _f64(x) @ _f64(w).T
    for key in _keys(dt):
        ob = cupy.zeros((m, n + 24), dtype=dt)
        y = gemm.linear_tn(x, w, out=ob[:, 8:8 + n], key=key)
        _check(y, ref, dt, key)
        ob = _bits(ob)
        assert not ob[:, :8].any() and not ob[:, 8 + n:].any()  # nothing written outside
        row = gemm.linear_tn(x[5:6], w, key=key)            # one row of a strided view
        _check(row, ref[5:6], dt, key)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_refusals(gemm, dt):
    import cupy
    rng = np.random.default_rng(4)
    key = _keys(dt)[0]
    x60, w60 = cupy.asarray(_rand(rng, (16, 60), dt)), cupy.asarray(_rand(rng, (16, 60), dt))
    assert gemm.linear_tn(x60, w60) is None
    with pytest.raises(ValueError):
        gemm.linear_tn(x60, w60, key=key)
    x, w = cupy.asarray(_rand(rng, (16, 72), dt)), cupy.asarray(_rand(rng, (16, 72), dt))
    mis = x[:, 1:65]                                         # 2-byte offset: not 16-byte aligned
    assert gemm.linear_tn(mis, w[:, :64]) is None
    with pytest.raises(ValueError):
        gemm.linear_tn(mis, w[:, :64], key=key)
    assert gemm.linear_tn(x.T.copy().T, w) is None           # column-major x
    assert gemm.linear_tn(x.astype(cupy.float32), w.astype(cupy.float32)) is None
    assert gemm.linear_tn(x[:0], w) is None
    with pytest.raises(ValueError):
        gemm.linear_tn(x, w[:, :64])                         # K mismatch
    with pytest.raises(ValueError):
        gemm.linear_tn(x, w, beta=1.0)                       # beta without c
    assert gemm.linear_tn(x, w, out=x[:, :16]) is None       # out overlapping x
    with pytest.raises(ValueError):                         # an instance of the other dtype
        gemm.linear_tn(x, w, key=f"gemm/{'f16' if dt.name == 'bfloat16' else 'bf16'}/tn/small/sm80")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_shared_memory_attribute_and_selection_on_this_device(gemm, dt):
    from gpk_array._kernels import loader
    arch = loader.device_arch()
    assert gemm.select(dt, "tn", 4096, 4096, 4096, arch) is not None
    assert gemm.select(dt, "tn", 1, 3072, 768, arch) is not None
    for key in _keys(dt):
        fn, limit = gemm._function(key, gemm.REGISTRY[key])
        smem = gemm.REGISTRY[key]["host_params"]["smem_bytes"]
        if smem <= limit:
            assert fn.max_dynamic_shared_size_bytes == smem


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_non_default_stream_and_graph_capture(gemm, dt):
    import cupy
    rng = np.random.default_rng(5)
    m, n, k = 513, 768, 1000
    x, w = _rand(rng, (m, k), dt), _rand(rng, (n, k), dt)
    ref = _f64(x) @ _f64(w).T
    for key in _keys(dt):
        gx, gw = cupy.asarray(x), cupy.asarray(w)
        y0 = gemm.linear_tn(gx, gw, key=key)
        cupy.cuda.Device().synchronize()
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            y1 = gemm.linear_tn(gx, gw, key=key)
            s.synchronize()
        assert np.array_equal(_bits(y0), _bits(y1))  # same kernel, same grid: bitwise the same
        # Captured on s (a launch elsewhere would break the capture); replayed after new inputs are written in place
        out = cupy.empty((m, n), dtype=dt)
        with s:
            gemm.linear_tn(gx, gw, out=out, key=key)  # loads the kernel outside the capture
            s.synchronize()
            s.begin_capture()
            gemm.linear_tn(gx, gw, out=out, key=key)
            graph = s.end_capture()
        x2, w2 = _rand(rng, (m, k), dt), _rand(rng, (n, k), dt)
        gx.set(x2)
        gw.set(w2)
        out.data.memset(0, out.nbytes)
        cupy.cuda.Device().synchronize()
        graph.launch(stream=s)
        s.synchronize()
        _check(out, _f64(x2) @ _f64(w2).T, dt, f"{key} graph replay")
        _check(y1, ref, dt, f"{key} stream")


# --- GPK_GEMM=cutlass routing through gpk_array ----------------------------------------------------------------

@pytest.fixture
def routed(monkeypatch, gemm):
    """GPK_GEMM=cutlass in effect, with a count of the calls that reached gemm.linear_tn and how many it ran."""
    from gpk_array import _gpu
    calls = {"n": 0, "ran": 0}
    real = gemm.linear_tn

    def spy(*a, **kw):
        calls["n"] += 1
        y = real(*a, **kw)
        calls["ran"] += y is not None
        return y

    monkeypatch.setattr(gemm, "linear_tn", spy)
    monkeypatch.setattr(_gpu, "GEMM_CUTLASS", True)
    monkeypatch.setattr(_gpu, "_sm90_off", True)   # on an SM90 device its own instances would come first
    return calls


def _arrays(xp, rng, dt, *shapes):
    """gpk_array arrays on cuda:0 of values exactly representable in dt (made in float32, then cast on the GPU,
    as test_own_kernels_gpu.py does for bfloat16)."""
    dev = xp.Device("cuda:0")
    target = xp.float16 if dt.name == "float16" else (xp.float32 if dt.name == "float32" else xp.bfloat16)
    return [xp.astype(xp.asarray(_rand(rng, s, dt).astype(np.float32), device=dev), target) for s in shapes]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_routing_linear(routed, dt, monkeypatch):
    import gpk_array as xp
    from gpk_array import _gpu
    rng = np.random.default_rng(6)
    x, w, b = _arrays(xp, rng, dt, (2, 40, 768), (3072, 768), (3072,))
    xf, wf, bf = (_f64(a._data) for a in (x, w, b))
    ref = xf @ wf.T
    y = xp.linear(x, w)
    assert routed["ran"] == 1 and y.shape == (2, 40, 3072) and y.dtype == x.dtype
    _check(y._data, ref, dt, "linear")
    yb = xp.linear(x, w, b)
    assert routed["ran"] == 2
    _check(yb._data, ref + bf, dt, "linear + bias")
    yr = xp.linear(x, w, b, activation="relu")             # an activation: the existing fused path
    assert routed["ran"] == 2
    _check(yr._data, np.maximum(ref + bf, 0), dt, "linear + bias + relu")
    monkeypatch.setattr(_gpu, "GEMM_CUTLASS", False)       # the same calls without the switch
    n = routed["n"]
    _check(xp.linear(x, w)._data, ref, dt, "linear, cuBLAS")
    _check(xp.linear(x, w, b)._data, ref + bf, dt, "linear + bias, cuBLAS")
    assert routed["n"] == n
    diff = float(xp.max(xp.abs(xp.astype(xp.linear(x, w), xp.float32) - xp.astype(y, xp.float32))))
    assert diff <= 2 * TOL[dt.name] * float(np.abs(ref).max())


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_routing_matmul(routed, dt):
    import gpk_array as xp
    rng = np.random.default_rng(7)
    x, w, wkn = _arrays(xp, rng, dt, (1000, 768), (2304, 768), (768, 2304))
    xf, wf = _f64(x._data), _f64(w._data)
    y = xp.matmul(x, xp.matrix_transpose(w))               # b.T is the row-major weight: CUTLASS
    assert routed["ran"] == 1
    _check(y._data, xf @ wf.T, dt, "x @ w.T")
    y3 = xp.reshape(x, (10, 100, 768)) @ w.mT               # batched x, flattened
    assert routed["ran"] == 2 and y3.shape == (10, 100, 2304)
    _check(y3._data.reshape(1000, 2304), xf @ wf.T, dt, "batched x @ w.T")
    yk = x @ wkn                                            # a (K, N) row-major b: not this layout
    assert routed["ran"] == 2
    _check(yk._data, xf @ _f64(wkn._data), dt, "x @ b")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_routing_falls_back_where_not_covered(routed, dt):
    import gpk_array as xp
    rng = np.random.default_rng(8)
    x, w = _arrays(xp, rng, dt, (64, 60), (48, 60))        # K = 60: not a multiple of 8
    y = xp.linear(x, w)
    assert routed["n"] >= 1 and routed["ran"] == 0
    _check(y._data, _f64(x._data) @ _f64(w._data).T, dt, "K=60 linear")
    y = xp.matmul(x, w.mT)
    assert routed["ran"] == 0
    _check(y._data, _f64(x._data) @ _f64(w._data).T, dt, "K=60 matmul")
    x, w = _arrays(xp, rng, dt, (64, 64), (36, 64))        # N = 36
    _check(xp.linear(x, w)._data, _f64(x._data) @ _f64(w._data).T, dt, "N=36")
    assert routed["ran"] == 0
    xs, ws = _arrays(xp, np.random.default_rng(9), np.dtype(np.float32), (64, 64), (64, 64))
    n = routed["n"]
    xp.linear(xs, ws)                                       # float32: never offered
    assert routed["n"] == n
