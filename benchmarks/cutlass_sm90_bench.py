"""The SM90 CUTLASS instances (launched from Python, launch_sm90) against CuPy's cuBLAS, same run.

    python -m benchmarks.cutlass_sm90_bench [--json OUT] [--dtypes f16,bf16] [--families large,xl,pp]
                                            [--layouts tn,nn] [--reps N]

Instances: per dtype, each family (large: 128x128x64 tile, cluster 1x1x1, cooperative; xl: 128x256x64 tile,
cluster 2x1x1, cooperative; pp: 128x128x64 tile, cluster 2x1x1, ping-pong; with CUTLASS's TMA epilogue:
ppt: 128x128x64 ping-pong and coopt: 256x128x64 cooperative, both cluster 2x1x1; the 2x1x1 ones are
cluster launches), timed beside one cuBLAS timing of the same inputs.

    python -m benchmarks.cutlass_sm90_bench --families pp,ppt,coopt     # the TMA epilogues beside pp
    python -m benchmarks.cutlass_sm90_bench --layouts nn                # only matmul's layout (ppt, coopt)
    python -m benchmarks.cutlass_sm90_bench --dtypes tf32               # float32 GEMMs on the TF32 tensor cores

TF32 ("--dtypes tf32": float32 operands and output, TF32 multiplies, float32 accumulation): the instances of
launch_sm90.TF32_LAYOUT_FAMILIES (tn: ppt, coopt; nn: pp, coop) against cuBLAS TF32 in the same run, i.e. the
project's cuBLASLt binding with CUBLAS_COMPUTE_32F_FAST_TF32 (``blas.matmul(a, b, out, tf32=True)``; b = w.T for
"tn"), whose candidate algorithms are timed on the first (warm-up) call. The square shapes include 8192^3 there.

Layouts: "tn" (linear_tn_sm90: x (M, K) @ w.T with w (N, K); cuBLAS x @ w.T) and "nn" (matmul_nn_sm90:
a (M, K) @ b with b (K, N) row-major; cuBLAS a @ b; only the families launch_sm90.LAYOUT_FAMILIES["nn"]
lists, ppt and coopt; the rest of --families is skipped for nn).

Shapes (M, K, N): square 1024..8192, and GPT-2's M in {128, 1024, 8192} x (K, N) in {(768, 3072), (3072, 768)}
(for "nn" also (768, 2304), the fused QKV projection, and (768, 768), the attention output).
Fused epilogues (``--epilogues [ACTS]``, "tn" only): linear_tn_sm90(x, w, bias=b, activation=act), the ppt GEMM
with D = act(x @ w.T + b) in its epilogue (gemm/<dtype>/tn/ppt_bias[_<act>]/sm90), timed beside the bare ppt
instance, CuPy's cuBLAS x @ w.T (the bare GEMM: the target is fused <= 1.05 x its time) and the unfused path
(cuBLAS x @ w.T, then one CuPy elementwise kernel for act(y + b), as an eager framework runs it), at GPT-2's
M in {128, 512, 1024, 8192} x (K, N) in {(768, 3072), (3072, 768), (768, 2304), (768, 768)}. Checked against the
unfused result (max relative difference to its max|y|).

    python -m benchmarks.cutlass_sm90_bench --epilogues gelu,gelu_tanh --json out.json
    python -m benchmarks.cutlass_sm90_bench --epilogues all

Each figure is the median of CUDA-event timings of single calls after warm-up ("ours": the launch with
prepared Params, as a repeated call takes it; "cublas": CuPy's x @ w.T, resp. a @ b); TFLOP/s = 2 M N K / t; ratio =
ours / cublas in TFLOP/s (> 1: ours faster). Every result is also checked against cuBLAS (max relative
difference to max|cuBLAS|). Takes well under 120 s on an H200 once the cubins are cached (about
half of that for three families).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from benchmarks.__main__ import _env
from benchmarks.gemm_bench import _time  # median of CUDA-event timings of single calls after warm-up
from gpk_array._kernels.cutlass.launch_sm90 import FAMILIES

SQUARE = [1024, 2048, 4096, 8192]
GPT2_M = [128, 1024, 8192]
GPT2_KN = [(768, 3072), (3072, 768)]
GPT2_KN_NN = GPT2_KN + [(768, 2304), (768, 768)]
LAYOUTS = ("tn", "nn")


def shapes(layout="tn", sweep=False):
    """The default shapes, or with ``sweep`` those of ``python -m benchmarks gemm`` (benchmarks/gemm_bench.py)."""
    if sweep:
        from benchmarks.gemm_bench import _shapes
        return _shapes()
    kn = GPT2_KN_NN if layout == "nn" else GPT2_KN
    return [(n, n, n) for n in SQUARE] + [(m, k, n) for m in GPT2_M for k, n in kn]


def _bf16_casts(cp):
    try:
        import ml_dtypes
        cp.zeros(2, ml_dtypes.bfloat16).astype(cp.float32)
        return True
    except Exception:  # noqa: BLE001
        return False


def run(dtypes=("f16", "bf16"), reps=20, families=None, layouts=LAYOUTS, sweep=False):
    import cupy as cp
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    from gpk_array._kernels.cutlass import params_sm90 as P

    env = {**_env(), "sm_count": loader.sm_count()}
    np_dt = {"f16": np.dtype(np.float16), "tf32": np.dtype(np.float32)}
    try:
        import ml_dtypes
        np_dt["bf16"] = np.dtype(ml_dtypes.bfloat16)
    except Exception:
        pass
    rows = []
    t_all = time.perf_counter()
    for layout, dt in [(lay, dt) for lay in layouts for dt in dtypes]:
        if dt not in np_dt:
            continue
        # families=None: every family emitted for the dtype and layout
        fams = [f for f in (families or L.layout_families(dt, layout)) if f in L.layout_families(dt, layout)]
        tf32 = dt == "tf32"
        if tf32:
            from gpk_array._kernels import blas
        keys = [f"gemm/{dt}/{layout}/{fam}/sm90" for fam in fams]
        nn = layout == "nn"
        bf16_ok = dt == "bf16" and _bf16_casts(cp)
        for key in keys:
            t0 = time.perf_counter()
            L.get_function(key)
            print(f"{key}: kernel ready in {time.perf_counter() - t0:.1f} s", flush=True)
        rng = np.random.default_rng(0)
        for m, k, n in shapes(layout, sweep):
            x = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np_dt[dt]))
            w = cp.asarray(rng.uniform(-1, 1, (k, n) if nn else (n, k)).astype(np_dt[dt]))
            if tf32:
                # cuBLAS TF32 through cuBLASLt (CUBLAS_COMPUTE_32F_FAST_TF32); w.T of the (N, K) weight for "tn"
                ref = cp.empty((m, n), cp.float32)
                bop = w if nn else w.T
                if blas.matmul(x, bop, out=ref, tf32=True) is None:
                    raise RuntimeError("cuBLASLt refused the TF32 reference GEMM")
                cublas = _time(lambda: blas.matmul(x, bop, out=ref, tf32=True), cp, reps)
            else:
                ref = x @ w if nn else x @ w.T
                cublas = _time((lambda: x @ w) if nn else (lambda: x @ w.T), cp, reps)
            r32 = ref.astype(cp.float32) if dt in ("f16", "tf32") or bf16_ok else None
            call_fn = L.matmul_nn_sm90 if nn else L.linear_tn_sm90
            for fam, key in zip(fams, keys):
                out = cp.empty((m, n), np_dt[dt])
                why = P.sm90_unsupported(P.instance(key), m, n, k, k, n if nn else k, n, n)
                if why:
                    print(f"{layout} {dt:4s} {fam:5s} M={m:5d} K={k:5d} N={n:5d}  not covered: {why}", flush=True)
                    continue
                la, packed = L.prepare(x, w, out, 1.0, 0.0, None, key, loader.sm_count())
                stream = cp.cuda.get_current_stream().ptr
                ours = _time(lambda: L.launch(key, la, packed, stream), cp, reps)
                call = _time(lambda: call_fn(x, w, out=out, key=key), cp, reps)
                diff = float("nan")
                try:   # a CuPy without bfloat16 casts: skip the check, keep the timing
                    if r32 is not None:
                        o32 = out.astype(cp.float32)
                        diff = float(cp.abs(o32 - r32).max() / max(float(cp.abs(r32).max()), 1e-30))
                except Exception:  # noqa: BLE001
                    pass
                fl = 2.0 * m * n * k
                row = {"key": key, "layout": layout, "family": fam, "dtype": dt, "m": m, "k": k, "n": n,
                       "ours_us": ours * 1e6, "ours_call_us": call * 1e6, "cublas_us": cublas * 1e6,
                       "ours_tflops": fl / ours / 1e12, "cublas_tflops": fl / cublas / 1e12,
                       "ratio": cublas / ours, "max_rel_diff": diff, "grid": list(la.grid),
                       "cluster": list(la.cluster)}
                rows.append(row)
                print(f"{layout} {dt:4s} {fam:5s} M={m:5d} K={k:5d} N={n:5d}  ours {row['ours_tflops']:7.1f} TFLOP/s "
                      f"({row['ours_us']:8.1f} us, call {row['ours_call_us']:8.1f} us)  cuBLAS "
                      f"{row['cublas_tflops']:7.1f} ({row['cublas_us']:8.1f} us)  ratio {row['ratio']:.2f}  "
                      f"diff {diff:.1e}", flush=True)
                out = None
            x = w = ref = r32 = None  # frees the device memory before the next shape
    env["seconds"] = time.perf_counter() - t_all
    return {"env": env, "rows": rows}


EPI_M = [128, 512, 1024, 8192]
EPI_KN = [(768, 3072), (3072, 768), (768, 2304), (768, 768)]
_ACT_EXPR = {None: "v", "gelu": "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))",
             "gelu_tanh": "0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)))",
             "relu": "fmaxf(v, 0.0f)", "silu": "v / (1.0f + expf(-v))"}


def _unfused_kernel(cp, act):
    """CuPy elementwise act(y + b) in float32 (one kernel after the cuBLAS GEMM, the unfused path)."""
    return cp.ElementwiseKernel("T y, T b", "T z", f"float v = (float)y + (float)b; z = (T)({_ACT_EXPR[act]});",
                                f"gpk_bench_bias_{act or 'none'}")


def run_epilogues(dtypes=("f16", "bf16"), reps=20, activations=("gelu",), shapes_=None):
    """Fused bias/activation instances against the bare ppt instance, cuBLAS and cuBLAS + CuPy elementwise."""
    import cupy as cp
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L

    env = {**_env(), "sm_count": loader.sm_count()}
    np_dt = {"f16": np.dtype(np.float16)}
    try:
        import ml_dtypes
        np_dt["bf16"] = np.dtype(ml_dtypes.bfloat16)
    except Exception:
        pass
    sms = loader.sm_count()
    stream = cp.cuda.get_current_stream().ptr
    rows = []
    t_all = time.perf_counter()
    for dt in dtypes:
        if dt not in np_dt:
            continue
        plain = f"gemm/{dt}/tn/ppt/sm90"
        keys = {a: L.fused_key(np_dt[dt], "ppt", a) for a in activations}
        for key in [plain] + list(keys.values()):
            t0 = time.perf_counter()
            L.get_function(key)
            print(f"{key}: kernel ready in {time.perf_counter() - t0:.1f} s", flush=True)
        rng = np.random.default_rng(0)
        for m, k, n in shapes_ or [(m, k, n) for m in EPI_M for k, n in EPI_KN]:
            x = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np_dt[dt]))
            w = cp.asarray((rng.uniform(-1, 1, (n, k)) / np.sqrt(k)).astype(np_dt[dt]))
            b = cp.asarray(rng.uniform(-1, 1, (n,)).astype(np_dt[dt]))
            cublas = _time(lambda: x @ w.T, cp, reps)
            out = cp.empty((m, n), np_dt[dt])
            la, packed = L.prepare(x, w, out, 1.0, 0.0, None, plain, sms)
            bare = _time(lambda: L.launch(plain, la, packed, stream), cp, reps)
            for act, key in keys.items():
                try:
                    kern = _unfused_kernel(cp, act)
                    ref = kern(x @ w.T, b)
                    unfused = _time(lambda: kern(x @ w.T, b), cp, reps)
                except Exception as e:  # noqa: BLE001  (a CuPy without this dtype in elementwise kernels)
                    ref, unfused = None, float("nan")
                    print(f"  unfused {dt} {act}: {type(e).__name__}: {e}", flush=True)
                fla, fpacked = L.prepare(x, w, out, 1.0, 0.0, None, key, sms, bias_ptr=b.data.ptr)
                fused = _time(lambda: L.launch(key, fla, fpacked, stream), cp, reps)
                call = _time(lambda: L.linear_tn_sm90(x, w, out=out, bias=b, activation=act), cp, reps)
                diff = float("nan")
                try:
                    if ref is not None:
                        r32, o32 = ref.astype(cp.float32), out.astype(cp.float32)
                        diff = float(cp.abs(o32 - r32).max() / max(float(cp.abs(r32).max()), 1e-30))
                except Exception:  # noqa: BLE001
                    pass
                fl = 2.0 * m * n * k
                row = {"key": key, "activation": act, "dtype": dt, "m": m, "k": k, "n": n,
                       "fused_us": fused * 1e6, "fused_call_us": call * 1e6, "ppt_us": bare * 1e6,
                       "cublas_us": cublas * 1e6, "unfused_us": unfused * 1e6,
                       "fused_tflops": fl / fused / 1e12, "fused_over_cublas": fused / cublas,
                       "fused_over_ppt": fused / bare, "unfused_over_fused": unfused / fused,
                       "target_met": fused <= 1.05 * cublas, "max_rel_diff": diff, "grid": list(fla.grid)}
                rows.append(row)
                print(f"{dt:4s} {str(act):9s} M={m:5d} K={k:5d} N={n:5d}  fused {row['fused_us']:8.1f} us "
                      f"(call {row['fused_call_us']:8.1f})  ppt {row['ppt_us']:8.1f}  cuBLAS {row['cublas_us']:8.1f}  "
                      f"cuBLAS+CuPy {row['unfused_us']:8.1f}  fused/cuBLAS {row['fused_over_cublas']:.3f} "
                      f"{'ok' if row['target_met'] else 'MISSED'}  diff {diff:.1e}", flush=True)
            x = w = b = out = None  # frees the device memory before the next shape
    env["seconds"] = time.perf_counter() - t_all
    return {"env": env, "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cutlass_sm90_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--families", default=None,
                    help="comma-separated (default: every family of each dtype and layout; "
                         f"f16/bf16: {','.join(FAMILIES)})")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--sweep", action="store_true", help="the shapes of python -m benchmarks gemm instead")
    ap.add_argument("--epilogues", nargs="?", const="gelu", default=None,
                    help="time the fused bias/activation instances instead: comma-separated activations among "
                         "none,gelu,gelu_tanh,relu,silu, or all (default gelu)")
    a = ap.parse_args(argv)
    if a.epilogues is not None:
        from gpk_array._kernels.cutlass.launch_sm90 import ACTIVATIONS
        acts = ACTIVATIONS if a.epilogues == "all" else tuple(
            None if x == "none" else x for x in a.epilogues.split(","))
        res = run_epilogues(tuple(a.dtypes.split(",")), a.reps, acts)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
        return 0
    res = run(tuple(a.dtypes.split(",")), a.reps, tuple(a.families.split(",")) if a.families else None,
              tuple(a.layouts.split(",")), a.sweep)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
