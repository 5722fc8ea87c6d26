"""The fused attention kernel (cuda/attention.cu) on the GPU against float64 NumPy softmax(q k^T * scale + causal
mask) v: float16/bfloat16, head dims 64/128, both CTA heights, sequence lengths with and without tails, batch x
heads up to 8 x 12, causal and not, fewer queries than keys, strided views of a fused QKV projection, every output
element written (NaN-poisoned output buffer), repeatable bit for bit, inside a CUDA graph (a programmatic dependent
launch there), and through gpk_array.scaled_dot_product_attention. A failure names the largest error and where."""
import math

import numpy as np
import pytest

from tests.kernels._gpu_common import BF16, gpu_marks

pytestmark = gpu_marks()

DTYPES = ["float16"] + (["bfloat16"] if BF16 is not None else [])
TOL = {"float16": 2e-3, "bfloat16": 1.2e-2}   # max |err| / max |ref|; fp16 kernels land near 4e-4, bf16 near 3e-3


def _np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def _reference(q, k, v, causal, scale):
    qd, kd, vd = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    s = np.matmul(qd, np.swapaxes(kd, -1, -2)) * scale
    Lq, Lk = q.shape[-2], k.shape[-2]
    if causal:
        keep = np.arange(Lk)[None, :] <= np.arange(Lq)[:, None] + (Lk - Lq)
        s = np.where(keep, s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.matmul(p, vd)


def _host(a):
    import cupy
    if a.dtype == BF16:  # CuPy copies bfloat16 bits as uint16
        return cupy.asnumpy(cupy.ascontiguousarray(a.view(cupy.uint16))).view(BF16)
    return cupy.asnumpy(a)


def _dev(a):
    import cupy
    if a.dtype == BF16:
        return cupy.asarray(np.ascontiguousarray(a).view(np.uint16)).view(a.dtype)
    return cupy.asarray(a)


def _check(got, want, dtype, what):
    got = np.asarray(got, dtype=np.float64)
    bad = ~np.isfinite(got)
    assert not bad.any(), f"{what}: {int(bad.sum())} non-finite outputs, first at {np.argwhere(bad)[:3].tolist()}"
    err = np.abs(got - want)
    i = np.unravel_index(int(err.argmax()), err.shape)
    rel = float(err.max()) / max(float(np.abs(want).max()), 1e-30)
    assert rel <= TOL[dtype], (f"{what}: max abs error {err.max():.3g} at index {tuple(int(x) for x in i)} "
                               f"(got {got[i]:.6g}, want {want[i]:.6g}); relative to max |ref| {rel:.3g} "
                               f"> {TOL[dtype]}")


def _rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(_np_dtype(dtype))


def _run(q, k, v, causal, scale, bm=None, poison=True):
    import cupy
    from gpk_array._kernels import attention as attn
    out = None
    if poison:
        out = cupy.empty(q.shape, dtype=q.dtype)
        out.view(cupy.uint16).fill(0x7E00 if q.dtype == np.float16 else 0x7FC0)  # NaN in either format
    y = attn.attention(q, k, v, causal, scale, block_m=bm, out=out)
    assert y is not None, f"the fused kernel declined q {q.shape} {q.dtype} strides {q.strides}"
    cupy.cuda.get_current_stream().synchronize()
    return y


CASES = [(B, H, T) for T in (1, 7, 64, 65, 127, 1024, 1031) for B, H in ((1, 1), (2, 3))] + [(8, 12, 1024)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D,bm", [(64, 64), (64, 128), (128, 64)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("B,H,T", CASES)
def test_matches_float64(dtype, D, bm, causal, B, H, T):
    if (B, H) == (8, 12) and (dtype != "float16" or D != 64):
        pytest.skip("the 8 x 12 case once per kernel family is enough")
    rng = np.random.default_rng(T * 131 + D + B)
    q, k, v = (_rand(rng, (B, H, T, D), dtype) for _ in range(3))
    scale = 1 / math.sqrt(D)
    y = _run(*(_dev(a) for a in (q, k, v)), causal, scale, bm)
    _check(_host(y), _reference(q, k, v, causal, scale), dtype, f"B={B} H={H} T={T} D={D} bm={bm} causal={causal}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("Lq,Lk", [(1, 1031), (7, 64), (65, 130), (64, 65), (100, 1000), (129, 1024)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_fewer_queries_than_keys(dtype, Lq, Lk, causal):
    rng = np.random.default_rng(Lq + 7 * Lk)
    q = _rand(rng, (2, 3, Lq, 64), dtype)
    k, v = (_rand(rng, (2, 3, Lk, 64), dtype) for _ in range(2))
    for bm in (64, 128):
        y = _run(*(_dev(a) for a in (q, k, v)), causal, 0.125, bm)
        _check(_host(y), _reference(q, k, v, causal, 0.125), dtype, f"Lq={Lq} Lk={Lk} bm={bm} causal={causal}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("T", [65, 1024])
def test_fused_qkv_views(dtype, D, T):
    """q, k, v as (B, H, T, D) views of one (B, T, 3, H, D) projection (GPT-2's layout); the result comes back as a
    (B, H, T, D) view of a (B, T, H, D) array."""
    import cupy
    from gpk_array._kernels import attention as attn
    B, H = 2, 12 if D == 64 else 4
    rng = np.random.default_rng(D + T)
    qkv_h = _rand(rng, (B, T, 3, H, D), dtype)
    qkv = _dev(qkv_h)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    y = attn.attention(q, k, v, True, 1 / math.sqrt(D))
    assert y is not None
    cupy.cuda.get_current_stream().synchronize()
    isz = qkv.dtype.itemsize
    assert y.strides == (T * H * D * isz, D * isz, H * D * isz, isz)
    want = _reference(*(qkv_h[:, :, i].transpose(0, 2, 1, 3) for i in range(3)), True, 1 / math.sqrt(D))
    _check(_host(y), want, dtype, f"fused qkv T={T} D={D}")


def test_large_scores_and_repeatable():
    """Scores of magnitude ~1e3 (the online rescaling underflows old weights to 0) and two runs bit for bit."""
    rng = np.random.default_rng(9)
    q = _rand(rng, (2, 4, 1031, 64), "float16", 4.0)
    k = _rand(rng, (2, 4, 1031, 64), "float16", 4.0)
    v = _rand(rng, (2, 4, 1031, 64), "float16")
    args = [_dev(a) for a in (q, k, v)]
    y1 = _host(_run(*args, True, 1.0))
    y2 = _host(_run(*args, True, 1.0))
    assert np.array_equal(y1.view(np.uint16), y2.view(np.uint16)), "two runs differ: a race"
    _check(y1, _reference(q, k, v, True, 1.0), "float16", "large scores")


def test_in_a_cuda_graph():
    """Recorded in a graph (a programmatic dependent launch on SM90, with 80 KiB of shared memory for D = 128) and
    replayed on new inputs written into the same buffers."""
    import cupy
    from gpk_array._kernels import attention as attn
    rng = np.random.default_rng(4)
    shapes = {64: (2, 12, 300, 64), 128: (1, 4, 300, 128)}
    bufs = {d: [_dev(_rand(rng, s, "float16")) for _ in range(3)] for d, s in shapes.items()}
    outs = {}
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        for d in shapes:
            attn.attention(*bufs[d], True, 0.1)  # load and compile outside the capture
        s.synchronize()
        s.begin_capture()
        try:
            for d in shapes:
                outs[d] = attn.attention(*bufs[d], True, 0.1)
        finally:
            graph = s.end_capture()
    for _ in range(2):
        host = {d: [_rand(rng, shapes[d], "float16") for _ in range(3)] for d in shapes}
        with s:
            for d in shapes:
                for buf, h in zip(bufs[d], host[d]):
                    buf.set(h, stream=s)
        graph.launch(stream=s)
        s.synchronize()
        for d in shapes:
            _check(cupy.asnumpy(outs[d]), _reference(*host[d], True, 0.1), "float16", f"graph replay D={d}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_through_the_namespace(dtype, monkeypatch):
    """gpk_array.scaled_dot_product_attention on cuda:0 takes the fused kernel (counted) for 16-bit inputs and the
    GEMM path with GPK_FLASH_ATTENTION's switch off; both match float64."""
    import gpk_array as gp
    from gpk_array import _gpu
    calls = []
    real = _gpu._attn.attention
    monkeypatch.setattr(_gpu._attn, "attention", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    rng = np.random.default_rng(3)
    q, k, v = (_rand(rng, (2, 12, 200, 64), dtype) for _ in range(3))
    dt = gp.float16 if dtype == "float16" else gp.bfloat16
    gq, gk, gv = (gp.astype(gp.asarray(a.astype(np.float32), device="cuda:0"), dt) for a in (q, k, v))
    want = _reference(q, k, v, True, 0.125)

    def host(a):
        return np.asarray(gp.astype(a, gp.float64).to_device("cpu"))
    y = gp.scaled_dot_product_attention(gq, gk, gv, causal=True, scale=0.125)
    assert calls, "the fused kernel was not asked"
    _check(host(y), want, dtype, "namespace, fused")
    monkeypatch.setattr(_gpu, "FLASH_ATTENTION", False)
    n = len(calls)
    y = gp.scaled_dot_product_attention(gq, gk, gv, causal=True, scale=0.125)
    assert len(calls) == n
    _check(host(y), want, dtype, "namespace, GEMM path")


@pytest.mark.parametrize("dtype", DTYPES)
def test_gpt2_forward_uses_the_kernel(dtype, monkeypatch):
    """A small GPT-2 (head dim 64) in float16/bfloat16 on cuda:0, whose attention now runs the fused kernel (counted),
    against the same weights in float64 on the CPU device: logits of 200 tokens, batch 2."""
    import gpk_array as gp
    from gpk_array import _gpu
    from gpk_array.llm import GPT2, GPT2Config, random_weights
    calls = []
    real = _gpu._attn.attention
    monkeypatch.setattr(_gpu._attn, "attention", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    cfg = GPT2Config(vocab_size=500, n_positions=256, n_embd=256, n_layer=2, n_head=4)
    w = random_weights(cfg, seed=1, std=0.05)
    dt = gp.float16 if dtype == "float16" else gp.bfloat16
    gpu = GPT2.from_weights(cfg, w, device="cuda:0", dtype=dt)
    cpu = GPT2.from_weights(cfg, w, device="cpu", dtype=gp.float64)
    tokens = np.random.default_rng(0).integers(0, 500, (2, 200))
    got = np.asarray(gp.astype(gpu(tokens), gp.float64).to_device("cpu"))
    want = np.asarray(cpu(tokens).to_device("cpu"))
    assert len(calls) == cfg.n_layer, "the model's attention did not take the fused kernel"
    err = np.abs(got - want)
    tol = {"float16": 1e-2, "bfloat16": 6e-2}[dtype]
    assert err.max() <= tol * np.abs(want).max(), (
        f"logits: max abs error {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}, "
        f"max |ref| {np.abs(want).max():.3g}")
