"""GPU tests of the namespace's SM90 GEMM dispatch (gpk_array/_gpu.py -> gemm.gemm_sm90 -> launch_sm90.gemm_into):
float16/bfloat16 ``a @ b``, ``x @ w.T`` and ``linear(x, w)`` on a CC 9.0 device go to the CUTLASS SM90 instances
where the shape rule says so, everything else to cuBLAS, and the answers agree with float64 NumPy either way.

Also checked here against the real driver: a launch cached for one pointer set and re-pointed at another
(``set_pointers``, cuTensorMapReplaceAddress) is byte for byte the Params a fresh encode makes; the cached launch
is right on other streams and inside a CUDA graph. GPU run: pytest -m gpu
tests/kernels/test_cutlass_sm90_dispatch_gpu.py
"""

import ctypes

import numpy as np
import pytest

from tests.kernels._gpu_common import gpu_marks
from tests.kernels._sm90_common import DTYPES, act_ref, load_instances
from tests.kernels._sm90_common import check as _check
from tests.kernels._sm90_common import f64 as _f64
from tests.kernels._sm90_common import rand as _rand

pytestmark = gpu_marks()

KEYS = [f"gemm/{d}/{lay}/{f}/sm90" for f in ("ppt", "coopt") for d in ("f16", "bf16") for lay in ("nn", "tn")]


@pytest.fixture(scope="module")
def L():
    return load_instances(KEYS)


@pytest.fixture
def spy(L, monkeypatch):
    """Counts gemm_into calls and how many launched."""
    from gpk_array import _gpu
    if _gpu._sm90_off:
        pytest.skip("GPK_GEMM=cublas or the SM90 instances were disabled in this process")
    seen = {"calls": 0, "ran": 0, "keys": []}
    real = L.gemm_into

    def wrapped(key, x, w, out, device=None, bias=None):
        seen["calls"] += 1
        ok = real(key, x, w, out, device, bias)
        seen["ran"] += ok
        seen["keys"].append(key)
        return ok

    monkeypatch.setattr(L, "gemm_into", wrapped)
    monkeypatch.setattr(_gpu, "GEMM_MODE", "cutlass")   # the checking mode: every covered problem to SM90
    return seen


def _xp_arrays(rng, dt, *shapes):
    import gpk_array as xp
    dev = xp.Device("cuda:0")
    return [xp.asarray(_rand(rng, s, dt), device=dev) for s in shapes]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("m, k, n", [(8192, 768, 3072), (1000, 1000, 1000), (1, 768, 2304), (129, 768, 768),
                                     (4096, 4096, 4096), (128, 3072, 768), (24, 24, 8)])
def test_matmul_routes_by_the_shape_rule(spy, dt, m, k, n, monkeypatch):
    import gpk_array as xp
    from gpk_array import _gpu
    from gpk_array._kernels import gemm
    rng = np.random.default_rng(m + n)
    a, b, w = _xp_arrays(rng, dt, (m, k), (k, n), (n, k))
    ref = _f64(a._data) @ _f64(b._data)
    for mode in ("auto", "cutlass"):
        monkeypatch.setattr(_gpu, "GEMM_MODE", mode)
        fam = gemm.sm90_family(m, n, k, mode == "cutlass", "f16" if dt.name == "float16" else "bf16")
        n0 = spy["ran"]
        y = a @ b
        assert y.shape == (m, n) and y.dtype == a.dtype
        _check(y._data, ref, dt)
        if fam is None:
            assert spy["ran"] == n0
        else:
            assert spy["ran"] == n0 + 1 and spy["keys"][-1].endswith(f"/nn/{fam}/sm90")
        y2 = xp.matmul(a, xp.matrix_transpose(w))          # b.T a row-major weight: the "tn" instances
        _check(y2._data, _f64(a._data) @ _f64(w._data).T, dt)
        if fam is not None:
            assert spy["ran"] == n0 + 2 and "/tn/" in spy["keys"][-1]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_batched_a_linear_and_fallbacks(spy, dt):
    import gpk_array as xp
    rng = np.random.default_rng(5)
    a, b, w = _xp_arrays(rng, dt, (2, 40, 768), (768, 2304), (3072, 768))
    y = a @ b                                           # leading dims flattened: one (80, 768) @ (768, 2304)
    assert spy["ran"] == 1 and y.shape == (2, 40, 2304)
    _check(y._data, _f64(a._data) @ _f64(b._data), dt)
    y = xp.linear(a, w)                                 # no bias, no activation: the "tn" instance
    assert spy["ran"] == 2 and "/tn/" in spy["keys"][-1]
    _check(y._data, _f64(a._data) @ _f64(w._data).T, dt)
    a2 = a[0]
    abase, bbase = _xp_arrays(rng, dt, (40, 776), (768, 2312))
    cases = [(a2[:, 1:], b[1:]),                        # K = 767: not a multiple of 8
             (abase[:, 4:772], b),                      # A's pointer 8 bytes off a 16-byte boundary
             (a2, bbase[:, 4:2308]),                    # B's pointer 8 bytes off
             (a2, b[:, :2300]),                         # N = 2300
             (a2, b[:, ::2])]                           # B neither row- nor column-contiguous
    for x, bb in cases:
        n0 = spy["ran"]
        y = x @ bb
        assert spy["ran"] == n0                         # refused (or not offered): cuBLAS ran
        _check(y._data, _f64(x._data) @ _f64(bb._data), dt)
    y = xp.matmul(xp.stack([a2, a2]), xp.stack([b, b]))  # batched b: cuBLAS
    _check(y._data[1], _f64(a2._data) @ _f64(b._data), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_new_pointers_of_cached_shapes(spy, dt):
    """Many operand/output pointer sets of one shape: the first encodes, the rest re-point the cached Params."""
    import gpk_array as xp
    rng = np.random.default_rng(9)
    keep = []
    for i in range(12):
        a, b = _xp_arrays(rng, dt, (512, 768), (768, 3072))
        keep.append(xp.empty((1 + i * 1000,), dtype=dt, device=a.device))   # shifts the pool's next address
        y = a @ b
        _check(y._data, _f64(a._data) @ _f64(b._data), dt)
        keep += [a, b, y]                      # all kept alive: every iteration's pointers are new
    assert spy["ran"] == 12


def test_set_pointers_with_the_driver_equals_a_fresh_encode(L):
    """cuTensorMapReplaceAddress on a cached Params gives exactly the bytes of a fresh cuTensorMapEncodeTiled."""
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import params_sm90 as P
    for key in ("gemm/f16/nn/ppt/sm90", "gemm/bf16/tn/coopt/sm90", "gemm/f16/tn/pp/sm90", "gemm/tf32/nn/pp/sm90",
                "gemm/tf32/tn/ppt/sm90", "gemm/bf16/tn/ppt_bias_gelu/sm90"):
        e = P.instance(key)
        fused = P.fused_of(e) is not None
        m, n, k = 1000, 3072, 768
        base = [0x7f00_0000_0000 + i * 0x1000_0000 for i in range(3)]
        old = (base[0], base[1], base[2], base[2])
        new = (base[0] + 0x10_0010, base[1] + 0x20_0100, base[2] + 0x40_0000, base[2] + 0x40_0000)
        sms = loader.sm_count()
        bias_old, bias_new = (base[2] + 0x80_0000, base[2] + 0x90_0002) if fused else (0, 0)
        la = P.build_sm90_launch(e, m, n, k, *old, sm_count=sms, bias=bias_old)
        fresh = P.build_sm90_launch(e, m, n, k, *new, sm_count=sms, bias=bias_new)
        raw, kp, _ = L._packed(la)
        L.set_pointers(e, kp[0], new, bias_new)
        assert ctypes.string_at(kp[0], len(fresh.params)) == bytes(fresh.params), key


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_other_stream_and_cuda_graph(spy, dt):
    import cupy
    rng = np.random.default_rng(11)
    a, b = _xp_arrays(rng, dt, (256, 768), (768, 2304))
    ref = _f64(a._data) @ _f64(b._data)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = a @ b
        s.synchronize()
    _check(y._data, ref, dt)
    with s:
        a @ b                                           # warm: the launch is cached for this stream
        s.begin_capture()
        y = a @ b
        g = s.end_capture()
    assert spy["ran"] >= 3
    with s:  # new inputs on s itself: s is non-blocking, so a copy on the default stream would race the replay
        a._data[...] = cupy.asarray(_rand(rng, a.shape, dt))
    g.launch(stream=s)
    s.synchronize()
    _check(y._data, _f64(a._data) @ _f64(b._data), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_tensordot_is_one_matmul(spy, dt):
    import gpk_array as xp
    rng = np.random.default_rng(13)
    a, b, c = _xp_arrays(rng, dt, (4, 32, 768), (768, 2304), (32, 768, 24))
    y = xp.tensordot(a, b, axes=1)
    assert spy["ran"] == 1 and y.shape == (4, 32, 2304)
    _check(y._data, np.tensordot(_f64(a._data), _f64(b._data), axes=1), dt)
    y = xp.tensordot(a, c, axes=([1, 2], [0, 1]))       # (4, 24576) @ (24576, 24): K long, few tiles: cuBLAS
    _check(y._data, np.tensordot(_f64(a._data), _f64(c._data), axes=([1, 2], [0, 1])), dt)
    y = xp.tensordot(c, a, axes=([0, 1], [1, 2]))       # moved axes: copies, then (24, K) @ (K, 4)
    _check(y._data, np.tensordot(_f64(c._data), _f64(a._data), axes=([0, 1], [1, 2])), dt)
    y = xp.tensordot(a, b, axes=([-1], [-2]))
    _check(y._data, np.tensordot(_f64(a._data), _f64(b._data), axes=([-1], [-2])), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("activation", [None, "gelu", "gelu_tanh", "relu", "silu"])
def test_linear_fused_epilogue_dispatch(spy, dt, activation, monkeypatch):
    import gpk_array as xp
    from gpk_array import _gpu
    from gpk_array._kernels import gemm
    rng = np.random.default_rng(17)
    x, w, b = _xp_arrays(rng, dt, (3, 43, 768), (2304, 768), (2304,))
    w = w * 0.05
    ref = act_ref(_f64(x._data).reshape(-1, 768) @ _f64(w._data).T + _f64(b._data), activation).reshape(3, 43, 2304)
    y = xp.linear(x, w, b, activation=activation)           # forced (the spy's mode): the fused instance
    few = "fr96" if activation in gemm.FEW_ROWS_FUSED else "ppt"      # 129 rows: fr96 carries gelu and silu
    want = few + "_bias" + (f"_{activation}" if activation else "")
    assert spy["ran"] == 1 and spy["keys"][-1].split("/")[3] == want
    _check(y._data, ref, dt)
    monkeypatch.setattr(_gpu, "GEMM_MODE", "auto")
    y = xp.linear(x, w, b, activation=activation)            # 129 rows: fused only for gelu and silu
    fused = gemm.select_sm90_fused(x.dtype, 129, 2304, 768, activation) is not None
    assert fused == (activation in ("gelu", "silu")) and spy["ran"] == 1 + fused
    _check(y._data, ref, dt)
    y = xp.linear(x, w, None, activation=activation)          # no bias: fused with a null bias (zeros) when routed
    _check(y._data, act_ref(_f64(x._data).reshape(-1, 768) @ _f64(w._data).T, activation).reshape(3, 43, 2304), dt)


def test_tf32_routing(spy, monkeypatch):
    import gpk_array as xp
    from gpk_array import _gpu
    monkeypatch.setattr(_gpu, "GEMM_MODE", "auto")
    rng = np.random.default_rng(19)
    a, w = (xp.asarray(rng.uniform(-1, 1, s).astype(np.float32), device=xp.Device("cuda:0"))
            for s in ((1024, 768), (3072, 768)))
    ref = _f64(a._data) @ _f64(w._data).T
    y = xp.matmul(a, xp.matrix_transpose(w))
    assert spy["ran"] == 0                                   # float32 without TF32: cuBLAS, full FP32
    assert np.abs(_f64(y._data) - ref).max() <= 1e-4 * np.abs(ref).max()
    prev = xp.get_float32_matmul_precision()
    xp.set_float32_matmul_precision("high")
    try:
        y = xp.matmul(a, xp.matrix_transpose(w))
        assert spy["ran"] == 1 and spy["keys"][-1] == "gemm/tf32/tn/ppt/sm90"
        assert np.abs(_f64(y._data) - ref).max() <= 2e-3 * np.abs(ref).max()     # TF32: 10-bit mantissas
        y = xp.linear(a, w)
        assert spy["ran"] == 2
        y = a @ xp.ascontiguousarray(xp.matrix_transpose(w))  # "nn": the TF32 nn instances are slower: cuBLAS
        assert spy["ran"] == 2
    finally:
        xp.set_float32_matmul_precision(prev)
