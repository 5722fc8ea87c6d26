"""linear(x, w, b, gelu|silu) on float16: the fused ppt_bias_<act> kernel (the namespace's FUSED_ALWAYS) against the
unfused path (FUSED_ALWAYS emptied: cuBLASLt GEMM + separate bias/activation passes), GPU-only (CUDA graphs).

Run on a CUDA GPU: ``python -m benchmarks.diag.fused_rule_diag`` (prints the table; JSON into $OUT or the current
directory).
"""
import json
import os
import numpy as np
import cupy as cp
import gpk_array as gp
from gpk_array._kernels import gemm as G
from benchmarks.gemm_bench import _graph_time

shapes = [(128, 3072, 768), (512, 3072, 768), (1024, 3072, 768), (2048, 3072, 768), (4096, 3072, 768),
          (128, 768, 3072), (512, 768, 3072), (2048, 768, 3072), (512, 768, 768), (2048, 768, 768),
          (512, 4096, 4096), (256, 4096, 11008), (256, 11008, 4096), (2048, 11008, 4096)]
rng = np.random.default_rng(0)
keep = G.FUSED_ALWAYS
rows = []
print(f"{'M':>5} {'K':>6} {'N':>6} {'tiles':>5} {'act':5} {'fused us':>9} {'unfused us':>10} {'fused/unfused':>13}")
for m, k, n in shapes:
    x = gp.asarray(rng.uniform(-1, 1, (m, k)).astype(np.float16), device="cuda:0")
    w = gp.asarray((rng.uniform(-1, 1, (n, k)) / np.sqrt(k)).astype(np.float16), device="cuda:0")
    b = gp.asarray(rng.uniform(-1, 1, (n,)).astype(np.float16), device="cuda:0")
    tiles = -(-m // 128) * -(-n // 128)
    for act in ("gelu", "silu"):
        res = {}
        for mode in ("fused", "unfused"):
            G.FUSED_ALWAYS = keep if mode == "fused" else ()
            y = gp.linear(x, w, b, activation=act)
            res[mode + "_out"] = np.asarray(y.to_device("cpu")).astype(np.float64)
            t = _graph_time(lambda: gp.linear(x, w, b, activation=act), cp)
            res[mode] = float("nan") if t is None else t * 1e6
        G.FUSED_ALWAYS = keep
        diff = float(np.max(np.abs(res["fused_out"] - res["unfused_out"])))
        r = {"m": m, "k": k, "n": n, "tiles": tiles, "act": act, "fused_us": res["fused"], "unfused_us": res["unfused"],
             "ratio": res["fused"] / res["unfused"], "max_abs_diff": diff}
        rows.append(r)
        print(f"{m:5} {k:6} {n:6} {tiles:5} {act:5} {res['fused']:9.2f} {res['unfused']:10.2f} {r['ratio']:13.3f}  "
              f"(max |diff| {diff:.1e})", flush=True)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "fused_rule.json"), "w"), indent=1)
