"""GPU tests of the SM90 fused bias/activation instances: launch_sm90.linear_tn_sm90(x, w, bias=..., activation=...).

The instances (gemm/<f16|bf16>/tn/ppt_<epilogue>/sm90, epilogue in bias, bias_gelu, bias_gelu_tanh, bias_relu,
bias_silu) are the ppt GEMM (ping-pong 128x128x64, cluster 2x1x1, TMA epilogue) with an epilogue visitor tree:
D = act(x @ w.T + bias[n]), fp32 accumulate and compute, one rounding to float16/bfloat16 at the end; no C.
References: float64 NumPy of the same rounded inputs (gelu with erf, gelu_tanh torch's tanh formula, silu
x / (1 + exp(-x))); tolerances relative to max|ref| as for the plain instances (tests/kernels/_sm90_common.py:
float16 5e-3, bfloat16 2e-2; the activations' approximations, tanh.approx.f32 and ex2.approx, are far below).
Needs a CC 9.0 GPU and the cubins (prebuilt into $GPK_CACHE_DIR/sm_90a/ by
python -m gpk_array._kernels.cutlass.launch_sm90 --prebuild, or nvcc + CUTLASS headers to build them, ~3 min each):

    pytest -m gpu tests/kernels/test_cutlass_sm90_epi_gpu.py
"""

import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks
from tests.kernels._sm90_common import DTYPES, act_ref, load_instances
from tests.kernels._sm90_common import check as _check
from tests.kernels._sm90_common import f64 as _f64
from tests.kernels._sm90_common import rand as _rand

pytestmark = gpu_marks()

ACTIVATIONS = [None, "gelu", "gelu_tanh", "relu", "silu"]
EPI = {None: "bias", "gelu": "bias_gelu", "gelu_tanh": "bias_gelu_tanh", "relu": "bias_relu",
       "silu": "bias_silu"}
KEYS = [f"gemm/{d}/tn/ppt_{e}/sm90" for e in EPI.values() for d in ("f16", "bf16")]
M_ODD = [1, 7, 129, 1000]
NK = [(3072, 768), (768, 3072), (2304, 768)]


@pytest.fixture(scope="module")
def L():
    return load_instances(KEYS)


def _ids(a):
    return "none" if a is None else a


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=_ids)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m", M_ODD)
@pytest.mark.parametrize("n,k", NK)
def test_fused_odd_m(L, dtype, activation, m, n, k):
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    x, w, b = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype), _rand(rng, (n,), dtype, 4.0)
    y = L.linear_tn_sm90(x, w, bias=b, activation=activation)
    assert y.shape == (m, n) and y.dtype == dtype
    _check(y, act_ref(_f64(x) @ _f64(w).T + _f64(b), activation), dtype)


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=_ids)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_zero_bias_and_no_bias(L, dtype, activation):
    """An all-zero bias and no bias at all (a null pointer: the row broadcast reads zeros) give act(x @ w.T)."""
    import cupy
    rng = np.random.default_rng(5)
    m, n, k = 129, 768, 768
    x, w = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype)
    ref = act_ref(_f64(x) @ _f64(w).T, activation)
    y0 = L.linear_tn_sm90(x, w, bias=cupy.zeros(n, dtype), activation=activation)
    _check(y0, ref, dtype)
    if activation is not None:
        y1 = L.linear_tn_sm90(x, w, activation=activation)
        _check(y1, ref, dtype)
        assert (y1 == y0).all()


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh"], ids=_ids)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m,k,n", [(8192, 768, 3072), (512, 768, 3072), (8192, 3072, 768)])
def test_gpt2_mlp_shapes(L, dtype, activation, m, k, n):
    rng = np.random.default_rng(m + k)
    x, w, b = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype, 0.1), _rand(rng, (n,), dtype)
    y = L.linear_tn_sm90(x, w, bias=b, activation=activation)
    _check(y, act_ref(_f64(x) @ _f64(w).T + _f64(b), activation), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_bias_only_matches_ppt_plus_bias(L, dtype):
    """The bias-only instance against the plain ppt instance plus the bias in float64: the same mainloop,
    one rounding instead of two."""
    import cupy
    rng = np.random.default_rng(11)
    m, n, k = 1000, 2304, 768
    x, w, b = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype), _rand(rng, (n,), dtype)
    y = L.linear_tn_sm90(x, w, bias=b)
    plain = L.linear_tn_sm90(x, w, family="ppt")
    cupy.cuda.Device().synchronize()
    _check(y, _f64(plain) + _f64(b), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_padded_operands_and_out(L, dtype):
    """x, w and out as column slices of wider buffers (leading dimensions > K, N); out's borders untouched."""
    import cupy
    rng = np.random.default_rng(3)
    m, n, k = 333, 768, 768
    xb, wb = _rand(rng, (m, k + 64), dtype), _rand(rng, (n, k + 8), dtype)
    x, w = xb[:, 64:], wb[:, :k]
    b = _rand(rng, (n,), dtype)
    ob = cupy.full((m, n + 16), 7, dtype)
    out = ob[:, 8:8 + n]
    y = L.linear_tn_sm90(x, w, out=out, bias=b, activation="gelu")
    assert y is out
    _check(out, act_ref(_f64(x) @ _f64(w).T + _f64(b), "gelu"), dtype)
    assert (ob[:, :8] == 7).all() and (ob[:, 8 + n:] == 7).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_refused_cases(L, dtype):
    """What the fused instances cannot run raises ValueError naming the reason (the caller uses cuBLAS)."""
    import cupy
    rng = np.random.default_rng(1)
    m, n, k = 64, 768, 768
    x, w, b = _rand(rng, (m, k), dtype), _rand(rng, (n, k), dtype), _rand(rng, (n,), dtype)
    # a bias at an odd byte address: not element-aligned
    raw = cupy.zeros(2 * n + 16, cupy.uint8)
    bad = cupy.ndarray((n,), dtype, memptr=raw.data + 1)
    with pytest.raises(ValueError, match="bias must be 2-byte aligned"):
        L.linear_tn_sm90(x, w, bias=bad, activation="gelu")
    # a 2-byte (not 16-byte) aligned bias is fine: the row broadcast reads element by element
    ok = cupy.ndarray((n,), dtype, memptr=raw.data + 2)
    ok[...] = b
    _check(L.linear_tn_sm90(x, w, bias=ok), _f64(x) @ _f64(w).T + _f64(b), dtype)
    # N not a multiple of 8 (the TMA store of D needs 16-byte rows)
    n2 = 1004 + 2
    w2, b2 = _rand(rng, (n2, k), dtype), _rand(rng, (n2,), dtype)
    with pytest.raises(ValueError, match="N must"):
        L.linear_tn_sm90(x, w2, bias=b2, activation="relu")
    # K not a multiple of 8
    with pytest.raises(ValueError, match="K must"):
        L.linear_tn_sm90(x[:, :764], w[:, :764], bias=b)
    # wrong bias shape, dtype, or a strided bias
    with pytest.raises(ValueError, match="bias must be"):
        L.linear_tn_sm90(x, w, bias=b[:-8])
    with pytest.raises(ValueError, match="bias must be"):
        L.linear_tn_sm90(x, w, bias=b.astype(cupy.float32))
    with pytest.raises(ValueError, match="contiguous"):
        L.linear_tn_sm90(x, w, bias=cupy.repeat(b, 2)[::2])
    # no alpha, beta or C in the fused epilogue; unknown activations; families without fused instances
    with pytest.raises(ValueError, match="alpha"):
        L.linear_tn_sm90(x, w, bias=b, alpha=2.0)
    with pytest.raises(ValueError, match="activation"):
        L.linear_tn_sm90(x, w, bias=b, activation="tanh")
    with pytest.raises(ValueError, match="families"):
        L.linear_tn_sm90(x, w, bias=b, family="coopt")
