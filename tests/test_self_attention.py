"""gpk_array.self_attention (multi-head attention of a fused QKV projection) on each device against a float64 NumPy
reference written from its definition, and its bad-input errors. On CUDA, float16/bfloat16 with head dims 64 and
128 run the fused attention kernel reading the heads from qkv in place; the rest, the GEMM path."""
import math

import numpy as np
import pytest

import gpk_array as gp


def _reference(qkv, h, causal, scale):
    x = np.asarray(qkv, dtype=np.float64)
    lead, t, c3 = x.shape[:-2], x.shape[-2], x.shape[-1]
    c = c3 // 3
    d = c // h
    out = np.empty(lead + (t, c))
    for i in range(h):
        q, k, v = (x[..., j * c + i * d: j * c + (i + 1) * d] for j in range(3))
        s = q @ np.swapaxes(k, -1, -2) * scale
        if causal:
            s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        out[..., i * d:(i + 1) * d] = (s / s.sum(axis=-1, keepdims=True)) @ v
    return out


def _host(a):
    return np.asarray(gp.astype(a, gp.float64).to_device("cpu"))


CASES = [((7, 3 * 2 * 64), 2), ((2, 65, 3 * 12 * 64), 12), ((2, 2, 33, 3 * 4 * 128), 4), ((1, 130, 3 * 3 * 16), 3)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,h", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_matches_float64(device, dtype, shape, h, causal):
    rng = np.random.default_rng(sum(shape) + h)
    x = rng.standard_normal(shape).astype(np.float32)
    dt = getattr(gp, dtype)
    qkv = gp.astype(gp.asarray(x, device=device), dt)
    d = shape[-1] // (3 * h)
    got = gp.self_attention(qkv, h, causal=causal)
    assert got.shape == shape[:-1] + (shape[-1] // 3,) and got.dtype == dt and got.device == qkv.device
    want = _reference(_host(qkv), h, causal, 1 / math.sqrt(d))
    tol = {"float32": 1e-5, "float16": 3e-3, "bfloat16": 2e-2}[dtype]
    err = np.abs(_host(got) - want)
    at = np.unravel_index(err.argmax(), err.shape)
    assert err.max() <= tol * np.abs(want).max(), f"max abs error {err.max():.3g} at {at}"


def test_same_as_split_and_sdpa(device):
    """self_attention equals the composition it replaces: split, heads in front, scaled_dot_product_attention, back."""
    rng = np.random.default_rng(0)
    B, T, H, D = 2, 40, 3, 64
    qkv = gp.asarray(rng.standard_normal((B, T, 3 * H * D)).astype(np.float32), device=device)
    heads = gp.reshape(qkv, (B, T, 3, H, D))
    q, k, v = (gp.permute_dims(heads[:, :, i], (0, 2, 1, 3)) for i in range(3))
    want = gp.reshape(gp.permute_dims(gp.scaled_dot_product_attention(q, k, v, causal=True, scale=0.3),
                                      (0, 2, 1, 3)), (B, T, H * D))
    got = gp.self_attention(qkv, H, scale=0.3)
    np.testing.assert_allclose(_host(got), _host(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args,exc,match", [
    (((8, 3 * 64), 5), ValueError, "3 \\* num_heads"),
    (((8, 3 * 64), 0), ValueError, "num_heads=0"),
    (((8, 0), 1), ValueError, "last axis"),
    (((3 * 64,), 1), ValueError, "at least 2 dimensions"),
    (((8, 3 * 64), 1.5), TypeError, None),
])
def test_bad_input(args, exc, match):
    shape, h = args
    with pytest.raises(exc, match=match):
        gp.self_attention(gp.zeros(shape, device="cpu"), h)
    with pytest.raises(TypeError, match="floating-point"):
        gp.self_attention(gp.zeros((4, 6), dtype=gp.int32, device="cpu"), 1)
