"""gpk_array.jit against CuPy's RawKernel on the same cubin, same run: host time per launch of a cached kernel with
4 arguments, saxpy bandwidth on 2^28 float32, the first compile of a small kernel (a fresh cache directory, so
nothing is cached) and loading a cached one in a new process (import, cache lookup, module load, first launch).
Issue 19's targets: a jit launch at most RawKernel's host time; first compile at most 300 ms; a cached kernel in a
new process at most 5 ms past import."""
import json
import os
import subprocess
import sys
import tempfile
import time

SAXPY = r'''
extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''

_CHILD = r'''
import time, sys
t0 = time.perf_counter()
import gpk_array as gp, numpy as np
t1 = time.perf_counter()
k = gp.jit(sys.argv[1], "saxpy")
x = gp.ones(1024, dtype=gp.float32, device="cuda:0"); y = gp.zeros(1024, dtype=gp.float32, device="cuda:0")
gp.cuda.Device(0).synchronize()
t2 = time.perf_counter()
k[1024, 256](x, y, 2.0, 1024)
gp.cuda.Device(0).synchronize()
t3 = time.perf_counter()
info = gp.kernel_cache_info()
print(t1 - t0, t3 - t2, info["hits"], info["misses"])
'''


def _per_call(fn, sync):
    """Seconds per call: overhead.py's timer with more calls per loop."""
    from benchmarks.overhead import _per_call as timer
    return timer(fn, sync, n=5000, warmup=100)


def run():
    import cupy as cp
    import numpy as np

    import gpk_array as gp
    from gpk_array._jit import cache
    rows = {}
    sync = cp.cuda.get_current_stream().synchronize
    k = gp.jit(SAXPY, "saxpy")
    entry = k.compile()
    raw = cp.RawModule(path=str(entry.path)).get_function("saxpy")

    # launch overhead, 4 arguments, one block of 32 threads (host-bound)
    n = 32
    x, y = gp.ones(n, dtype=gp.float32, device="cuda:0"), gp.zeros(n, dtype=gp.float32, device="cuda:0")
    cx, cy = x._data, y._data
    launch = k[n, 32]
    a32, n32 = np.float32(2.0), np.int32(n)
    rows["launch_us"] = {
        "jit k[total, block](...)": _per_call(lambda: launch(x, y, 2.0, n), sync) * 1e6,
        "jit k(grid, block, args)": _per_call(lambda: k((1,), (32,), (x, y, 2.0, n)), sync) * 1e6,
        "cupy RawKernel (numpy scalars)": _per_call(lambda: raw((1,), (32,), (cx, cy, a32, n32)), sync) * 1e6,
    }

    # saxpy bandwidth, 2^28 float32: 12 bytes per element (read x, y; write y)
    N = 1 << 28
    X, Y = gp.ones(N, dtype=gp.float32, device="cuda:0"), gp.zeros(N, dtype=gp.float32, device="cuda:0")
    big = k[N, 256]
    cX, cY, nN = X._data, Y._data, np.int32(N)
    grid = ((N + 255) // 256,)

    def tbps(fn, reps=20):
        fn()
        sync()
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        return 12 * N * reps / (cp.cuda.get_elapsed_time(s, e) * 1e-3) / 1e12

    rows["saxpy_2^28_TBps"] = {"jit": tbps(lambda: big(X, Y, 2.0, N)),
                               "cupy RawKernel": tbps(lambda: raw(grid, (256,), (cX, cY, a32, nN))),
                               "device copy (cupy)": tbps(lambda: cY.__setitem__(Ellipsis, cX)) * 8 / 12}

    # first compile of a small kernel in a fresh cache directory
    with tempfile.TemporaryDirectory() as d:
        old = os.environ.get("GPK_CACHE_DIR")
        os.environ["GPK_CACHE_DIR"] = d
        try:
            cache.cache_clear()
            src = SAXPY.replace("a * x[i]", "a * x[i] + 0.0f")
            t = time.perf_counter()
            gp.jit(src, "saxpy").compile()
            rows["first_compile_ms"] = (time.perf_counter() - t) * 1e3
            # the cached kernel in a new process, the package byte-compiled as an installed wheel's is
            pkg = os.path.dirname(os.path.abspath(gp.__file__))
            subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], capture_output=True, timeout=300)
            env = {**os.environ, "GPK_CACHE_DIR": d}
            r = subprocess.run([sys.executable, "-c", _CHILD, src], capture_output=True, text=True, env=env,
                               timeout=300)
            imp, first, hits, misses = r.stdout.split()
            rows["new_process"] = {"import_ms": float(imp) * 1e3, "cached_first_launch_ms": float(first) * 1e3,
                                   "hits": int(hits), "misses": int(misses)}
        finally:
            if old is None:
                os.environ.pop("GPK_CACHE_DIR", None)
            else:
                os.environ["GPK_CACHE_DIR"] = old
            cache.cache_clear()
    rows["backend"] = __import__("gpk_array._kernels.loader", fromlist=["x"]).default_backend()
    print(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    run()
