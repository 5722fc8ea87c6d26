"""GPU-only effect of programmatic dependent launch (PDL) on the SM90 CUTLASS instances (all compiled with CUTLASS's
grid dependency control, launch_sm90._GDC): each instance launched 20 times back to back in a CUDA graph with and
without CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (launch_sm90._packed(la, pdl)), beside cuBLASLt's
time for the same problem (blas.matmul, its algorithms timed on the first call); a chained pair (y = x @ w.T, then
y @ w2.T, both PDL) checked against float64.

    python -m benchmarks.diag.pdl_diag [--json OUT]

Session 8's run, before the flag was on for every instance (the same figures, then measured with separate GDC
cubins): benchmarks/results/h200_2026-11-30_s8_diag_pdl_be63a72.*.
"""
from __future__ import annotations

import argparse
import json
import sys

SHAPES = {(512, 768, 3072): ("fr96", "ppt"), (512, 3072, 768): ("fr64", "ppt"), (1024, 768, 3072): ("fr192", "ppt"),
          (8192, 768, 3072): ("ppt",), (4096, 4096, 4096): ("coopt", "ppt")}


def run(out_json=None):
    import cupy as cp
    import numpy as np
    from gpk_array._kernels import blas, loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    from benchmarks.gemm_bench import _graph_time
    sms = loader.sm_count()
    rows = []
    print(f"{'M x K x N':>18} {'instance':8} {'plain us':>9} {'PDL us':>8} {'cuBLAS us':>10} {'x cuBLAS':>9}")
    for (m, k, n), fams in SHAPES.items():
        x = (cp.random.standard_normal((m, k), dtype=cp.float32) * 0.5).astype(cp.float16)
        w = (cp.random.standard_normal((n, k), dtype=cp.float32) * 0.05).astype(cp.float16)
        out = cp.empty((m, n), cp.float16)
        t_cub = _graph_time(lambda: blas.matmul(x, w.T), cp)
        ref = x.astype(cp.float64) @ w.T.astype(cp.float64)
        for fam in fams:
            key = f"gemm/f16/tn/{fam}/sm90"
            la, _ = L.prepare(x, w, out, 1.0, 0.0, None, key, sms, 1, "along_m")
            plain, pdl = L._packed(la, False), L._packed(la, True)
            t_plain = _graph_time(lambda: L.launch(key, la, plain), cp)
            t_pdl = _graph_time(lambda: L.launch(key, la, pdl), cp)
            out.fill(np.nan)
            L.launch(key, la, pdl)
            L.launch(key, la, pdl)
            err = float(cp.abs(out.astype(cp.float64) - ref).max() / cp.abs(ref).max())
            rows.append({"shape": [m, k, n], "key": key, "plain_us": t_plain * 1e6, "pdl_us": t_pdl * 1e6,
                         "cublas_us": t_cub * 1e6, "err": err})
            print(f"{m:>6}x{k:>5}x{n:>5} {fam:8} {t_plain*1e6:9.2f} {t_pdl*1e6:8.2f} {t_cub*1e6:10.2f} "
                  f"{t_cub/t_pdl:9.3f}  err {err:.1e}", flush=True)
    # chained: the second GEMM reads what the first wrote, both programmatic dependent launches
    x = (cp.random.standard_normal((512, 768), dtype=cp.float32) * 0.5).astype(cp.float16)
    w1 = (cp.random.standard_normal((3072, 768), dtype=cp.float32) * 0.05).astype(cp.float16)
    w2 = (cp.random.standard_normal((768, 3072), dtype=cp.float32) * 0.05).astype(cp.float16)
    y, z = cp.empty((512, 3072), cp.float16), cp.empty((512, 768), cp.float16)
    k1, k2 = "gemm/f16/tn/fr96/sm90", "gemm/f16/tn/fr64/sm90"
    la1, _ = L.prepare(x, w1, y, 1.0, 0.0, None, k1, sms)
    la2, _ = L.prepare(y, w2, z, 1.0, 0.0, None, k2, sms)
    p1, p2 = L._packed(la1, True), L._packed(la2, True)
    worst = 0.0
    for _ in range(5):
        y.fill(np.nan)
        z.fill(np.nan)
        L.launch(k1, la1, p1)
        L.launch(k2, la2, p2)
        r = y.astype(cp.float64) @ w2.T.astype(cp.float64)
        worst = max(worst, float(cp.abs(z.astype(cp.float64) - r).max() / cp.abs(r).max()))
    print(f"chained fr96 -> fr64 with PDL: max relative error {worst:.1e}")
    res = {"rows": rows, "chain_err": worst}
    if out_json:
        with open(out_json, "w") as f:
            json.dump(res, f, indent=1)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    res = run(a.json)
    return 0 if res["chain_err"] < 1e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
