"""The ``gpk`` command: ``gpk info`` (devices, a GEMM, a scikit-learn fit, with timings), and the LLM commands
``gpk generate`` / ``gpk serve`` when gpk_array.llm is installed."""
import argparse
import os
import sys
import time


def _time(fn, sync, reps=5):
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return best


def info(args):
    """``gpk info``: print gpk_array's version, the devices and the default one, then time a float32 GEMM of size
    ``args.n`` on ``args.device`` (or the default device) with its error against float64, and fit scikit-learn's
    LinearDiscriminantAnalysis on gpk_array arrays there (skipped without scikit-learn). Returns the exit status,
    0."""
    os.environ.setdefault("SCIPY_ARRAY_API", "1")
    import numpy as np

    import gpk_array as xp
    ns = xp.__array_namespace_info__()
    dev = xp.Device(args.device) if args.device else ns.default_device()
    print(f"gpk_array {xp.__version__}  (array API {xp.__array_api_version__})")
    print("devices: " + ", ".join(str(d) for d in ns.devices()) + f"   default: {ns.default_device()}")
    if dev.kind == "cuda":
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(dev.index)
        free, total = cupy.cuda.runtime.memGetInfo()
        print(f"  {dev}: {props['name'].decode()}  sm_{props['major']}{props['minor']}  "
              f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} free)")
    n = args.n
    dtype = xp.float32
    a = xp.asarray(np.random.default_rng(0).standard_normal((n, n), dtype=np.float32), device=dev)
    b = xp.asarray(np.random.default_rng(1).standard_normal((n, n), dtype=np.float32), device=dev)
    t = _time(lambda: a @ b, dev.synchronize)
    ref = np.asarray((a @ b).to_device("cpu"))
    err = np.max(np.abs(ref - np.asarray(a.to_device("cpu"), dtype=np.float64) @ np.asarray(
        b.to_device("cpu"), dtype=np.float64))) / np.sqrt(n)
    print(f"GEMM {n}x{n}x{n} {np.dtype(dtype).name} on {dev}: {t * 1e3:.2f} ms, "
          f"{2 * n ** 3 / t / 1e12:.2f} TFLOP/s (max error / sqrt(n) vs float64: {err:.1e})")
    try:
        import sklearn
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    except ImportError:
        print("scikit-learn not installed: skipping the fit")
        return 0
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 32))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
    Xd, yd = xp.asarray(X, device=dev), xp.asarray(y, device=dev)
    with sklearn.config_context(array_api_dispatch=True):
        t0 = time.perf_counter()
        lda = LinearDiscriminantAnalysis().fit(Xd, yd)
        acc = float(xp.mean(xp.astype(lda.predict(Xd) == yd, xp.float64)))
        dt = time.perf_counter() - t0
    print(f"scikit-learn {sklearn.__version__} LinearDiscriminantAnalysis on gpk_array arrays ({X.shape[0]}x"
          f"{X.shape[1]}, {dev}): fit + predict {dt * 1e3:.1f} ms, training accuracy {acc:.3f}, "
          f"coef_ is {type(lda.coef_).__name__} on {lda.coef_.device}")
    return 0


def main(argv=None):
    """The ``gpk`` command line: parse ``argv`` (default ``sys.argv[1:]``) and run the subcommand (``info``, and
    ``generate``/``serve`` from gpk_array.llm.cli); returns its exit status."""
    ap = argparse.ArgumentParser(prog="gpk", description="gpk_array: the array API on NVIDIA GPUs")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="devices found, a GEMM and a scikit-learn fit, with timings")
    p.add_argument("--device", help="cpu or cuda:N (default: the default device)")
    p.add_argument("-n", type=int, default=1024, help="GEMM size")
    p.set_defaults(func=info)
    try:
        from .llm.cli import register
    except ImportError:
        register = None
    if register is not None:
        register(sub)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
