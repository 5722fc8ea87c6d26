"""The SM90 CUTLASS candidates (MANIFEST ``candidate``) against cuBLASLt on the GPU: build, check, time.

    python -m benchmarks.diag.sm90_candidate_sweep                  # everything, within --budget seconds (default 240)
    python -m benchmarks.diag.sm90_candidate_sweep --groups tf32    # TF32 only (groups: tf32, f16, bf16)
    python -m benchmarks.diag.sm90_candidate_sweep --plan           # no GPU: what a run builds, checks and times
    python -m benchmarks.diag.sm90_candidate_sweep --groups f16,bf16 --keys K1,K2 --shapes 512x768x3072 \
        --incumbents ppt,large                                 # given instances at given shapes (M x K x N)

What it does (one process; $OUT receives sm90_candidate_sweep.json, rewritten after every figure, and the built
candidates' cubins under cubin/, named as launch_sm90.cubin_path names them):

1. Builds every candidate's cubin in parallel (``--jobs``, default 12; one subprocess each, ``launch_sm90.build``
   with nvcc and launch_sm90's flags into $GPK_CACHE_DIR; one that fails or passes ``--build-timeout`` is reported
   and skipped). Meanwhile the main process times cuBLASLt and the incumbents (the rule's instances and their
   nearest relatives: tf32 ppt, coopt; f16/bf16 ppt, coopt, xl, all shipped), so compiling costs little GPU time.
2. Checks each instance (the incumbents first, each candidate once built) in a subprocess of its own (a kernel
   that faults or hangs loses that subprocess only): (1000 x 520) @ (1032 x 520).T against a float64 NumPy
   reference (tolerance relative to max|ref|: 2e-3 for tf32 and f16, 1e-2 for bf16), alpha 0.5 / beta -1.25 with
   a C operand, every tile-scheduler variant on that problem, and one 4096^3 launch (float64 reference on the
   device); records registers and local memory (spills) per thread. Only the instances that pass are timed.
3. Times, in CUDA graphs (benchmarks.gemm_bench._graph_time: 20 calls per graph, fastest of 5 replays, GPU time
   only), each instance with every tile-scheduler variant (max swizzle 1, 2, 4, 8 x raster along N / along M:
   run-time Params, ``launch_sm90.prepare(..., max_swizzle, raster)``; "s1n" or "s1m" is what the namespace's
   ``gemm_into`` launches, marked "*") at the goal shapes (TF32 4096^3, 8192^3; f16/bf16 4096^3, 8192^3), and
   with the default variant plus the instance's best at the goal shapes on TF32 2048^3 and 8192x768x3072
   (M x K x N; GPT-2's MLP). Before every timing the output is filled with NaN and one launch is compared with a
   float64 GEMM of the same operands on the device (same tolerances; cuBLAS's own error is printed beside its
   times); a variant that differs is reported and not timed.
   cuBLASLt, same inputs, same run: ``blas.matmul`` on a @ b (b (K, N) row-major: the diag's operand) and on
   a @ w.T (w (N, K): our operand), each with its 8 best heuristic candidates timed on the first call (the
   namespace's setting) and with the heuristic's first choice alone (AUTOTUNE_ALGOS = 1, as benchmarks/gemm_bench
   and the .gpu diags time "cuBLAS"); TF32 through CUBLAS_COMPUTE_32F_FAST_TF32. Ratios: cuBLAS time / ours
   against the fastest of those four ("vs best") and against the heuristic's a @ b ("vs heur"); > 1: ours faster.
   cuBLAS is timed again after each shape's instances (drift; the faster figure is used).
   Stream-K instances (candidate co128sk: co128t with CUTLASS's stream-K tile scheduler in its split-K decomposition)
   are checked and timed with SK_VARIANTS in place of VARIANTS: splits 1 (data-parallel, what gemm_into launches)
   to 8 over both raster orders, and the nondeterministic reduction at 2 and 4 splits ("s1mk4nd"); launch_sm90.prepare
   allocates each variant's workspace and launch zeroes its barriers (a memset before the kernel, timed with it in
   the graph); the check adds alpha/beta with C at 3 splits. Few-row shapes, e.g.:
       python -m benchmarks.diag.sm90_candidate_sweep --groups f16 --shapes 512x768x3072,512x3072x768 --incumbents ppt \
           --keys gemm/f16/tn/co128sk/sm90,gemm/f16/tn/co128t/sm90,gemm/f16/tn/co64t/sm90,gemm/f16/tn/ppt/sm90

Order under the budget: TF32 goal shapes, f16/bf16 goal shapes, TF32 extra shapes; what does not fit is reported
as skipped. Every line is printed as it is measured (flushed); a summary per shape closes the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

T0 = time.monotonic()
ROOT = Path(__file__).resolve().parents[2]
MODULE = "benchmarks.diag.sm90_candidate_sweep"

GROUPS = ("tf32", "f16", "bf16")
# incumbents timed beside the candidates: the rule's instances and their nearest relatives (all shipped)
INCUMBENTS = {"tf32": ("ppt", "coopt"), "f16": ("ppt", "coopt", "xl"), "bf16": ("ppt", "coopt", "xl")}
# (M, K, N): the goal shapes (every variant) and the extra ones (default variant and the goal shapes' best)
GOAL = {"tf32": [(4096, 4096, 4096), (8192, 8192, 8192)],
        "f16": [(4096, 4096, 4096), (8192, 8192, 8192)],
        "bf16": [(4096, 4096, 4096), (8192, 8192, 8192)]}
EXTRA = {"tf32": [(2048, 2048, 2048), (8192, 768, 3072)], "f16": [], "bf16": []}
# tile-scheduler variants: (max swizzle, raster order), run-time Params of every SM90 instance
VARIANTS = [(s, r) for r in ("along_n", "along_m") for s in (1, 2, 4, 8)]
# stream-K instances (params_sm90.is_stream_k: candidate co128sk): (max swizzle, raster, splits, reduction mode),
# CUTLASS's split-K decomposition with each split count (clamped by params_sm90.split_k_splits to the k-blocks per
# tile), both raster orders, and the nondeterministic reduction (partials added in any order after the first) at 2
# and 4 splits; splits 1 is the data-parallel launch gemm_into makes (the "default" variant)
SK_SPLITS = (1, 2, 3, 4, 5, 6, 8)     # 512x3072x768: 24 tiles x 5 = 120 units fit 132 SMs, x 6 = 144 do not
SK_VARIANTS = [(1, r, k, "deterministic") for k in SK_SPLITS for r in ("along_m", "along_n")] + \
    [(1, "along_m", k, "nondeterministic") for k in (2, 4)]
SK_CHECK_SPLITS = 3                   # the alpha/beta check of a stream-K instance also runs split 3 ways
TOL = {"tf32": 2e-3, "f16": 2e-3, "bf16": 1e-2}
SMALL = (1000, 1032, 520)            # (M, N, K) of the float64 check: partial tiles in M and N, a K tail
BIG_CHECK = 4096                     # and one N^3 launch
ALPHA, BETA = 0.5, -1.25


def vname(v) -> str:
    """s<max swizzle><raster n|m>, then for stream-K variants k<splits> and "nd" for the nondeterministic reduction."""
    name = f"s{v[0]}{v[1][-1]}"
    if len(v) > 2:
        name += f"k{v[2]}" + ("nd" if v[3] == "nondeterministic" else "")
    return name


def _vkw(v) -> dict:
    """launch_sm90.prepare's keyword arguments of a variant."""
    kw = {"max_swizzle": v[0], "raster": v[1]}
    if len(v) > 2:
        kw.update(splits=v[2], reduction=v[3])
    return kw


def instance_variants(key: str) -> list:
    """The variants timed for an instance: SK_VARIANTS for a stream-K instance, VARIANTS for the others."""
    from gpk_array._kernels.cutlass import params_sm90 as P
    return SK_VARIANTS if P.is_stream_k(P.instance(key)) else VARIANTS


def default_variant(key: str, m: int, n: int, sms: int):
    """What the namespace's gemm_into launches: max swizzle 1 and the heuristic's raster (stream-K: one split)."""
    from gpk_array._kernels.cutlass import params_sm90 as P
    e = P.instance(key)
    v = (1, "along_n" if P.sm90_schedule(e, m, n, sms)["raster_order"] == 1 else "along_m")
    return v + (1, "deterministic") if P.is_stream_k(e) else v


def left() -> float:
    return BUDGET - (time.monotonic() - T0)


BUDGET = 240.0


# --------------------------------------------------------------------------------------------------
# plan (no GPU)
# --------------------------------------------------------------------------------------------------
def plan(groups, only_keys=None) -> dict:
    """{group: {"candidates": [...], "incumbents": [...]}} from the manifest (tn instances only; the fused-epilogue
    candidates, which compute act(x @ w.T + bias), are timed by benchmarks.epilogue_bench instead)."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    from gpk_array._kernels.cutlass import params_sm90 as P
    cands = [k for k in L.instance_keys(candidates=True) if P.fused_of(P.instance(k)) is None]
    out = {}
    for g in groups:
        c = [k for k in cands if k.split("/")[1] == g and P.layout_of(P.instance(k)) == "tn"]
        inc = [f"gemm/{g}/tn/{f}/sm90" for f in INCUMBENTS[g]]
        for k in inc:
            P.instance(k)          # KeyError for a name the manifest lacks
        if only_keys:
            c = [k for k in c if k in only_keys]
            inc = [k for k in inc if k in only_keys]
        out[g] = {"candidates": c, "incumbents": inc}
    return out


# --------------------------------------------------------------------------------------------------
# subprocesses: one build, one check
# --------------------------------------------------------------------------------------------------
def _sub(args: list[str], timeout: float) -> tuple[int | None, str, str]:
    """Run this module with ``args`` in a session of its own; on timeout kill the whole session (nvcc's children
    too). (returncode or None on timeout, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.Popen([sys.executable, "-m", MODULE, *args], cwd=str(ROOT), env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=max(1.0, timeout))
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return None, out, err


def _last_json(text: str):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def build_one(key: str) -> int:
    """launch_sm90.build: nvcc with launch_sm90's flags where nvcc is installed (else NVRTC), into $GPK_CACHE_DIR."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    r = L.build(key)
    print(json.dumps(r), flush=True)
    return 0


def _rel_err_host(got, ref64):
    import numpy as np
    g = np.asarray(got, dtype=np.float64)
    scale = float(np.max(np.abs(ref64))) or 1.0
    d = np.abs(g - ref64)
    return float("nan") if np.isnan(d).any() else float(np.max(d)) / scale


def check_one(key: str) -> int:
    """The candidate's correctness on the small case (float64 reference), with alpha/beta and C, every variant,
    and one BIG_CHECK^3 launch (float64 reference on the device); prints one JSON line."""
    import cupy as cp
    import numpy as np

    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    from gpk_array._kernels.cutlass import params_sm90 as P
    e = P.instance(key)
    dt = e["dtype"]
    tol = TOL[dt]
    host_dt = _host_dtype(dt)
    res = {"key": key, "ok": False, "tol": tol, "variants": {}}
    fn, _, _ = L.get_function(key)
    try:
        a = fn.attributes
        res["regs"] = int(a.get("num_regs", -1))
        res["local_bytes"] = int(a.get("local_size_bytes", -1))
    except Exception as err:  # noqa: BLE001 - attributes are informative only
        res["attributes_error"] = repr(err)
    rng = np.random.default_rng(1)
    m, n, k = SMALL
    x = rng.uniform(-1, 1, (m, k)).astype(host_dt)
    w = rng.uniform(-1, 1, (n, k)).astype(host_dt)
    c = rng.uniform(-1, 1, (m, n)).astype(host_dt)
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    gx, gw, gc = cp.asarray(x), cp.asarray(w), cp.asarray(c)
    y = L.linear_tn_sm90(gx, gw, key=key)
    cp.cuda.Device().synchronize()
    res["small"] = _rel_err_host(cp.asnumpy(y), ref)
    out = cp.empty((m, n), gx.dtype)
    L.linear_tn_sm90(gx, gw, out=out, alpha=ALPHA, beta=BETA, c=gc, key=key)
    res["alpha_beta"] = _rel_err_host(cp.asnumpy(out), ALPHA * ref + BETA * c.astype(np.float64))
    if P.is_stream_k(e):
        # the epilogue (alpha, beta, C) runs once, in the last split, on the reduced partials
        out.data.memset_async(0xFF, out.nbytes)
        L.linear_tn_sm90(gx, gw, out=out, alpha=ALPHA, beta=BETA, c=gc, key=key, splits=SK_CHECK_SPLITS)
        cp.cuda.Device().synchronize()
        res["alpha_beta_split"] = _rel_err_host(cp.asnumpy(out), ALPHA * ref + BETA * c.astype(np.float64))
    sms = loader.sm_count()
    for v in instance_variants(key):
        out.data.memset_async(0xFF, out.nbytes)        # NaN in every float type
        la, packed = L.prepare(gx, gw, out, 1.0, 0.0, None, key, sms, **_vkw(v))
        L.launch(key, la, packed)
        cp.cuda.Device().synchronize()
        res["variants"][vname(v)] = _rel_err_host(cp.asnumpy(out), ref)
    # one goal-sized launch against cuBLAS (on the device)
    N = BIG_CHECK
    bx = _device_uniform(cp, (N, N), dt, 2)
    bw = _device_uniform(cp, (N, N), dt, 3)
    bo = cp.empty((N, N), bx.dtype)
    assert L.gemm_into(key, bx, bw, bo)
    cp.cuda.Device().synchronize()
    res["big"] = _rel_err_dev(cp, bo, _ref64(cp, bx, bw))
    errs = [res["small"], res["alpha_beta"], res["big"], *res["variants"].values()]
    if "alpha_beta_split" in res:
        errs.append(res["alpha_beta_split"])
    res["ok"] = all(_within(err, tol) for err in errs)
    print(json.dumps(res), flush=True)
    return 0


def _within(err, tol) -> bool:
    """err <= tol, False for NaN (a NaN left in the output: tiles not written)."""
    return not math.isnan(err) and err <= tol


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.1e}"


def _host_dtype(dt):
    import numpy as np
    if dt == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return {"tf32": np.float32, "f16": np.float16}[dt]


def _device_uniform(cp, shape, dt, seed):
    """Uniform(-1, 1) operands made on the device (float32, then cast; bfloat16 through the host if CuPy cannot)."""
    x = cp.random.RandomState(seed).uniform(-1, 1, shape, dtype=cp.float32)
    if dt == "tf32":
        return x
    t = _host_dtype(dt)
    try:
        return x.astype(t)
    except Exception:  # noqa: BLE001 - CuPy without a device cast to bfloat16
        return cp.asarray(cp.asnumpy(x).astype(t))


def _exact_f64(cp, x):
    """x as float64 on the device (exact for float32/float16/bfloat16; through the host where CuPy cannot cast)."""
    try:
        return x.astype(cp.float64)
    except Exception:  # noqa: BLE001 - bfloat16 without a device cast
        import numpy as np
        return cp.asarray(cp.asnumpy(x).astype(np.float32)).astype(cp.float64)


def _ref64(cp, a, w):
    """a @ w.T in float64 on the device (cuBLAS DGEMM: 8192^3 in tens of milliseconds) from the exact operands."""
    return _exact_f64(cp, a) @ _exact_f64(cp, w).T


def _rel_err_dev(cp, got, ref64) -> float:
    """max|got - ref64| / max|ref64| on the device (NaN if got holds a NaN)."""
    d = float(cp.max(cp.abs(_exact_f64(cp, got) - ref64)))
    return d / (float(cp.max(cp.abs(ref64))) or 1.0)


# --------------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------------
class Report:
    def __init__(self, path: Path, meta: dict):
        self.path = path
        self.data = {"meta": meta, "builds": {}, "checks": {}, "cublas": [], "rows": [], "skipped": [],
                     "summary": []}

    def save(self):
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        tmp.replace(self.path)


def _gpu_state() -> str:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=10, check=False)
        return r.stdout.strip()
    except Exception:  # noqa: BLE001
        return "?"


def run(args) -> int:
    global BUDGET
    BUDGET = args.budget
    out_dir = Path(os.environ.get("OUT") or "/tmp")
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = [g for g in args.groups.split(",") if g]
    only = set(args.keys.split(",")) if args.keys else None
    pl = plan(groups, only)
    import cupy as cp

    from benchmarks.__main__ import _env
    from benchmarks.gemm_bench import _graph_time
    from gpk_array._kernels import blas, loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    from gpk_array._kernels.cutlass import params_sm90 as P

    meta = {"env": _env(), "budget_s": BUDGET, "plan": pl, "variants": [vname(v) for v in VARIANTS],
            "stream_k_variants": [vname(v) for v in SK_VARIANTS],
            "tolerance": TOL, "gpu_state_start": _gpu_state(), "cache_dir": os.environ.get("GPK_CACHE_DIR"),
            "sm_count": loader.sm_count()}
    rep = Report(out_dir / "sm90_candidate_sweep.json", meta)
    print(f"== sm90 candidate sweep: {meta['env'].get('gpu')} {meta['sm_count']} SMs, budget {BUDGET:.0f} s; "
          f"GPU {meta['gpu_state_start']}", flush=True)
    for g in groups:
        print(f"   {g}: candidates {', '.join(k.split('/')[3] for k in pl[g]['candidates']) or '-'}; incumbents "
              f"{', '.join(k.split('/')[3] for k in pl[g]['incumbents'])}", flush=True)
    rep.save()

    # 1. builds in the background
    cand_keys = [k for g in groups for k in pl[g]["candidates"]]
    pool = ThreadPoolExecutor(max(1, args.jobs))
    t_build = time.monotonic()

    def build(key):
        rc, so, se = _sub(["--build-one", key], min(args.build_timeout, max(5.0, left() - 30)))
        info = _last_json(so) or {}
        info.update({"rc": rc, "wall_s": round(time.monotonic() - t_build, 1)})
        if rc != 0:
            info["error"] = "timeout" if rc is None else (se.strip().splitlines() or ["?"])[-1][:400]
            info["log_tail"] = se[-3000:]
        return key, info
    futures = [pool.submit(build, k) for k in cand_keys] if not args.no_build else []

    sms = loader.sm_count()
    inputs = {}

    def operands(g, shape):
        hit = inputs.get((g, shape))
        if hit is None:
            m, k, n = shape
            a = _device_uniform(cp, (m, k), g, 10)
            w = _device_uniform(cp, (n, k), g, 11)
            bnn = cp.ascontiguousarray(w.T)
            o = cp.empty((m, n), a.dtype)
            ref = _ref64(cp, a, w)
            cp.cuda.Device().synchronize()
            hit = inputs[(g, shape)] = {"a": a, "w": w, "bnn": bnn, "o": o, "ref": ref, "cublas": {},
                                        "cublas_err": {}}
        return hit

    def _cublas(a, b, g, tuned):
        keep = blas.AUTOTUNE_ALGOS
        blas.AUTOTUNE_ALGOS = 8 if tuned else 1
        try:
            return blas.matmul(a, b, tf32=True) if g == "tf32" else blas.matmul(a, b)
        finally:
            blas.AUTOTUNE_ALGOS = keep

    def time_cublas(g, shape, when):
        d = operands(g, shape)
        m, k, n = shape
        res = {}
        for lay, b in (("nn", d["bnn"]), ("tn", d["w"].T)):
            for tuned in (False, True):
                name = f"{lay}_{'tuned' if tuned else 'heur'}"
                if left() < 5:
                    continue
                keep = blas.AUTOTUNE_ALGOS
                blas.AUTOTUNE_ALGOS = 8 if tuned else 1     # part of blas's plan keys: entries of their own
                try:
                    call = (lambda b=b: blas.matmul(d["a"], b, tf32=True)) if g == "tf32" else \
                        (lambda b=b: blas.matmul(d["a"], b))
                    y = call()                      # the first call tunes (outside captures)
                    if y is not None and name not in d["cublas_err"]:
                        d["cublas_err"][name] = _rel_err_dev(cp, y, d["ref"])
                    t = None if y is None else _graph_time(call, cp)
                except Exception as err:  # noqa: BLE001 - reported, the sweep goes on
                    print(f"   cuBLASLt {name} failed: {type(err).__name__}: {err}", flush=True)
                    t = None
                finally:
                    blas.AUTOTUNE_ALGOS = keep
                res[name] = t
                prev = d["cublas"].get(name)
                if t is not None:
                    d["cublas"][name] = t if prev is None else min(prev, t)
        rep.data["cublas"].append({"dtype": g, "m": m, "k": k, "n": n, "when": when,
                                   **{kk: (None if v is None else v * 1e6) for kk, v in res.items()},
                                   "rel_err": dict(d["cublas_err"])})
        fl = 2 * m * n * k
        print(f"   cuBLASLt {g:4} {m}x{k}x{n} ({when}): " + "  ".join(
            f"{kk} {'-' if v is None else f'{v * 1e6:9.1f} us {fl / v / 1e12:5.0f} TF/s'}" for kk, v in res.items())
            + f"  (rel err vs float64 {_fmt(max(d['cublas_err'].values(), default=None))})", flush=True)
        rep.save()

    def refs(g, shape):
        c = inputs[(g, shape)]["cublas"]
        vals = [v for v in c.values() if v]
        return (min(vals) if vals else None), c.get("nn_heur")

    best_variant: dict = {}   # (key) -> {shape: (t, variant)}

    def time_instance(g, shape, key, variants, tag):
        d = operands(g, shape)
        m, k, n = shape
        e = P.instance(key)
        why = P.sm90_unsupported(e, m, n, k, k, k, n, n)
        if why:
            print(f"   {key}: {why}", flush=True)
            return
        default = default_variant(key, m, n, sms)
        best_t, best_ref = refs(g, shape)
        fl = 2 * m * n * k
        for v in variants:
            row = {"dtype": g, "m": m, "k": k, "n": n, "key": key, "family": key.split("/")[3], "tag": tag,
                   "variant": vname(v), "max_swizzle": v[0], "raster": v[1], "default": v == default}
            if len(v) > 2:
                row.update(splits=v[2], splits_used=P.split_k_splits(e, k, sms, v[2]), reduction=v[3],
                           workspace_bytes=P.sm90_workspace(e, m, n, k, sms, v[2], v[0], v[1])["bytes"])
            if left() < 8:
                rep.data["skipped"].append({**row, "why": "budget"})
                continue
            try:
                o = d["o"]
                la, packed = L.prepare(d["a"], d["w"], o, 1.0, 0.0, None, key, sms, **_vkw(v))
                o.data.memset_async(0xFF, o.nbytes)
                L.launch(key, la, packed)
                cp.cuda.Device().synchronize()
                err = _rel_err_dev(cp, o, d["ref"])
                row["rel_err"] = err
                if not _within(err, TOL[g]):
                    row["error"] = f"wrong result: rel err {err:.2e} > {TOL[g]}"
                else:
                    t = _graph_time(lambda la=la, packed=packed: L.launch(key, la, packed), cp)
                    row["us"] = None if t is None else t * 1e6
                    if t is not None:
                        row["tflops"] = fl / t / 1e12
                        row["x_best"] = None if best_t is None else best_t / t
                        row["x_heur"] = None if best_ref is None else best_ref / t
                        bv = best_variant.setdefault(key, {})
                        if shape not in bv or t < bv[shape][0]:
                            bv[shape] = (t, v)
            except Exception as err:  # noqa: BLE001 - reported, the sweep goes on
                row["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            rep.data["rows"].append(row)
            rep.save()
            if row.get("us"):
                print(f"{g:4} {m:5}x{k:5}x{n:5} {row['family']:8} {row['variant']:8}{'*' if row['default'] else ' '} "
                      f"{row['us']:9.1f} us {row['tflops']:6.1f} TF/s  x{row.get('x_best') or 0:5.3f} vs best"
                      f"  x{row.get('x_heur') or 0:5.3f} vs heur  err {row['rel_err']:.1e}", flush=True)
            else:
                print(f"{g:4} {m:5}x{k:5}x{n:5} {row['family']:8} {row['variant']}  FAILED: {row.get('error')}",
                      flush=True)

    # checks, one subprocess per instance (a fault or a hang loses that subprocess only)
    def check(key):
        rc, so, se = _sub(["--check-one", key], min(args.check_timeout, max(5.0, left() - 20)))
        r = _last_json(so) or {"key": key, "ok": False}
        if rc != 0:
            r["ok"] = False
            r["error"] = "timeout (hang?)" if rc is None else (se.strip().splitlines() or ["?"])[-1][:400]
            r["log_tail"] = se[-3000:]
        return key, r

    def run_checks(keys) -> set:
        with ThreadPoolExecutor(4) as ex:
            for key, r in ex.map(check, keys):
                rep.data["checks"][key] = r
                print(f"   check {key}: {'ok' if r.get('ok') else 'FAILED'} small {_fmt(r.get('small'))} "
                      f"alpha/beta {_fmt(r.get('alpha_beta'))} {BIG_CHECK}^3 {_fmt(r.get('big'))} worst variant "
                      f"{_fmt(max(r.get('variants', {}).values(), default=None))} regs {r.get('regs')} local "
                      f"{r.get('local_bytes')} B{'' if r.get('ok') else ' ' + str(r.get('error', ''))}", flush=True)
        rep.save()
        return {k for k in keys if rep.data["checks"].get(k, {}).get("ok")}

    # 2a. the incumbents (shipped: no build) checked, then timed with cuBLAS while the candidates compile
    inc_ok = run_checks([k for g in groups for k in pl[g]["incumbents"]])
    goal = [(g, s) for g in groups for s in GOAL[g]]
    extra = [(g, s) for g in groups for s in EXTRA[g]]
    for g, s in goal:
        if left() < 20:
            break
        time_cublas(g, s, "before")
        for key in pl[g]["incumbents"]:
            if key in inc_ok:
                time_instance(g, s, key, instance_variants(key), "incumbent")

    # 1b. the builds' results (the built cubins copied to $OUT/cubin/); 2b. the candidates checked
    for f in futures:
        key, info = f.result()
        rep.data["builds"][key] = info
        state = ("cached" if info.get("cached") else f"built in {info.get('seconds', 0):.0f} s") if info["rc"] == 0 \
            else f"FAILED ({info.get('error')})"
        print(f"   build {key}: {state} (done at {info['wall_s']:.0f} s)", flush=True)
        if info["rc"] == 0 and info.get("path"):
            dst = out_dir / "cubin" / f"{L.cubin_key(key)}.cubin"
            dst.parent.mkdir(exist_ok=True)
            shutil.copyfile(info["path"], dst)
    pool.shutdown(wait=True)
    rep.save()
    built = [k for k in cand_keys if args.no_build or rep.data["builds"].get(k, {}).get("rc") == 0]
    good = run_checks(built)

    # 3. the candidates at the goal shapes (every variant), cuBLAS again after them
    for g, s in goal:
        keys = [k for k in pl[g]["candidates"] if k in good]
        if left() < 10:
            rep.data["skipped"].append({"dtype": g, "shape": s, "why": "budget"})
            continue
        if (g, s) not in inputs:
            time_cublas(g, s, "before")
        for key in keys:
            time_instance(g, s, key, instance_variants(key), "candidate")
        time_cublas(g, s, "after")
    # extra shapes: the default variant and the instance's best at the goal shapes
    for g, s in extra:
        if left() < 15:
            rep.data["skipped"].append({"dtype": g, "shape": s, "why": "budget"})
            continue
        time_cublas(g, s, "before")
        for key in [k for k in pl[g]["incumbents"] if k in inc_ok] + [k for k in pl[g]["candidates"] if k in good]:
            vs = [default_variant(key, s[0], s[2], sms)]
            for t_v in best_variant.get(key, {}).values():
                if t_v[1] not in vs:
                    vs.append(t_v[1])
            time_instance(g, s, key, vs, "candidate" if L.is_candidate(key) else "incumbent")
        time_cublas(g, s, "after")

    # summary
    print("\n== summary: per shape, cuBLASLt (fastest of nn/tn x heuristic/tuned; heuristic nn), the fastest "
          "variant of each instance; x = cuBLAS time / ours", flush=True)
    for g, s in goal + extra:
        if (g, s) not in inputs:
            continue
        m, k, n = s
        best_t, heur = refs(g, s)
        if best_t is None:
            continue
        fl = 2 * m * n * k
        print(f"{g:4} {m}x{k}x{n}: cuBLAS best {best_t * 1e6:.1f} us ({fl / best_t / 1e12:.0f} TF/s), heuristic nn "
              f"{'-' if heur is None else f'{heur * 1e6:.1f} us'}", flush=True)
        per = {}
        for r in rep.data["rows"]:
            if (r["dtype"], r["m"], r["k"], r["n"]) == (g, m, k, n) and r.get("us") and (
                    r["key"] not in per or r["us"] < per[r["key"]]["us"]):
                per[r["key"]] = r
        dflt = {r["key"]: r for r in rep.data["rows"] if (r["dtype"], r["m"], r["k"], r["n"]) == (g, m, k, n)
                and r.get("us") and r["default"]}
        # ratios against the final cuBLAS figures (the faster of before and after)
        for key, r in sorted(per.items(), key=lambda kv: kv[1]["us"]):
            d = dflt.get(key)
            xb = best_t * 1e6 / r["us"]
            xh = None if heur is None else heur * 1e6 / r["us"]
            xd = None if d is None else best_t * 1e6 / d["us"]
            line = {"dtype": g, "m": m, "k": k, "n": n, "key": key, "tag": r["tag"], "best_variant": r["variant"],
                    "us": r["us"], "tflops": r["tflops"], "x_best": xb, "x_heur": xh,
                    "cublas_best_us": best_t * 1e6, "cublas_heur_nn_us": None if heur is None else heur * 1e6,
                    "default_variant": None if d is None else d["variant"],
                    "default_us": None if d is None else d["us"], "default_x_best": xd}
            rep.data["summary"].append(line)
            print(f"   {r['family']:8} {r['tag']:9} best {r['variant']} {r['us']:9.1f} us {r['tflops']:6.1f} TF/s "
                  f"x{xb:5.3f} vs best" + ("" if xh is None else f" x{xh:5.3f} vs heur")
                  + ("" if d is None else f" | default {d['variant']} x{xd:5.3f}"), flush=True)
    rep.data["meta"]["gpu_state_end"] = _gpu_state()
    rep.data["meta"]["wall_s"] = round(time.monotonic() - T0, 1)
    rep.save()
    print(f"== done in {time.monotonic() - T0:.0f} s; GPU {rep.data['meta']['gpu_state_end']}; "
          f"{len(rep.data['skipped'])} skipped for the budget; JSON {rep.path}", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default=",".join(GROUPS), help="comma-separated: tf32, f16, bf16")
    ap.add_argument("--keys", default=None, help="comma-separated registry keys: only these")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds for the whole run (default 240)")
    ap.add_argument("--jobs", type=int, default=12, help="parallel nvcc builds (default 12)")
    ap.add_argument("--build-timeout", type=float, default=200.0)
    ap.add_argument("--check-timeout", type=float, default=60.0)
    ap.add_argument("--no-build", action="store_true", help="take the candidates' cubins from the cache as they are")
    ap.add_argument("--shapes", default=None,
                    help="MxKxN,...: time these (every variant) in place of the goal and extra shapes")
    ap.add_argument("--incumbents", default=None,
                    help="comma-separated families (shipped instances) timed beside the candidates, in place of "
                         "the default ones")
    ap.add_argument("--plan", action="store_true", help="print the plan (no GPU) and exit")
    ap.add_argument("--build-one", metavar="KEY", help=argparse.SUPPRESS)
    ap.add_argument("--check-one", metavar="KEY", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build_one:
        return build_one(args.build_one)
    if args.check_one:
        return check_one(args.check_one)
    groups = [g for g in args.groups.split(",") if g]
    bad = set(groups) - set(GROUPS)
    if bad:
        ap.error(f"unknown groups {sorted(bad)}")
    if args.shapes:
        try:
            shapes = [tuple(int(v) for v in t.split("x")) for t in args.shapes.split(",") if t]
        except ValueError:
            shapes = []
        if not shapes or any(len(t) != 3 or min(t) <= 0 for t in shapes):
            ap.error(f"--shapes takes MxKxN,... (positive integers), got {args.shapes!r}")
        for g in groups:
            GOAL[g], EXTRA[g] = shapes, []
    if args.incumbents:
        for g in groups:
            INCUMBENTS[g] = tuple(f for f in args.incumbents.split(",") if f)
    if args.plan:
        pl = plan(groups, set(args.keys.split(",")) if args.keys else None)
        for g in groups:
            print(f"{g}: candidates {pl[g]['candidates']}")
            print(f"{g}: incumbents {pl[g]['incumbents']}")
            print(f"{g}: goal shapes (M, K, N) {GOAL[g]} x variants {[vname(v) for v in VARIANTS]}; "
                  f"extra {EXTRA[g]}")
            sk = [k for k in pl[g]["candidates"] + pl[g]["incumbents"] if instance_variants(k) is SK_VARIANTS]
            if sk:
                print(f"{g}: stream-K {sk}: variants {[vname(v) for v in SK_VARIANTS]} (splits clamped to the "
                      "k-blocks per tile)")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
