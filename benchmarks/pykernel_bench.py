"""@gpk_array.kernel on CUDA beside hand-written CUDA in the same run (issue 19's targets): saxpy bandwidth on
2^28 float32 (a CuPy RawKernel of the same loop and CuPy's own ``a * x + y`` as baselines), host time per call
of a cached specialization with 4 arguments (beside the RawKernel's), first-compile and cached-load times.

    python -m benchmarks pykernel [--json OUT]
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

RAW_SAXPY = r"""
extern "C" __global__ void raw_saxpy(const double a, const float* x, const float* y, float* out, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        out[i] = (float)a * x[i] + y[i];
}
"""


def _gpu_time(fn, reps):
    import cupy
    fn()
    cupy.cuda.get_current_stream().synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / 1e3 / reps


def _host_time(fn, reps):
    import cupy
    fn()
    cupy.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t1 = time.perf_counter()
    cupy.cuda.get_current_stream().synchronize()
    return (t1 - t0) / reps


_COMPILE_PROBE = r"""
import sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import numpy as np, gpk_array as gk
from tests.kernels_user.examples import saxpy
x = gk.ones(1024, dtype=gk.float32, device="cuda:0")
t1 = time.perf_counter()
saxpy(2.0, x, x, x)
import cupy; cupy.cuda.get_current_stream().synchronize()
t2 = time.perf_counter()
print(t2 - t1)
"""


def run():
    """The table; returns the figures (seconds, bytes per second)."""
    import cupy
    import gpk_array as gk
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from tests.kernels_user.examples import saxpy
    res = {}
    n = 1 << 28
    x = gk.asarray(cupy.random.standard_normal(n, dtype=cupy.float32))
    y = gk.asarray(cupy.random.standard_normal(n, dtype=cupy.float32))
    out = gk.empty(n, dtype=gk.float32)
    rx, ry, ro = x._data, y._data, out._data
    raw = cupy.RawKernel(RAW_SAXPY, "raw_saxpy")
    grid = (min((n + 255) // 256, 2**31 - 1),)
    nbytes = 3 * 4 * n
    t_k = _gpu_time(lambda: saxpy(2.0, x, y, out), 20)
    t_raw = _gpu_time(lambda: raw(grid, (256,), (np.float64(2.0), rx, ry, ro, np.int64(n))), 20)
    t_cupy = _gpu_time(lambda: cupy.add(cupy.multiply(np.float32(2.0), rx), ry, out=ro), 20)
    t_copy = _gpu_time(lambda: cupy.copyto(ro, rx), 20)
    saxpy(2.0, x, y, out)
    ok = np.allclose(cupy.asnumpy(ro[:1000]), 2.0 * cupy.asnumpy(rx[:1000]) + cupy.asnumpy(ry[:1000]), rtol=1e-6)
    res["saxpy_2^28_f32"] = {"kernel_TBps": nbytes / t_k / 1e12, "rawkernel_TBps": nbytes / t_raw / 1e12,
                             "cupy_a*x+y_TBps": nbytes / t_cupy / 1e12,   # saxpy's bytes over 2 kernels' time
                             "device_copy_TBps": 2 * 4 * n / t_copy / 1e12, "correct": bool(ok)}
    # host time per call, small arrays, 4 arguments
    m = 1024
    xs = gk.ones(m, dtype=gk.float32)
    ys = gk.ones(m, dtype=gk.float32)
    os_ = gk.empty(m, dtype=gk.float32)
    rxs, rys, ros = xs._data, ys._data, os_._data
    h_k = _host_time(lambda: saxpy(2.0, xs, ys, os_), 2000)
    h_raw = _host_time(lambda: raw((4,), (256,), (np.float64(2.0), rxs, rys, ros, np.int64(m))), 2000)
    res["launch_host_us"] = {"kernel": h_k * 1e6, "rawkernel": h_raw * 1e6}
    # first compile (a fresh cache directory) and a cached specialization in a new process
    times = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GPK_CACHE_DIR=d)
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _COMPILE_PROBE.format(root=root)], capture_output=True,
                               text=True, env=env, timeout=300)
            times.append(float(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else float("nan"))
    res["first_call_s"] = {"compile": times[0], "cached_new_process": times[1]}
    print(f"{'saxpy 2^28 float32':32s} @kernel {res['saxpy_2^28_f32']['kernel_TBps']:.2f} TB/s | RawKernel "
          f"{res['saxpy_2^28_f32']['rawkernel_TBps']:.2f} | CuPy a*x+y {res['saxpy_2^28_f32']['cupy_a*x+y_TBps']:.2f}"
          f" | device copy {res['saxpy_2^28_f32']['device_copy_TBps']:.2f}  (correct: {ok})")
    print(f"{'host time per call (4 args)':32s} @kernel {h_k * 1e6:.2f} us | RawKernel {h_raw * 1e6:.2f} us")
    print(f"{'first call, saxpy':32s} compile+load {times[0] * 1e3:.0f} ms | cached, new process "
          f"{times[1] * 1e3:.1f} ms")
    return res


if __name__ == "__main__":
    run()
