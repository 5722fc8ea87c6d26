"""Self-test of gpk_array._kernels.blas on a GPU: ``python -m gpk_array._kernels.blas``.

Prints, per case, the error relative to max|ref| against a float64 NumPy reference and the time per call of
blas.linear / blas.matmul beside cupy.matmul (plus the bias add for linear), then records both in a CUDA graph,
changes the inputs in place, replays and prints the errors again. Exit status 1 when an error is too large."""

import sys
import time

import numpy as np

TOL = {"float16": 5e-2, "bfloat16": 8e-2, "float32": 5e-3, "float32-notf32": 1e-4, "float64": 1e-10}


def _dtypes():
    out = [("float32", np.float32, None), ("float32-notf32", np.float32, False), ("float16", np.float16, None),
           ("float64", np.float64, None)]
    try:
        import ml_dtypes
        out.append(("bfloat16", ml_dtypes.bfloat16, None))
    except ImportError:
        pass
    return out


def _time(fn, n=50):
    import cupy
    fn()
    cupy.cuda.get_current_stream().synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(n):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3 / n  # microseconds


def _err(got, ref):
    return float(np.max(np.abs(got.get().astype(np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def _gelu(v):
    return 0.5 * v * (1 + np.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))


def main():
    import cupy

    from gpk_array._kernels import blas
    if not blas.available():
        print("cuBLASLt not available:", blas._lib_error or "no CUDA device")
        sys.exit(1)
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
    print(f"device {props['name'].decode()}, cuBLASLt {blas.version()}, TF32_DEFAULT={blas.TF32_DEFAULT}")
    rng = np.random.default_rng(0)
    bad = 0
    lin = [(1, 2304, 768, None), (1, 3072, 768, "gelu_tanh"), (64, 3072, 768, "gelu_tanh"), (512, 768, 768, None),
           (1000, 1000, 1000, "relu")]
    mm = [((12, 1, 64), (12, 64, 128)), ((12, 128, 64), (12, 64, 128)), ((8, 37, 64), (64, 50)),
          ((1024, 1024), (1024, 1024))]
    print(f"{'case':44s} {'dtype':15s} {'err':>9s} {'ours us':>9s} {'cupy us':>9s}")
    for name, dt, tf32 in _dtypes():
        for M, N, K, act in lin:
            x, w, b = (rng.uniform(-1, 1, s).astype(dt) for s in [(M, K), (N, K), (N,)])
            gx, gw, gb = cupy.asarray(x), cupy.asarray(w), cupy.asarray(b)
            got = blas.linear(gx, gw, gb, act, tf32=tf32)
            ref = x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64)
            ref = {None: ref, "relu": np.maximum(ref, 0), "gelu_tanh": _gelu(ref)}[act]
            case = f"linear {M}x{N}x{K} {act or 'bias'}"
            if got is None:
                print(f"{case:44s} {name:15s} {'None (falls back)':>9s}")
                continue
            e = _err(got, ref)
            bad += e > TOL[name]
            ours = _time(lambda: blas.linear(gx, gw, gb, act, tf32=tf32))
            try:
                theirs = f"{_time(lambda: cupy.matmul(gx, gw.T) + gb):9.1f}"
            except Exception:
                theirs = "n/a"
            print(f"{case:44s} {name:15s} {e:9.2e} {ours:9.1f} {theirs:>9s}")
        for sa, sb in mm:
            a, b = rng.uniform(-1, 1, sa).astype(dt), rng.uniform(-1, 1, sb).astype(dt)
            ga, gb = cupy.asarray(a), cupy.asarray(b)
            got = blas.matmul(ga, gb, tf32=tf32)
            case = f"matmul {sa}@{sb}"
            if got is None:
                print(f"{case:44s} {name:15s} None")
                bad += 1
                continue
            e = _err(got, np.matmul(a.astype(np.float64), b.astype(np.float64)))
            bad += e > TOL[name]
            ours = _time(lambda: blas.matmul(ga, gb, tf32=tf32))
            try:
                theirs = f"{_time(lambda: cupy.matmul(ga, gb)):9.1f}"
            except Exception:
                theirs = "n/a"
            print(f"{case:44s} {name:15s} {e:9.2e} {ours:9.1f} {theirs:>9s}")
    bad += _graph(blas, cupy, rng)
    print("FAILED" if bad else "OK", f"({bad} errors over tolerance)")
    sys.exit(1 if bad else 0)


def _graph(blas, cupy, rng):
    """linear + matmul recorded in a CUDA graph, inputs changed in place, replayed."""
    bad = 0
    for name, dt, tf32 in _dtypes():
        x, w, b = (rng.uniform(-1, 1, s).astype(dt) for s in [(4, 768), (3072, 768), (3072,)])
        a, c = rng.uniform(-1, 1, (12, 4, 64)).astype(dt), rng.uniform(-1, 1, (12, 64, 33)).astype(dt)
        gx, gw, gb, ga, gc = (cupy.asarray(v) for v in (x, w, b, a, c))
        y, z = cupy.empty((4, 3072), dt), cupy.empty((12, 4, 33), dt)
        s = cupy.cuda.Stream(non_blocking=True)

        def step():
            r1 = blas.linear(gx, gw, gb, "gelu_tanh", out=y, tf32=tf32)
            r2 = blas.matmul(ga, gc, out=z, tf32=tf32)
            return r1 is not None and r2 is not None

        try:
            with s:
                if not step():
                    print(f"graph {name}: not handled (None)")
                    continue
                s.synchronize()
                s.begin_capture()
                try:
                    step()
                finally:
                    g = s.end_capture()
            errs = []
            for _ in range(2):
                x, b, a = (rng.uniform(-1, 1, v.shape).astype(dt) for v in (x, b, a))
                gx.set(x)
                gb.set(b)
                ga.set(a)
                cupy.cuda.runtime.deviceSynchronize()
                g.launch(stream=s)
                s.synchronize()
                errs.append(_err(y, _gelu(x.astype(np.float64) @ w.astype(np.float64).T + b.astype(np.float64))))
                errs.append(_err(z, np.matmul(a.astype(np.float64), c.astype(np.float64))))
            t0 = time.perf_counter()
            for _ in range(100):
                g.launch(stream=s)
            s.synchronize()
            per = (time.perf_counter() - t0) * 1e4
            bad += max(errs) > TOL[name]
            print(f"graph {name:15s} max err {max(errs):9.2e}, replay {per:.1f} us (linear 4x3072x768 + matmul)")
        except Exception as e:  # report and go on
            bad += 1
            print(f"graph {name}: {type(e).__name__}: {e}")
    return bad


if __name__ == "__main__":
    main()
