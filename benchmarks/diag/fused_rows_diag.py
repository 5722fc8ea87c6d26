"""Fused bias+activation for 512 < M <= 2048 rows, GPU-only (CUDA graphs of 20 calls, 5 interleaved rounds, the
median): the SM90 instances fr96_<epi> (128x96 tiles), fr192_<epi> (128x192) and ppt_<epi> (128x128 ping-pong) for
bias_gelu and bias_gelu_tanh, beside the bare cuBLAS GEMM and cuBLASLt's bias+gelu_tanh epilogue; each instance's
output compared bit for bit with fr96's (the same k order). What gemm._few_rows_family and TANH_PPT_MIN_M rest on.
Candidates without a cubin (shipped or in the cache) are left out.

Run on a CUDA GPU: ``python -m benchmarks.diag.fused_rows_diag`` (prints the table; JSON into $OUT or /tmp).
"""
import json
import os
import statistics

import cupy as cp
import ml_dtypes
import numpy as np

from benchmarks.gemm_bench import _graph_time
from gpk_array._kernels import blas
from gpk_array._kernels.cutlass import launch_sm90 as L

OUT = os.environ.get("OUT", "/tmp")
DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
rng = np.random.default_rng(0)
rows = []
for dt in ("f16", "bf16"):
    for m, k, n in [(640, 768, 3072), (768, 768, 3072), (1024, 768, 3072), (1536, 768, 3072), (2048, 768, 3072),
                    (1024, 768, 2304), (1024, 3072, 768)]:
        x = cp.asarray(rng.uniform(-1, 1, (m, k)).astype(DT[dt]))
        w = cp.asarray((rng.uniform(-1, 1, (n, k)) * 0.05).astype(DT[dt]))
        b = cp.asarray(rng.uniform(-1, 1, (n,)).astype(DT[dt]))
        cands = {"cublas": lambda x=x, w=w: blas.matmul(x, w.T),
                 "lt_gelu_tanh": lambda x=x, w=w, b=b: blas.linear(x, w, b, "gelu_tanh")}
        outs = {}
        for epi in ("bias_gelu", "bias_gelu_tanh"):
            for fam in ("fr96", "fr192", "ppt"):
                key = f"gemm/{dt}/tn/{fam}_{epi}/sm90"
                if not (L.shipped_path(key).is_file() or L.cubin_path(key).is_file()):
                    continue
                o = cp.empty((m, n), x.dtype)
                if not L.gemm_into(key, x, w, o, bias=b):
                    continue
                cp.cuda.Device().synchronize()
                outs[f"{fam}_{epi}"] = o
                cands[f"{fam}_{epi}"] = (lambda key=key, o=o, x=x, w=w, b=b: L.gemm_into(key, x, w, o, bias=b))
        def _ref(c):
            return c.replace("fr192", "fr96").replace("ppt", "fr96")

        same = {c: bool(cp.array_equal(o.view(cp.uint16), outs[_ref(c)].view(cp.uint16)))
                for c, o in outs.items() if _ref(c) in outs}
        times = {c: [] for c in cands}
        for r in range(5):
            for c, fn in cands.items():
                t = _graph_time(fn, cp, calls=20, reps=3)
                if t is not None:
                    times[c].append(t * 1e6)
        med = {c: statistics.median(v) for c, v in times.items() if v}
        base = med["cublas"]
        print(f"{dt} {m}x{k}->{n}: " + "  ".join(f"{c} {v:6.2f} ({v / base:4.2f})" for c, v in med.items()), flush=True)
        print("   bitwise equal to fr96's:", same, flush=True)
        rows.append({"dtype": dt, "m": m, "k": k, "n": n, "median_us": med, "rounds_us": times,
                     "bitwise_equal_fr96": same})
with open(f"{OUT}/fused_rows_diag.json", "w") as fh:
    json.dump(rows, fh, indent=1)
