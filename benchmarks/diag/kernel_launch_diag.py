"""Where a user kernel's launch time and saxpy bandwidth go (issue 19), on one GPU, in one run.

Launch: host seconds per call of one cached 5-parameter saxpy kernel on 1,024 elements through each launch
primitive: CuPy ``RawKernel.__call__``, the loaded ``Function`` itself, ``cupy.cuda.driver.launchKernel`` with the
parameters in one packed buffer (``CU_LAUNCH_PARAM_BUFFER_POINTER``), packed once or per call with
``struct.pack_into`` and the current stream looked up per call; the pieces (``get_current_stream().ptr``,
``runtime.getDevice()``); Triton, ``cupyx.jit.rawkernel`` and Numba-cuda (a child process with NumPy 2.4 first on
the path when ``--numba-path`` names it) on the same problem.

Bandwidth: saxpy on 2^28 float32 through variants of the code ``@gpk_array.kernel`` generates (block size,
64/32-bit index, ``__restrict__``, several elements per thread), and Triton's.

    python -m benchmarks.diag.kernel_launch_diag [--json OUT] [--numba-path DIR]
"""
import argparse
import ctypes
import json
import os
import struct
import sys
import threading
import time

import numpy as np

from benchmarks.pykernel_bench import _cupyx_saxpy, _gpu_time, _triton_saxpy, numba_row

N_BIG = 1 << 28
N_SMALL = 1024

def _tiled(u, restrict):
    """Each thread ``u`` iterations ``blockDim.x`` apart, one tile per block; ``__restrict__`` pointers or not."""
    r = " __restrict__" if restrict else ""
    return (f"#define U {u}\n"
            f'extern "C" __global__ void k(const double a, const float*{r} x, const float*{r} y, float*{r} out, '
            "const long long n) {\n"
            "    long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;\n"
            "    #pragma unroll\n"
            "    for (int u = 0; u < U; u++) {\n"
            "        long long t = base + (long long)u * blockDim.x;\n"
            "        if (t < n) out[t] = (float)a * x[t] + y[t];\n"
            "    }\n"
            "}\n")


_VARIANTS = {
    # name: (block, source); every kernel is (double a, float* x, float* y, float* out, i64 n)
    "gen i64 b256": (256, r"""
extern "C" __global__ void k(const double a, float* x, float* y, float* out, const long long n) {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x)
        out[t] = (float)a * x[t] + y[t];
}"""),
    "gen i64 b128": (128, None),
    "i32 b128": (128, r"""
extern "C" __global__ void k(const double a, float* x, float* y, float* out, const long long n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < (int)n) out[t] = (float)a * x[t] + y[t];
}"""),
    "restrict b128": (128, r"""
extern "C" __global__ void k(const double a, const float* __restrict__ x, const float* __restrict__ y,
                             float* __restrict__ out, const long long n) {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x)
        out[t] = (float)a * x[t] + y[t];
}"""),
    "unroll4 b128": (128, _tiled(4, False)),
    "restrict unroll4 b128": (128, _tiled(4, True)),
    "restrict unroll4 b256": (256, None),
    "restrict unroll8 b128": (128, _tiled(8, True)),
    "loads first unroll4 b128": (128, r"""
#define U 4
extern "C" __global__ void k(const double a, float* x, float* y, float* out, const long long n) {
    long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
    float xs[U], ys[U];
    #pragma unroll
    for (int u = 0; u < U; u++) {
        long long t = base + (long long)u * blockDim.x;
        if (t < n) { xs[u] = x[t]; ys[u] = y[t]; }
    }
    #pragma unroll
    for (int u = 0; u < U; u++) {
        long long t = base + (long long)u * blockDim.x;
        if (t < n) out[t] = (float)a * xs[u] + ys[u];
    }
}"""),
}
_UNROLL = {"unroll4 b128": 4, "restrict unroll4 b128": 4, "restrict unroll4 b256": 4, "restrict unroll8 b128": 8,
           "loads first unroll4 b128": 4}



def _host(fn):
    """Microseconds per call of back-to-back calls with a final synchronization (overhead.py's timer)."""
    import cupy
    from benchmarks.overhead import _per_call
    return _per_call(fn, cupy.cuda.get_current_stream().synchronize, n=3000, warmup=100) * 1e6


def _packed(fn_ptr, fmt):
    """(pack(values...), launch(grid, block, stream)) through one buffer and cuLaunchKernel's `extra`."""
    import cupy
    st = struct.Struct(fmt)
    buf = ctypes.create_string_buffer(st.size)
    size = ctypes.c_size_t(st.size)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(size), 0)
    xaddr = ctypes.addressof(extra)
    launch = cupy.cuda.driver.launchKernel
    keep = (buf, size, extra)
    return st, buf, xaddr, launch, keep


def launches(res):
    import cupy
    src = _VARIANTS["gen i64 b256"][1]
    raw = cupy.RawKernel(src, "k")
    x = cupy.ones(N_SMALL, cupy.float32)
    y = cupy.ones(N_SMALL, cupy.float32)
    o = cupy.empty(N_SMALL, cupy.float32)
    args = (np.float64(2.0), x, y, o, np.int64(N_SMALL))
    out = {}
    out["RawKernel np scalars"] = _host(lambda: raw((4,), (256,), args))
    args_py = (2.0, x, y, o, N_SMALL)
    out["RawKernel py scalars"] = _host(lambda: raw((4,), (256,), args_py))
    fn = raw.kernel
    out["Function np scalars"] = _host(lambda: fn((4,), (256,), args))
    fptr = fn.ptr
    st, buf, xaddr, launch, keep = _packed(fptr, "@dPPPq")
    st.pack_into(buf, 0, 2.0, x.data.ptr, y.data.ptr, o.data.ptr, N_SMALL)
    sptr = cupy.cuda.get_current_stream().ptr
    out["launchKernel prepacked"] = _host(lambda: launch(fptr, 4, 1, 1, 256, 1, 1, 0, sptr, 0, xaddr))
    lock = threading.Lock()
    gcs = cupy.cuda.get_current_stream

    def per_call():
        with lock:
            st.pack_into(buf, 0, 2.0, x.data.ptr, y.data.ptr, o.data.ptr, N_SMALL)
            launch(fptr, 4, 1, 1, 256, 1, 1, 0, gcs().ptr, 0, xaddr)
    out["launchKernel pack+stream+lock"] = _host(per_call)
    t0 = time.perf_counter()
    for _ in range(100000):
        gcs().ptr
    out["get_current_stream().ptr"] = (time.perf_counter() - t0) / 100000 * 1e6
    gd = cupy.cuda.runtime.getDevice
    t0 = time.perf_counter()
    for _ in range(100000):
        gd()
    out["runtime.getDevice()"] = (time.perf_counter() - t0) / 100000 * 1e6
    t0 = time.perf_counter()
    for _ in range(100000):
        st.pack_into(buf, 0, 2.0, x.data.ptr, y.data.ptr, o.data.ptr, N_SMALL)
    out["pack_into 5 values + 3 .data.ptr"] = (time.perf_counter() - t0) / 100000 * 1e6
    t0 = time.perf_counter()
    for _ in range(100000):
        x._c_contiguous, x.dtype, x.ndim, x._shape, x._strides
    out["cupy attrs (_c_contiguous dtype ndim _shape _strides)"] = (time.perf_counter() - t0) / 100000 * 1e6
    # ours, today
    import gpk_array as gk
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.kernels_user.examples import saxpy
    gx, gy, go = gk.asarray(x), gk.asarray(y), gk.asarray(o)
    out["@kernel saxpy(a, x, y, out)"] = _host(lambda: saxpy(2.0, gx, gy, go))
    jk = gk.jit(src, "k")
    out["jit k((4,), (256,), args)"] = _host(lambda: jk((4,), (256,), (2.0, gx, gy, go, N_SMALL)))
    # cupyx.jit
    try:
        jsaxpy = _cupyx_saxpy()
        ja = (np.float32(2.0), x, y, o, np.int32(N_SMALL))
        out["cupyx.jit.rawkernel"] = _host(lambda: jsaxpy((4,), (256,), ja))
    except Exception as e:  # noqa: BLE001 - a baseline that cannot run is reported, not fatal
        out["cupyx.jit.rawkernel"] = f"error: {type(e).__name__}: {e}"
    # Triton (torch tensors)
    try:
        tri = _triton_saxpy()
        import torch
        tx = torch.ones(N_SMALL, device="cuda")
        ty = torch.ones(N_SMALL, device="cuda")
        to = torch.empty(N_SMALL, device="cuda")
        out["triton"] = _host(lambda: tri[(1,)](tx, ty, to, 2.0, N_SMALL, BLOCK=1024))
    except Exception as e:  # noqa: BLE001
        out["triton"] = f"error: {type(e).__name__}: {e}"
    res["launch_host_us"] = out


def bandwidth(res):
    import cupy
    x = cupy.random.standard_normal(N_BIG, dtype=cupy.float32)
    y = cupy.random.standard_normal(N_BIG, dtype=cupy.float32)
    o = cupy.empty(N_BIG, cupy.float32)
    want = 2.0 * x[:4096] + y[:4096]
    nbytes = 12 * N_BIG
    out = {}
    src_of = {}
    for name, (block, src) in _VARIANTS.items():
        src = src or src_of[name.rsplit(" ", 1)[0] + (" b256" if block == 128 else " b128")]
        src_of[name] = src
        k = cupy.RawKernel(src, "k")
        u = _UNROLL.get(name, 1)
        grid = -(-N_BIG // (block * u))
        def f(k=k, grid=grid, block=block):
            k((grid,), (block,), (np.float64(2.0), x, y, o, np.int64(N_BIG)))
        o.fill(0)
        f()
        ok = bool(cupy.allclose(o[:4096], want)) and bool(cupy.allclose(o[-4096:], 2.0 * x[-4096:] + y[-4096:]))
        out[name] = {"TBps": nbytes / _gpu_time(f) / 1e12, "correct": ok}
    out["device copy"] = {"TBps": 8 * N_BIG / _gpu_time(lambda: cupy.copyto(o, x)) / 1e12}
    try:
        tri = _triton_saxpy()
        import torch
        tx = torch.randn(N_BIG, device="cuda")
        ty = torch.randn(N_BIG, device="cuda")
        to = torch.empty(N_BIG, device="cuda")
        for blk in (1024, 4096):
            def f(blk=blk):
                tri[(N_BIG // blk,)](tx, ty, to, 2.0, N_BIG, BLOCK=blk)
            out[f"triton BLOCK={blk}"] = {"TBps": nbytes / _gpu_time(f) / 1e12}
        t_add = _gpu_time(lambda: torch.add(ty, tx, alpha=2.0, out=to))
        out["torch.add(y, x, alpha=a)"] = {"TBps": nbytes / t_add / 1e12}
    except Exception as e:  # noqa: BLE001
        out["triton"] = f"error: {type(e).__name__}: {e}"
    import gpk_array as gk
    from tests.kernels_user.examples import saxpy
    gx, gy, go = gk.asarray(x), gk.asarray(y), gk.asarray(o)
    out["@kernel saxpy (today)"] = {"TBps": nbytes / _gpu_time(lambda: saxpy(2.0, gx, gy, go)) / 1e12}
    res["saxpy_2^28_f32"] = out


def numba(res, path):
    if path:
        os.environ["GPK_BENCH_NUMBA_PATH"] = path
    res["numba"] = numba_row()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--numba-path", default=None)
    a = ap.parse_args(argv)
    from benchmarks.__main__ import _env
    res = {"env": _env()}
    launches(res)
    bandwidth(res)
    numba(res, a.numba_path)
    for k, v in res["launch_host_us"].items():
        print(f"launch {k:56s} {v:8.2f} us" if isinstance(v, float) else f"launch {k:56s} {v}")
    for k, v in res["saxpy_2^28_f32"].items():
        print(f"saxpy  {k:56s} {v}")
    print("numba", res["numba"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1, default=str)


if __name__ == "__main__":
    main()
