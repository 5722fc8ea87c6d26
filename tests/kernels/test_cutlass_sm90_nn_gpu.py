"""GPU tests of the SM90 "nn" CUTLASS GEMM instances (launch_sm90.matmul_nn_sm90): out = alpha * a @ b + beta * c
with a (M, K) and b (K, N) both row-major (b N-contiguous, as matmul holds it), families ``ppt`` (ping-pong
128x128x64) and ``coopt`` (cooperative 256x128x64), both cluster 2x1x1 with CUTLASS's TMA epilogue (N, K, lda,
ldb, ldc, ldd multiples of 8, all four pointers 16-byte aligned).

GPU run: pytest -m gpu tests/kernels/test_cutlass_sm90_nn_gpu.py. Needs a CC 9.0 GPU and the four nn cubins
(prebuilt into $GPK_CACHE_DIR/sm_90a/ by python -m gpk_array._kernels.cutlass.launch_sm90 --prebuild, or the
CUTLASS headers plus nvcc to compile them). References: float64 NumPy of the same rounded inputs; tolerances
those of test_cutlass_sm90_gpu.py (relative to max|ref|: float16 5e-3, bfloat16 2e-2)."""

import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks
from tests.kernels._sm90_common import BIG, DTYPES, M_ODD, load_instances
from tests.kernels._sm90_common import check as _check
from tests.kernels._sm90_common import f64 as _f64
from tests.kernels._sm90_common import rand as _rand

pytestmark = gpu_marks()

NK = [(8, 8), (24, 768), (768, 3072), (3072, 768), (1000, 1000), (8, 1000), (1000, 24)]
FAMILIES = ["ppt", "coopt"]
KEYS = [f"gemm/{d}/nn/{f}/sm90" for f in FAMILIES for d in ("f16", "bf16")]


@pytest.fixture(scope="module")
def L():
    return load_instances(KEYS)


@pytest.fixture(params=FAMILIES)
def family(request):
    return request.param


@pytest.fixture
def mm(L, family):
    """matmul_nn_sm90 with the family's instance."""
    def call(*args, **kw):
        return L.matmul_nn_sm90(*args, family=family, **kw)
    return call


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m", M_ODD)
@pytest.mark.parametrize("n,k", NK)
def test_matmul_odd_m(L, mm, dtype, m, n, k):
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    a, b = _rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype)
    y = mm(a, b)
    assert y.shape == (m, n) and y.dtype == dtype
    _check(y, _f64(a) @ _f64(b), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,n,k", BIG)
def test_matmul_large_square(L, mm, dtype, m, n, k):
    rng = np.random.default_rng(k)
    a, b = _rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype)
    _check(mm(a, b), _f64(a) @ _f64(b), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_matmul_is_not_the_transposed_product(L, mm, dtype):
    """A square b that is far from symmetric: a @ b.T would fail the check (guards against B read as (N, K))."""
    import cupy
    rng = np.random.default_rng(11)
    n = 256
    a = _rand(rng, (128, n), dtype)
    b = cupy.asarray(np.triu(rng.uniform(0.5, 1.0, (n, n))).astype(dtype))
    y = _f64(mm(a, b))
    ref, wrong = _f64(a) @ _f64(b), _f64(a) @ _f64(b).T
    _check(cupy.asarray(y), ref, dtype)
    assert np.abs(y - wrong).max() > 0.1 * np.abs(ref).max()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,n,k", [(1, 3072, 768), (17, 24, 8), (1000, 1000, 1000), (2048, 2048, 2048)])
def test_alpha_beta_with_c(L, mm, dtype, m, n, k):
    import cupy
    rng = np.random.default_rng(m + n)
    a, b, c = _rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype), _rand(rng, (m, n), dtype, 4.0)
    ref = 0.5 * (_f64(a) @ _f64(b)) - 1.25 * _f64(c)
    _check(mm(a, b, alpha=0.5, beta=-1.25, c=c), ref, dtype)
    d = c.copy()                                    # C aliasing D (in-place accumulate)
    mm(a, b, out=d, alpha=0.5, beta=-1.25, c=d)
    _check(d, ref, dtype)
    nan_c = cupy.asarray(np.full((m, n), np.nan, dtype=dtype))   # beta == 0: C is not read
    _check(mm(a, b, alpha=2.0, beta=0.0, c=nan_c), 2.0 * (_f64(a) @ _f64(b)), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_padded_leading_dimensions_and_untouched_borders(L, mm, dtype):
    import cupy
    rng = np.random.default_rng(5)
    m, n, k = 203, 248, 136
    ab, bb = _rand(rng, (m, k + 24), dtype), _rand(rng, (k, n + 16), dtype)
    a, b = ab[:, 8:8 + k], bb[:, 8:8 + n]          # lda = k + 24, ldb = n + 16, A and B offset by 16 bytes
    cb = _rand(rng, (m, n + 8), dtype)
    c = cb[:, :n]                                  # ldc = n + 8
    ob = cupy.asarray(np.full((m + 3, n + 16), 7.0, dtype=dtype))
    out = ob[1:1 + m, 8:8 + n]                     # ldd = n + 16, D at 2 * (n + 16 + 8) bytes
    mm(a, b, out=out, alpha=1.0, beta=0.5, c=c)
    _check(out, _f64(a) @ _f64(b) + 0.5 * _f64(c), dtype)
    host = _f64(ob)
    mask = np.ones(host.shape, bool)
    mask[1:1 + m, 8:8 + n] = False
    assert (host[mask] == 7.0).all(), "the kernel wrote outside D"
    with pytest.raises(ValueError, match="16-byte"):
        mm(a, bb[:, 4:4 + n], out=out)             # B 8 bytes off: TMA refuses
    with pytest.raises(ValueError, match="16-byte"):
        mm(a, b, out=ob[1:1 + m, 5:5 + n])         # D not 16-byte aligned (TMA store)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_non_default_stream_orders_with_its_producers(L, mm, dtype):
    import cupy
    m, n, k = 4096, 4096, 4096
    s = cupy.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(9)
    a0, b0 = _rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype)
    cupy.cuda.Device().synchronize()
    with s:
        a = a0 + a0         # produced on s just before the GEMM: a launch elsewhere would race with it
        b = b0.copy()
        y = mm(a, b)
        y2 = y.copy()       # consumer on s
    s.synchronize()
    _check(y2, 2 * (_f64(a0) @ _f64(b0)), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("swizzle,raster", [(1, "along_m"), (2, "along_n"), (8, "heuristic")])
def test_scheduler_options(L, mm, dtype, swizzle, raster):
    rng = np.random.default_rng(swizzle)
    m, n, k = 1000, 3000, 264
    a, b = _rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype)
    _check(mm(a, b, max_swizzle=swizzle, raster=raster), _f64(a) @ _f64(b), dtype)


def test_unsupported_inputs_raise(L, mm):
    import cupy
    dtype = DTYPES[0]
    with pytest.raises(ValueError, match="N must"):
        mm(cupy.zeros((8, 16), dtype), cupy.zeros((16, 12), dtype))
    with pytest.raises(ValueError, match="K must"):
        mm(cupy.zeros((8, 12), dtype), cupy.zeros((12, 16), dtype))
    with pytest.raises(ValueError, match="a @ b"):
        mm(cupy.zeros((8, 16), dtype), cupy.zeros((8, 16), dtype))
    with pytest.raises(TypeError):
        mm(cupy.zeros((8, 16), np.float64), cupy.zeros((16, 16), np.float64))   # float32 runs on the tf32 instances
    with pytest.raises(ValueError, match="contiguous rows"):
        mm(cupy.zeros((16, 8), dtype).T, cupy.zeros((16, 16), dtype))     # column-major a
    with pytest.raises(ValueError, match="not a 'nn' instance"):
        L.matmul_nn_sm90(cupy.zeros((8, 16), dtype), cupy.zeros((16, 16), dtype), key="gemm/f16/tn/ppt/sm90")


@pytest.mark.parametrize("sm_count", [2, 8, 66])
@pytest.mark.parametrize("raster", ["along_m", "along_n"])
def test_fewer_persistent_ctas_than_sms(L, family, sm_count, raster):
    """A smaller persistent grid: each 2x1x1 cluster walks many tiles; the result must not change."""
    import cupy
    dtype = DTYPES[0]
    key = L.default_key(dtype, family, "nn")
    rng = np.random.default_rng(sm_count)
    m, n, k = 1000, 1504, 200
    a, b = _rand(rng, (m, k), dtype), _rand(rng, (k, n), dtype)
    out = cupy.full((m, n), np.nan, dtype)
    la, packed = L.prepare(a, b, out, 1.0, 0.0, None, key, sm_count, 2, raster)
    assert la.cluster == (2, 1, 1) and all(g % c == 0 for g, c in zip(la.grid, la.cluster))
    L.launch(key, la, packed)
    _check(out, _f64(a) @ _f64(b), dtype)
