"""Host time per call of the GEMM selection functions: the rules as code wrote them before the registry
(tests/workbench/_legacy_rules.py) against the registry's compiled lookups (gpk_array._kernels.gemm), interleaved
rounds, best of each. Run from the repository root: python scripts/registry_select_timeit.py"""
import timeit
import sys
import numpy as np
sys.path.insert(0, ".")
from gpk_array._kernels import gemm as new
from tests.workbench import _legacy_rules as old
f16 = np.dtype("float16")
f32 = np.dtype("float32")
cases = {
 "select_sm90 f16 nn 8192x3072x768": lambda g: (lambda: g.select_sm90(f16, "nn", 8192, 3072, 768)),
 "select_sm90 f16 nn 512^3 (None)": lambda g: (lambda: g.select_sm90(f16, "nn", 512, 512, 512)),
 "select_sm90 tf32 tn 2048^3": lambda g: (lambda: g.select_sm90(f32, "tn", 2048, 2048, 2048, tf32=True)),
 "select_sm90_fused f16 512x3072x768 gelu": lambda g: (lambda: g.select_sm90_fused(f16, 512, 3072, 768, "gelu")),
 "select_sm90_fused f16 8192x3072x768 gelu_tanh":
     lambda g: (lambda: g.select_sm90_fused(f16, 8192, 3072, 768, "gelu_tanh")),
 "select_sm90_fused f16 512x3072x768 None": lambda g: (lambda: g.select_sm90_fused(f16, 512, 3072, 768, None)),
 "sm90_may_take 8192x3072 f16": lambda g: (lambda: g.sm90_may_take(8192, 3072, 2)),
 "sm90_fused_may_take 512x3072 f16 gelu": lambda g: (lambda: g.sm90_fused_may_take(512, 3072, 2, "gelu")),
}
print(f"{'call':48s} {'in code':>9s} {'registry':>9s}  ns per call, best of 15 interleaved rounds")
for name, mk in cases.items():
    fo, fn = mk(old), mk(new)
    n = 100000
    bo = bn = 1e9
    for _ in range(15):
        bo = min(bo, timeit.timeit(fo, number=n) / n)
        bn = min(bn, timeit.timeit(fn, number=n) / n)
    print(f"{name:48s} {bo*1e9:9.1f} {bn*1e9:9.1f}")
