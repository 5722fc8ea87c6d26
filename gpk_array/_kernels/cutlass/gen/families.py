"""The pinned settings and the instance table: what the generator emits (FAMILIES), with the epilogues,
layouts and tile schedulers the families name, and the registry keys and file names derived from them."""
from __future__ import annotations

from pathlib import Path

OUT_DIR = Path(__file__).resolve().parents[1]   # gpk_array/_kernels/cutlass: the emitted files and the manifest
MANIFEST = "MANIFEST.json"

# --------------------------------------------------------------------------------------------------
# Pinned settings
# --------------------------------------------------------------------------------------------------
HASH_SEED = "0"
CUTLASS_VERSION = "4.2.0.0"          # nvidia-cutlass wheel the emitted files came from
NVCC_VERSION_FOR_EMITTER = "13.0"    # set before the emitter asks nvcc (it only gates features)
OPTION_REGISTRY_CC = 90              # target CC of the emitter's option registry (covers 80 and 90)
LAYOUT = "tn"                        # default layout: A row-major (M, K), B column-major (K, N) = W (N, K)
                                     # row-major; a family entry's "layout" overrides it (LAYOUTS below)
COMPILE_FLAGS = ["--expt-relaxed-constexpr", "-DNDEBUG", "-O3", "-std=c++17"]

DTYPES = {"f16": "f16", "bf16": "bf16"}   # registry dtype name -> cutlass_library DataType attribute
# Registry dtypes a family may name in its "dtypes" (default: every one of DTYPES) -> the in-memory element.
# "tf32": A, B, C, D float32 in memory, the wgmma in TF32 (CUTLASS's SM90 builder maps float operands to
# tfloat32_t MMAs; its TMA loads them as TFLOAT32), float32 accumulator and epilogue.
ELEMENTS = {**DTYPES, "tf32": "f32"}

# The bare few-row families (candidates; their fused variants below are derived from them, _few_rows_fused).
_FR96 = {"arch": 90, "family": "fr96", "tile": (128, 96, 64), "stages": 7, "warps": (4, 1, 1),
         "cluster": (1, 2, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
         "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True}
_FR192 = {"arch": 90, "family": "fr192", "tile": (128, 192, 64), "stages": 4, "warps": (4, 1, 1),
          "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
          "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True}
_FEW_ROWS_SHIPPED = ("bias_gelu", "bias_silu")   # gemm.FEW_ROWS_FUSED: the rest stay candidates


def _few_rows_fused(base: dict, epi: str) -> dict:
    """A bare few-row family with the fused epilogue ``epi``: family "<base>_<epi>", the same tile, stages and
    cluster (the fused epilogue has no C), shipped for gelu and silu, a candidate otherwise."""
    fam = {k: v for k, v in base.items() if k != "candidate"}
    fam.update(family=f"{base['family']}_{epi}", epilogue=epi)
    if epi not in _FEW_ROWS_SHIPPED:
        fam["candidate"] = True
    return fam


# One entry per shape family and arch; every dtype in DTYPES is emitted for each.
#   tile: CTA tile (M, N, K); for SM90 the emitter takes the *cluster* tile, i.e. tile * cluster.
#   warps: warp count (M, N, K) of the CTA (SM80: 32 threads each).
FAMILIES = [
    {"arch": 80, "family": "large", "tile": (128, 256, 64), "stages": 3, "warps": (2, 4, 1),
     "cluster": (1, 1, 1), "swizzle": 8, "kernel_schedule": None, "epilogue_schedule": None,
     "align": 8},
    {"arch": 80, "family": "small", "tile": (64, 64, 64), "stages": 5, "warps": (2, 2, 1),
     "cluster": (1, 1, 1), "swizzle": 1, "kernel_schedule": None, "epilogue_schedule": None,
     "align": 8},
    {"arch": 90, "family": "large", "tile": (128, 128, 64), "stages": 4, "warps": (4, 1, 1),
     "cluster": (1, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 8},
    # 128x256x64 CTA tile, 2x1x1 cluster (B multicast to the CTA pair), cooperative: CUTLASS's profiler
    # default for large FP16/BF16 GEMMs on H100. 4 stages = 4 * 48 KiB of A/B tiles, what
    # StageCountAutoCarveout fits into 227 KiB beside the barriers (no smem epilogue), pinned.
    {"arch": 90, "family": "xl", "tile": (128, 256, 64), "stages": 4, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 8},
    # Ping-pong: the two consumer warpgroups take alternate 128x128 tiles, so one's epilogue (direct
    # stores here) overlaps the other's mainloop; 2x1x1 cluster as xl; 7 stages of 32 KiB (auto-carveout).
    {"arch": 90, "family": "pp", "tile": (128, 128, 64), "stages": 7, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 8},
    # TMA (shared-memory) epilogues: the consumer warpgroups stage each output subtile in shared memory
    # and a TMA store writes it (C, when beta != 0, comes in by TMA load the same way); the epilogue's
    # Params then hold two more descriptors (C load, D store). Stages: what StageCountAutoCarveout
    # fits beside the epilogue's shared storage (probed with the auto count; pinned here).
    # ppt: ping-pong 128x128x64 as pp, 6 stages (17 KiB epilogue smem).
    {"arch": 90, "family": "ppt", "tile": (128, 128, 64), "stages": 6, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 8},
    # coopt: cooperative 256x128x64 (each consumer warpgroup 128x128), 2x1x1 cluster (B multicast),
    # 4 stages (33 KiB epilogue smem).
    {"arch": 90, "family": "coopt", "tile": (256, 128, 64), "stages": 4, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8},
    # "nn": the same two TMA-epilogue families for B = (K, N) row-major (N-contiguous, MN-major), what
    # matmul(a, b) holds; A, C, D as for "tn". Only the mainloop's B operand (its shared-memory layout
    # and TMA box/swizzle) differs. Emitted after every "tn" instance, so those stay byte-identical.
    {"arch": 90, "family": "ppt", "tile": (128, 128, 64), "stages": 6, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 8, "layout": "nn"},
    {"arch": 90, "family": "coopt", "tile": (256, 128, 64), "stages": 4, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "layout": "nn"},
    # TF32 (float32 GEMMs on the TF32 tensor cores; registry dtype "tf32", files gemm_tf32_*): the same two
    # TMA-epilogue schedules with CUTLASS's profiler tiles for tf32 on H100: k-tile 32 (32 floats = the
    # 128-byte swizzle row of a K-major tile, as 64 halves are for FP16), cluster 2x1x1, alignment 4
    # elements (16 bytes). Stages: what StageCountAutoCarveout fits beside the float32 epilogue's shared
    # storage (probed with the auto count; pinned). Emitted after every FP16/BF16 instance.
    # ppt: ping-pong 128x128x32, 6 stages of 32 KiB (the float32 epilogue takes 34 KiB).
    {"arch": 90, "family": "ppt", "tile": (128, 128, 32), "stages": 6, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 4, "dtypes": ("tf32",)},
    # coopt: cooperative 256x128x32, 3 stages of 48 KiB (the float32 epilogue takes 66 KiB).
    {"arch": 90, "family": "coopt", "tile": (256, 128, 32), "stages": 3, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 4, "dtypes": ("tf32",)},
    # TF32 "nn" (B = (K, N) row-major, MN-major): wgmma reads tf32 from shared memory K-major only, so CUTLASS
    # 4.2's builder takes its register-sourced mainloop and swaps the operands (CollectiveMma SwapAB: D^T =
    # B^T A^T; B is loaded by the first TMA descriptor with a 32-byte swizzle and copied to registers, the
    # kernel's problem shape and tiles are (N, M)); its only epilogue for that is EpilogueTransposed (direct
    # stores from registers with C's and D's strides swapped on the device; no TMA epilogue, no fusion), as
    # in CUTLASS's profiler and unit tests (tf32t_tf32t). Families named after their schedules: pp
    # (ping-pong 128x128x32, 7 stages) and coop (cooperative 256x128x32, 4 stages), cluster 2x1x1; stages as
    # StageCountAutoCarveout gives them (no epilogue smem). The register-sourced builder takes no cute::Int
    # stage count (the emitter's way of pinning one), so these are emitted with the auto count ("auto_stages")
    # and "stages" records what it resolves to with the pinned headers (the probe's smem_bytes confirms it:
    # tests/kernels/test_cutlass_sm90_params.py).
    {"arch": 90, "family": "pp", "tile": (128, 128, 32), "stages": 7, "auto_stages": True, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "EpilogueTransposed", "align": 4, "dtypes": ("tf32",), "layout": "nn"},
    {"arch": 90, "family": "coop", "tile": (256, 128, 32), "stages": 4, "auto_stages": True, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "EpilogueTransposed", "align": 4, "dtypes": ("tf32",), "layout": "nn"},
] + [
    # Fused epilogues for linear(x, w, bias, activation): ppt (ping-pong 128x128x64, 2x1x1, TMA epilogue) with
    # an epilogue visitor tree traced by the emitter (cutlass_cppgen's EVT frontend, EPILOGUES below):
    # D = act(acc + bias[n]), bias an (N,) vector of D's type broadcast over the rows (Sm90RowBroadcast), fp32
    # compute, no C operand (ElementC void: no C load, no C descriptor). Family "ppt_<epilogue>", so the key
    # is gemm/<dtype>/tn/ppt_<epilogue>/sm90. 6 stages as ppt (the auto carveout's count without C, pinned).
    # Epilogue subtile 64x128 (EPI_TILE_AUTO's note; ppt itself keeps the auto 64x32): two subtiles per tile, both
    # staged at once (2 x 16 KiB; 226 KiB in all): bit-identical to 64x32 and no slower at any measured shape,
    # faster at K = 768 (docs/measurements.md, "Fused-epilogue subtile").
    # Emitted after every other instance, so those stay byte-identical.
    {"arch": 90, "family": f"ppt_{_epi}", "tile": (128, 128, 64), "stages": 6, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 8, "epilogue": _epi, "epi_tile": (64, 128)}
    for _epi in ("bias", "bias_gelu", "bias_gelu_tanh", "bias_relu", "bias_silu")
] + [
    # Candidates ("candidate": True; MANIFEST ``candidate``): emitted and probed like every instance (launchable by
    # key through launch_sm90), but in no dispatch rule, not shipped as cubins (``launch_sm90 --ship`` and the
    # shipped-cubin test skip them) and not prebuilt; a GPU sweep decides which, if any, enter the rule. Promoting
    # one: drop its "candidate" (the .cu text, hence its cubin key, stays the same), regenerate, ship.
    # Emitted after every other instance, so those stay byte-identical.
    #
    # TF32 "tn" for large square problems (4096^3, 8192^3; ppt reaches 0.91-0.95x cuBLAS there). The tiles are
    # those CUTLASS's library generator lists for SM90 tf32 (k-tile 32, wgmma m64n128k8 / m64n256k8, clusters
    # 2x1 / 1x2). Per k8 step a wgmma m64nNk8 reads 64x8 of A and Nx8 of B from shared memory, so a CTA tile
    # of M x N costs (M/64) * (64 + N) * 8 elements of shared-memory reads for M * N * 8 multiply-adds: 42.7 MACs
    # per element for 128x128 (ppt) and 256x128, 51 for 128x256 and 64x256. In the cluster, the operand the pair
    # shares is multicast: L2->SM traffic per CTA is (2M + N) / 2 rows for 2x1 and (M + 2N) / 2 for 1x2, so the
    # 256-long side goes to the shared operand: 128x256 with 2x1 (B shared), 256x128 with 1x2 (A shared). Clusters
    # of 4 are left out (CUTLASS's 18-SM-per-GPC grid model launches only 116 of 132 CTAs), and stream-K too (128x256
    # tiles leave 3% of a wave idle at 4096^3 and 8192^3; params_sm90 builds only its split-K decomposition, for
    # the few-row candidate co128sk below). Raster order and swizzle are run-time Params (params_sm90 max_swizzle,
    # raster),
    # swept on the GPU without new instances.
    # xl: cooperative 128x256x32 (each consumer warpgroup 64x256: m64n256k8), cluster 2x1x1, 4 stages of 48 KiB,
    # direct-store epilogue (a TMA epilogue's float32 staging would leave 3 stages; CUTLASS's generator lists
    # this tile for tf32 with the no-smem epilogue only). As the 16-bit "xl" with k-tile 32.
    {"arch": 90, "family": "xl", "tile": (128, 256, 32), "stages": 4, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 4, "dtypes": ("tf32",), "candidate": True},
    # xl12: xl with the 1x2x1 cluster (A multicast), to measure the cluster direction against the model.
    {"arch": 90, "family": "xl12", "tile": (128, 256, 32), "stages": 4, "warps": (4, 1, 1),
     "cluster": (1, 2, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 4, "dtypes": ("tf32",), "candidate": True},
    # co12: cooperative 256x128x32 (each warpgroup 128x128), cluster 1x2x1 (A multicast: the 256-row A tile is
    # the shared one), 4 stages, direct-store epilogue (coopt, 2x1 with the TMA epilogue, has 3 stages).
    {"arch": 90, "family": "co12", "tile": (256, 128, 32), "stages": 4, "warps": (4, 1, 1),
     "cluster": (1, 2, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 4, "dtypes": ("tf32",), "candidate": True},
    # pp64 / pp64t: ping-pong 64x256x32 (each warpgroup a whole 64x256 tile, m64n256k8: xl's shared-memory
    # intensity with ping-pong's epilogue overlap, 128 accumulator registers per thread), cluster 2x1x1 (B
    # multicast); direct stores with 5 stages of 40 KiB, or the TMA epilogue with 4 (what fits beside its
    # float32 staging, as ppt's 6 of 32 KiB).
    {"arch": 90, "family": "pp64", "tile": (64, 256, 32), "stages": 5, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "NoSmemWarpSpecialized", "align": 4, "dtypes": ("tf32",), "candidate": True},
    {"arch": 90, "family": "pp64t", "tile": (64, 256, 32), "stages": 4, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 4, "dtypes": ("tf32",), "candidate": True},
    # FP16/BF16 "tn" for 4096^3 / 8192^3 (coopt, 256x128x64 2x1x1 with the TMA epilogue, and xl, 128x256x64
    # 2x1x1 with direct stores, are the incumbents): coopt12, coopt with the 1x2x1 cluster (the 256-row A tile
    # multicast), and xlt, xl with the TMA epilogue; 4 stages of 48 KiB beside 33 KiB of epilogue staging each.
    {"arch": 90, "family": "coopt12", "tile": (256, 128, 64), "stages": 4, "warps": (4, 1, 1),
     "cluster": (1, 2, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True},
    {"arch": 90, "family": "xlt", "tile": (128, 256, 64), "stages": 4, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True},
    # FP16/BF16 "tn" for few rows (GPT-2's M <= 2048 with K x N = 768 x 3072 and the like): at 512x768x3072 ppt's
    # 128x128 tiles make 96 tiles, each on one consumer warpgroup of its CTA (the other idles), and take 1.38x
    # cuBLASLt's time. co128t: cooperative 128x128x64 (both warpgroups on each tile, 64 rows each), 1x1x1, TMA
    # epilogue, 6 stages of 32 KiB; co64t: cooperative 128x64x64 (twice the tiles), 1x1x1, 8 stages of 24 KiB;
    # ppm64: ping-pong 64x128x64 (each warpgroup its own 64x128 tile: twice the tiles of ppt, both warpgroups
    # busy), 2x1x1 (B multicast), TMA epilogue, 8 stages of 24 KiB.
    {"arch": 90, "family": "co128t", "tile": (128, 128, 64), "stages": 6, "warps": (4, 1, 1),
     "cluster": (1, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True},
    {"arch": 90, "family": "co64t", "tile": (128, 64, 64), "stages": 8, "warps": (4, 1, 1),
     "cluster": (1, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True},
    {"arch": 90, "family": "ppm64", "tile": (64, 128, 64), "stages": 8, "warps": (4, 1, 1),
     "cluster": (2, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 8, "candidate": True},
    # co128sk: co128t (cooperative 128x128x64, 1x1x1, TMA epilogue, 6 stages) with CUTLASS's stream-K tile scheduler
    # (a family's "tile_scheduler", TILE_SCHEDULERS): at 512x3072x768 the 128x128 tiles are 24 for 132 SMs; split
    # over K, each tile's k-blocks go to `splits` CTAs whose fp32 partials meet in a global workspace (the last split
    # adds them and runs the epilogue). The decomposition is a run-time Argument (params_sm90 pins SplitK with the
    # caller's splits); the Params carry the stream-K scheduler's fields and the workspace address. Emitted last.
    {"arch": 90, "family": "co128sk", "tile": (128, 128, 64), "stages": 6, "warps": (4, 1, 1),
     "cluster": (1, 1, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedCooperative",
     "epilogue_schedule": "TmaWarpSpecializedCooperative", "align": 8, "candidate": True,
     "tile_scheduler": "StreamK"},
    # Few-row tiles shaped after cuBLAS's own choices on the H200 (torch profiler kernel names, s8: nvjet
    # 96x128_64x7_2x1 at 512x768x3072, 64x64_64x13_4x2 at 512x3072x768 and 512x768x768, 192x128_64x5_1x2 at
    # 1024x768x3072; cuBLAS's M is our N): tiles sized so that the problem makes about one full wave (128 tiles on
    # 132 SMs) instead of splitting K, and clusters that multicast the operand the tiles in a row share.
    # fr96: cooperative 128x96x64, cluster 1x2x1 (A multicast), 7 stages of 28 KiB, TMA epilogue: 512x768x3072 is
    # 4 x 32 = 128 tiles (co128t: 96 tiles of 128x128, 0.78x cuBLAS).
    _FR96,
    # fr64: ping-pong 64x64x64, cluster 2x4x1 (both operands multicast within 8 CTAs), 12 stages of 16 KiB (13 fit,
    # as cuBLAS has, but the emitter writes the count as cute::_13, which cute does not define): the deep
    # pipeline for K = 3072 at 512x3072x768 (8 x 12 = 96 tiles; co64t: 48 tiles of 128x64, 0.71x).
    {"arch": 90, "family": "fr64", "tile": (64, 64, 64), "stages": 12, "warps": (4, 1, 1),
     "cluster": (2, 4, 1), "swizzle": 1, "kernel_schedule": "TmaWarpSpecializedPingpong",
     "epilogue_schedule": "TmaWarpSpecialized", "align": 8, "candidate": True},
    # fr192: cooperative 128x192x64, cluster 2x1x1 (B multicast), 4 stages of 40 KiB: 1024x768x3072 is 8 x 16 = 128
    # tiles (ppt: 192 tiles of 128x128 on 132 SMs, 0.73x).
    _FR192,
] + [
    # fr96 with the fused epilogues of linear (as ppt_<epilogue>), for few rows (512x768->3072: ppt_bias_gelu takes
    # 1.6x the bare cuBLAS GEMM, fr96_bias_gelu 1.36x before PDL). 7 stages as fr96 (the fused epilogue has no C).
    # bias_gelu and bias_silu are shipped (gemm.select_sm90_fused: gelu and silu up to FEW_ROWS_MAX rows, where
    # cuBLASLt has no epilogue for them); bias and bias_gelu_tanh stay candidates (cuBLASLt's epilogues are as
    # fast: 512 rows gelu_tanh 7.83 us against 7.53-7.68).
    _few_rows_fused(_FR96, _epi) for _epi in ("bias", "bias_gelu", "bias_gelu_tanh", "bias_silu")
] + [
    # fr192 with the fused epilogues, for up to FEW_ROWS_MAX = 1024 rows where gemm._few_rows_family picks it
    # (1024x768->3072: fr96's 128x96 tiles make 256 tiles, 1.9 waves on 132 SMs; fr192's 128x192 make 128, one wave;
    # bare fr192 0.89x cuBLAS there against fr96_bias_gelu's
    # 0.72x). Cooperative 128x192x64, cluster 2x1x1, 4 stages as fr192. bias_gelu and bias_silu are shipped
    # (gemm._few_rows_family: 640-1024 rows x768->3072, 0.88-0.90x fr96_bias_gelu's time); bias and bias_gelu_tanh stay
    # candidates (cuBLASLt's epilogues: 768 rows gelu_tanh 8.88 us against 9.63).
    _few_rows_fused(_FR192, _epi) for _epi in ("bias", "bias_gelu", "bias_gelu_tanh", "bias_silu")
]

# A family's "epi_tile": (M, N) pins the TMA epilogue's subtile (CUTLASS's EpilogueTileType; M = 64 for ping-pong,
# 128 for cooperative, N a multiple of 16). Without it the builder's EpilogueTileAuto takes 64x32 (ping-pong) or
# 128x32 (cooperative) for 16-bit D: eight subtiles of a 128x128 ping-pong tile, each one smem store, two named
# barriers and a TMA store, and with two staging buffers each subtile waits for the store two subtiles back to have
# read its buffer. MANIFEST ``epi_tile``; the kernel name gets "_epi<M>x<N>".
EPI_TILE_AUTO = "cutlass::epilogue::collective::EpilogueTileAuto"

# Tile schedulers a family may name in its "tile_scheduler" (cutlass_library TileSchedulerType; absent: Default, the
# persistent data-parallel PersistentTileSchedulerSm90 of every other instance, whose entries keep their old
# text): the C++ tag the emitter writes into GemmUniversal, the kernel-name suffix (the emitter's procedural name
# ignores the scheduler), and the manifest's "swizzle" line.
TILE_SCHEDULERS = {
    "Default": {"tag": None, "suffix": None, "doc": "sm90 default tile scheduler"},
    "StreamK": {"tag": "cutlass::gemm::StreamKScheduler", "suffix": "streamk",
                "doc": "sm90 stream-K tile scheduler (PersistentTileSchedulerSm90StreamK)"},
}

# The fused epilogues: the function the emitter traces (its EVT frontend parses this Python source; "accum"
# is the fp32 accumulator, "bias" a (1, N) row of D's type, "D" the output), the functor the activation
# becomes (evaluated in fp32) and the torch function it matches. gelu_tanh: CUTLASS's GELU_taylor (0.5 (x + x
# tanh(x (k0 + k0 0.044715 x^2))), tanh by tanh.approx.f32; cutlass/epilogue/thread/activation.h), torch's
# gelu(approximate="tanh"); relu: CUTLASS's ReLu (NaN-propagating max(x, 0)). gelu and silu: our functors
# (FUNCTOR_HEADER, hand-written, beside the instances): gpk::epilogue::Gelu, the erf GELU x Phi(x) (torch's gelu)
# as max(x, 0) - |x| 2^P(|x|) with a degree-7 fit P of log2 Phi(-t) and one ex2.approx (11 SASS instructions per
# element against about 26 for CUTLASS's GELU with erff), and gpk::epilogue::Silu, x * rcp.approx(1 +
# ex2.approx(-x log2 e)) (6 against about 26 and a branch to the IEEE division's slow path for CUTLASS's SiLu);
# accuracy and special values in the header. "binding": the emitter's ActivationOp that the traced name maps to;
# where "functor" is ours, the emitter's tag of that op is replaced by it while the instance is emitted
# (_functor_tag) and the instance includes FUNCTOR_HEADER.
EPILOGUES = {
    "bias": {"expr": "accum + bias", "activation": None, "functor": None, "binding": None, "torch": "x + b"},
    "bias_gelu": {"expr": "gelu(accum + bias)", "activation": "gelu", "functor": "gpk::epilogue::Gelu",
                  "binding": "Gelu", "torch": "gelu(x + b)"},
    "bias_gelu_tanh": {"expr": "gelu_tanh(accum + bias)", "activation": "gelu_tanh",
                       "functor": "cutlass::epilogue::thread::GELU_taylor", "binding": "GeluTaylor",
                       "torch": "gelu(x + b, approximate='tanh')"},
    "bias_relu": {"expr": "relu(accum + bias)", "activation": "relu",
                  "functor": "cutlass::epilogue::thread::ReLu", "binding": "ReLU", "torch": "relu(x + b)"},
    "bias_silu": {"expr": "silu(accum + bias)", "activation": "silu", "functor": "gpk::epilogue::Silu",
                  "binding": "SiLU", "torch": "silu(x + b)"},
}
# The hand-written functor header (ours, not emitted): in OUT_DIR beside the instances; the instances that use
# it include it by name (the loader and the probe compile with -I of that directory), their manifest entries
# list it with its sha256 ("local_headers"; launch_sm90's cubin key hashes it with the .cu text).
FUNCTOR_HEADER = "gpk_epilogue.h"

# Operand layouts by tag (first letter: A, second: B; C and D are always (M, N) row-major). "tn": B is the
# (N, K) row-major weight, CUTLASS's ColumnMajor (K, N); "nn": B is (K, N) row-major, CUTLASS's RowMajor.
LAYOUTS = {
    "tn": {"B": "ColumnMajor", "doc": {"A": "RowMajor (M,K)", "B": "ColumnMajor (K,N) = W (N,K) row-major",
                                        "C": "RowMajor (M,N)", "D": "RowMajor (M,N)"}},
    "nn": {"B": "RowMajor", "doc": {"A": "RowMajor (M,K)", "B": "RowMajor (K,N), N contiguous",
                                     "C": "RowMajor (M,N)", "D": "RowMajor (M,N)"}},
}


def fam_layout(fam: dict) -> str:
    return fam.get("layout", LAYOUT)


def fam_dtypes(fam: dict) -> tuple:
    """The registry dtypes a family is emitted for (its "dtypes", else every one of DTYPES, in that order)."""
    return tuple(fam.get("dtypes", DTYPES))

# The SM80 instance the slow compile test builds (smallest tile, fewest template instantiations).
COMPILE_TEST_KEY = "gemm/f16/tn/small/sm80"


def registry_key(dtype: str, fam: dict) -> str:
    return f"gemm/{dtype}/{fam_layout(fam)}/{fam['family']}/sm{fam['arch']}"


def file_name(dtype: str, fam: dict) -> str:
    return f"gemm_{dtype}_{fam_layout(fam)}_{fam['family']}_sm{fam['arch']}.cu"
