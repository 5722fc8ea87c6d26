"""GPU tests of the SM90 TF32 CUTLASS GEMM instances: float32 operands and output, TF32 multiplies, float32
accumulation (registry dtype "tf32").

``linear_tn_sm90`` (out = alpha * x @ w.T + beta * c, w (N, K) row-major): families ``ppt`` (ping-pong
128x128x32) and ``coopt`` (cooperative 256x128x32), cluster 2x1x1, CUTLASS's TMA epilogue. ``matmul_nn_sm90``
(out = alpha * a @ b + beta * c, b (K, N) row-major): families ``pp`` (ping-pong 128x128x32) and ``coop``
(cooperative 256x128x32), cluster 2x1x1, which CUTLASS runs as b.T @ a.T (register-sourced mainloop, direct-store
transposed epilogue; params_sm90.swaps_ab). Both need K and N (and lda, ldb, ldc, ldd) multiples of 4 and 16-byte
aligned A and B (the TMA epilogue also C and D).

GPU run: pytest -m gpu tests/kernels/test_cutlass_sm90_tf32_gpu.py. Needs a CC 9.0 GPU and the four tf32 cubins
(prebuilt into $GPK_CACHE_DIR/sm_90a/ by python -m gpk_array._kernels.cutlass.launch_sm90 --prebuild, or the
CUTLASS headers plus nvcc).

Reference and bound: float64 NumPy on the same float32 inputs. TF32 keeps 10 of float32's 23 mantissa bits, so
each operand carries a relative error of at most 2^-11 (rounded to nearest) or 2^-10 (truncated), and a product
a_ik * b_kj one of at most ~2^-10 or 2^-9. Over K random-signed terms these add up like a random walk: the error of
out_ij has a standard deviation of about 2^-11 * sqrt(sum_k (a_ik b_kj)^2), i.e. 2^-11 * sqrt(K) times the rms
product. The check allows, per element,

    |out - ref| <= |alpha| * (2^-7 * sqrt((A^2 @ B^2)_ij) + 2^-20 * (|A| @ |B|)_ij) + 2^-20 * |beta * c_ij|

(2^-7 = 16 * 2^-11: about 8 standard deviations even if the hardware truncates; the second term covers the float32
accumulation, K * 2^-24 relative to sum |a b| for K up to 16; the third the float32 epilogue). A misplaced or
missing element is off by about sqrt((A^2 @ B^2)_ij) itself, 128 times the bound."""

import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks
from tests.kernels._sm90_common import M_ODD, load_instances

pytestmark = gpu_marks()

F32 = np.dtype(np.float32)
TN_FAMILIES = ["ppt", "coopt"]
NN_FAMILIES = ["pp", "coop"]
KEYS = [f"gemm/tf32/tn/{f}/sm90" for f in TN_FAMILIES] + [f"gemm/tf32/nn/{f}/sm90" for f in NN_FAMILIES]
# (N, K), multiples of 4 (16-byte TMA rows), some not of 8
NK = [(4, 4), (12, 20), (24, 768), (768, 3072), (3072, 768), (1000, 1000), (100, 36)]
BIG = [(2048, 2048, 2048), (4096, 4096, 4096)]
REL_SQRT, REL_ABS = 2.0 ** -7, 2.0 ** -20


@pytest.fixture(scope="module")
def L():
    return load_instances(KEYS)


@pytest.fixture(params=[("tn", f) for f in TN_FAMILIES] + [("nn", f) for f in NN_FAMILIES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def op(L, request):
    """(layout, family, gemm) with gemm(a, b_as_stored, **kw); b is (N, K) for "tn" and (K, N) for "nn"."""
    layout, family = request.param
    fn = L.linear_tn_sm90 if layout == "tn" else L.matmul_nn_sm90

    def call(*args, **kw):
        return fn(*args, family=family, **kw)
    return layout, family, call


def _rand(rng, shape, scale=1.0):
    import cupy
    return cupy.asarray((rng.uniform(-1, 1, shape) * scale).astype(F32))


def _f64(a):
    """float64 copy on the device (the float64 reference GEMMs run there: 4096^3 takes milliseconds)."""
    import cupy
    return cupy.asarray(a).astype(cupy.float64)


def _b_kn(layout, b):
    """The (K, N) operand the GEMM multiplies by, in float64."""
    h = _f64(b)
    return h if layout == "nn" else h.T


def _b_shape(layout, n, k):
    return (k, n) if layout == "nn" else (n, k)


def check(got, a, bkn, alpha=1.0, beta=0.0, c=None):
    """The TF32 bound of the module docstring, element by element (float64, on the device); returns
    max |err| / max |ref|."""
    import cupy as xp
    got = _f64(got)
    assert bool(xp.isfinite(got).all())
    ref = alpha * (a @ bkn)
    bound = abs(alpha) * (REL_SQRT * xp.sqrt((a * a) @ (bkn * bkn)) + REL_ABS * (xp.abs(a) @ xp.abs(bkn)))
    if beta != 0:
        ref = ref + beta * c
        bound = bound + REL_ABS * xp.abs(beta * c)
    err = xp.abs(got - ref)
    bad = err > bound + 1e-30
    nbad = int(bad.sum())
    if nbad:
        first = tuple(int(i[0]) for i in xp.nonzero(bad))
        pytest.fail(f"{nbad} elements beyond the TF32 bound, first at {first}: err {float(err[first]):.3g} > "
                    f"{float(bound[first]):.3g} (ref {float(ref[first]):.3g}, got {float(got[first]):.3g})")
    return float(err.max()) / max(float(xp.abs(ref).max()), 1e-30)


@pytest.mark.parametrize("m", M_ODD)
@pytest.mark.parametrize("n,k", NK)
def test_odd_m(op, m, n, k):
    layout, _, gemm = op
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    a, b = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k))
    y = gemm(a, b)
    assert y.shape == (m, n) and y.dtype == F32
    check(y, _f64(a), _b_kn(layout, b))


@pytest.mark.parametrize("m,n,k", BIG)
def test_large_square(op, m, n, k):
    layout, _, gemm = op
    rng = np.random.default_rng(k)
    a, b = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k))
    rel = check(gemm(a, b), _f64(a), _b_kn(layout, b))
    assert rel < 2e-3          # TF32-sized, relative to max |ref|


def test_error_is_tf32_sized(op):
    """The rms error against float64 is TF32-sized (about 2^-11 of the rms result for K = 512): well above what
    float32 FMAs give (about 1e-7: so the instance does run TF32 multiplies) and below what BF16 operands give."""
    layout, _, gemm = op
    rng = np.random.default_rng(1)
    m = n = k = 512
    a, b = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k))
    ah, bh = _f64(a), _b_kn(layout, b)
    got, ref = _f64(gemm(a, b)), ah @ bh
    rms = float(((got - ref) ** 2).mean() ** 0.5 / (ref ** 2).mean() ** 0.5)
    assert 1e-5 < rms < 2e-3, rms


@pytest.mark.parametrize("m,n,k", [(1, 3072, 768), (17, 24, 8), (1000, 1000, 1000), (2048, 2048, 2048)])
def test_alpha_beta_with_c(op, m, n, k):
    import cupy
    layout, _, gemm = op
    rng = np.random.default_rng(m + n)
    a, b, c = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k)), _rand(rng, (m, n), 4.0)
    ah, bh, ch = _f64(a), _b_kn(layout, b), _f64(c)
    check(gemm(a, b, alpha=0.5, beta=-1.25, c=c), ah, bh, 0.5, -1.25, ch)
    d = c.copy()                                    # C aliasing D (in-place accumulate)
    gemm(a, b, out=d, alpha=0.5, beta=-1.25, c=d)
    check(d, ah, bh, 0.5, -1.25, ch)
    nan_c = cupy.full((m, n), np.nan, F32)          # beta == 0: C is not read
    check(gemm(a, b, alpha=2.0, beta=0.0, c=nan_c), ah, bh, 2.0)


def test_padded_leading_dimensions_and_untouched_borders(op):
    import cupy
    layout, _, gemm = op
    rng = np.random.default_rng(5)
    m, n, k = 203, 252, 132                          # N, K multiples of 4, not of 8
    ab = _rand(rng, (m, k + 12))
    a = ab[:, 4:4 + k]                               # lda = k + 12, A 16 bytes into its buffer
    if layout == "nn":
        bb = _rand(rng, (k, n + 8))
        b = bb[:, 4:4 + n]                           # ldb = n + 8
    else:
        bb = _rand(rng, (n, k + 4))
        b = bb[:, :k]                                # ldb = k + 4
    cb = _rand(rng, (m, n + 4))
    c = cb[:, :n]                                    # ldc = n + 4
    ob = cupy.full((m + 3, n + 12), 7.0, F32)
    out = ob[1:1 + m, 4:4 + n]                       # ldd = n + 12, D 16-byte aligned
    gemm(a, b, out=out, alpha=1.0, beta=0.5, c=c)
    check(out, _f64(a), _b_kn(layout, b), 1.0, 0.5, _f64(c))
    host = ob.get()
    mask = np.ones(host.shape, bool)
    mask[1:1 + m, 4:4 + n] = False
    assert (host[mask] == 7.0).all(), "the kernel wrote outside D"
    with pytest.raises(ValueError, match="16-byte"):
        gemm(ab[:, 2:2 + k], b, out=out)             # A 8 bytes off: TMA refuses


def test_nn_is_not_the_transposed_product(L):
    """A square b far from symmetric: a @ b.T would fail the check (guards against B read as (N, K), and against
    the swapped operands or the transposed epilogue going wrong)."""
    import cupy
    rng = np.random.default_rng(11)
    n = 256
    a = _rand(rng, (128, n))
    b = cupy.asarray(np.triu(rng.uniform(0.5, 1.0, (n, n))).astype(F32))
    for fam in NN_FAMILIES:
        y = L.matmul_nn_sm90(a, b, family=fam)
        check(y, _f64(a), _f64(b))
        wrong = _f64(a) @ _f64(b).T
        assert float(cupy.abs(_f64(y) - wrong).max()) > 0.1 * float(cupy.abs(wrong).max())


def test_non_default_stream_orders_with_its_producers(op):
    import cupy
    layout, _, gemm = op
    m, n, k = 2048, 2048, 2048
    s = cupy.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(9)
    a0, b0 = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k))
    cupy.cuda.Device().synchronize()
    with s:
        a = a0 + a0         # produced on s just before the GEMM: a launch elsewhere would race with it
        b = b0.copy()
        y = gemm(a, b)
        y2 = y.copy()       # consumer on s
    s.synchronize()
    check(y2, 2 * _f64(a0), _b_kn(layout, b0))


@pytest.mark.parametrize("swizzle,raster", [(1, "along_m"), (2, "along_n"), (8, "heuristic")])
def test_scheduler_options(op, swizzle, raster):
    layout, _, gemm = op
    rng = np.random.default_rng(swizzle)
    m, n, k = 1000, 3000, 264
    a, b = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k))
    check(gemm(a, b, max_swizzle=swizzle, raster=raster), _f64(a), _b_kn(layout, b))


@pytest.mark.parametrize("sm_count", [2, 8, 66])
@pytest.mark.parametrize("raster", ["along_m", "along_n"])
def test_fewer_persistent_ctas_than_sms(L, op, sm_count, raster):
    """A smaller persistent grid: each 2x1x1 cluster walks many tiles (for "nn" over the swapped (N, M) tiles)."""
    import cupy
    layout, family, _ = op
    key = L.default_key(F32, family, layout)
    rng = np.random.default_rng(sm_count)
    m, n, k = 1000, 1504, 200
    a, b = _rand(rng, (m, k)), _rand(rng, _b_shape(layout, n, k))
    out = cupy.full((m, n), np.nan, F32)
    la, packed = L.prepare(a, b, out, 1.0, 0.0, None, key, sm_count, 2, raster)
    assert la.cluster == (2, 1, 1) and all(g % c == 0 for g, c in zip(la.grid, la.cluster))
    L.launch(key, la, packed)
    check(out, _f64(a), _b_kn(layout, b))


def test_unsupported_inputs_raise(L, op):
    import cupy
    layout, _, gemm = op
    with pytest.raises(ValueError, match="K must be a multiple of 4"):
        gemm(cupy.zeros((8, 6), F32), cupy.zeros(_b_shape(layout, 8, 6), F32))
    with pytest.raises(ValueError, match="N must be a multiple of 4"):
        gemm(cupy.zeros((8, 8), F32), cupy.zeros(_b_shape(layout, 6, 8), F32))
    with pytest.raises(TypeError):
        gemm(cupy.zeros((8, 8), np.float64), cupy.zeros(_b_shape(layout, 8, 8), np.float64))
    with pytest.raises(TypeError):                  # float32 arrays given a 16-bit instance
        gemm(cupy.zeros((8, 8), F32), cupy.zeros(_b_shape(layout, 8, 8), F32),
             key=f"gemm/f16/{layout}/{'large' if layout == 'tn' else 'ppt'}/sm90")
    with pytest.raises(ValueError, match="contiguous rows"):
        gemm(cupy.zeros((8, 8), F32).T, cupy.zeros(_b_shape(layout, 8, 8), F32))     # column-major a
