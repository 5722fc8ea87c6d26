"""Benchmark of Dask arrays with gpk_array chunks (issue 24's targets), each beside its baseline in the same run.

CUDA (one GPU; through dask-cuda's LocalCUDACluster with one worker when dask_cuda is installed, else Dask's threaded
scheduler in this process, which the JSON names):
- a 2^30-element float32 sum over 2^26-element chunks;
- a (2^22 x 256) @ (256 x 256) float32 matmul, A in 2^19-row chunks, the product persisted in chunks;
each with gpk_array chunks, with CuPy chunks (target: gpk_array within 1.3x) and as one unchunked gpk_array call
(target: within 2x). The chunks are made on the device and persisted before timing; a timed run ends when the
GPU is idle (a device synchronize on the worker).

CPU (a distributed LocalCluster of 2 worker processes, 1 thread each): the same two computations at a smaller size
(2^24 elements, a (2^18 x 256) @ (256 x 256) matmul; ``--quick``: 2^22 and 2^16) with gpk_array chunks and with
NumPy chunks (target: within 1.2x), chunks persisted on the workers before timing.

Times are medians of repeated runs after a warm-up, host wall-clock.

Run: ``python -m benchmarks dask [--json OUT]`` or ``python -m benchmarks.dask_bench [--quick] [--cpu-only]
[--json OUT]``.
"""
import json
import statistics
import sys
import time

TARGETS = {"gpu_vs_cupy_chunks": 1.3, "gpu_vs_unchunked": 2.0, "cpu_vs_numpy_chunks": 1.2}


def _median_time(fn, reps, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _gpu_available():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


# --- CUDA ----------------------------------------------------------------------------------------------------------
def _sync_all(client):
    import cupy
    if client is not None:
        client.run(lambda: cupy.cuda.runtime.deviceSynchronize())
    cupy.cuda.runtime.deviceSynchronize()


def _gpu_cases(quick):
    import cupy
    import dask
    import dask.array as da

    import gpk_array as gp
    import gpk_array.dask  # noqa: F401

    n_red = 2**28 if quick else 2**30
    red_chunk = 2**26
    rows = 2**20 if quick else 2**22
    row_chunk = 2**19
    k = 256
    reps = 3 if quick else 10
    dev = gp.Device("cuda:0")

    client = cluster = None
    scheduler = "threads"
    try:
        import dask_cuda
        from distributed import Client
        cluster = dask_cuda.LocalCUDACluster(n_workers=1, dashboard_address=None)
        client = Client(cluster)
        scheduler = "dask-cuda LocalCUDACluster (1 worker)"
    except ImportError:
        pass

    metas = {"gpk_array": gp.empty((0,), dtype=gp.float32, device=dev),
             "cupy": cupy.empty((0,), dtype=cupy.float32)}
    out = {"scheduler": scheduler, "sizes": {"reduction": n_red, "matmul": [rows, k, k]}, "rows": []}

    def compute(x):
        return client.compute(x).result() if client is not None else x.compute(scheduler="threads")

    def persist(x):
        if client is not None:
            from distributed import wait
            x = client.persist(x)
            wait(x)
            return x
        return x.persist(scheduler="threads")

    try:
        for kind, meta in metas.items():
            with dask.config.set({"array.backend": "numpy"}):
                v = persist(da.ones((n_red,), chunks=red_chunk, dtype="float32", meta=meta) * 0.5)
                a = persist(da.ones((rows, k), chunks=(row_chunk, k), dtype="float32", meta=meta) * 0.25)
                b = persist(da.ones((k, k), chunks=(k, k), dtype="float32", meta=meta) * 0.5)
            assert all(type(x._meta) is type(meta) for x in (v, a, b)), kind

            def red():
                r = compute(v.sum())
                float(r)   # on this process's device: synchronizes

            step = iter(range(1, 1 << 30))

            def mm():
                # a new b each run (scaled by 1 + i * 2^-20: a 256 x 256 op), so Dask's keys are new and the
                # product is computed again rather than found in the workers' memory
                p = persist(a @ (b * (1 + next(step) * 2.0**-20)))
                _sync_all(client)
                del p

            out["rows"].append({"case": "reduction", "chunks": kind, "s": _median_time(red, reps)})
            out["rows"].append({"case": "matmul", "chunks": kind, "s": _median_time(mm, reps)})
            v = a = b = None  # rebound, not deleted: red and mm close over these names
        # one unchunked gpk_array call, in this process
        x = gp.ones((n_red,), dtype=gp.float32, device=dev) * 0.5
        out["rows"].append({"case": "reduction", "chunks": "unchunked gpk_array",
                            "s": _median_time(lambda: float(gp.sum(x)), reps)})
        x = None  # rebound, not deleted: the lambda above closes over x
        A = gp.ones((rows, k), dtype=gp.float32, device=dev) * 0.25
        B = gp.ones((k, k), dtype=gp.float32, device=dev) * 0.5

        def mm1():
            c = A @ B
            cupy.cuda.runtime.deviceSynchronize()
            del c
        out["rows"].append({"case": "matmul", "chunks": "unchunked gpk_array", "s": _median_time(mm1, reps)})
    finally:
        if client is not None:
            client.close()
            cluster.close()
    by = {(r["case"], r["chunks"]): r["s"] for r in out["rows"]}
    for case in ("reduction", "matmul"):
        ours = by[(case, "gpk_array")]
        out[f"{case}_vs_cupy_chunks"] = ours / by[(case, "cupy")]
        out[f"{case}_vs_unchunked"] = ours / by[(case, "unchunked gpk_array")]
    return out


# --- CPU -------------------------------------------------------------------------------------------------------------
def _cpu_cases(quick):
    import numpy
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import gpk_array as gp
    import gpk_array.dask  # noqa: F401

    n_red = 2**22 if quick else 2**24
    rows = 2**16 if quick else 2**18
    k = 256
    reps = 5 if quick else 10
    metas = {"gpk_array": gp.empty((0,), dtype=gp.float32, device="cpu"),
             "numpy": numpy.empty((0,), dtype=numpy.float32)}
    out = {"scheduler": "distributed LocalCluster (2 processes x 1 thread)",
           "sizes": {"reduction": n_red, "matmul": [rows, k, k]}, "rows": []}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"GPK_DEVICE": "cpu"}) as cluster, Client(cluster) as client:
        for kind, meta in metas.items():
            with dask.config.set({"array.backend": "numpy"}):
                v = client.persist(da.ones((n_red,), chunks=n_red // 8, dtype="float32", meta=meta) * 0.5)
                a = client.persist(da.ones((rows, k), chunks=(rows // 8, k), dtype="float32", meta=meta) * 0.25)
                b = client.persist(da.ones((k, k), chunks=(k, k), dtype="float32", meta=meta) * 0.5)
            wait([v, a, b])
            assert all(type(x._meta) is type(meta) for x in (v, a, b)), kind

            def red():
                float(numpy.asarray(client.compute(v.sum()).result()))

            step = iter(range(1, 1 << 30))

            def mm():
                p = client.persist(a @ (b * (1 + next(step) * 2.0**-20)))   # new keys each run (see _gpu_cases)
                wait(p)
                del p

            out["rows"].append({"case": "reduction", "chunks": kind, "s": _median_time(red, reps)})
            out["rows"].append({"case": "matmul", "chunks": kind, "s": _median_time(mm, reps)})
            v = a = b = None  # rebound, not deleted: red and mm close over these names
    by = {(r["case"], r["chunks"]): r["s"] for r in out["rows"]}
    for case in ("reduction", "matmul"):
        out[f"{case}_vs_numpy_chunks"] = by[(case, "gpk_array")] / by[(case, "numpy")]
    return out


def _table(title, res, baselines):
    print(f"\n{title}: {res['scheduler']}, sizes {res['sizes']}")
    print(f"{'case':<10} {'chunks':<22} {'median ms':>10}")
    for r in res["rows"]:
        print(f"{r['case']:<10} {r['chunks']:<22} {r['s'] * 1e3:>10.2f}")
    for key, target in baselines:
        for case in ("reduction", "matmul"):
            ratio = res[f"{case}_{key}"]
            print(f"  {case} gpk_array chunks {key.replace('_', ' ')}: {ratio:.2f}x (target <= {target}x)")


def run(quick=False, cpu_only=False):
    """Both parts where a GPU is usable, else the CPU part; prints the tables and returns the figures."""
    out = {"targets": TARGETS}
    if not cpu_only and _gpu_available():
        out["cuda"] = _gpu_cases(quick)
        _table("CUDA (one GPU)", out["cuda"], [("vs_cupy_chunks", TARGETS["gpu_vs_cupy_chunks"]),
                                               ("vs_unchunked", TARGETS["gpu_vs_unchunked"])])
    else:
        out["cuda"] = {"skipped": "no CUDA GPU" if not cpu_only else "--cpu-only"}
    out["cpu"] = _cpu_cases(quick)
    _table("CPU", out["cpu"], [("vs_numpy_chunks", TARGETS["cpu_vs_numpy_chunks"])])
    return out


def main(argv=None):
    """``python -m benchmarks.dask_bench [--quick] [--cpu-only] [--json OUT]``."""
    argv = sys.argv[1:] if argv is None else argv
    res = run(quick="--quick" in argv, cpu_only="--cpu-only" in argv)
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
