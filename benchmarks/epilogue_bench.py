"""GPU-only times of the fused bias/activation SM90 instances (CUDA graphs): linear(x, w, bias, activation) against
the bare GEMM, and the activation functors' own cost per element.

    python -m benchmarks.epilogue_bench [--json OUT] [--shapes 8192x768x3072,512x768x3072] [--dtypes f16,bf16]
                                        [--no-functors] [--power]

Table 1, per dtype and shape (M x K -> N): each fused instance gemm/<dtype>/tn/ppt_bias[_<act>]/sm90
(D = act(x @ w.T + b), launch_sm90.gemm_into), the bare ppt instance (gemm/<dtype>/tn/ppt/sm90, same mainloop,
no bias) and cuBLASLt's bare GEMM (blas.matmul(x, w.T), its algorithms timed on the first call), all recorded as
20 calls in a CUDA graph, the fastest of 5 replays (benchmarks.gemm_bench._graph_time): microseconds per call and
the ratios fused / bare cuBLASLt (the issue's target: <= 1.05 for bias + GELU) and fused / bare ppt (what the
epilogue costs on top of the same mainloop).

Table 2 (unless --no-functors): each activation functor alone, throughput on the GPU: a kernel of 132 x 8 blocks of
256 threads, each thread holding 16 float32 values and applying the functor to them 512 times in a loop (with a
FADDs per element and step, so nothing is hoisted): GPU picoseconds per element-application (the whole GPU's
throughput), minus the same loop with the identity, and that divided by gelu_tanh's (CUTLASS's tanh.approx GELU,
whose fused instance runs at about 1.05 x the bare GEMM). Ours from
gpk_array/_kernels/cutlass/gpk_epilogue.h (gpk::epilogue::Gelu, Silu); CUTLASS's GELU (erff), GELU_taylor and
SiLu (expf and an IEEE division) from the nvidia-cutlass headers, compiled by the loader (NVRTC or nvcc); a
functor that does not compile is left out with the compiler's message.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

KDIR = Path(__file__).resolve().parents[1] / "gpk_array" / "_kernels" / "cutlass"
ACTS = (None, "relu", "gelu_tanh", "gelu", "silu")

_FUNCTOR_SRC = r"""
#include "cutlass/cutlass.h"
#include "cutlass/array.h"
#include "cutlass/epilogue/thread/activation.h"
#include "gpk_epilogue.h"
template <class T> struct Identity { CUTLASS_HOST_DEVICE T operator()(T const& v) const { return v; } };
template <template <class> class F>
__device__ __forceinline__ void loop(float const* x, float* y, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  cutlass::Array<float, 16> v, acc;
  CUTLASS_PRAGMA_UNROLL
  for (int j = 0; j < 16; ++j) { v[j] = x[(i * 16 + j) & 4095]; acc[j] = 0.0f; }
  F<cutlass::Array<float, 16>> f;
  for (int s = 0; s < steps; ++s) {
    cutlass::Array<float, 16> r = f(v);
    CUTLASS_PRAGMA_UNROLL
    for (int j = 0; j < 16; ++j) { acc[j] += r[j]; v[j] += 1e-3f; }
  }
  float t = 0.0f;
  CUTLASS_PRAGMA_UNROLL
  for (int j = 0; j < 16; ++j) t += acc[j];
  y[i] = t;
}
"""
FUNCTORS = {"identity": "Identity", "relu": "cutlass::epilogue::thread::ReLu",
            "gelu_tanh": "cutlass::epilogue::thread::GELU_taylor", "cutlass_gelu": "cutlass::epilogue::thread::GELU",
            "cutlass_silu": "cutlass::epilogue::thread::SiLu", "gelu": "gpk::epilogue::Gelu",
            "silu": "gpk::epilogue::Silu"}


def fused_table(cp, shapes, dtypes, rows):
    import ml_dtypes

    from benchmarks.gemm_bench import _graph_time
    from gpk_array._kernels import blas
    from gpk_array._kernels.cutlass import launch_sm90 as L
    dt_np = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
    rng = np.random.default_rng(0)
    print("fused linear, GPU-only us per call (CUDA graph): fused ppt_bias_<act> | bare ppt | bare cuBLASLt;"
          " ratios fused / bare cuBLASLt, fused / bare ppt")
    for dt in dtypes:
        for m, k, n in shapes:
            x = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(dt_np[dt]))
            w = cp.asarray((rng.uniform(-1, 1, (n, k)) * 0.05).astype(dt_np[dt]))
            b = cp.asarray(rng.uniform(-1, 1, (n,)).astype(dt_np[dt]))
            o = cp.empty((m, n), x.dtype)
            bare = _graph_time(lambda x=x, w=w: blas.matmul(x, w.T), cp)
            ppt_key = f"gemm/{dt}/tn/ppt/sm90"
            assert L.gemm_into(ppt_key, x, w, o)
            bare_ppt = _graph_time(lambda k=ppt_key, x=x, w=w, o=o: L.gemm_into(k, x, w, o), cp)
            for act in ACTS:
                key = L.fused_key(x.dtype, "ppt", act)
                assert L.gemm_into(key, x, w, o, bias=b)
                t = _graph_time(lambda k=key, x=x, w=w, o=o, b=b: L.gemm_into(k, x, w, o, bias=b), cp)
                rows.append({"table": "fused", "dtype": dt, "m": m, "k": k, "n": n, "act": act or "bias",
                             "fused_us": t * 1e6, "bare_ppt_us": bare_ppt * 1e6, "bare_cublaslt_us": bare * 1e6,
                             "fused_over_cublaslt": t / bare, "fused_over_ppt": t / bare_ppt})
                print(f"{dt:4} {m:5}x{k:4}->{n:4} {act or 'bias':9} fused {t * 1e6:8.2f}  "
                      f"bare-ppt {bare_ppt * 1e6:8.2f}  bare-cuBLASLt {bare * 1e6:8.2f}   "
                      f"fused/cuBLASLt {t / bare:5.3f}  fused/ppt {t / bare_ppt:5.3f}",
                      flush=True)


def functor_table(cp, rows):
    import tempfile

    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass.launch_sm90 import NVRTC_SHIM, cutlass_include_dir
    inc = cutlass_include_dir()
    if inc is None:
        print("functor table: no CUTLASS headers; skipped")
        return
    arch = loader.device_arch()
    mods = {}
    for name, f in FUNCTORS.items():
        src = _FUNCTOR_SRC + ('extern "C" __global__ void k(float const* x, float* y, int s) '
                              f'{{ loop<{f}>(x, y, s); }}\n')
        backend = loader.default_backend()
        if backend == "nvrtc":
            src = NVRTC_SHIM + src      # the two std:: names CUTLASS's headers take from the host library
        try:
            cubin = loader.compile_cubin(src, ("--expt-relaxed-constexpr", "-DNDEBUG"), arch, backend,
                                         name=f"epi_{name}.cu", include_dirs=(str(inc), str(KDIR)))
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"functor {name}: does not compile here ({str(e).splitlines()[0]}); left out")
            continue
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
            fh.write(cubin)
        mods[name] = cp.RawModule(path=fh.name).get_function("k")
    sm = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads, steps = sm * 8, 256, 512
    x = cp.asarray(np.random.default_rng(1).uniform(-6, 6, 4096).astype(np.float32))
    y = cp.empty(blocks * threads, cp.float32)
    elems = blocks * threads * 16 * steps
    times = {}
    for name, fn in mods.items():
        fn((blocks,), (threads,), (x, y, np.int32(steps)))
        cp.cuda.Device().synchronize()
        best = None
        for _ in range(5):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            fn((blocks,), (threads,), (x, y, np.int32(steps)))
            e.record()
            e.synchronize()
            t = cp.cuda.get_elapsed_time(s, e) * 1e-3
            best = t if best is None else min(best, t)
        times[name] = best
    base = times.get("identity", 0.0)
    ref = times.get("gelu_tanh")
    print(f"\nactivation functors alone ({blocks} blocks x {threads} threads x 16 values x {steps} steps): "
          "ps per element-application on the whole GPU, minus identity's; / gelu_tanh's")
    for name, t in times.items():
        net = (t - base) / elems * 1e12
        rel = None if ref is None or ref <= base else (t - base) / (ref - base)
        rows.append({"table": "functor", "functor": name, "functor_type": FUNCTORS[name], "ps_per_elem": net,
                     "over_gelu_tanh": rel})
        print(f"{name:14s} {FUNCTORS[name]:42s} {net:8.3f} ps" + ("" if rel is None else f"   x{rel:5.2f}"))


def power_table(cp, rows, seconds=2.0):
    """Table 3 (--power): f16 8192x768->3072, each variant (bare cuBLASLt, bare ppt, ppt_bias[_<act>]) replayed in
    CUDA graphs of 50 calls for ``seconds`` while nvidia-smi samples the SM clock and the board power every 50 ms
    (the first quarter of the samples dropped): sustained us per call, median clock and power. Shows whether the
    fused kernels run at the board's power limit, where an activation's extra instructions cost time through the
    clock rather than through issue slots."""
    import subprocess
    import time

    from gpk_array._kernels import blas
    from gpk_array._kernels.cutlass import launch_sm90 as L
    m, k, n = 8192, 768, 3072
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float16))
    w = cp.asarray((rng.uniform(-1, 1, (n, k)) * 0.05).astype(np.float16))
    b = cp.asarray(rng.uniform(-1, 1, (n,)).astype(np.float16))
    o = cp.empty((m, n), x.dtype)
    variants = {"cublaslt": lambda: blas.matmul(x, w.T), "ppt": lambda: L.gemm_into("gemm/f16/tn/ppt/sm90", x, w, o)}
    for act in ACTS:
        key = L.fused_key(x.dtype, "ppt", act)
        variants[act or "bias"] = (lambda key=key: L.gemm_into(key, x, w, o, bias=b))
    print(f"\nsustained, f16 {m}x{k}->{n}: us per call, SM clock, board power (nvidia-smi, every 50 ms)")
    for name, fn in variants.items():
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            fn()
            s.synchronize()
            s.begin_capture()
            for _ in range(50):
                fn()
            g = s.end_capture()
        g.launch(s)
        s.synchronize()
        try:
            smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                    "-lms", "50"], stdout=subprocess.PIPE, text=True)
        except OSError as e:
            print(f"power table: nvidia-smi not available ({e}); skipped")
            return
        try:
            t0, reps = time.perf_counter(), 0
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record(s)
            while time.perf_counter() - t0 < seconds:
                for _ in range(20):
                    g.launch(s)
                reps += 20
                s.synchronize()
            e1.record(s)
            e1.synchronize()
            us = cp.cuda.get_elapsed_time(e0, e1) * 1e3 / (reps * 50)
        finally:
            smi.terminate()
        samples = [[float(v) for v in line.split(",")] for line in smi.communicate()[0].splitlines()
                   if line.count(",") == 1]
        samples = np.asarray(samples[len(samples) // 4:])
        clock, power = (float(np.median(samples[:, i])) if len(samples) else float("nan") for i in (0, 1))
        rows.append({"table": "power", "variant": name, "us": us, "sm_clock_mhz": clock, "power_w": power,
                     "samples": len(samples)})
        print(f"{name:10} {us:8.2f} us/call   SM clock {clock:6.0f} MHz   power {power:6.1f} W   "
              f"({len(samples)} samples)", flush=True)
        time.sleep(0.5)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--shapes", default="8192x768x3072,512x768x3072", help="MxKxN,...")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--no-functors", action="store_true")
    ap.add_argument("--power", action="store_true", help="also the sustained clock/power table")
    args = ap.parse_args(argv)
    import cupy as cp
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows: list[dict] = []
    fused_table(cp, shapes, args.dtypes.split(","), rows)
    if not args.no_functors:
        functor_table(cp, rows)
    if args.power:
        power_table(cp, rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
