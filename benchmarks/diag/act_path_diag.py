"""linear(x, w, b, gelu|silu) off the fused kernels: cuBLASLt bias GEMM + our activation kernel (new) against the
plain code (widening copy, bias pass, activation passes), float16 with the fused kernels off and float32; and
gelu(x) alone: our kernel against the plain code. GPU-only (CUDA graphs).

Run on a CUDA GPU: ``python -m benchmarks.diag.act_path_diag`` (prints the table; JSON into $OUT or the current
directory).
"""
import json
import os
import numpy as np
import cupy as cp
import gpk_array as gp
from gpk_array import _gpu
from gpk_array._kernels import gemm as G
from benchmarks.gemm_bench import _graph_time

def t(fn):
    v = _graph_time(fn, cp)
    return float("nan") if v is None else v * 1e6

rng = np.random.default_rng(0)
rows = []
keep_fa, keep_su = G.FUSED_ALWAYS, _gpu._ew.supports_unary
print(f"{'dtype':8} {'M':>5} {'K':>5} {'N':>5} {'act':5} {'new us':>8} {'plain us':>9} {'plain/new':>9} "
      f"{'max|new-plain|':>15}")
for dt in ("float16", "float32"):
    for m, k, n in [(512, 768, 3072), (2048, 768, 3072), (512, 3072, 768), (8192, 768, 3072)]:
        x = gp.asarray(rng.uniform(-1, 1, (m, k)).astype(dt), device="cuda:0")
        w = gp.asarray((rng.uniform(-1, 1, (n, k)) / np.sqrt(k)).astype(dt), device="cuda:0")
        b = gp.asarray(rng.uniform(-1, 1, (n,)).astype(dt), device="cuda:0")
        for act in ("gelu", "silu"):
            G.FUSED_ALWAYS = ()
            try:
                ynew = np.asarray(gp.linear(x, w, b, activation=act).to_device("cpu")).astype(np.float64)
                tn = t(lambda: gp.linear(x, w, b, activation=act))
                _gpu._ew.supports_unary = lambda *a: False
                yold = np.asarray(gp.linear(x, w, b, activation=act).to_device("cpu")).astype(np.float64)
                to = t(lambda: gp.linear(x, w, b, activation=act))
            finally:
                G.FUSED_ALWAYS, _gpu._ew.supports_unary = keep_fa, keep_su
            d = float(np.max(np.abs(ynew - yold)))
            rows.append({"op": "linear", "dtype": dt, "m": m, "k": k, "n": n, "act": act, "new_us": tn, "plain_us": to,
                         "max_abs_diff": d})
            print(f"{dt:8} {m:5} {k:5} {n:5} {act:5} {tn:8.2f} {to:9.2f} {to / tn:9.2f} {d:15.2e}", flush=True)
for dt in ("float16", "float32"):
    for size in (1 << 16, 1 << 20, 1 << 24):
        x = gp.asarray(rng.uniform(-4, 4, size).astype(dt), device="cuda:0")
        for appr in ("none", "tanh"):
            ynew = np.asarray(gp.gelu(x, approximate=appr).to_device("cpu")).astype(np.float64)
            tn = t(lambda: gp.gelu(x, approximate=appr))
            g = _gpu.gelu
            del _gpu.gelu
            try:
                yold = np.asarray(gp.gelu(x, approximate=appr).to_device("cpu")).astype(np.float64)
                to = t(lambda: gp.gelu(x, approximate=appr))
            finally:
                _gpu.gelu = g
            d = float(np.max(np.abs(ynew - yold)))
            rows.append({"op": "gelu", "dtype": dt, "size": size, "approximate": appr, "new_us": tn, "plain_us": to,
                         "max_abs_diff": d})
            print(f"gelu {dt:8} n={size:9} {appr:5} new {tn:8.2f} us plain {to:8.2f} us  x{to / tn:5.2f}  "
                  f"max diff {d:.2e}", flush=True)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "act_path.json"), "w"), indent=1)
