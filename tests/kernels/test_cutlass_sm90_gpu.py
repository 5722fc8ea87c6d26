"""GPU tests of the SM90 CUTLASS GEMM instances launched from Python (launch_sm90.linear_tn_sm90).

Every test runs for each instance family (``large``: 128x128x64 tile, cluster 1x1x1; ``xl``: 128x256x64
tile, cluster 2x1x1; ``pp``: 128x128x64 ping-pong, cluster 2x1x1; with CUTLASS's TMA epilogue: ``ppt``:
128x128x64 ping-pong and ``coopt``: 256x128x64 cooperative, both cluster 2x1x1; the 2x1x1 ones are cluster
launches; the TMA-epilogue ones need N, ldc, ldd multiples of 8 and 16-byte aligned C and D).
GPU run of only the TMA-epilogue families: pytest -m gpu tests/kernels/test_cutlass_sm90_gpu.py -k "ppt or coopt". Needs
a CC 9.0 GPU (the cubins are sm_90a) and either the CUTLASS
headers plus nvcc/NVRTC to compile the six instances, or their cubins prebuilt into $GPK_CACHE_DIR/sm_90a/
(python -m gpk_array._kernels.cutlass.launch_sm90 --prebuild, no GPU needed). References: float64 NumPy of the same
rounded float16/bfloat16 inputs; tolerance relative to max|ref|: float16 5e-3, bfloat16 2e-2 (the output
rounding is 2^-11 resp. 2^-8 of the value; the accumulator is float32)."""

import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks
from tests.kernels._sm90_common import BIG, DTYPES, M_ODD, load_instances
from tests.kernels._sm90_common import check as _check
from tests.kernels._sm90_common import f64 as _f64
from tests.kernels._sm90_common import rand as _rand

pytestmark = gpu_marks()

NK = [(8, 8), (24, 768), (768, 3072), (3072, 768), (1000, 1000)]
FAMILIES = ["large", "xl", "pp", "ppt", "coopt"]
EPI_TMA = {"ppt", "coopt"}     # D through shared memory and a TMA store (C by TMA load)
KEYS = [f"gemm/{d}/tn/{f}/sm90" for f in FAMILIES for d in ("f16", "bf16")]


@pytest.fixture(scope="module")
def L():
    return load_instances(KEYS)


@pytest.fixture(params=FAMILIES)
def family(request):
    return request.param


@pytest.fixture
def gemm(L, family):
    """linear_tn_sm90 with the family's instance."""
    def call(*args, **kw):
        return L.linear_tn_sm90(*args, family=family, **kw)
    return call


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m", M_ODD)
@pytest.mark.parametrize("n,k", NK)
def test_linear_odd_m(L, gemm, dtype, m, n, k):
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    x, w = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    y = gemm(x, w)
    assert y.shape == (m, n) and y.dtype == dtype
    _check(y, _f64(x) @ _f64(w).T, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,n,k", BIG)
def test_linear_large_square(L, gemm, dtype, m, n, k):
    rng = np.random.default_rng(k)
    x, w = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    y = gemm(x, w)
    _check(y, _f64(x) @ _f64(w).T, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,n,k", [(1, 13, 64), (17, 13, 8), (300, 1001, 72), (129, 131, 136)])
def test_n_not_a_multiple_of_8(L, gemm, family, dtype, m, n, k):
    # CUTLASS's can_implement accepts any N (the no-smem epilogue stores element by element); the TMA
    # epilogue needs 16-byte rows of C and D, so those instances refuse (the caller falls back to cuBLAS)
    rng = np.random.default_rng(n)
    x, w = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    if family in EPI_TMA:
        with pytest.raises(ValueError, match="N must"):
            gemm(x, w)
        return
    _check(gemm(x, w), _f64(x) @ _f64(w).T, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,n,k", [(1, 3072, 768), (17, 24, 8), (1000, 1000, 1000), (2048, 2048, 2048)])
def test_alpha_beta_with_c(L, gemm, dtype, m, n, k):
    import cupy
    rng = np.random.default_rng(m + n)
    x, w, c = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype), _rand(rng, (m, n), dtype, 4.0)
    ref = 0.5 * (_f64(x) @ _f64(w).T) - 1.25 * _f64(c)
    y = gemm(x, w, alpha=0.5, beta=-1.25, c=c)
    _check(y, ref, dtype)
    # C aliasing D (in-place accumulate)
    d = c.copy()
    gemm(x, w, out=d, alpha=0.5, beta=-1.25, c=d)
    _check(d, ref, dtype)
    # beta == 0: C is not read (NaNs there must not leak)
    nan_c = cupy.asarray(np.full((m, n), np.nan, dtype=dtype))
    _check(gemm(x, w, alpha=2.0, beta=0.0, c=nan_c), 2.0 * (_f64(x) @ _f64(w).T), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_padded_leading_dimensions_and_untouched_borders(L, gemm, family, dtype):
    import cupy
    rng = np.random.default_rng(5)
    m, n, k = 203, 250, 136
    if family in EPI_TMA:
        n = 248                                 # TMA epilogue: N, ldd multiples of 8, D 16-byte aligned
    xb, wb = _rand(rng, (m, k + 24), dtype), _rand(rng, (n, k + 8), dtype)
    x, w = xb[:, 8:8 + k], wb[:, :k]          # lda = k + 24, ldb = k + 8, A offset by 16 bytes
    col = 8 if family in EPI_TMA else 5        # D's first column inside the padded buffer
    if family in EPI_TMA:
        ob = cupy.asarray(np.full((m + 3, n + 16), 7.0, dtype=dtype))
        out = ob[1:1 + m, 8:8 + n]              # ldd = n + 16, D at an offset of 2 * (n + 16 + 8) bytes
        if (out.data.ptr % 16) == 0:
            # the TMA epilogue refuses a D that is not 16-byte aligned
            with pytest.raises(ValueError, match="16-byte"):
                gemm(x, w, out=ob[1:1 + m, 5:5 + n])
    else:
        ob = cupy.asarray(np.full((m + 3, n + 13), 7.0, dtype=dtype))
        out = ob[1:1 + m, 5:5 + n]              # ldd = n + 13, D at an offset of 2 * (n + 13 + 5) bytes
    gemm(x, w, out=out)
    _check(out, _f64(x) @ _f64(w).T, dtype)
    host = _f64(ob)
    mask = np.ones(host.shape, bool)
    mask[1:1 + m, col:col + n] = False
    assert (host[mask] == 7.0).all(), "the kernel wrote outside D"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_non_default_stream_orders_with_its_producers(L, gemm, dtype):
    import cupy
    m, n, k = 4096, 4096, 4096
    s = cupy.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(9)
    x0, w0 = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    cupy.cuda.Device().synchronize()
    with s:
        x = x0 + x0         # produced on s just before the GEMM: a launch elsewhere would race with it
        w = w0.copy()
        y = gemm(x, w)
        y2 = y.copy()       # consumer on s
    s.synchronize()
    ref = 2 * (_f64(x0) @ _f64(w0).T)
    _check(y2, ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("swizzle,raster", [(1, "along_m"), (2, "along_n"), (4, "heuristic"), (8, "along_m")])
def test_scheduler_options(L, gemm, dtype, swizzle, raster):
    rng = np.random.default_rng(swizzle)
    m, n, k = 1000, 3000, 264
    x, w = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    _check(gemm(x, w, max_swizzle=swizzle, raster=raster), _f64(x) @ _f64(w).T, dtype)


def test_repeated_calls_reuse_params_and_see_new_data(L, gemm):
    import cupy
    dtype = DTYPES[0]
    rng = np.random.default_rng(3)
    x, w = _rand(rng, (64, 128), dtype), _rand(rng, (256, 128), dtype)
    out = cupy.empty((64, 256), dtype)
    gemm(x, w, out=out)
    n_cached = len(L._params_cache)
    x[...] = _rand(rng, (64, 128), dtype)
    gemm(x, w, out=out)
    assert len(L._params_cache) == n_cached
    _check(out, _f64(x) @ _f64(w).T, dtype)


def test_unsupported_inputs_raise(L, gemm):
    import cupy
    dtype = DTYPES[0]
    x, w = cupy.zeros((8, 12), dtype), cupy.zeros((8, 12), dtype)
    with pytest.raises(ValueError, match="K must"):
        gemm(x, w)
    with pytest.raises(TypeError):
        gemm(cupy.zeros((8, 16), np.float64), cupy.zeros((8, 16), np.float64))   # float32 runs on the tf32 instances
    xt = cupy.zeros((16, 8), dtype).T           # column-major A
    with pytest.raises(ValueError, match="contiguous rows"):
        gemm(xt, cupy.zeros((8, 16), dtype))


@pytest.mark.parametrize("sm_count", [2, 3, 8, 66])
@pytest.mark.parametrize("raster", ["along_m", "along_n"])
def test_fewer_persistent_ctas_than_sms(L, family, sm_count, raster):
    """A smaller persistent grid (sm_count given to the scheduler) makes each CTA, or each 2x1x1 cluster of
    the xl family, walk many tiles; the result must not change. Also checks that xl is a cluster launch."""
    import cupy
    dtype = DTYPES[0]
    key = L.default_key(dtype, family)
    rng = np.random.default_rng(sm_count)
    m, n, k = 1000, 1504 if family in EPI_TMA else 1500, 200  # the TMA epilogue needs N % 8 == 0
    x, w = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    out = cupy.full((m, n), np.nan, dtype)
    if family != "large" and sm_count % 2 and raster == "along_m":
        # CUTLASS's get_grid_shape gives (sm_count, 1, 1) here: not a whole number of 2x1x1 clusters
        with pytest.raises(ValueError, match="multiple of cluster"):
            L.prepare(x, w, out, 1.0, 0.0, None, key, sm_count, 2, raster)
        return
    la, packed = L.prepare(x, w, out, 1.0, 0.0, None, key, sm_count, 2, raster)
    assert la.cluster == ((1, 1, 1) if family == "large" else (2, 1, 1))
    assert all(g % c == 0 for g, c in zip(la.grid, la.cluster))
    assert la.grid[0] * la.grid[1] <= max(sm_count, 2)
    L.launch(key, la, packed)
    _check(out, _f64(x) @ _f64(w).T, dtype)
