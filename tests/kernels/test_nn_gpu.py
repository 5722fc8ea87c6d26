"""The fused transformer kernels (gpk_array/_kernels/nn.py) recorded in a CUDA graph, as the decode step is: on
SM90 they are programmatic dependent launches there (each may start while the kernel before it finishes), so a
missing wait would read stale inputs. The replayed graph must give what float64 NumPy gives, for new inputs
written into the same buffers, and the same as the eager (ordinary) launches."""
import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks

pytestmark = gpu_marks()


def _gelu_tanh(v):
    return 0.5 * v * (1 + np.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))


def _ln(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_decode_chain_in_a_graph(dtype):
    import cupy
    from gpk_array._kernels import loader, nn
    rng = np.random.default_rng(3)
    M, C, F, V = 1, 768, 3072, 5003
    tol = {"float32": 1e-4, "float16": 3e-2}[dtype]

    def rand(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    w_fc, b_fc, w_proj, b_proj = rand(F, C, scale=C ** -0.5), rand(F), rand(C, F, scale=F ** -0.5), rand(C)
    lnw, lnb, w_head = 1 + rand(C, scale=0.1), rand(C, scale=0.1), rand(V, C, scale=C ** -0.5)
    g = {k: cupy.asarray(v) for k, v in dict(w_fc=w_fc, b_fc=b_fc, w_proj=w_proj, b_proj=b_proj, lnw=lnw, lnb=lnb,
                                             w_head=w_head).items()}
    gx, gr = cupy.asarray(rand(M, C)), cupy.asarray(rand(M, C))
    out = {}

    def step():  # x + r -> ln -> fc + gelu -> proj (split K) -> + -> ln -> head -> argmax
        s, h = nn.ln_gemv(gx, gr, g["lnw"], g["lnb"], 1e-5, g["w_fc"], g["b_fc"], "gelu_tanh")
        y = nn.gemv(h, g["w_proj"], g["b_proj"])
        s2, z = nn.ln_gemv(y, s, g["lnw"], g["lnb"], 1e-5, g["w_head"])
        out.update(s=s, h=h, y=y, s2=s2, z=z, idx=nn.argmax_last_axis(z))

    def want(x, r):
        f = np.float64
        s = (x.astype(f) + r.astype(f)).astype(dtype).astype(f)
        h = _gelu_tanh(_ln(s, lnw.astype(f), lnb.astype(f)).astype(dtype).astype(f) @ w_fc.astype(f).T + b_fc)
        y = h.astype(dtype).astype(f) @ w_proj.astype(f).T + b_proj
        s2 = (y.astype(dtype).astype(f) + s).astype(dtype).astype(f)
        return y, _ln(s2, lnw.astype(f), lnb.astype(f)).astype(dtype).astype(f) @ w_head.astype(f).T

    def check(x, r):
        y, z = want(x, r)
        got_y, got_z = (cupy.asnumpy(out[k]).astype(np.float64) for k in ("y", "z"))
        assert np.abs(got_y - y).max() <= tol * np.abs(y).max()
        assert np.abs(got_z - z).max() <= tol * np.abs(z).max()
        assert int(cupy.asnumpy(out["idx"])[0]) == int(np.argmax(cupy.asnumpy(out["z"])[0]))

    s = cupy.cuda.Stream(non_blocking=True)
    with s, nn.constant_weights():  # the weights are constant: the GEMVs may read them ahead (PDL)
        step()  # eager: ordinary launches (compiles, loads)
        s.synchronize()
        eager = {k: cupy.asnumpy(v) for k, v in out.items()}
        check(cupy.asnumpy(gx), cupy.asnumpy(gr))
        out.clear()  # their blocks go back to the pool, for the capture's allocations to reuse
        s.begin_capture()
        try:
            step()
        finally:
            graph = s.end_capture()
    with s:  # on the graph's stream (a non-blocking one does not wait for the legacy default stream)
        for v in out.values():
            v.fill(0)
    graph.launch(stream=s)
    s.synchronize()
    for k, v in eager.items():  # the same kernels and inputs: the same bits
        assert np.array_equal(cupy.asnumpy(out[k]), v), k
    for _ in range(3):  # new inputs in the same buffers
        x, r = rand(M, C), rand(M, C)
        gx.set(x)
        gr.set(r)
        cupy.cuda.Device().synchronize()
        graph.launch(stream=s)
        s.synchronize()
        check(x, r)
    assert loader._pdl_enabled() == (int(loader.device_arch()) >= 90)


def test_gemv_of_weights_made_in_the_graph():
    """Outside nn.constant_weights() a GEMV's weights may be the output of the kernel just before it, in the same
    graph: it must not read them before that kernel is done (new scales each replay, checked against NumPy)."""
    import cupy
    from gpk_array._kernels import nn
    rng = np.random.default_rng(5)
    w0 = cupy.asarray(rng.standard_normal((333, 768)).astype(np.float32))
    x = cupy.asarray(rng.standard_normal((2, 768)).astype(np.float32))
    scale = cupy.ones((333, 1), dtype=np.float32)
    out = {}
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        w = w0 * scale
        nn.gemv(x, w)
        s.synchronize()
        s.begin_capture()
        try:
            w = w0 * scale  # a CuPy kernel writing the weights ...
            out["y"] = nn.gemv(x, w)  # ... that the GEMV right after it reads
        finally:
            graph = s.end_capture()
    for k in (2.0, -3.0, 0.5):
        scale.fill(k)
        cupy.cuda.Device().synchronize()
        graph.launch(stream=s)
        s.synchronize()
        want = cupy.asnumpy(x).astype(np.float64) @ (k * cupy.asnumpy(w0).astype(np.float64)).T
        got = cupy.asnumpy(out["y"]).astype(np.float64)
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
