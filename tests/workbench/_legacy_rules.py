"""The dispatch rules as gpk_array/_kernels/gemm.py and gpk_array/_gpu.py wrote them in code before the registry
(commit 53dfbf9), copied verbatim: the oracle the registry's compiled lookups are compared with
(tests/workbench/test_decisions_unchanged.py). Not imported by the library."""

from gpk_array._kernels.gemm import _code, _TF32_CODES, dtype_name

_tf32_memo: dict = {}


class _VersionedDict(dict):
    pass


SM90_LAYOUTS = ("nn", "tn")
SM90_MIN_M = 4096       # float16/bfloat16: every family of the shape rule needs M >= this
TF32_MIN_TILES = 64     # TF32: half a wave of 128x128 tiles


def sm90_may_take(m: int, n: int, itemsize: int, min_m: int = SM90_MIN_M) -> bool:
    """A necessary condition of ``sm90_family`` (not forced, the 16-bit row floor ``min_m``) from M, N and the
    element size alone, cheap enough to keep the checks of the SM90 path off every small GEMM's host time."""
    if itemsize == 2:
        return m >= min_m
    return -(-m // 128) * -(-n // 128) >= TF32_MIN_TILES


def sm90_fused_may_take(m: int, n: int, itemsize: int, activation) -> bool:
    """``sm90_may_take`` for ``select_sm90_fused`` (not forced): gelu and silu on every covered problem, else the
    plain rule's condition with the activation's row floor (``_fused_min_m``)."""
    return activation in FUSED_ALWAYS or sm90_may_take(m, n, itemsize, _fused_min_m(activation))


def _fused_min_m(activation) -> int:
    """The ppt rule's row floor for a fused linear: lower for gelu_tanh (TANH_PPT_MIN_M), whose alternative is
    cuBLASLt's slower GELU epilogue rather than its bare GEMM."""
    return TANH_PPT_MIN_M if activation == "gelu_tanh" else SM90_MIN_M


def sm90_family(m: int, n: int, k: int, forced: bool = False, dt: str = "f16", layout: str = "nn",
                min_m: int = SM90_MIN_M) -> str | None:
    """The SM90 family for an (M, N, K) problem of dtype code ``dt`` ("f16", "bf16", "tf32") in ``layout``, or
    None where cuBLAS is faster (see the module docstring). ``min_m``: the 16-bit ppt rule's row floor."""
    if dt == "tf32":
        # TF32: only "tn" (the "nn" instances run B through registers: 0.55-0.94x); ppt from half a wave of
        # 128x128 tiles up to 2^35 multiply-adds (2048^3: 1.15x, GPT-2 MLP at 1024/8192 rows: 1.09-1.25x;
        # 4096^3: 0.95x, 8192^3: 0.91x; session 6's sweep: the best TF32 candidate, xl, 0.93x / 0.97x)
        if layout != "tn":
            return None
        if forced or (-(-m // 128) * -(-n // 128) >= TF32_MIN_TILES and m * n * k < 1 << 35):
            return "ppt"
        return None
    if forced:
        return "coopt" if m >= 4096 and n >= 4096 else "ppt"
    if m >= min_m and n >= 2048 and k <= 1024:
        return "ppt"
    return None


def select_sm90(dtype, layout: str, m: int, n: int, k: int, forced: bool = False, tf32: bool = False) -> str | None:
    """The registry key of the SM90 instance for the problem (D (m, n) = A (m, k) @ B in ``layout``), or None.
    float32 only with ``tf32`` (the caller's precision setting allows TF32)."""
    dt = dtype_name(dtype)
    if dt is None and tf32:
        dt = _code(dtype, _TF32_CODES, _tf32_memo)
    if dt is None or layout not in SM90_LAYOUTS or min(m, n, k) <= 0:
        return None
    fam = sm90_family(m, n, k, forced, dt, layout)
    return None if fam is None else f"gemm/{dt}/{layout}/{fam}/sm90"


# Fused bias/activation (linear): the ppt instances with an epilogue visitor tree (launch_sm90.fused_key).
# GPU-only against cuBLASLt's bias(+relu/gelu_tanh) epilogue (benchmarks/results/h200_2026-11-30_s5_diag_epi_*):
# ahead where the plain ppt rule holds (4096x768->3072: 1.01x the bare GEMM against cuBLASLt's 1.17x), behind on
# small problems (our ~8 us floor). gelu (erf) and silu have no cuBLASLt epilogue: the fused kernel replaces a
# GEMM plus separate elementwise passes for every covered problem (with CUTLASS's erff GELU / expf-and-division SiLU
# the epilogue cost 1.2-1.7x / 1.2-2.2x the bare GEMM at M = 8192, less than the separate passes over the output;
# since then gelu/silu use cutlass/gpk_epilogue.h's functors, 11 / 6 SASS instructions per element instead of ~25:
# python -m benchmarks.epilogue_bench measures them). What is left is energy, not issue slots: in a sustained loop
# these kernels run at the H200's power limit (about 690 W), so an activation's ALU work lowers the clock-for-clock
# tensor throughput (f16 8192x768->3072: bias 68.3 us, gelu_tanh 73.7, silu 76.0, gelu 80.1; `epilogue_bench
# --power`, benchmarks/results/h200_2026-11-30_s7_epilogue_power_6556e88.*). Under ncu (s10, 8192x768->3072 f16,
# benchmarks/results/h200_2026-12-01_s10_ncu_*) the gelu instance issues 8.65M more instructions than bias alone and
# takes 20.3k more cycles per SM (1.24 per extra instruction per scheduler) at the same clock, with 4.7x the dispatch
# stalls and 2x the warpgroup_arrive stalls: one warpgroup's epilogue FP32 work slows the other's wgmma instead of
# hiding under it, so each instruction per element costs about 0.7-0.9 us there. ppt's 128x128 tiles leave few-row
# problems short of a wave (512x768->3072: 96 tiles) with one consumer warpgroup
# per tile; fr96 (cooperative 128x96x64, 1x2x1, both warpgroups on each tile, 128 tiles there) carries gelu and silu
# up to FEW_ROWS_MAX rows. GPU-only, 20 calls in a CUDA graph (s8, benchmarks/results/
# h200_2026-11-30_s8_diag_pdl_be63a72.*), f16 x768->3072 bias+gelu: 256 rows 7.34 us (ppt 9.48), 512 rows 8.08
# (9.76), 1024 rows 13.70 (13.95); bf16 alike; before PDL on both. silu: the same mainloop, a cheaper functor.
# fr192 (cooperative 128x192x64, 2x1x1) takes over where its waves of twice-as-large tiles cost no more than fr96's
# (_few_rows_family): s10, benchmarks/results/h200_2026-12-01_s10_diag_fr192_* (python -m
# benchmarks.diag.fused_rows_diag),
# GPU-only bias+gelu against the bare cuBLAS GEMM, f16 (bf16 alike): 640 rows x768->3072 1.48x (fr96 1.65), 768 rows
# 1.33 (1.52), 1024 rows 1.22 (1.37),
# 1024x768->2304 1.31 (1.48); where its waves cost more, fr96 stays ahead (1536 rows 1.53 against 1.45, 1024x3072->768
# 2.80 against 1.55). Bit-identical results (the same k order). silu assumed alike (not timed).
# The fused ppt instances stage their output in 64x128 subtiles (scripts/gen_cutlass.py epi_tile), which made
# gelu_tanh at 2048 rows 1.01x the bare cuBLAS GEMM against cuBLASLt's epilogue 1.16-1.21x (f16, bf16,
# 2048x768->3072; 1536 rows: 1.31x against 1.28x): gelu_tanh takes ppt from TANH_PPT_MIN_M rows.
FUSED_ALWAYS = ("gelu", "silu")
FEW_ROWS_MAX = 1024
FEW_ROWS_FUSED = ("gelu", "silu")   # the activations with shipped fr96 and fr192 instances
WAVE_SMS = 132   # multiprocessors of the H200 (and H100 SXM) the few-row tile choice counts waves of (a constant: the
                 # rule is tuned on the H200; an H100 PCIe's 114 would shift only the ties)
TANH_PPT_MIN_M = 2048


def _few_rows_family(m: int, n: int) -> str:
    """fr96 (128x96 tiles) or fr192 (128x192): the fewer waves of WAVE_SMS tiles times the tile's area, ties to
    fr192 (512x3072: one wave of 128 fr96 tiles against one of 64 twice as large: fr96; 1024x3072: two against
    one: fr192). Tiles as CUTLASS schedules them: whole clusters, so fr96 (1x2x1) runs an even number of column
    tiles and fr192 (2x1x1) an even number of row tiles (128 rows x 16384: 2 x 86 fr96 tiles against 2 x 86 of
    fr192, one wave against two: fr96)."""
    rows = -(-m // 128)
    waves96 = -(-(rows * _even(-(-n // 96))) // WAVE_SMS)
    waves192 = -(-(_even(rows) * -(-n // 192)) // WAVE_SMS)
    return "fr192" if 2 * waves192 <= waves96 else "fr96"


def _even(v: int) -> int:
    return v + (v & 1)


def select_sm90_fused(dtype, m: int, n: int, k: int, activation, forced: bool = False) -> str | None:
    """The fused-epilogue instance for activation(x (m, k) @ w.T + bias), or None (cuBLASLt's epilogue, else
    GEMM then elementwise)."""
    dt = dtype_name(dtype)
    if dt is None or min(m, n, k) <= 0 or activation not in (None, "gelu", "gelu_tanh", "relu", "silu"):
        return None
    if not (forced or activation in FUSED_ALWAYS
            or sm90_family(m, n, k, False, dt, "tn", _fused_min_m(activation)) == "ppt"):
        return None
    epi = "bias" if activation is None else f"bias_{activation}"
    fam = _few_rows_family(m, n) if activation in FEW_ROWS_FUSED and m <= FEW_ROWS_MAX else "ppt"
    return f"gemm/{dt}/tn/{fam}_{epi}/sm90"


REDUCE_F32_FULL_MIN = 1 << 28  # float32 sum over all elements (max/min: 2^24)
REDUCE_F32_AXIS_MIN = 1 << 24  # float32 sum/max/min over rows or columns
REDUCE_ROUTE = _VersionedDict({
    ("*", "var", "*"): 0,
    ("*", "std", "*"): 0,
    ("f16", "*", "*"): 0,
    ("bf16", "*", "*"): 0,
    ("f32", "mean", "*"): 0,
    ("f32", "*", "full"): REDUCE_F32_FULL_MIN,
    ("f32", "*", "rows"): REDUCE_F32_AXIS_MIN,
    ("f32", "*", "cols"): REDUCE_F32_AXIS_MIN,
    ("f32", "prod", "*"): None,
    ("f64", "mean", "full"): 0,    # 1.4-1.5x to 2^22, 0.97x at 2^24
    ("f64", "mean", "rows"): 0,
    ("f64", "mean", "cols"): 1 << 24,
    ("f64", "sum", "rows"): 1 << 24,
    ("f64", "sum", "cols"): 1 << 24,
    ("int", "sum", "full"): 0,
    ("int", "sum", "rows"): 0,
    ("int", "sum", "cols"): 1 << 24,
})
# max/min and argmax/argmin share their entries: each the larger of the two ops' measured sizes (None where either
# stayed short of CuPy's path at 2^24): their near-parity ratios flip from run to run by about 10%.
for _op in ("max", "min"):
    REDUCE_ROUTE.update({
        ("f16", _op, "full"): 1 << 28, ("f16", _op, "*"): None,  # 2^28: max 1.40x (`benchmarks reduction`)
        ("bf16", _op, "rows"): 1 << 20, ("bf16", _op, "cols"): None,
        ("f32", _op, "full"): 1 << 24,
        ("f64", _op, "rows"): 1 << 24, ("f64", _op, "cols"): 1 << 24,
        ("int", _op, "rows"): 1 << 24,
    })
for _op in ("argmax", "argmin"):
    REDUCE_ROUTE.update({
        ("f16", _op, "full"): 0, ("f16", _op, "rows"): 1 << 22, ("f16", _op, "cols"): None,
        ("bf16", _op, "full"): 1 << 18, ("bf16", _op, "rows"): 1 << 22, ("bf16", _op, "cols"): None,
        ("f32", _op, "full"): 0, ("f32", _op, "rows"): 1 << 22, ("f32", _op, "cols"): 1 << 24,
        ("f64", _op, "full"): 0, ("f64", _op, "rows"): 1 << 22, ("f64", _op, "cols"): None,  # full: parity at 2^24
        ("int", _op, "full"): 0, ("int", _op, "rows"): 1 << 22, ("int", _op, "cols"): None,
    })

OWN_KERNELS_MIN = 1 << 22
