"""Host time per call of the namespace's float32 matmul and its pieces under TF32 ("high") and full FP32 ("highest"):
python -m benchmarks.diag.matmul_host_diag (200 calls back to back, no sync; "wall" waits for the GPU too; a cProfile
of 500 calls at 256^3). Session 11 found select_sm90's TF32 check costing ~9 us per call through NumPy's Python-level
str(dtype) (results: benchmarks/results/h200_2026-12-01_s11_diag_tf32_host2_*)."""
import cProfile
import io
import pstats
import time

import numpy as np


def host(cp, fn, n=200):
    for _ in range(5):
        fn()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


def main():
    import cupy as cp

    import gpk_array as xp
    from gpk_array import _gpu
    from gpk_array._kernels import blas, gemm
    dev = xp.Device("cuda:0")
    rng = np.random.default_rng(0)
    for (m, k, n) in [(1024, 768, 3072), (256, 256, 256), (4096, 4096, 4096)]:
        a = xp.asarray(rng.standard_normal((m, k), dtype=np.float32), device=dev)
        b = xp.asarray(rng.standard_normal((k, n), dtype=np.float32), device=dev)
        A, B = a._data, b._data
        for prec in ("high", "highest"):
            t = prec == "high"
            with xp.float32_matmul_precision(prec):
                for name, fn in (("a @ b", lambda: a @ b), ("_gpu.matmul", lambda: _gpu.matmul(A, B)),
                                 ("_sm90_matmul", lambda: _gpu._sm90_matmul(A, B)),
                                 ("gemm_sm90 nn", lambda: gemm.gemm_sm90(A, B, "nn", tf32=t)),
                                 ("blas.matmul", lambda: blas.matmul(A, B, tf32=t)),
                                 ("cupy.matmul", lambda: cp.matmul(A, B))):
                    h, w = host(cp, fn)
                    print(f"{m}x{k}x{n} {prec:8s} {name:14s} host {h:8.1f} us/call  wall {w:8.1f} us/call", flush=True)
                if m == 256:
                    pr = cProfile.Profile()
                    pr.enable()
                    for _ in range(500):
                        a @ b
                    pr.disable()
                    cp.cuda.Device().synchronize()
                    st = io.StringIO()
                    pstats.Stats(pr, stream=st).sort_stats("cumtime").print_stats(25)
                    print(st.getvalue()[:5000])


if __name__ == "__main__":
    main()
