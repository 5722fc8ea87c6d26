"""Every test and example kernel (cases.py) on CUDA against the CPU device's run of the same call (itself
checked against NumPy oracles in the CPU tests): bitwise where both compute correctly rounded operations, within
a tolerance where the GPU contracts a*b+c into an FMA, uses tanhf/sqrtf, or sums with atomics in another order."""
import numpy as np
import pytest

import gpk_array as gk

from ..conftest import requires_gpu
from .cases import CASES, EXACT
from . import kernels as KS

pytestmark = [pytest.mark.gpu, requires_gpu]


def _run(kernel, geometry, args):
    (kernel if geometry is None else kernel[geometry])(*args)


def _fresh(kernel):
    """The same kernel with an empty cache (its first CUDA call takes the general path, the next the direct one)."""
    return type(kernel)(kernel.__wrapped__, readonly=kernel.readonly, block=kernel.block, name=kernel.__name__)


@pytest.mark.parametrize("call", ["first", "cached"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cuda_matches_cpu_device(case, call, monkeypatch):
    """The first call (general path: specialize, compile, CuPy's launch) and a second call of the same signature
    (the direct path of launch.py: the general path must not run) both give the CPU device's result."""
    name, kernel, make, geometry = case
    kernel = _fresh(kernel)
    cpu_args = list(make())
    gpu_args = [gk.asarray(a, device="cuda:0") if isinstance(a, np.ndarray) else a for a in make()]
    _run(kernel, geometry, cpu_args)
    if call == "cached":
        _run(kernel, geometry, [gk.asarray(a, device="cuda:0") if isinstance(a, np.ndarray) else a
                                for a in make()])
        assert kernel._bound is not None
        monkeypatch.setattr(kernel, "_launch", lambda *a: pytest.fail("the cached call took the general path"))
    _run(kernel, geometry, gpu_args)
    if call == "cached":
        (spec,) = [s for k, s in kernel.specializations.items() if len(k) > len(kernel.params)]
        assert spec.calls == 2
    for c, g in zip(cpu_args, gpu_args):
        if not isinstance(c, np.ndarray):
            continue
        got = np.asarray(g.to_device("cpu"))
        assert got.dtype == c.dtype
        if name == "cas":   # which thread wins the compare-and-swap differs; exactly one does
            if got.size == 50:
                assert got.sum() == c.sum() == 1
            continue
        if name in EXACT:
            np.testing.assert_array_equal(got, c)
        else:
            tol = {np.dtype(np.float16): 2e-3, np.dtype("bfloat16"): 2e-2}.get(c.dtype, 2e-5)
            np.testing.assert_allclose(got.astype(np.complex128 if c.dtype.kind == "c" else np.float64),
                                       c.astype(np.complex128 if c.dtype.kind == "c" else np.float64),
                                       rtol=tol, atol=tol)


def test_cupy_arrays_and_cache_entries():
    cupy = pytest.importorskip("cupy")
    k = gk.kernel(KS.scale_add.__wrapped__)
    x = cupy.arange(1000, dtype=cupy.float32)
    out = cupy.ones(1000, dtype=cupy.float32)
    k(x, 2.0, out)
    k(x, 3.0, out)
    assert len(k.specializations) == 1
    spec = next(iter(k.specializations.values()))
    assert list(spec.function) == [0] and spec.calls == 2
    np.testing.assert_array_equal(cupy.asnumpy(out), 1 + np.arange(1000) * 5.0)


def test_mixed_devices_refused():
    x = gk.asarray(np.zeros(4, np.float32), device="cuda:0")
    with pytest.raises(ValueError, match="different devices"):
        KS.scale_add(x, 1.0, np.zeros(4, np.float32))


def test_large_saxpy_grid_stride():
    """A domain larger than the grid cap would allow one thread per element of: the grid-stride loop covers it."""
    n = (1 << 22) + 3
    x = gk.asarray(np.ones(n, np.float32), device="cuda:0")
    y = gk.asarray(np.full(n, 2.0, np.float32), device="cuda:0")
    out = gk.zeros(n, dtype=gk.float32, device="cuda:0")
    from .examples import saxpy
    saxpy[(4096, 256)](3.0, x, y, out)      # explicit geometry: 4096 threads stride over 4M elements
    got = np.asarray(out.to_device("cpu"))
    assert (got == 5.0).all()


def test_debug_mode_on_cuda_reports_the_index():
    k = gk.kernel(debug=True)(KS.oob.__wrapped__)
    x = gk.zeros(5, device="cuda:0")
    out = gk.zeros(5, device="cuda:0")
    with pytest.raises(IndexError, match=r"'oob': index 5 is out of bounds for axis 0 of argument 'x' of shape "
                                         r"\(5,\) \(line \d+\)"):
        k(x, out)
    k2 = gk.kernel(debug=True)(KS.scale_add.__wrapped__)     # in-bounds: no error, and the record was cleared
    k2(x, 1.0, out)
    k(gk.zeros(6, device="cuda:0"), out)


def test_strided_and_negative_stride_views():
    """Views keep their strides on CUDA (layout "S" specializations): every index goes through the strides."""
    r = np.random.default_rng(7)
    a = r.standard_normal((4, 5, 6))
    g = gk.asarray(a, device="cuda:0")[:, ::-1, :]
    out = gk.zeros((4, 5, 3), device="cuda:0")
    KS.strided_3d(g, out)
    assert KS.strided_3d.specializations and any(k[0][3] == "S" for k in KS.strided_3d.specializations)
    ref = a[:, ::-1, :].sum(axis=2)[:, :, None] * (np.arange(3) + 1)
    np.testing.assert_allclose(np.asarray(out.to_device("cpu")), ref, rtol=1e-12)
    x = gk.asarray(np.arange(20, dtype=np.float32), device="cuda:0")
    o = gk.zeros(20, dtype=gk.float32, device="cuda:0")
    from .examples import saxpy
    saxpy(2.0, x[::2], x[1::2], o[::2])
    got = np.asarray(o.to_device("cpu"))
    np.testing.assert_array_equal(got[::2], 2 * np.arange(0, 20, 2) + np.arange(1, 20, 2))
    np.testing.assert_array_equal(got[1::2], 0)


def _saxpy_ref(a, x, y):
    return (np.float32(a) * x + y).astype(np.float32)


@pytest.mark.parametrize("n", [1000, (1 << 21) + 3])
def test_direct_path_with_overlapping_arguments(n):
    """The __restrict__ specialization serves calls whose written array overlaps no other argument; in-place and
    overlapping calls get the plain one (a launch class of their own), on the direct path too, and every result
    is NumPy's. Large domains take the unrolled source."""
    from .examples import saxpy
    k = _fresh(saxpy)
    r = np.random.default_rng(3)
    hx, hy = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    for _ in range(2):
        x, y = gk.asarray(hx, device="cuda:0"), gk.asarray(hy, device="cuda:0")
        out = gk.zeros(n, dtype=gk.float32, device="cuda:0")
        k(2.0, x, y, out)
        np.testing.assert_allclose(np.asarray(out.to_device("cpu")), _saxpy_ref(2.0, hx, hy), rtol=1e-6, atol=1e-6)
        k(2.0, x, y, y)                      # in place: y = 2x + y
        np.testing.assert_allclose(np.asarray(y.to_device("cpu")), _saxpy_ref(2.0, hx, hy), rtol=1e-6, atol=1e-6)
        z = gk.asarray(hx, device="cuda:0")
        k(3.0, z, z, z)                      # one array three times: z = 4z
        np.testing.assert_allclose(np.asarray(z.to_device("cpu")), 4 * hx, rtol=1e-6)
    classes = sorted(key[-1] for key in k.specializations)
    unroll = 4 if n >= 1 << 21 else 1
    assert classes == [("R", unroll, False, True), ("R", unroll, True, True)]
    assert all(s.calls == 4 or s.calls == 2 for s in k.specializations.values())
    src = k.specializations[[key for key in k.specializations if key[-1][2]][0]].source
    assert "__restrict__" in src and (("#pragma unroll" in src) is (unroll > 1))


def test_direct_path_follows_the_current_stream_and_graph_capture():
    from .examples import saxpy
    k = _fresh(saxpy)
    n = 4096
    x, y = gk.ones(n, dtype=gk.float32, device="cuda:0"), gk.ones(n, dtype=gk.float32, device="cuda:0")
    out = gk.zeros(n, dtype=gk.float32, device="cuda:0")
    k(0.0, x, y, out)                        # compile, load, bind
    gk.cuda.Device(0).synchronize()
    with gk.cuda.graph() as g:
        k(1.0, x, y, out)                    # direct path, captured: nothing runs yet
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), np.ones(n, np.float32))
    g.upload()
    g.launch()
    gk.cuda.Device(0).synchronize()
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), np.full(n, 2.0, np.float32))
    s = gk.cuda.Stream()
    with s:
        k(5.0, x, y, out)
    s.synchronize()
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), np.full(n, 6.0, np.float32))


def test_read_only_cuda_array_is_refused_on_every_call():
    from .examples import saxpy
    k = _fresh(saxpy)
    x = gk.ones(64, dtype=gk.float32, device="cuda:0")
    out = gk.zeros(64, dtype=gk.float32, device="cuda:0")
    k(1.0, x, x, out)
    k(1.0, x, x, out)                        # the direct path is bound
    out.flags.writeable = False
    with pytest.raises(ValueError, match="'out'.*read-only"):
        k(1.0, x, x, out)
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), np.full(64, 2.0, np.float32))
    k(1.0, out, out, x)                      # reading it is fine
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), np.full(64, 4.0, np.float32))
