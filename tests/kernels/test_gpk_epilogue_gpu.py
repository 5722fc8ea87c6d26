"""GPU tests of the fused epilogues' activation functors (gpk_array/_kernels/cutlass/gpk_epilogue.h:
gpk::epilogue::Gelu,
the erf GELU as max(x, 0) - |x| 2^P(|x|), and gpk::epilogue::Silu, x * rcp.approx(1 + ex2.approx(-x log2 e))) with
the real MUFU ops:

- the functors alone, in a tiny kernel (the header compiled with GPK_EPILOGUE_SCALAR_ONLY by the loader: NVRTC or
  nvcc, no CUTLASS headers), float32 in and out: max |y - ref| / max(1, |x|) over a dense grid of [-10, 10] plus
  tiny and huge |x| against float64 x Phi(x) and x sigmoid(x) (measured on the CPU with exact 2^p and 1/d:
  3.3e-7 and 1.5e-7; with the MUFU ops at their error bounds 3.4e-7 and 2.7e-7), the error in f16 ulps of the
  exact value (0.14 and 0.001 on the CPU), and special values bit for bit (gelu(+-0) = +-0, gelu(-inf) = -0, NaN
  propagates, ...);
- the fused instances gemm/<f16|bf16>/tn/ppt_bias_<gelu|silu>/sm90: x = 0, so D = act(bias) in every row, with
  special values and large |x| in the bias: each output within one ulp of the float64 act(bias) rounded to the
  output type, the special values exact (the SM90 cubins: shipped, or built as for test_cutlass_sm90_epi_gpu.py).

    pytest -m gpu tests/kernels/test_gpk_epilogue_gpu.py
"""

import math
from pathlib import Path

import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks
from tests.kernels._sm90_common import DTYPES, act_ref, check, load_instances

pytestmark = gpu_marks()

KDIR = Path(__file__).resolve().parents[2] / "gpk_array" / "_kernels" / "cutlass"
TOL = 5e-7      # |y - ref| / max(1, |x|), float32 before any output rounding (the bound: about 1e-6)
F16_ULPS = 0.2  # |y - ref| in f16 ulps of ref (2^-24 below f16's normal range), where |ref| <= 65504
FLT_MAX = float(np.finfo(np.float32).max)

_SRC = r"""
#define GPK_EPILOGUE_SCALAR_ONLY
#include "gpk_epilogue.h"
extern "C" __global__ void gpk_epi_gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = gpk::epilogue::Gelu<float>()(x[i]);
}
extern "C" __global__ void gpk_epi_silu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = gpk::epilogue::Silu<float>()(x[i]);
}
"""


def _ndtr(x):
    try:
        from scipy.special import ndtr
        return ndtr(x)
    except ImportError:
        return np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2.0)), otypes=[np.float64])(x)


def gelu_ref(x):
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(x == -np.inf, -0.0, x * _ndtr(x))


def silu_ref(x):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(x == -np.inf, -0.0, x / (1.0 + np.exp(-x)))


REFS = {"gelu": gelu_ref, "silu": silu_ref}


@pytest.fixture(scope="module")
def functors(tmp_path_factory):
    """{"gelu": f, "silu": f}, f(float32 numpy array) -> float32 numpy array computed on the GPU."""
    import cupy

    from gpk_array._kernels import loader
    arch = loader.device_arch()
    cubin = loader.compile_cubin(_SRC, (), arch, None, name="gpk_epi_test.cu", include_dirs=(str(KDIR),))
    path = tmp_path_factory.mktemp("gpk_epi") / "epi.cubin"
    path.write_bytes(cubin)
    mod = cupy.RawModule(path=str(path))

    def make(name):
        fn = mod.get_function(f"gpk_epi_{name}")

        def run(x):
            xd = cupy.asarray(np.ascontiguousarray(x, np.float32))
            yd = cupy.empty_like(xd)
            n = xd.size
            fn(((n + 255) // 256,), (256,), (xd, yd, np.int32(n)))
            return yd.get()
        return run

    return {k: make(k) for k in REFS}


def _grid():
    dense = np.linspace(-10.0, 10.0, 2_000_001)
    tiny = np.geomspace(1e-38, 1e-3, 2001)
    big = np.geomspace(10.0, FLT_MAX, 2001)
    return np.concatenate([dense, tiny, -tiny, big, -big]).astype(np.float32)


@pytest.mark.parametrize("name", ["gelu", "silu"])
def test_functor_dense_grid(functors, name):
    x = _grid()
    y = functors[name](x).astype(np.float64)
    xf = x.astype(np.float64)
    ref = REFS[name](xf)
    err = np.abs(y - ref) / np.maximum(1.0, np.abs(xf))
    i = int(np.argmax(err))
    a = np.maximum(np.abs(ref), 2.0 ** -14)
    ok = np.abs(ref) <= 65504.0
    ulps = np.abs(y - ref)[ok] / 2.0 ** (np.floor(np.log2(a[ok])) - 10)
    print(f"{name}: max |y - ref| / max(1, |x|) = {err[i]:.3g} at x = {xf[i]!r}; {ulps.max():.3f} f16 ulps")
    assert err[i] <= TOL, f"{name}: error {err[i]:.3g} at x = {xf[i]!r}"
    assert ulps.max() <= F16_ULPS, f"{name}: {ulps.max():.3f} f16 ulps at x = {xf[ok][int(np.argmax(ulps))]!r}"


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, FLT_MAX, -FLT_MAX, 1e30, -1e30, 65504.0, -65504.0, -20.0,
           -100.0, -200.0, 100.0, 1e-30, -1e-30]
WANT = {  # where the float64 value rounded to float32 is not the answer: flushed to -0 below FLT_MIN
    "gelu": {},
    "silu": {-100.0: -0.0, -200.0: -0.0},   # silu(x) = -0 below x ~ -88 (2^(-x log2 e) = inf, its reciprocal 0)
}


def _same(x, y, want):
    """NaN for NaN, zeros and infinities with their sign, else within TOL max(1, |x|)."""
    if np.isnan(want) or want == 0 or np.isinf(want):
        return (np.isnan(y) and np.isnan(want)) or (y == want and np.signbit(y) == np.signbit(want))
    return abs(y - want) <= TOL * max(1.0, abs(x))


@pytest.mark.parametrize("name", ["gelu", "silu"])
def test_functor_special_values(functors, name):
    """gelu/silu(+-0) = +-0, (+inf) = +inf, (-inf) = -0, NaN propagates, -0 where the result underflows to zero
    in float32 (gelu(-20) is about -5.5e-88), FLT_MAX and 65504 pass through."""
    x = np.array(SPECIAL, np.float32)
    y = functors[name](x)
    ref = REFS[name](x.astype(np.float64)).astype(np.float32)
    bad = []
    for xi, yi, ri in zip(x.tolist(), y.tolist(), ref.tolist()):
        want = WANT[name].get(xi, ri)
        if not _same(xi, yi, want):
            bad.append(f"{name}({xi!r}) = {yi!r}, want {want!r}")
    assert not bad, "; ".join(bad)


def _finfo(dtype):
    try:
        return np.finfo(dtype)
    except ValueError:                  # bfloat16
        import ml_dtypes
        return ml_dtypes.finfo(dtype)


def _ulp(v, dtype):
    """The spacing of dtype at |v| (normal numbers; the smallest subnormal step below)."""
    info = _finfo(dtype)
    a = np.maximum(np.abs(v), float(info.smallest_normal))
    return 2.0 ** (np.floor(np.log2(a)) - info.nmant)


@pytest.fixture(scope="module")
def L():
    keys = [f"gemm/{d}/tn/ppt_bias_{a}/sm90" for d in ("f16", "bf16") for a in ("gelu", "silu")]
    return load_instances(keys)


@pytest.mark.parametrize("activation", ["gelu", "silu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_fused_instance_special_bias(L, dtype, activation):
    """x = 0 (M, K), so D[i, n] = act(0 + bias[n]) in every row: the activation of every bias value, rounded once
    to f16/bf16. Special values (+-0, +-inf, NaN, the type's max, +-1000, -20, -100) exactly as the float64 limit
    rounded to the type (zeros with their sign: act(-big) = -0; a bias of -0 gives act(+0 + -0) = +0); a dense grid of
    [-10, 10] within one ulp of the
    float64 act(bias) rounded to the type, or within the functor's own bound 1e-6 max(1, |x|) where the value is
    so small that one ulp is less (the tail of gelu below x ~ -4, where x Phi(x) < 1e-4: float32's
    0.5 x (1 + erf) loses as much there)."""
    import cupy
    big = float(_finfo(dtype).max)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, 1000.0, -1000.0, -20.0 if activation == "gelu"
                        else 20.0, -100.0 if activation == "silu" else -200.0])
    grid = np.linspace(-10.0, 10.0, 3072 - len(special))
    bias_h = np.concatenate([special, grid]).astype(dtype)
    m, n, k = 256, bias_h.size, 64
    x = cupy.zeros((m, k), dtype)
    w = cupy.asarray(np.random.default_rng(0).uniform(-1, 1, (n, k)).astype(dtype))
    y = L.linear_tn_sm90(x, w, bias=cupy.asarray(bias_h), activation=activation)
    cupy.cuda.Device().synchronize()
    got = cupy.ascontiguousarray(y.view(cupy.uint16)).get()
    assert (got == got[0]).all(), "rows differ"
    row = got[0].view(dtype).astype(np.float64)
    b64 = bias_h.astype(np.float64)
    # the epilogue computes act(acc + bias) with acc = +0: a bias of -0 gives act(+0) = +0
    want = act_ref(b64 + 0.0, activation).astype(dtype).astype(np.float64)   # rounded to the type
    ns = len(special)
    bad = [f"act({b!r}) = {r!r}, want {wv!r}" for b, r, wv in zip(b64[:ns], row[:ns], want[:ns])
           if not ((np.isnan(r) and np.isnan(wv)) or (r == wv and np.signbit(r) == np.signbit(wv)))]
    assert not bad, "; ".join(bad)
    g, wg, bg = row[ns:], want[ns:], b64[ns:]
    err = np.abs(g - wg)
    tol = np.maximum(_ulp(wg, dtype), 1e-6 * np.maximum(1.0, np.abs(bg)))
    i = int(np.argmax(err / tol))
    assert err[i] <= tol[i], f"act({bg[i]!r}) = {g[i]!r}, want {wg[i]!r}"


@pytest.mark.parametrize("activation", ["gelu", "silu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_few_row_fused_families_agree(dtype, activation):
    """The two few-row fused families that gemm._few_rows_family picks between, fr96 (128x96 tiles) and fr192
    (128x192), on problems with row and column tails: the same bits (both add the k-blocks in the same order), and
    within the dtype's tolerance (_sm90_common.check) of act(x @ w.T + b) in float64 (x, w, b as rounded)."""
    import cupy

    from gpk_array._kernels import gemm
    keys = [f"gemm/{gemm.dtype_name(dtype)}/tn/{f}_bias_{activation}/sm90" for f in ("fr96", "fr192")]
    L = load_instances(keys)
    rng = np.random.default_rng(23)
    for m, n, k in ((1000, 3000, 768), (640, 2304, 200), (77, 392, 64)):
        x = (rng.uniform(-1, 1, (m, k))).astype(dtype)
        w = (rng.uniform(-1, 1, (n, k)) * 0.1).astype(dtype)
        b = rng.uniform(-2, 2, (n,)).astype(dtype)
        ref = act_ref(x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64), activation)
        outs = []
        for key in keys:
            o = cupy.empty((m, n), dtype)
            assert L.gemm_into(key, cupy.asarray(x), cupy.asarray(w), o, bias=cupy.asarray(b)), key
            outs.append(o)
        cupy.cuda.Device().synchronize()
        assert cupy.array_equal(outs[0].view(cupy.uint16), outs[1].view(cupy.uint16)), (m, n, k)
        check(outs[1], ref, np.dtype(dtype))
