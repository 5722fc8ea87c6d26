"""jit kernels, .cu modules and gpk_array.cuda on a GPU: launches, argument kinds, streams, events, graphs, raw
memory, modules from bytes. Oracles: NumPy on the host copies, CuPy's own arrays and kernels."""
import numpy as np
import pytest

import gpk_array as gp

from ..conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

SAXPY = r'''
extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''
TYPED = r'''
#include <cuda_fp16.h>
extern "C" __global__ void add_half(__half* x, __half v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __hadd(x[i], v);
}
extern "C" __global__ void fill_i64(long long* x, long long v, unsigned char k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v + k;
}
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    extern __shared__ float buf[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (t < s) buf[t] += buf[t + s]; __syncthreads(); }
    if (t == 0) atomicAdd(out, buf[0]);
}
template <typename T> __global__ void tscale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
'''


def dev(x):
    return gp.asarray(x, device="cuda:0")


def host(x):
    return np.asarray(x.to_device("cpu"))


def test_saxpy_both_launch_forms():
    rng = np.random.default_rng(0)
    n = 100_003
    xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    k = gp.jit(SAXPY, "saxpy")
    x, y = dev(xh), dev(yh)
    k[n, 256](x, y, 2.0, n)
    np.testing.assert_allclose(host(y), 2.0 * xh + yh, rtol=1e-6)
    k(((n + 127) // 128,), (128,), (x, y, np.float32(-2.0), n))
    np.testing.assert_allclose(host(y), yh, rtol=1e-5, atol=1e-6)


def test_cupy_and_dlpack_arguments():
    import cupy as cp
    n = 1000
    k = gp.jit(SAXPY, "saxpy")
    x, y = cp.arange(n, dtype=cp.float32), cp.ones(n, dtype=cp.float32)
    k[n, 128](x, y, 3.0, n)
    cp.testing.assert_allclose(y, 3 * cp.arange(n, dtype=cp.float32) + 1)

    class CAIOnly:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    k[n, 128](CAIOnly(x), CAIOnly(y), 1.0, n)
    cp.testing.assert_allclose(y, 4 * cp.arange(n, dtype=cp.float32) + 1)


def test_scalar_types_follow_the_signature():
    k = gp.jit(TYPED, "add_half")
    xh = np.linspace(-2, 2, 64).astype(np.float16)
    x = dev(xh)
    k[64, 64](x, 0.5, 64)
    np.testing.assert_array_equal(host(x), xh + np.float16(0.5))
    f = gp.jit(TYPED, "fill_i64")
    y = gp.zeros(10, dtype=gp.int64, device="cuda:0")
    f[10, 32](y, 2 ** 40, 7, 10)                   # a Python int beyond int32, an unsigned char
    np.testing.assert_array_equal(host(y), np.full(10, 2 ** 40 + 7))


def test_template_name_expression_launches():
    k = gp.jit(TYPED, "tscale<double>")
    xh = np.arange(50, dtype=np.float64)
    x = dev(xh)
    k[50, 32](x, 0.25, 50)
    np.testing.assert_array_equal(host(x), xh * 0.25)


def test_dynamic_shared_memory_and_its_limit():
    k = gp.jit(TYPED, "block_sum")
    xh = np.random.default_rng(1).random(4096).astype(np.float32)
    x, out = dev(xh), gp.zeros(1, dtype=gp.float32, device="cuda:0")
    k(16, 256, (x, out, 4096), shared_mem=256 * 4)
    np.testing.assert_allclose(host(out)[0], xh.astype(np.float64).sum(), rtol=1e-4)
    optin = gp.cuda.Device(0).attributes["MaxSharedMemoryPerBlockOptin"]
    with pytest.raises(ValueError, match="over the device's limit"):
        k(16, 256, (x, out, 4096), shared_mem=optin + 1)
    # more than the 48 KiB default works up to the opt-in limit (set on the function for the launch)
    out2 = gp.zeros(1, dtype=gp.float32, device="cuda:0")
    k(16, 256, (x, out2, 4096), shared_mem=64 * 1024)
    np.testing.assert_allclose(host(out2)[0], xh.astype(np.float64).sum(), rtol=1e-4)


def test_bad_launches_leave_the_device_usable():
    k = gp.jit(SAXPY, "saxpy")
    x, y = gp.ones(8, dtype=gp.float32, device="cuda:0"), gp.ones(8, dtype=gp.float32, device="cuda:0")
    with pytest.raises(ValueError):
        k((1,), (2048,), (x, y, 1.0, 8))
    with pytest.raises(TypeError, match="points to float32"):
        k[8, 8](gp.ones(8, dtype=gp.float64, device="cuda:0"), y, 1.0, 8)
    with pytest.raises(TypeError, match="CPU device"):
        k[8, 8](gp.ones(8, dtype=gp.float32, device="cpu"), y, 1.0, 8)
    with pytest.raises(gp.KernelCompileError):
        gp.jit(SAXPY.replace("a * x[i]", "a * z[i]"), "saxpy")[8, 8](x, y, 1.0, 8)
    k[8, 8](x, y, 1.0, 8)
    np.testing.assert_array_equal(host(y), np.full(8, 2.0, np.float32))


def test_streams_events_and_elapsed_time():
    cuda = gp.cuda
    lo, hi = cuda.priority_range()
    s = cuda.Stream(priority=hi)
    assert s.priority == hi and s.ptr != 0
    k = gp.jit(SAXPY, "saxpy")
    n = 1 << 20
    x, y = gp.ones(n, dtype=gp.float32, device="cuda:0"), gp.zeros(n, dtype=gp.float32, device="cuda:0")
    start, end = cuda.Event(), cuda.Event()
    with s:
        import cupy as cp
        assert cp.cuda.get_current_stream().ptr == s.ptr                  # gpk_array ops run on it too
        assert cuda.current_stream().ptr == s.ptr
        start.record()
        k[n, 256](x, y, 2.0, n)
        z = y + 1                                                           # a gpk_array op on the same stream
        end.record()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0.0
    np.testing.assert_array_equal(host(z), np.full(n, 3.0, np.float32))
    # a launch on an explicit stream, ordered after an event on another
    s2 = cuda.Stream()
    s2.wait(end)
    k(n // 256, 256, (x, y, 1.0, n), stream=s2)
    s2.synchronize()
    np.testing.assert_array_equal(host(y), np.full(n, 3.0, np.float32))


def test_device_object():
    d = gp.cuda.Device(0)
    import cupy as cp
    assert d.compute_capability == tuple(int(c) for c in (cp.cuda.Device(0).compute_capability[:-1],
                                                         cp.cuda.Device(0).compute_capability[-1]))
    assert d.attributes["MultiProcessorCount"] == cp.cuda.Device(0).attributes["MultiProcessorCount"]
    free, total = d.mem_info
    assert 0 < free <= total and isinstance(d.name, str) and d.name
    d.synchronize()
    assert gp.cuda.device_count() == cp.cuda.runtime.getDeviceCount()
    with pytest.raises(gp.DeviceError):
        gp.cuda.Device(gp.cuda.device_count())


def test_raw_memory_roundtrip_and_pinned():
    cuda = gp.cuda
    h = np.arange(1000, dtype=np.float64)
    m = cuda.malloc(h.nbytes)
    cuda.memcpy_htod(m, h)
    m2 = cuda.malloc(h.nbytes)
    cuda.memcpy_dtod(m2, m)
    p = cuda.pinned(h.shape, h.dtype)
    p[:] = 0
    cuda.memcpy_dtoh(p, m2)
    np.testing.assert_array_equal(p, h)
    a = m2.as_array(gp.float64)
    np.testing.assert_array_equal(host(a * 2), h * 2)
    with pytest.raises(ValueError, match="more than"):
        cuda.memcpy_htod(cuda.malloc(8), h)
    # raw memory passes to kernels as a pointer
    k = gp.jit(SAXPY, "saxpy")
    xs = cuda.to_device(np.ones(16, np.float32))
    ys = cuda.to_device(np.full(16, 5, np.float32))
    k[16, 16](xs, ys, 2.0, 16)
    out = np.empty(16, np.float32)
    cuda.memcpy_dtoh(out, ys)
    np.testing.assert_array_equal(out, np.full(16, 7, np.float32))


def test_module_from_cubin_bytes_and_path(tmp_path):
    from gpk_array._jit import cache
    e = cache.compile(SAXPY, name="saxpy.cu")
    data = e.path.read_bytes()
    for mod in (gp.cuda.Module(data), gp.cuda.Module(e.path)):
        k = mod.get_function("saxpy", "const float* x, float* y, float a, int n")
        x, y = gp.ones(32, dtype=gp.float32, device="cuda:0"), gp.ones(32, dtype=gp.float32, device="cuda:0")
        k[32, 32](x, y, 4.0, 32)
        np.testing.assert_array_equal(host(y), np.full(32, 5, np.float32))
        with pytest.raises(TypeError, match="takes 4"):
            k[32, 32](x, y)
    with pytest.raises(ValueError, match="no kernel"):
        gp.cuda.Module(data).get_function("nope")[1, 1]()


def test_graph_capture_replays_kernels_and_ops():
    cuda = gp.cuda
    k = gp.jit(SAXPY, "saxpy")
    n = 4096
    x, y = gp.ones(n, dtype=gp.float32, device="cuda:0"), gp.zeros(n, dtype=gp.float32, device="cuda:0")
    k[n, 256](x, y, 0.0, n)              # load the function before capture
    cuda.Device(0).synchronize()
    with cuda.graph() as g:
        k[n, 256](x, y, 1.0, n)
        k[n, 256](x, y, 2.0, n)
    np.testing.assert_array_equal(host(y), np.zeros(n, np.float32))   # nothing ran during capture
    g.upload()
    for _ in range(3):
        g.launch()
    cuda.Device(0).synchronize()
    np.testing.assert_array_equal(host(y), np.full(n, 9.0, np.float32))


def test_cu_module_launches(tmp_path):
    (tmp_path / "k.cu").write_text(r'''
    struct Pair { float a; int b; };
    extern "C" __global__ void pairs(Pair* p, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) p[i].a = p[i].b * 0.5f;
    }''')
    m = gp.load_cu(tmp_path / "k.cu")
    h = np.zeros(10, m.Pair)
    h["b"] = np.arange(10)
    mem = gp.cuda.to_device(h)
    m.pairs[10, 32](mem, 10)
    out = np.empty_like(h)
    gp.cuda.memcpy_dtoh(out, mem)
    np.testing.assert_array_equal(out["a"], np.arange(10) * 0.5)


def test_struct_by_value():
    src = r'''
    struct Affine { float scale; double shift; int n; };
    extern "C" __global__ void affine(float* x, Affine t) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < t.n) x[i] = x[i] * t.scale + (float)t.shift;
    }'''
    k = gp.jit(src, "affine")
    xh = np.arange(100, dtype=np.float32)
    x = dev(xh)
    k[100, 64](x, (2.0, 0.5, 90))
    want = xh.copy()
    want[:90] = xh[:90] * 2 + 0.5
    np.testing.assert_array_equal(host(x), want)
    k[100, 64](x, {"scale": 1.0, "n": 100})                    # shift left zero
    np.testing.assert_array_equal(host(x), want)
