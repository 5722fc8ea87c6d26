"""The SM90 CUTLASS instances (launched from Python, launch_sm90) against CuPy's cuBLAS (x @ w.T), same run.

    python -m benchmarks.cutlass_sm90_bench [--json OUT] [--dtypes f16,bf16] [--families large,xl,pp] [--reps N]

Instances: per dtype, each family (large: 128x128x64 tile, cluster 1x1x1, cooperative; xl: 128x256x64 tile,
cluster 2x1x1, cooperative; pp: 128x128x64 tile, cluster 2x1x1, ping-pong; with CUTLASS's TMA epilogue:
ppt: 128x128x64 ping-pong and coopt: 256x128x64 cooperative, both cluster 2x1x1; the 2x1x1 ones are
cluster launches), timed beside one cuBLAS timing of the same inputs.

    python -m benchmarks.cutlass_sm90_bench --families pp,ppt,coopt     # the TMA epilogues beside pp

Shapes (M, K, N): square 1024..8192, and GPT-2's M in {128, 1024, 8192} x (K, N) in {(768, 3072), (3072, 768)}.
Each figure is the median of CUDA-event timings of single calls after warm-up ("ours": the launch with
prepared Params, as a repeated call takes it; "cublas": CuPy's x @ w.T); TFLOP/s = 2 M N K / t; ratio =
ours / cublas in TFLOP/s (> 1: ours faster). Every result is also checked against cuBLAS (max relative
difference to max|cuBLAS|). Takes well under 120 s on an H200 once the cubins are cached (about
half of that for three families).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

SQUARE = [1024, 2048, 4096, 8192]
GPT2_M = [128, 1024, 8192]
GPT2_KN = [(768, 3072), (3072, 768)]
FAMILIES = ("large", "xl", "pp", "ppt", "coopt")   # see launch_sm90.FAMILIES


def shapes():
    return [(n, n, n) for n in SQUARE] + [(m, k, n) for m in GPT2_M for k, n in GPT2_KN]


def _time(fn, cp, reps):
    for _ in range(3):
        fn()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    out = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return float(np.median(out))


def _commit():
    c = os.environ.get("GPK_COMMIT", "")
    if c:
        return c
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def _bf16_casts(cp):
    try:
        import ml_dtypes
        cp.zeros(2, ml_dtypes.bfloat16).astype(cp.float32)
        return True
    except Exception:  # noqa: BLE001
        return False


def run(dtypes=("f16", "bf16"), reps=20, families=FAMILIES):
    import cupy as cp
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    env = {"gpu": props["name"].decode(), "sm_count": loader.sm_count(), "commit": _commit(),
           "cupy": cp.__version__, "cuda_runtime": cp.cuda.runtime.runtimeGetVersion()}
    np_dt = {"f16": np.dtype(np.float16)}
    try:
        import ml_dtypes
        np_dt["bf16"] = np.dtype(ml_dtypes.bfloat16)
    except Exception:
        pass
    rows = []
    t_all = time.perf_counter()
    for dt in dtypes:
        if dt not in np_dt:
            continue
        keys = [f"gemm/{dt}/tn/{fam}/sm90" for fam in families]
        bf16_ok = dt == "bf16" and _bf16_casts(cp)
        for key in keys:
            t0 = time.perf_counter()
            L.get_function(key)
            print(f"{key}: kernel ready in {time.perf_counter() - t0:.1f} s", flush=True)
        rng = np.random.default_rng(0)
        for m, k, n in shapes():
            x = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np_dt[dt]))
            w = cp.asarray(rng.uniform(-1, 1, (n, k)).astype(np_dt[dt]))
            ref = x @ w.T
            cublas = _time(lambda: x @ w.T, cp, reps)
            r32 = ref.astype(cp.float32) if dt == "f16" or bf16_ok else None
            for fam, key in zip(families, keys):
                out = cp.empty((m, n), np_dt[dt])
                la, packed = L.prepare(x, w, out, 1.0, 0.0, None, key, loader.sm_count())
                stream = cp.cuda.get_current_stream().ptr
                ours = _time(lambda: L.launch(key, la, packed, stream), cp, reps)
                call = _time(lambda: L.linear_tn_sm90(x, w, out=out, key=key), cp, reps)
                diff = float("nan")
                try:   # a CuPy without bfloat16 casts: skip the check, keep the timing
                    if r32 is not None:
                        o32 = out.astype(cp.float32)
                        diff = float(cp.abs(o32 - r32).max() / max(float(cp.abs(r32).max()), 1e-30))
                except Exception:  # noqa: BLE001
                    pass
                fl = 2.0 * m * n * k
                row = {"key": key, "family": fam, "dtype": dt, "m": m, "k": k, "n": n,
                       "ours_us": ours * 1e6, "ours_call_us": call * 1e6, "cublas_us": cublas * 1e6,
                       "ours_tflops": fl / ours / 1e12, "cublas_tflops": fl / cublas / 1e12,
                       "ratio": cublas / ours, "max_rel_diff": diff, "grid": list(la.grid),
                       "cluster": list(la.cluster)}
                rows.append(row)
                print(f"{dt:4s} {fam:5s} M={m:5d} K={k:5d} N={n:5d}  ours {row['ours_tflops']:7.1f} TFLOP/s "
                      f"({row['ours_us']:8.1f} us, call {row['ours_call_us']:8.1f} us)  cuBLAS "
                      f"{row['cublas_tflops']:7.1f} ({row['cublas_us']:8.1f} us)  ratio {row['ratio']:.2f}  "
                      f"diff {diff:.1e}", flush=True)
                del out
            del x, w, ref, r32
    env["seconds"] = time.perf_counter() - t_all
    return {"env": env, "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cutlass_sm90_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--families", default=",".join(FAMILIES))
    a = ap.parse_args(argv)
    res = run(tuple(a.dtypes.split(",")), a.reps, tuple(a.families.split(",")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
