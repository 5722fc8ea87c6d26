"""@gpk_array.kernel on CUDA beside the other ways to write a kernel, same run (issue 19's targets).

- saxpy on 2^28 float32 (TB/s, 12 bytes per element): the ``@kernel`` of docs/kernels-python.md, a hand-written
  CUDA kernel (one element per thread, CuPy RawKernel), Triton, ``cupyx.jit.rawkernel``, Numba-cuda, torch
  (``torch.add(y, x, alpha=a)``, one kernel) and a device copy (CuPy, 8 bytes per element).
- host microseconds per call of a cached kernel with 4 arguments on 1,024 elements: the time the Python call
  takes (loops of 200 launches timed before the synchronization, the GPU's queue never full), and the time per
  call of back-to-back calls including the GPU. Same anchors.
- the six examples of docs/kernels-python.md against a hand-written CUDA version of the same algorithm (GPU time
  per call, the results compared).
- first call of saxpy in a fresh cache directory (generate, compile, load, launch) and in a new process with the
  cache filled.

Numba-cuda runs in a child process; the GPU machine's image needs NumPy <= 2.4 for it: ``GPK_BENCH_NUMBA_PATH``
names a directory holding one, put first on that child's path.

    python -m benchmarks pykernel [--json OUT]
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HAND = r"""
#define TILE 32
#define ROWS 8
extern "C" __global__ void h_saxpy(float a, const float* x, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void h_stencil(const float* u, float* out, int ny, int nx) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= ny || j >= nx) return;
    long long k = (long long)i * nx + j;
    if (i == 0 || j == 0 || i == ny - 1 || j == nx - 1) out[k] = u[k];
    else out[k] = u[k - nx] + u[k + nx] + u[k - 1] + u[k + 1] - 4.0f * u[k];
}
extern "C" __global__ void h_hist(const float* x, float lo, float hi, int* counts, int nbins, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int b = (int)floor((double)((x[i] - lo) / (hi - lo)) * nbins);   // NumPy's float32 * int64 -> float64
    if (b >= 0 && b < nbins) atomicAdd(counts + b, 1);
}
extern "C" __global__ void h_transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y0 = blockIdx.y * TILE;
    for (int k = 0; k < TILE; k += ROWS) {
        int y = y0 + threadIdx.y + k;
        if (y < rows && x < cols) tile[threadIdx.y + k][threadIdx.x] = a[(long long)y * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x; y0 = blockIdx.x * TILE;
    for (int k = 0; k < TILE; k += ROWS) {
        int y = y0 + threadIdx.y + k;
        if (y < cols && x < rows) out[(long long)y * rows + x] = tile[threadIdx.x][threadIdx.y + k];
    }
}
extern "C" __global__ void h_block_sum(const float* x, float* out, long long n) {
    __shared__ float partial[8];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int off = 16; off; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < 8 ? partial[lane] : 0.0f;
        for (int off = 16; off; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) atomicAdd(out, v);
    }
}
extern "C" __global__ void h_bias_gelu(const float* x, const float* bias, float* out, int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < rows && j < cols) {
        float v = x[(long long)i * cols + j] + bias[j];
        out[(long long)i * cols + j] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
}
"""

_COMPILE_PROBE = r"""
import sys, time
sys.path.insert(0, {root!r})
import numpy as np, gpk_array as gk
from tests.kernels_user.examples import saxpy
x = gk.ones(1024, dtype=gk.float32, device="cuda:0")
y = gk.ones(1024, dtype=gk.float32, device="cuda:0")
o = gk.empty(1024, dtype=gk.float32, device="cuda:0")
import cupy; cupy.cuda.get_current_stream().synchronize()
t1 = time.perf_counter()
saxpy(2.0, x, y, o)
cupy.cuda.get_current_stream().synchronize()
t2 = time.perf_counter()
print(t2 - t1)
"""

_NUMBA_CHILD = r"""
import time, numpy as np
from numba import cuda
@cuda.jit
def nsaxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]
res = {"numpy": np.__version__}
for n, key in ((1 << 28, "big"), (1024, "small")):
    x = cuda.to_device(np.ones(n, np.float32)); y = cuda.to_device(np.ones(n, np.float32))
    o = cuda.device_array(n, np.float32)
    g = (n + 255) // 256
    a = np.float32(2.0)
    nsaxpy[g, 256](a, x, y, o); cuda.synchronize()
    if key == "big":
        s, e = cuda.event(), cuda.event(); s.record()
        for _ in range(20): nsaxpy[g, 256](a, x, y, o)
        e.record(); e.synchronize()
        res["TBps"] = 12 * n / (cuda.event_elapsed_time(s, e) / 1e3 / 20) / 1e12
        res["correct"] = bool((o.copy_to_host()[:1000] == 3.0).all())
    else:
        best = 1e9
        for _ in range(30):
            t = time.perf_counter()
            for _ in range(200): nsaxpy[g, 256](a, x, y, o)
            best = min(best, (time.perf_counter() - t) / 200); cuda.synchronize()
        res["host_us"] = best * 1e6
        t = time.perf_counter()
        for _ in range(3000): nsaxpy[g, 256](a, x, y, o)
        cuda.synchronize(); res["per_call_us"] = (time.perf_counter() - t) / 3000 * 1e6
print("RESULT", res)
"""


def _sync():
    import cupy
    cupy.cuda.get_current_stream().synchronize()


def _gpu_time(fn, reps=20):
    """Seconds of GPU time per call (CUDA events around ``reps`` back-to-back calls, after one)."""
    import cupy
    fn()
    _sync()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / 1e3 / reps


def _host_us_all(fns, burst=200, repeats=40):
    """{name: (host us per call: the best of ``repeats`` bursts timed before their synchronization; us per call
    of 3,000 back-to-back calls including the final synchronization)} for ``fns`` ({name: call}), the bursts of
    all of them interleaved so that drift on the machine touches each alike."""
    best = dict.fromkeys(fns, float("inf"))
    for fn in fns.values():
        for _ in range(50):
            fn()
    _sync()
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            for _ in range(burst):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t) / burst)
            _sync()
    out = {}
    for name, fn in fns.items():
        t = time.perf_counter()
        for _ in range(3000):
            fn()
        _sync()
        out[name] = (best[name] * 1e6, (time.perf_counter() - t) / 3000 * 1e6)
    return out


def _triton_saxpy():
    import triton
    import triton.language as tl

    @triton.jit
    def tsaxpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
    return tsaxpy


def _cupyx_saxpy():
    from cupyx import jit

    @jit.rawkernel()
    def jsaxpy(a, x, y, out, n):
        i = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
        if i < n:
            out[i] = a * x[i] + y[i]
    return jsaxpy


def _baseline(res, name, fn):
    """Run one anchor; a baseline that cannot run here is recorded with its error, not fatal."""
    try:
        res[name] = fn()
    except Exception as e:  # noqa: BLE001
        res[name] = f"error: {type(e).__name__}: {e}"[:300]


def saxpy_rows(hand):
    import cupy
    import gpk_array as gk
    from tests.kernels_user.examples import saxpy
    n = 1 << 28
    nbytes = 12 * n
    x = gk.asarray(cupy.random.standard_normal(n, dtype=cupy.float32))
    y = gk.asarray(cupy.random.standard_normal(n, dtype=cupy.float32))
    out = gk.empty(n, dtype=gk.float32)
    rx, ry, ro = x._data, y._data, out._data
    want = 2.0 * rx[:4096] + ry[:4096]
    rows = {}
    grid = (-(-n // 256),)

    def tb(fn):
        ro.fill(0)
        t = _gpu_time(fn)
        ok = bool(cupy.allclose(ro[:4096], want, rtol=1e-5, atol=1e-5)) and bool(cupy.allclose(
            ro[-4096:], 2.0 * rx[-4096:] + ry[-4096:], rtol=1e-5, atol=1e-5))
        return {"TBps": nbytes / t / 1e12, "correct": ok}
    rows["@kernel"] = tb(lambda: saxpy(2.0, x, y, out))
    rows["hand-written CUDA (RawKernel)"] = tb(lambda: hand((grid), (256,), (np.float32(2.0), rx, ry, ro,
                                                                             np.int64(n))))
    j = _cupyx_saxpy()
    _baseline(rows, "cupyx.jit.rawkernel", lambda: tb(lambda: j(grid, (256,), (np.float32(2.0), rx, ry, ro,
                                                                                np.int32(n)))))

    def tri():
        import torch
        t = _triton_saxpy()
        tx, ty, to = (torch.as_tensor(a, device="cuda") for a in (rx, ry, ro))
        return tb(lambda: t[(n // 1024,)](tx, ty, to, 2.0, n, BLOCK=1024))
    _baseline(rows, "triton (BLOCK 1024)", tri)

    def torch_add():
        import torch
        tx, ty, to = (torch.as_tensor(a, device="cuda") for a in (rx, ry, ro))
        return tb(lambda: torch.add(ty, tx, alpha=2.0, out=to))
    _baseline(rows, "torch.add(y, x, alpha=a)", torch_add)
    rows["device copy (CuPy)"] = {"TBps": 8 * n / _gpu_time(lambda: cupy.copyto(ro, rx)) / 1e12}
    return rows


def launch_rows(hand):
    import gpk_array as gk
    from tests.kernels_user.examples import saxpy
    m = 1024
    x = gk.ones(m, dtype=gk.float32)
    y = gk.ones(m, dtype=gk.float32)
    o = gk.empty(m, dtype=gk.float32)
    rx, ry, ro = x._data, y._data, o._data
    fns = {"@kernel saxpy(a, x, y, out)": lambda: saxpy(2.0, x, y, o)}
    explicit = saxpy[(m, 256)]
    fns["@kernel saxpy[(total, block)](...)"] = lambda: explicit(2.0, x, y, o)
    jk = gk.jit(HAND, "h_saxpy")
    fns["jit k(grid, block, args)"] = lambda: jk((4,), (256,), (2.0, x, y, o, m))
    jl = jk[m, 256]
    fns["jit k[total, block](...)"] = lambda: jl(2.0, x, y, o, m)
    a32, n64, n32 = np.float32(2.0), np.int64(m), np.int32(m)
    fns["CuPy RawKernel (NumPy scalars)"] = lambda: hand((4,), (256,), (a32, rx, ry, ro, n64))
    rows = {}
    try:
        j = _cupyx_saxpy()
        fns["cupyx.jit.rawkernel"] = lambda: j((4,), (256,), (a32, rx, ry, ro, n32))
    except Exception as e:  # noqa: BLE001 - a baseline that cannot run here is reported
        rows["cupyx.jit.rawkernel"] = f"error: {type(e).__name__}: {e}"[:300]
    try:
        import torch
        t = _triton_saxpy()
        tx, ty, to = (torch.as_tensor(a, device="cuda") for a in (rx, ry, ro))
        fns["triton"] = lambda: t[(1,)](tx, ty, to, 2.0, m, BLOCK=1024)
    except Exception as e:  # noqa: BLE001
        rows["triton"] = f"error: {type(e).__name__}: {e}"[:300]
    rows.update(_host_us_all(fns))
    return rows


def _row(rows, name, ours, theirs, check):
    t_ours, t_hand = _gpu_time(ours, 10), _gpu_time(theirs, 10)
    rows[name] = {"kernel_us": t_ours * 1e6, "hand_us": t_hand * 1e6, "ratio": t_ours / t_hand,
                  "agree": bool(check())}


def _ex_saxpy(rows, mod, rng):
    import cupy
    import gpk_array as gk
    from tests.kernels_user import examples as E
    n = 1 << 28
    x, y = rng.standard_normal(n, dtype=cupy.float32), rng.standard_normal(n, dtype=cupy.float32)
    o1, o2 = cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32)
    gx, gy, go = gk.asarray(x), gk.asarray(y), gk.asarray(o1)
    hs = mod.get_function("h_saxpy")
    _row(rows, "saxpy 2^28 float32", lambda: E.saxpy(2.0, gx, gy, go),
         lambda: hs((-(-n // 256),), (256,), (np.float32(2.0), x, y, o2, np.int64(n))),
         lambda: cupy.allclose(o1, o2, rtol=1e-6, atol=1e-6))


def _ex_2d(rows, mod, rng):
    import cupy
    import gpk_array as gk
    from tests.kernels_user import examples as E
    r = c = 8192
    u = rng.standard_normal((r, c), dtype=cupy.float32)
    o1, o2 = cupy.empty((r, c), cupy.float32), cupy.empty((r, c), cupy.float32)
    gu, go = gk.asarray(u), gk.asarray(o1)
    dims = (np.int32(r), np.int32(c))
    hst = mod.get_function("h_stencil")
    _row(rows, "stencil 8192x8192 float32", lambda: E.stencil(gu, go),
         lambda: hst((c // 32, r // 8), (32, 8), (u, o2) + dims),
         lambda: cupy.allclose(o1, o2, rtol=1e-5, atol=1e-5))
    ht = mod.get_function("h_transpose")
    tr = E.transpose[((c, r // 32 * E.ROWS), (E.TILE, E.ROWS))]
    _row(rows, "transpose 8192x8192 float32", lambda: tr(gu, go),
         lambda: ht((c // 32, r // 32), (32, 8), (u, o2) + dims),
         lambda: cupy.array_equal(o1, o2))
    bias = rng.standard_normal(c, dtype=cupy.float32)
    gb = gk.asarray(bias)
    hg = mod.get_function("h_bias_gelu")
    _row(rows, "bias+GELU 8192x8192 float32", lambda: E.bias_gelu(gu, gb, go),
         lambda: hg((c // 32, r // 8), (32, 8), (u, bias, o2) + dims),
         lambda: cupy.allclose(o1, o2, rtol=1e-5, atol=1e-6))


def _ex_atomics(rows, mod, rng):
    import cupy
    import gpk_array as gk
    from tests.kernels_user import examples as E
    m = 1 << 26
    v = rng.standard_normal(m, dtype=cupy.float32)
    gv = gk.asarray(v)
    c1, c2 = cupy.zeros(256, cupy.int32), cupy.zeros(256, cupy.int32)
    gc = gk.asarray(c1)
    hh = mod.get_function("h_hist")

    def hist():
        c1.fill(0)
        E.histogram(gv, -4.0, 4.0, gc)

    def hist_hand():
        c2.fill(0)
        hh((m // 256,), (256,), (v, np.float32(-4.0), np.float32(4.0), c2, np.int32(256), np.int64(m)))
    _row(rows, "histogram 2^26 float32, 256 bins", hist, hist_hand, lambda: cupy.array_equal(c1, c2))
    s1, s2 = cupy.zeros(1, cupy.float32), cupy.zeros(1, cupy.float32)
    gs = gk.asarray(s1)
    hb = mod.get_function("h_block_sum")
    bs = E.block_sum[(m, E.BLOCK)]

    def bsum():
        s1.fill(0)
        bs(gv, gs)

    def bsum_hand():
        s2.fill(0)
        hb((m // 256,), (256,), (v, s2, np.int64(m)))
    _row(rows, "block sum 2^26 float32", bsum, bsum_hand, lambda: cupy.allclose(s1, s2, rtol=1e-4))


def example_rows(mod):
    """Each example (tests/kernels_user/examples.py) and its hand-written CUDA version: GPU us per call (the
    histogram and the sum include zeroing their output, both sides), and whether the results agree."""
    import cupy
    rng = cupy.random.default_rng(0)
    rows = {}
    _ex_saxpy(rows, mod, rng)
    _ex_2d(rows, mod, rng)
    _ex_atomics(rows, mod, rng)
    return rows


def numba_row():
    env = dict(os.environ)
    extra = os.environ.get("GPK_BENCH_NUMBA_PATH")
    if extra:
        env["PYTHONPATH"] = extra + os.pathsep + env.get("PYTHONPATH", "")
    try:
        r = subprocess.run([sys.executable, "-c", _NUMBA_CHILD], capture_output=True, text=True, env=env,
                           timeout=300)
        line = [s for s in r.stdout.splitlines() if s.startswith("RESULT ")]
        if line:
            import ast
            return ast.literal_eval(line[-1][7:])
        return {"error": (r.stderr or r.stdout)[-400:]}
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"}


def first_call_rows(root):
    """The first saxpy call in a fresh cache directory, then in a new process with the cache filled. The package's
    modules are byte-compiled first, as an installed wheel's are (a machine with PYTHONDONTWRITEBYTECODE set would
    otherwise compile the lazily imported code generator from source in every new process)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "gpk_array")], capture_output=True,
                   timeout=300)
    times = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GPK_CACHE_DIR=d)
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _COMPILE_PROBE.format(root=root)], capture_output=True,
                               text=True, env=env, timeout=300)
            times.append(float(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else float("nan"))
    return {"compile_ms": times[0] * 1e3, "cached_new_process_ms": times[1] * 1e3, "byte_compiled": True}


def run():
    """The tables; returns the figures."""
    import cupy
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    mod = cupy.RawModule(code=HAND)
    hand = mod.get_function("h_saxpy")
    res = {"saxpy_2^28_f32": saxpy_rows(hand), "launch_us": launch_rows(hand)}
    nb = numba_row()
    res["numba"] = nb
    if "TBps" in nb:
        res["saxpy_2^28_f32"]["numba-cuda"] = {"TBps": nb["TBps"], "correct": nb.get("correct")}
        res["launch_us"]["numba-cuda"] = (nb["host_us"], nb["per_call_us"])
    res["examples"] = example_rows(mod)
    res["first_call"] = first_call_rows(root)
    print(f"{'saxpy 2^28 float32':40s} {'TB/s':>8s}")
    for k, v in res["saxpy_2^28_f32"].items():
        print(f"  {k:38s} " + (f"{v['TBps']:8.2f}" + ("" if v.get("correct", True) else "  WRONG")
                                if isinstance(v, dict) else str(v)))
    print(f"{'launch, 4 arguments, cached':40s} {'host us':>8s} {'us/call incl. GPU':>18s}")
    for k, v in res["launch_us"].items():
        print(f"  {k:38s} " + (f"{v[0]:8.2f} {v[1]:18.2f}" if isinstance(v, tuple) else str(v)))
    print(f"{'example':40s} {'@kernel us':>10s} {'hand us':>10s} {'ratio':>6s}")
    for k, v in res["examples"].items():
        print(f"  {k:38s} {v['kernel_us']:10.1f} {v['hand_us']:10.1f} {v['ratio']:6.2f}"
              + ("" if v["agree"] else "  RESULTS DIFFER"))
    fc = res["first_call"]
    print(f"first call of saxpy: compile+load+launch {fc['compile_ms']:.0f} ms, cached in a new process "
          f"{fc['cached_new_process_ms']:.1f} ms")
    if "error" in nb:
        print("numba-cuda:", nb["error"][-200:])
    return res


if __name__ == "__main__":
    run()
