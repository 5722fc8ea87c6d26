"""Emit the pinned CUTLASS GEMM instances under gpk_array/_kernels/cutlass/ (source only).

The CUTLASS Python package (nvidia-cutlass 4.2.0.0, module ``cutlass_cppgen``) is used here as a C++
source generator and nothing else: its own compile-and-run path is broken with cuda-python 13 and is
never called. Nothing here needs a GPU.

Usage
-----
    python scripts/gen_cutlass.py            # regenerate the .cu files and MANIFEST.json
    python scripts/gen_cutlass.py --check    # regenerate into a temp dir, compare sha256 with MANIFEST.json
    python scripts/gen_cutlass.py --probe    # also compile and run a host-only layout probe (nvcc, ~1 min)
                                             # and record the SM80 Params layout in MANIFEST.json
    python scripts/gen_cutlass.py --probe-sm90   # the same for the SM90 instances (nvcc, ~1 min, no GPU):
                                             # Params layout, TMA encode arguments, goldens
    python scripts/gen_cutlass.py --probe-sm90 --families ppt,coopt   # probe only these families (the
                                             # others keep their recorded host_params); "nn/ppt" names
                                             # one layout's instances of a family only, "tf32/tn/ppt" one
                                             # dtype's, "tf32" every instance of a dtype

The emitter runs with its working directory set to a temporary directory (importing its backend
writes ``compiled_cache.db`` into the current directory). PYTHONHASHSEED is forced to 0 by re-executing
the script, because the emitter's default choices depend on set ordering; every choice it could make
by itself (tile shape, stages, warp count, cluster shape, kernel and epilogue schedule, swizzle,
alignment) is pinned in INSTANCES below anyway.

Layout
------
All instances compute y = x @ W^T as torch.nn.functional.linear does: A = x is (M, K) row-major,
B = W is stored (N, K) row-major, which is the (K, N) column-major operand CUTLASS calls
``layout::ColumnMajor`` (so the CUTLASS layout tag is "tn"), C and D are (M, N) row-major.
The SM90 TMA-epilogue families ppt and coopt are also emitted for the "nn" layout (a family entry's
"layout", LAYOUTS, MANIFEST ``layout_tag``): B = (K, N) row-major, N contiguous (CUTLASS ``layout::RowMajor``
B, MN-major in shared memory), D = A @ B as matmul(a, b) has it; A, C, D as above. CUTLASS keeps the
128-byte swizzle for that B; its TMA box is (64 of N, 32 of K, 1) (the 2x1x1 multicast halves the k-block,
the 128-wide N tile takes two boxes); dims (N, K, 1), byte strides (ldb, K * ldb); N and ldb multiples of 8.
Element types: A, B, C, D all FP16 (or all BF16), accumulator and epilogue scalars FP32.
TF32 (registry dtype "tf32", ``gemm/tf32/<tn|nn>/<family>/sm90``, files ``gemm_tf32_*``; a family's "dtypes"):
A, B, C, D float32 in memory, TF32 wgmma (CUTLASS's TMA loads the operands as TFLOAT32), float32 accumulation
and epilogue; alignment 4 elements (16 bytes). "tn": ppt (ping-pong 128x128x32, 6 stages) and coopt
(cooperative 256x128x32, 3 stages), both cluster 2x1x1 with the TMA epilogue. "nn": CUTLASS 4.2 has no
shared-memory-sourced tf32 wgmma for an MN-major B, so its builder swaps the operands (D^T = B^T A^T, B through
registers; MANIFEST ``host_params.swap_ab``: the first TMA descriptor is B's and the kernel's problem shape,
tiles and schedule are (N, M)) and takes the EpilogueTransposed direct-store epilogue (C and D strides swapped
on the device; no TMA epilogue): pp (ping-pong 128x128x32) and coop (cooperative 256x128x32), cluster 2x1x1.
Epilogue: D = alpha * acc + beta * C (``LinearCombination``; C may alias D or be any valid pointer
when beta == 0, it is not read then).

Candidates (a family's "candidate": True; MANIFEST ``candidate``): instances emitted and probed like the others,
launchable by key (``launch_sm90.linear_tn_sm90(..., key=...)``, ``gemm_into``), but in no dispatch rule, not shipped
as cubins and not prebuilt until a GPU run (``python -m benchmarks.diag.sm90_candidate_sweep``) shows one ahead of
cuBLAS: TF32 "tn" xl (cooperative 128x256x32, 2x1x1, 4 stages), xl12 (the same, 1x2x1), co12 (cooperative 256x128x32,
1x2x1, 4 stages), all three with direct stores, pp64 / pp64t (ping-pong 64x256x32, 2x1x1: direct stores, 5 stages /
TMA epilogue, 4 stages); FP16/BF16 "tn" coopt12 (coopt with the 1x2x1 cluster) and xlt (cooperative 128x256x64,
2x1x1, TMA epilogue, 4 stages), and for few rows co128t (cooperative 128x128x64, 1x1x1, 6 stages), co64t
(cooperative 128x64x64, 1x1x1, 8 stages) and ppm64 (ping-pong 64x128x64, 2x1x1, 8 stages), all three with the TMA
epilogue, and co128sk: co128t with CUTLASS's stream-K tile scheduler (a family's "tile_scheduler": "StreamK",
TILE_SCHEDULERS; MANIFEST ``tile_scheduler``; the kernel name gets "_streamk", the emitter's procedural name not saying
the scheduler). Its Params (1920 bytes) hold PersistentTileSchedulerSm90StreamKParams and the workspace address; the
probe (kind 4, SM90_PROBE_CASES_SK: each case with splits, DecompositionMode::SplitK, a reduction mode and a workspace
address) records them and GemmKernel::get_workspace_size per golden; params_sm90 builds the split-K decomposition
(``is_stream_k``, ``sm90_workspace``), launch_sm90 allocates the workspace and zeroes its barriers before each launch.
SplitK rather than the Heuristic/StreamK modes: one run-time number (splits) to sweep, no data-parallel/stream-K tile
split or unit grouping to rebuild in Python, and at the few-row shapes CUTLASS's heuristic picks data-parallel
(512x768x3072: 96 tiles, tail more than half a wave) or a stream-K split of 132 units over 24 tiles (512x3072x768).
The TF32 direct-store instances are probed with the TMA-epilogue cases (C and D
16-byte aligned: float32 stores need 4). Promoting one: drop its "candidate", regenerate (its .cu text and cubin key
stay the same), add it to the rule, ``python -m gpk_array._kernels.cutlass.launch_sm90 --ship``.

Launching an emitted SM80 instance through cupy.RawModule (what the host must do)
----------------------------------------------------------------------------------
Each SM80 file defines ``extern "C" __global__ void <kernel>(<kernel>_type::Params params)``, where
``<kernel>_type`` is ``cutlass::gemm::kernel::GemmUniversal<...>`` (CUTLASS 2.x API). The manifest
entry gives the kernel name, ``threads`` and ``smem_bytes`` and (after ``--probe``) the byte layout of
Params; ``gpk_array/_kernels/cutlass/params.py`` turns (M, N, K, pointers, leading dimensions,
alpha, beta) into the launch tuple with arithmetic only (``build_sm80_launch``).

1. Compile: nvcc or NVRTC, ``-std=c++17 --expt-relaxed-constexpr -DNDEBUG -O3 -arch=sm_80`` (sm_90a
   also runs SM80 code), ``-I <cutlass_library>/source/include`` and the CUDA include dir. Load the
   cubin with ``cupy.RawModule(path=...)`` and ``get_function(kernel)``.
2. Block: ``(threads, 1, 1)`` with threads = 32 * warp_m * warp_n * warp_k (128 for 2x2x1 warps,
   256 for 2x4x1).
3. Dynamic shared memory: ``smem_bytes`` = sizeof(GemmKernel::SharedStorage), known from the probe
   (the mainloop's stages * (tile_m * tile_k + tile_n * tile_k) * sizeof(element) dominates; the
   epilogue's staging buffer shares the same union). It is above 48 KiB for every pinned instance,
   so set ``func.max_dynamic_shared_size_bytes = smem_bytes`` once before the first launch
   (cudaFuncAttributeMaxDynamicSharedMemorySize), then launch with ``shared_mem=smem_bytes``.
4. Grid: tiled = (ceil(M / tile_m), ceil(N / tile_n), 1) (split-K is pinned to 1; grid.z = 1 with
   mode kGemm and batch_count 1); with GemmIdentityThreadblockSwizzle<S>, log_tile = 3 if S >= 8 and
   tiled.n >= 6, else 2 if S >= 4 and tiled.n >= 3, else 1 if S >= 2 and tiled.n >= 2, else 0;
   grid = (tiled.m << log_tile, ceil(tiled.n / 2**log_tile), tiled.k). Params stores both
   ``grid_tiled_shape`` and ``swizzle_log_tile``; the kernel exits early for tiles outside M, N.
5. Params (368 bytes for every pinned SM80 instance, passed by value as the only argument, 8-byte
   aligned; CuPy passes a NumPy structured scalar as a struct argument: ``params.params_scalar(raw)``
   makes one; untested on a GPU so far). Member order, all little-endian:
     UniversalParamsBase: GemmCoord problem_size (3 x int32 M, N, K), GemmCoord grid_tiled_shape,
       int32 swizzle_log_tile, int32 mode (0 = kGemm), int32 batch_count (1), int32 gemm_k_size,
       int64 batch_stride_D, int* semaphore (null; only split-K serial uses it);
     then params_A, params_B (PredicatedTileAccessIterator params: 4 x int64 each), params_C,
       params_D (epilogue PredicatedTileIterator params: 8 x int64 each), output_op
       (float alpha, float beta, 4 null pointers), ptr_A, ptr_B, ptr_C, ptr_D, int64 batch_stride_A,
       batch_stride_B, batch_stride_C, and three null gather/scatter index pointers.
   gemm_k_size = round_up(K, align_k), align_k = 64 if K % 64 == 0 else 8 (FP16/BF16: 128-byte
   cache line of K-contiguous operands, else 128 bits); grid_tiled_shape.k = ceil(K / gemm_k_size).
   Every iterator field is an affine function of its leading dimension in elements (lda for
   params_A, ldb for params_B, ldc/ldd for params_C/params_D): value = a * ld + b with per-instance
   integer constants (a, b) that depend only on CUTLASS's thread maps. ``--probe`` measures them by
   building Params with CUTLASS's own host constructor (``Params(Arguments, -1, -1)``) for two
   leading dimensions, checks them on a third, and stores them (plus offsets, size, smem, and one
   golden byte dump for the tests) in MANIFEST.json.
6. Requirements of the pinned alignment (8 elements = 16 bytes): K, lda, ldb, N, ldc, ldd multiples
   of 8 and all four pointers 16-byte aligned. Anything else goes to the cuBLAS fallback.
7. Run on the current CuPy stream (RawKernel does).

SM90 instances (wgmma + TMA, CUTLASS 3.x ``GemmUniversal<Shape<int,int,int,int>, ...>``): their
Params (1024 bytes, 128-byte aligned, one ``__grid_constant__`` argument) hold two TMA descriptors
(CUtensorMap, 128 bytes each, for A and B) made on the host by cuTensorMapEncodeTiled, the epilogue's
alpha/beta/C/D, the hardware info and the persistent tile scheduler's parameters; block
``MaxThreadsPerBlock`` (384), shared memory ``SharedStorageSize``, and a persistent grid: for cluster
1x1x1 ("large") min(sm_count, tiles) CTAs, launched plainly; for a cluster of 2x1x1 ("xl": 128x256x64
cooperative, "pp": 128x128x64 ping-pong; B multicast by TMA to both CTAs of the pair) CUTLASS's
get_grid_shape (whole clusters per 18-SM GPC model, recorded by the probe), launched as a cluster launch
(cuLaunchKernelEx with the cluster dimension). These three (direct-store epilogue, NoSmemWarpSpecialized)
share one Params layout. "ppt" (ping-pong 128x128x64) and "coopt" (cooperative 256x128x64), both cluster
2x1x1, use CUTLASS's TMA epilogue (TmaWarpSpecialized / TmaWarpSpecializedCooperative, "_epi_tma"): D is
staged in shared memory and written by TMA stores, C (when beta != 0) read by TMA loads; their Params
(1792 bytes) hold two more descriptors (C load, D store, encoded after A and B, C's even when beta == 0:
the kernel then skips the C loads), the LinearCombination scalars as leaves of the fusion callbacks' tuple
(found by the probe with sentinel values) and the epilogue's transaction bytes; they need N, ldc, ldd
multiples of 8 and 16-byte aligned C and D (so the probe cases for them keep C and D 16-byte aligned).

Fused bias/activation epilogues ("tn" only, for linear(x, w, bias, activation)): the ppt instance (ping-pong
128x128x64, cluster 2x1x1, 6 stages, TMA epilogue) with an epilogue visitor tree that the emitter traces from a
Python expression (EPILOGUES; cutlass_cppgen's EVT frontend, "gelu_tanh" added for the emitter's GeluTaylor):
D = act(acc + bias[n]), bias an (N,) vector of D's type broadcast over the rows (Sm90RowBroadcast: element
loads, so any element-aligned address; a null pointer reads zeros), computed in fp32, rounded once; no C
operand (ElementC void), no alpha or beta. Registry key gemm/<f16|bf16>/tn/ppt_<epi>/sm90 with <epi> in bias,
bias_gelu (gpk::epilogue::Gelu, torch's erf gelu; ours, see below), bias_gelu_tanh (CUTLASS's GELU_taylor:
tanh.approx.f32, torch's approximate="tanh"), bias_relu (ReLu), bias_silu (gpk::epilogue::Silu: x * rcp.approx(1 +
ex2.approx(-x log2 e)); ours); the kernel name is the ppt
name plus "_<epi>_epi64x128" (their pinned 64x128 epilogue subtile, a family's "epi_tile"). The emitter's SM90
visitor code would take the cluster tile as the CTA tile (256x128x64);
the script gives it the CTA tile (128x128x64), as CUTLASS's CollectiveBuilder does for its fusion ops, and
checks the emitted tree (``_check_fused_source``). Their Params (1792 bytes, ppt's layout) hold A, B and D
descriptors (encoded in that order; the C atom stays value-initialized, zero) and the fusion Params: the bias
pointer and its null default at the offsets the probe finds (the row broadcast's node in the tree's Params).

Hand-written functors (gelu, silu): CUTLASS's GELU (0.5 x (1 + erff(x / sqrt 2))) and SiLu (an IEEE division) cost
about 26 SASS instructions per element, too many to hide one ping-pong warpgroup's epilogue under the other's
short mainloop (K = 768: 1.5x and 2x the bare GEMM). ``gpk_array/_kernels/cutlass/gpk_epilogue.h`` (FUNCTOR_HEADER,
ours, not emitted; constants from ``scripts/fit_epilogue.py``, SASS counts from ``scripts/epilogue_sass.py``) has
gpk::epilogue::Gelu (the erf GELU in 11 instructions, one MUFU.EX2) and gpk::epilogue::Silu (6, MUFU.EX2 and
MUFU.RCP), with CUTLASS's functor interface and no Arguments, so the Params are CUTLASS's (the probe's host_params
are the same bytes). The emitter traces ``gelu(...)``/``silu(...)`` as before; while such an instance is emitted its
ActivationOp's C++ tag is our functor (``_functor_tag``), and the instance includes the header by name (compiled
with -I of the instances' directory: launch_sm90.build, the probe). Its manifest entry lists the header and its
sha256 (``local_headers``: ``--check`` fails after an edit of the header until the script is run again, and
launch_sm90's cubin key hashes the header's text with the instance's).

``--probe-sm90`` compiles CUTLASS's own ``to_underlying_arguments`` on the host with
``CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL`` and a stub ``cuTensorMapEncodeTiled`` of ours that records its arguments and
writes a known pattern into each descriptor (no libcuda, no GPU), and stores
offsets, TMA settings and golden dumps in MANIFEST ``host_params``. ``gpk_array/_kernels/cutlass/
params_sm90.py`` rebuilds the bytes in Python (``build_sm90_launch``), ``tma.py`` calls the real
encoder, ``launch_sm90.py`` builds, loads and launches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "gpk_array" / "_kernels" / "cutlass"
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
    # staged at once (2 x 16 KiB; 226 KiB in all). H200, session 10 (benchmarks/results/h200_2026-12-01_s10_diag_ppw_*),
    # the same kernels with 64x32 / 64x128 subtiles, bit-identical results: at K = 768 the fused gelu / gelu_tanh
    # instances take 0.95-0.97x the time (8192x768->3072, 4096x768->3072, 16384x768->3072; 0.97-0.99 at N = 2304),
    # bias alone 0.98-1.0x; at K = 3072 1.00x, at 4096^3 1.01x.
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


# --------------------------------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------------------------------
def _force_hash_seed() -> None:
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        env = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)


def _import_emitter():
    """Import cutlass_cppgen so that nothing asks for a device or runs nvcc."""
    import cutlass_cppgen
    from cutlass_cppgen.library_defaults import OptionRegistry

    installed = _cutlass_version()
    if installed != CUTLASS_VERSION:
        raise SystemExit(f"nvidia-cutlass {CUTLASS_VERSION} is pinned; {installed} is installed")
    cutlass_cppgen._NVCC_VERSION = NVCC_VERSION_FOR_EMITTER
    cutlass_cppgen._nvcc_version = NVCC_VERSION_FOR_EMITTER
    if cutlass_cppgen._option_registry is None:
        cutlass_cppgen._option_registry = OptionRegistry(OPTION_REGISTRY_CC)
    return cutlass_cppgen


def _cutlass_version() -> str:
    from importlib import metadata
    return metadata.version("nvidia-cutlass")


def cutlass_include_dir() -> Path:
    import cutlass_library
    return Path(cutlass_library.__file__).resolve().parent / "source" / "include"


_EVT_EXAMPLE_MN = (256, 256)   # the traced example's (M, N); the emitted code takes any M, N at run time


def _epilogue_visitor(epi: str, elem):
    """The emitter's epilogue visitor for EPILOGUES[epi] with D and bias of type ``elem``: the EVT frontend
    (cutlass_cppgen.backend.evt) parses ``def epi(accum, bias): D = <expr>; return D`` and runs its passes
    (tree of Sm90AccFetch, Sm90RowBroadcast, Sm90Compute nodes). Its name table lacks the tanh-approximated
    GELU that the emitter's ActivationOp has (GeluTaylor, cutlass::epilogue::thread::GELU_taylor): the
    subclass adds "gelu_tanh" for it; every other name goes to the emitter's own table."""
    import ast
    import cutlass_library as cl
    from cutlass_cppgen.backend.evt.frontend import PythonASTFrontend
    from cutlass_cppgen.backend.evt.ir.tensor import Tensor
    from cutlass_cppgen.backend.library import ActivationOp

    source = f"def epi(accum, bias):\n    D = {EPILOGUES[epi]['expr']}\n    return D\n"

    class _Traced(PythonASTFrontend):
        @staticmethod
        def ast_op_to_bindings(op):
            if op == "gelu_tanh":
                return ActivationOp.GeluTaylor
            return PythonASTFrontend.ast_op_to_bindings(op)

        def parse(self, example_inputs):
            self.example_inputs = example_inputs
            self.source = source
            self.ast = ast.parse(source)
            self.visit(self.ast)

    m, n = _EVT_EXAMPLE_MN
    row = cl.LayoutType.RowMajor
    examples = {"accum": Tensor(element=cl.DataType.f32, shape=(m, n), layout_tag=row),
                "bias": Tensor(element=elem, shape=(1, n), layout_tag=row),
                "D": Tensor(element=elem, shape=(m, n), layout_tag=row)}
    visitor = _Traced(90)
    visitor.trace(examples)
    return visitor


def _build_operation(dtype: str, fam: dict):
    cg = _import_emitter()
    import cutlass_library as cl
    from cutlass_cppgen.backend.library import TileDescription
    from cutlass_cppgen.op import Gemm
    from cutlass_cppgen.swizzle import SwizzlingFunctor

    elem = getattr(cl.DataType, ELEMENTS[dtype])
    arch = fam["arch"]
    gemm = Gemm(element=elem, element_accumulator=cl.DataType.f32,
                layout_A=cl.LayoutType.RowMajor,
                layout_B=getattr(cl.LayoutType, LAYOUTS[fam_layout(fam)]["B"]),
                layout_C=cl.LayoutType.RowMajor, cc=arch, kernel_cc=arch)
    if gemm.opclass != cl.OpcodeClass.TensorOp:
        raise RuntimeError(f"{dtype} sm{arch}: emitter did not pick TensorOp")
    # The math instruction the emitter's own catalogue uses for this arch and type combination.
    math_inst = gemm.tile_descriptions()[0].math_instruction
    if dtype == "tf32" and (math_inst.element_a != cl.DataType.tf32 or math_inst.element_b != cl.DataType.tf32
                            or math_inst.math_operation != cl.MathOperation.multiply_add):
        # not the 3xTF32 emulation (multiply_add_fast_f32) nor plain FP32 SIMT: one TF32 wgmma per product
        raise RuntimeError(f"tf32 sm{arch}: emitter picked {math_inst.element_a}/{math_inst.math_operation}")
    cluster = list(fam["cluster"])
    tile = list(fam["tile"])
    if arch >= 90:
        tile = [t * c for t, c in zip(tile, cluster)]   # emitter divides by the cluster shape
    ks = getattr(cl.KernelScheduleType, fam["kernel_schedule"] or "ScheduleAuto")
    es = getattr(cl.EpilogueScheduleType, fam["epilogue_schedule"] or "ScheduleAuto")
    stages = 0 if fam.get("auto_stages") else fam["stages"]   # 0: the emitter's StageCountAutoCarveout
    td = TileDescription(tile, stages, list(fam["warps"]), math_inst, cluster,
                         kernel_schedule=ks, epilogue_schedule=es,
                         tile_scheduler=getattr(cl.TileSchedulerType, fam.get("tile_scheduler", "Default")))
    gemm.swizzling_functor = getattr(SwizzlingFunctor, f"Identity{fam['swizzle']}")
    if fam.get("epilogue"):
        gemm.epilogue_visitor = _epilogue_visitor(fam["epilogue"], elem)
    op = gemm.construct(td, alignment_A=fam["align"], alignment_B=fam["align"],
                        alignment_C=fam["align"])
    del cg
    return op, math_inst


class _functor_tag:
    """While emitting a fused instance whose activation functor is ours: the emitter's C++ tag of the traced
    ActivationOp (cutlass_cppgen.backend.library.ActivationOpTag, what its Sm90Compute node writes) is that functor;
    restored on exit."""

    def __init__(self, epi: str | None):
        e = EPILOGUES[epi] if epi else None
        self.binding = e["binding"] if e and e["functor"] and not e["functor"].startswith("cutlass::") else None
        self.functor = e["functor"] if self.binding else None

    def __enter__(self):
        if self.binding:
            from cutlass_cppgen.backend import library
            op = getattr(library.ActivationOp, self.binding)
            self.saved = (library.ActivationOpTag, op, library.ActivationOpTag[op])
            library.ActivationOpTag[op] = self.functor
        return self

    def __exit__(self, *exc):
        if self.binding:
            table, op, tag = self.saved
            table[op] = tag
        return False


def _local_headers(epi: str | None, header_dir: Path) -> list[dict]:
    """The hand-written headers an instance includes: [{"file", "sha256"}] (FUNCTOR_HEADER where its functor is
    ours; none else), hashed from ``header_dir`` (the instances' directory)."""
    e = EPILOGUES[epi] if epi else None
    if not (e and e["functor"] and not e["functor"].startswith("cutlass::")):
        return []
    text = (header_dir / FUNCTOR_HEADER).read_bytes()
    return [{"file": FUNCTOR_HEADER, "sha256": hashlib.sha256(text).hexdigest()}]


def _emit_one(dtype: str, fam: dict, header_dir: Path = OUT_DIR) -> tuple[str, dict]:
    epi = fam.get("epilogue")
    with _functor_tag(epi):
        return _emit_one_traced(dtype, fam, header_dir)


def _renamed(body: str, old: str, new: str) -> str:
    """The emitted source with operation name ``old`` (which it must hold) renamed ``new`` (which it must not)."""
    if old not in body or new in body:
        raise RuntimeError(f"{new}: unexpected operation names in the emitted source")
    return body.replace(old, new)


def _emit_one_traced(dtype: str, fam: dict, header_dir: Path) -> tuple[str, dict]:
    op, math_inst = _build_operation(dtype, fam)
    rt = op.rt_module
    name = op.procedural_name()
    epi = fam.get("epilogue")
    if epi:
        # The emitter's SM90 visitor code takes the tile description's threadblock_shape as the CTA tile
        # (EpilogueDescriptor, the row broadcast's shared-memory tile), but for SM90 that shape is the
        # cluster tile (the mainloop gets threadblock_shape / cluster): with the 2x1x1 cluster it would say
        # 256x128x64 to a 128x128x64 CTA. Name first (same convention as every other instance), then give the
        # visitor the CTA tile, as CUTLASS's own CollectiveBuilder gives its fusion callbacks.
        op.tile_description.threadblock_shape = list(fam["tile"])
    body = rt.emit()
    if epi:
        # the procedural name does not tell epilogues apart (and now says the CTA tile): the kernel and its
        # types get the cluster-tile name plus the epilogue
        name = f"{name}_{epi}"
        body = _renamed(body, op.procedural_name(), name)
    if fam.get("epi_tile"):
        # a pinned epilogue subtile (EPI_TILE_AUTO's note) in place of the emitter's EpilogueTileAuto, which the emitter
        # always writes for SM90; the kernel and its types get the name plus "_epi<M>x<N>"
        em, en = fam["epi_tile"]
        want_m = 64 if fam["kernel_schedule"] == "TmaWarpSpecializedPingpong" else 128
        if em != want_m or en % 16 or fam["tile"][0] % em or fam["tile"][1] % en:
            raise RuntimeError(f"{name}: epi_tile {fam['epi_tile']} does not fit {fam['kernel_schedule']} "
                               f"with tile {fam['tile']} (M {want_m}, N a multiple of 16 dividing the tile)")
        if body.count(EPI_TILE_AUTO) != (2 if epi else 1):
            raise RuntimeError(f"{name}: expected EpilogueTileAuto in the builder (and the visitor's descriptor)")
        body = _renamed(body.replace(EPI_TILE_AUTO, f"cute::Shape<cute::_{em}, cute::_{en}>"), name,
                        f"{name}_epi{em}x{en}")
        name = f"{name}_epi{em}x{en}"
    if fam.get("tile_scheduler"):
        # the procedural name does not say the tile scheduler either (co128sk would be co128t's name): the kernel
        # and its types get the name plus "_<scheduler suffix>", so kernel names stay unique in the manifest
        sched = f"{name}_{TILE_SCHEDULERS[fam['tile_scheduler']]['suffix']}"
        body = _renamed(body, name, sched)
        name = sched
    kernel = rt.KernelTemplate.replace("${operation_name}", name).replace(
        "${operation_suffix}", rt.emitter.operation_suffix)
    includes = "".join(f'#include "{inc}"\n' for inc in rt.emitter.includes)
    local = _local_headers(epi, header_dir)
    includes += "".join(f'#include "{h["file"]}"   // hand-written, beside this file\n' for h in local)
    key = registry_key(dtype, fam)
    header = (
        "// GENERATED by scripts/gen_cutlass.py from nvidia-cutlass "
        f"{CUTLASS_VERSION} (cutlass_cppgen). Do not edit.\n"
        f"// registry key: {key}\n"
        f"// kernel: {name}\n"
        f"// regenerate: python scripts/gen_cutlass.py ; verify: python scripts/gen_cutlass.py --check\n"
    )
    src = header + includes + body + kernel
    tile_cta = list(fam["tile"])
    if fam["arch"] >= 90:
        needle = "cute::Shape<cute::_{}, cute::_{}, cute::_{}>".format(*tile_cta)
        if needle not in src:
            raise RuntimeError(f"{key}: emitted CTA tile is not {tile_cta}")
        if epi:
            _check_fused_source(key, src, fam, dtype)
        tag = TILE_SCHEDULERS[fam.get("tile_scheduler", "Default")]["tag"]
        if tag and f"    {tag}\n>;" not in src:
            raise RuntimeError(f"{key}: emitted GemmUniversal does not take {tag}")
    else:
        needle = "cutlass::gemm::GemmShape<{}, {}, {}>".format(*tile_cta)
        if needle not in src or f"GemmIdentityThreadblockSwizzle<{fam['swizzle']}>" not in src:
            raise RuntimeError(f"{key}: emitted tile or swizzle differs from the pinned one")
    warp_tile = [t // w for t, w in zip(tile_cta, fam["warps"])]
    info = {
        "key": key,
        "file": file_name(dtype, fam),
        "kernel": name,
        "kernel_type": f"{name}{rt.emitter.operation_suffix}",
        "api": "cutlass2x_GemmUniversal" if fam["arch"] < 90 else "cutlass3x_GemmUniversal",
        "arch": fam["arch"],
        "dtype": dtype,
        "element_accumulator": "f32",
        "element_epilogue": "f32",
        "layout": dict(LAYOUTS[fam_layout(fam)]["doc"]),
        "layout_tag": fam_layout(fam),
        "epilogue": "LinearCombination: D = alpha*acc + beta*C",
        "tile": tile_cta,
        "warp_tile": warp_tile,
        "warps": list(fam["warps"]),
        "instruction_shape": list(math_inst.instruction_shape),
        "stages": fam["stages"],
        **({"stage_count": "StageCountAutoCarveout (resolves to stages)"} if fam.get("auto_stages") else {}),
        **({"candidate": True} if fam.get("candidate") else {}),
        "cluster": list(fam["cluster"]),
        "swizzle": f"GemmIdentityThreadblockSwizzle<{fam['swizzle']}>" if fam["arch"] < 90 else
                   TILE_SCHEDULERS[fam.get("tile_scheduler", "Default")]["doc"],
        **({"tile_scheduler": fam["tile_scheduler"]} if fam.get("tile_scheduler") else {}),
        **({"epi_tile": list(fam["epi_tile"])} if fam.get("epi_tile") else {}),
        "swizzle_n": fam["swizzle"],
        "kernel_schedule": fam["kernel_schedule"],
        "epilogue_schedule": fam["epilogue_schedule"],
        "alignment": {"A": fam["align"], "B": fam["align"], "C": fam["align"]},
        "threads": 32 * fam["warps"][0] * fam["warps"][1] * fam["warps"][2] if fam["arch"] < 90
                   else None,
        "compile_flags": COMPILE_FLAGS + [f"-arch=sm_{fam['arch']}{'a' if fam['arch'] >= 90 else ''}"],
        **({"element": ELEMENTS[dtype], "math": "tf32 wgmma (operands rounded to TF32 by the TMA loads)"}
           if dtype == "tf32" else {}),
        "sha256": hashlib.sha256(src.encode()).hexdigest(),
        "bytes": len(src.encode()),
    }
    if epi:
        e = EPILOGUES[epi]
        info["epilogue"] = f"EVT: D = {e['expr'].replace('accum', 'acc').replace('bias', 'bias[n]')}"
        info["fusion"] = {"epilogue": epi, "activation": e["activation"], "functor": e["functor"],
                          "torch": e["torch"], "bias": "(N,) vector of D's type, broadcast over the M rows "
                          "(Sm90RowBroadcast, element loads: any element-aligned address; null = zeros)",
                          "compute": "f32", "source_c": None,
                          "tree": "act(plus(acc, bias))" if e["activation"] else "plus(acc, bias)"}
        if local:
            info["local_headers"] = local
    return src, info


def _check_fused_source(key: str, src: str, fam: dict, dtype: str) -> None:
    """What the fused instances' Params builder relies on, checked in the emitted text: the CTA tile in the
    visitor's descriptor, no C operand, the bias a static-stride row broadcast of D's type, the activation's
    functor on fp32, and the tree shape (the bias node's place in the Arguments/Params structs)."""
    e = EPILOGUES[fam["epilogue"]]
    ctype = {"f16": "cutlass::half_t", "bf16": "cutlass::bfloat16_t"}[dtype]
    want = ["EpilogueDescriptor<\n  cute::Shape<_{}, _{}, _{}>".format(*fam["tile"]),
            "using ElementC = void;",
            f"Sm90RowBroadcast<\n    0 /*Stages*/, typename EpilogueDescriptor::TileShape, {ctype}, {ctype},\n"
            "    cute::Stride<cute::Int<0>, cute::Int<1>, cute::Int<0>>",
            "using EVTCompute0 = cutlass::epilogue::fusion::Sm90EVT<\n    Compute0,\n    Accum,\n    Bias>;"]
    if e["functor"]:
        want += [f"Sm90Compute<\n    {e['functor']}, {ctype}, float,",
                 "using EVTCompute1 = cutlass::epilogue::fusion::Sm90EVT<\n    Compute1,\n    EVTCompute0>;",
                 f"cutlass::epilogue::{fam['epilogue_schedule']},\n    EVTCompute1\n"]
    else:
        want += [f"Sm90Compute<\n    cutlass::plus, {ctype}, float,",
                 f"cutlass::epilogue::{fam['epilogue_schedule']},\n    EVTCompute0\n"]
    for w in want:
        if w not in src:
            raise RuntimeError(f"{key}: emitted epilogue visitor lacks {w!r}")


def emit_all(out_dir: Path, header_dir: Path | None = None) -> list[dict]:
    """Write every pinned instance into out_dir; return the manifest entries (without probe data). The
    hand-written FUNCTOR_HEADER is hashed from ``header_dir`` (default: out_dir where it holds one, else OUT_DIR)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if header_dir is None:
        header_dir = out_dir if (out_dir / FUNCTOR_HEADER).is_file() else OUT_DIR
    entries = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_emit_") as scratch:
        os.chdir(scratch)   # compiled_cache.db lands here, never in the repo
        try:
            for fam in FAMILIES:
                for dtype in fam_dtypes(fam):
                    src, info = _emit_one(dtype, fam, header_dir)
                    (out_dir / info["file"]).write_text(src)
                    entries.append(info)
        finally:
            os.chdir(cwd)
    return entries


# --------------------------------------------------------------------------------------------------
# Host layout probe (SM80): CUTLASS's own Params constructor, compiled host-only with nvcc
# --------------------------------------------------------------------------------------------------
_PROBE_MEMBERS = ["problem_size", "grid_tiled_shape", "swizzle_log_tile", "mode", "batch_count",
                  "gemm_k_size", "batch_stride_D", "semaphore", "params_A", "params_B", "params_C",
                  "params_D", "output_op", "ptr_A", "ptr_B", "ptr_C", "ptr_D", "batch_stride_A",
                  "batch_stride_B", "batch_stride_C", "ptr_gather_A_indices",
                  "ptr_gather_B_indices", "ptr_scatter_D_indices"]

# (M, N, K, lda, ldb, ldc, ldd, alpha, beta, ptr_A, ptr_B, ptr_C, ptr_D); the first two measure the
# affine coefficients, the others check them; all are kept as golden dumps for the unit tests.
PROBE_CASES = [
    (256, 512, 128, 128, 136, 512, 520, 1.0, 0.0, 0x10000, 0x20000, 0x30000, 0x40000),
    (256, 512, 128, 192, 256, 640, 776, 1.0, 0.0, 0x10000, 0x20000, 0x30000, 0x40000),
    (1000, 3000, 4104, 4112, 4120, 3008, 3016, 0.5, 0.25,
     0x7f0000001000, 0x7f0000200000, 0x7f0000400000, 0x7f0000600000),
    (1, 3072, 768, 768, 768, 3072, 3072, 2.0, 1.0,
     0x7f0000800000, 0x7f0000a00000, 0x7f0000c00000, 0x7f0000c00000),
]


def _probe_source(entries: list[dict], src_dir: Path) -> str:
    lines = ["#include <cstdio>", "#include <cstring>", "#include <cstdint>", "#include <new>"]
    bodies = []
    for e in entries:
        text = (src_dir / e["file"]).read_text()
        # keep the includes and type definitions; drop the __global__ entry point
        cut = text.index('extern "C"')
        lines.append(text[:cut])
    lines.append("template <typename K> void dump(const char* key, int M, int N, int Kd, int64_t lda,")
    lines.append("    int64_t ldb, int64_t ldc, int64_t ldd, float alpha, float beta,")
    lines.append("    unsigned long long pa, unsigned long long pb, unsigned long long pc,")
    lines.append("    unsigned long long pd) {")
    lines.append("  typename K::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm,")
    lines.append("      cutlass::gemm::GemmCoord(M, N, Kd), 1, {alpha, beta}, (void const*)pa,")
    lines.append("      (void const*)pb, (void const*)pc, (void*)pd, int64_t(0), int64_t(0), int64_t(0), int64_t(0), "
                 "lda, ldb, ldc, ldd);")
    lines.append("  alignas(typename K::Params) unsigned char buf[sizeof(typename K::Params)];")
    lines.append("  std::memset(buf, 0, sizeof(buf));")
    lines.append("  auto* p = new (buf) typename K::Params(args, -1, -1);")
    lines.append("  dim3 g = p->get_grid_dims();")
    lines.append('  std::printf("{\\"key\\": \\"%s\\", \\"size\\": %zu, \\"align\\": %zu, '
                 '\\"smem\\": %zu, \\"threads\\": %d, \\"grid\\": [%u, %u, %u], \\"offsets\\": {",')
    lines.append("      key, sizeof(typename K::Params), alignof(typename K::Params),")
    lines.append("      sizeof(typename K::SharedStorage), int(K::kThreadCount), g.x, g.y, g.z);")
    for i, m in enumerate(_PROBE_MEMBERS):
        sep = "" if i == 0 else ", "
        lines.append(f'  std::printf("{sep}\\"{m}\\": [%td, %zu]", '
                     f"(unsigned char*)&p->{m} - buf, sizeof(p->{m}));")
    lines.append('  std::printf("}, \\"hex\\": \\"");')
    lines.append('  for (size_t i = 0; i < sizeof(buf); ++i) std::printf("%02x", buf[i]);')
    lines.append('  std::printf("\\"}\\n");')
    lines.append("}")
    lines.append("int main() {")
    for e in entries:
        for case in PROBE_CASES:
            M, N, K, lda, ldb, ldc, ldd, al, be, pa, pb, pc, pd = case
            bodies.append(f'  dump<{e["kernel_type"]}>("{e["key"]}", {M}, {N}, {K}, {lda}LL, {ldb}LL, '
                          f"{ldc}LL, {ldd}LL, {al}f, {be}f, {pa}ULL, {pb}ULL, {pc}ULL, {pd}ULL);")
    lines.extend(bodies)
    lines.append("  return 0;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _words(hexstr: str, off: int, size: int) -> list[int]:
    raw = bytes.fromhex(hexstr)[off:off + size]
    return [int.from_bytes(raw[i:i + 8], "little", signed=True) for i in range(0, size, 8)]


def probe_layout(entries: list[dict], src_dir: Path, nvcc: str = "nvcc") -> dict:
    """Compile and run the host probe; return {key: host_params dict}."""
    sm80 = [e for e in entries if e["arch"] < 90]
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_probe_") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text(_probe_source(sm80, src_dir))
        exe = Path(tmp) / "probe"
        cmd = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-O0",
               "-arch=sm_80", "-I", str(cutlass_include_dir()), "-o", str(exe), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode:
            raise RuntimeError("probe compile failed:\n" + r.stderr[-8000:])
        r = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    rows: dict[str, list[dict]] = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        rows.setdefault(d["key"], []).append(d)
    ld_index = {"params_A": 3, "params_B": 4, "params_C": 5, "params_D": 6}
    out = {}
    for key, dumps in rows.items():
        r1, r2 = dumps[0], dumps[1]
        offs = r1["offsets"]
        affine = {}
        for member, li in ld_index.items():
            off, size = offs[member]
            w1, w2 = _words(r1["hex"], off, size), _words(r2["hex"], off, size)
            l1, l2 = PROBE_CASES[0][li], PROBE_CASES[1][li]
            coeffs = []
            for i, (a1, a2) in enumerate(zip(w1, w2)):
                slope, rem = divmod(a2 - a1, l2 - l1)
                inter = a1 - slope * l1
                for case, rr in zip(PROBE_CASES[2:], dumps[2:]):
                    if rem or slope * case[li] + inter != _words(rr["hex"], off, size)[i]:
                        raise RuntimeError(f"{key}.{member}: not affine in the leading dimension")
                coeffs.append([slope, inter])
            affine[member] = coeffs
        out[key] = {
            "status": "probed",
            "params_size": r1["size"],
            "params_align": r1["align"],
            "smem_bytes": r1["smem"],
            "threads": r1["threads"],
            "offsets": {k: v[0] for k, v in offs.items()},
            "sizes": {k: v[1] for k, v in offs.items()},
            "iterator_affine_in_ld": affine,
            "golden": [{"case": list(c), "grid": rr["grid"], "hex": rr["hex"]}
                       for c, rr in zip(PROBE_CASES, dumps)],
        }
    return out


# --------------------------------------------------------------------------------------------------
# Host layout probe (SM90): CUTLASS 3.x to_underlying_arguments with a recording TMA-encode stub
# --------------------------------------------------------------------------------------------------
# The SM90 kernels take GemmUniversal<...>::Params by value (__grid_constant__). CUTLASS fills it on
# the host in GemmKernel::to_underlying_arguments(Arguments, workspace); the only things that need the
# driver are the two TMA descriptors of the mainloop (cuTensorMapEncodeTiled; hw_info.sm_count is passed
# explicitly, so no device query happens). The probe is compiled with CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL,
# so CUTLASS calls cuTensorMapEncodeTiled by name (instead of via cudaGetDriverEntryPointByVersion), and
# it defines that symbol itself: the stub records every argument and writes sm90_stub_pattern(n) (the
# n-th call of a case) into the 128-byte descriptor. The probe is not linked with libcuda and makes no
# CUDA runtime call, so it runs on a machine without a GPU or driver.
#
# Case: (M, N, K, lda, ldb, ldc, ldd, alpha, beta, ptr_A, ptr_B, ptr_C, ptr_D, sm_count,
#        max_swizzle_size, raster) with raster 0 = Heuristic, 1 = AlongM, 2 = AlongN
#        (cutlass::gemm::kernel::detail::RasterOrderOptions). Batch (L) strides are the packed ones
#        (rows * ld), as cutlass::make_cute_packed_stride would give for L = 1.
SM90_PROBE_CASES = [
    (256, 512, 128, 128, 128, 512, 512, 1.0, 0.0, 0x10000, 0x20000, 0x30000, 0x40000, 132, 1, 0),
    (1000, 3000, 4104, 4112, 4120, 3008, 3016, 0.5, 0.25,
     0x7f0000001000, 0x7f0000200000, 0x7f0000400000, 0x7f0000600000, 114, 1, 0),
    (1, 3072, 768, 768, 768, 3072, 3072, 2.0, 1.0,
     0x7f0000800000, 0x7f0000a00000, 0x7f0000c00000, 0x7f0000c00000, 132, 1, 0),
    (4096, 4096, 4096, 4096, 4096, 4096, 4096, 1.0, 0.0,
     0x7e0000000000, 0x7e0100000000, 0x7e0200000000, 0x7e0200000000, 132, 8, 0),
    (8192, 768, 3072, 3072, 3072, 768, 768, 1.0, 0.0,
     0x7d0000000000, 0x7d0100000000, 0x7d0200000000, 0x7d0300000000, 132, 4, 1),
    (17, 24, 8, 8, 8, 24, 24, -1.5, 3.0, 0x1000, 0x2000, 0x3000, 0x4000, 132, 2, 2),
    (2048, 2048, 2048, 2056, 2064, 2072, 2080, 1.0, 1.0,
     0x7c0000000000, 0x7c0100000000, 0x7c0200000000, 0x7c0300000000, 114, 2, 2),
    (128, 8192, 64, 64, 64, 8192, 8192, 1.0, 0.0, 0x10000, 0x800000, 0x4000000, 0x4000000, 132, 1, 0),
    (3000, 1000, 1000, 1000, 1000, 1000, 1000, 0.125, -2.0,
     0x600000000000, 0x600010000000, 0x600020000000, 0x600030000000, 1, 8, 0),
    # FastDivmodU64 with round_up = 1 (21 and 7 tiles), non-power-of-two major tile counts
    (893, 384, 136, 136, 144, 392, 384, 1.0, 0.5, 0x7f0000000010, 0x7f0000100020,
     0x7f0000200002, 0x7f0000300006, 132, 1, 0),
    (833, 3200, 72, 72, 80, 3208, 3200, 0.75, 0.0, 0x10000, 0x20000, 0x30000, 0x30000, 78, 1, 0),
]
# The TMA-epilogue instances read C and write D through TMA descriptors too, so C and D must be 16-byte
# aligned (CUTLASS asserts it while encoding): the same cases with the one misaligned C/D pair moved.
SM90_PROBE_CASES_EPI_TMA = [c if i != 9 else c[:11] + (0x7f0000200010, 0x7f0000300030) + c[13:]
                            for i, c in enumerate(SM90_PROBE_CASES)]

# Params members whose offset and size the probe prints (paths below GemmKernel::Params).
SM90_PROBE_MEMBERS = [
    "mode", "problem_shape", "mainloop", "mainloop.tma_load_a", "mainloop.tma_load_a.tma_desc_",
    "mainloop.tma_load_b", "mainloop.tma_load_b.tma_desc_",
    "mainloop.tma_transaction_bytes", "mainloop.tma_transaction_bytes_mk",
    "mainloop.tma_transaction_bytes_nk", "epilogue", "epilogue.thread", "epilogue.thread.alpha",
    "epilogue.thread.beta", "epilogue.thread.alpha_ptr", "epilogue.thread.beta_ptr",
    "epilogue.thread.alpha_ptr_array", "epilogue.thread.beta_ptr_array",
    "epilogue.ptr_C", "epilogue.dC", "epilogue.ptr_D", "epilogue.dD",
    "hw_info", "hw_info.device_id", "hw_info.sm_count", "hw_info.max_active_clusters", "scheduler",
    "scheduler.divmod_cluster_shape_major_", "scheduler.divmod_cluster_shape_major_.divisor",
    "scheduler.divmod_cluster_shape_major_.shift_right",
    "scheduler.divmod_cluster_shape_minor_", "scheduler.divmod_cluster_shape_minor_.divisor",
    "scheduler.divmod_cluster_shape_minor_.shift_right",
    "scheduler.divmod_batch_", "scheduler.divmod_batch_.divisor", "scheduler.divmod_batch_.multiplier",
    "scheduler.divmod_batch_.shift_right", "scheduler.divmod_batch_.round_up",
    "scheduler.divmod_cluster_blk_major_", "scheduler.divmod_cluster_blk_major_.divisor",
    "scheduler.divmod_cluster_blk_major_.multiplier", "scheduler.divmod_cluster_blk_major_.shift_right",
    "scheduler.divmod_cluster_blk_major_.round_up", "scheduler.blocks_per_problem_",
    "scheduler.log_swizzle_size_", "scheduler.raster_order_", "scheduler.problem_tiles_m_",
    "scheduler.problem_tiles_n_", "scheduler.problem_tiles_l_", "scheduler.cluster_shape_m_",
    "scheduler.cluster_shape_n_", "workspace",
]
# The TMA epilogue (Sm90EpilogueTmaWarpSpecialized) has no C/D pointers and strides of its own: its
# Params are the fusion callbacks' (LinearCombination = Sm90EVT tree: beta broadcast, C fetch, (alpha
# broadcast, acc fetch, multiplies), multiply_add; a cute::tuple of the nodes' Params), the TMA atoms of
# the C load and the D store, and the epilogue's transaction bytes. Names of the leaves and the C++
# expressions that reach them; the other members are those of SM90_PROBE_MEMBERS minus its epilogue.
SM90_EPI_TMA_MEMBERS = {
    "epilogue": "p->epilogue",
    "epilogue.thread": "p->epilogue.thread",
    # the six leaves of the two scalar broadcasts (nvcc does not take cute::get on this tuple): located
    # by gpk_thread_leaves, which builds the fusion Params from sentinel Arguments and finds each one
    "epilogue.thread.beta": None, "epilogue.thread.beta_ptr": None, "epilogue.thread.dBeta": None,
    "epilogue.thread.alpha": None, "epilogue.thread.alpha_ptr": None, "epilogue.thread.dAlpha": None,
    "epilogue.tma_load_c": "p->epilogue.tma_load_c",
    "epilogue.tma_load_c.tma_desc_": "p->epilogue.tma_load_c.tma_desc_",
    "epilogue.tma_store_d": "p->epilogue.tma_store_d",
    "epilogue.tma_store_d.tma_desc_": "p->epilogue.tma_store_d.tma_desc_",
    "epilogue.tma_transaction_bytes": "p->epilogue.tma_transaction_bytes",
}
SM90_EPI_TMA_CONTAINERS = ["epilogue.tma_load_c", "epilogue.tma_store_d"]


# "nn" (B = (K, N) row-major, ldb >= N): the TMA-epilogue cases with ldb moved to N plus the same padding
# the "tn" case had beyond K (so padded and unpadded B rows are both probed).
SM90_PROBE_CASES_NN = [c[:4] + (c[1] + c[4] - c[2],) + c[5:] for c in SM90_PROBE_CASES_EPI_TMA]

# Fused (EVT) instances: no C, no alpha/beta (alpha 1 and beta 0 in the case), one more field, the bias
# address: C's (16-byte aligned) mostly, null in one case (the row broadcast then reads null_default, 0), an
# address 2 bytes off 16 in another (the broadcast loads elements one by one: element alignment suffices).
SM90_PROBE_CASES_FUSED = [c[:7] + (1.0, 0.0) + c[9:] + ({2: 0, 5: c[11] + 2}.get(i, c[11]),)
                          for i, c in enumerate(SM90_PROBE_CASES_EPI_TMA)]


# Stream-K tile scheduler (a family's "tile_scheduler" "StreamK"; MANIFEST ``tile_scheduler``): its Params
# (PersistentTileSchedulerSm90StreamKParams) replace the persistent scheduler's members; the leaves the probe prints.
# FastDivmodU64Pow2: divisor, shift_right; FastDivmodU64: divisor, multiplier, shift_right, round_up; FastDivmod
# (32-bit): divisor, multiplier, shift_right.
_U64P2, _U64, _DIV32 = ("divisor", "shift_right"), ("divisor", "multiplier", "shift_right", "round_up"), \
    ("divisor", "multiplier", "shift_right")
SM90_SK_SCHEDULER_FIELDS = [
    ("divmod_cluster_shape_major_", _U64P2), ("divmod_cluster_shape_minor_", _U64P2),
    ("divmod_batch_", _U64), ("divmod_cluster_blk_major_", _U64), ("divmod_clusters_mnl_", _U64),
    ("divmod_sk_groups_", _U64), ("divmod_sk_units_per_group_", _U64), ("units_per_problem_", ()),
    ("divmod_tiles_per_output_tile_", _DIV32), ("log_swizzle_size_", ()), ("raster_order_", ()),
    ("divmod_splits_", _DIV32), ("big_units_", ()), ("big_groups_", ()), ("reduction_workspace_", ()),
    ("sk_tiles_", ()), ("sk_units_", ()), ("divmod_k_tiles_per_sk_unit_", _DIV32),
    ("divmod_k_tiles_per_sk_big_unit_", _DIV32), ("reduction_mode_", ()), ("divmod_epilogue_subtile_", _U64),
    ("separate_reduction_units_", ()), ("ktile_start_alignment_count_", ()),
]
SM90_SK_SCHEDULER_MEMBERS = ["scheduler"] + [m for f, sub in SM90_SK_SCHEDULER_FIELDS
                                             for m in [f"scheduler.{f}"] + [f"scheduler.{f}.{x}" for x in sub]]
SM90_SK_CONTAINERS = ["scheduler"] + [f"scheduler.{f}" for f, sub in SM90_SK_SCHEDULER_FIELDS if sub]
# cutlass::gemm::kernel::detail::DecompositionMode and ReductionMode
SK_DECOMPOSITION = {"heuristic": 0, "data_parallel": 1, "split_k": 2, "stream_k": 3}
SK_REDUCTION = {"deterministic": 0, "nondeterministic": 1}
# Stream-K cases: an SM90 case (16 fields, C and D 16-byte aligned for the TMA epilogue) plus (splits, decomposition
# mode, reduction mode, workspace address). The Python builder pins DecompositionMode::SplitK (every case here):
# CUTLASS then skips its stream-K heuristic and splits each output tile's k-blocks over `splits` units (clamped to
# sm_count and to the k-blocks per tile; 1: data-parallel, no workspace). GPT-2's few-row shapes (M x K x N
# 512x768x3072: 96 tiles of 12 k-blocks; 512x3072x768: 24 tiles of 48) with several splits, both reduction modes,
# the clamps, swizzle and raster variants, and the other SM90 cases.
_SK_WS = 0x7b0000000000
SM90_PROBE_CASES_SK = [
    (512, 3072, 768, 768, 768, 3072, 3072, 1.0, 0.0, 0x7f0000000000, 0x7f0010000000, 0x7f0020000000,
     0x7f0020000000, 132, 1, 0, sp, 2, red, _SK_WS) for sp, red in ((1, 0), (2, 0), (3, 0), (4, 1), (12, 0))
] + [
    (512, 768, 3072, 3072, 3072, 768, 768, 1.0, 0.0, 0x7f0000000000, 0x7f0010000000, 0x7f0020000000,
     0x7f0020000000, 132, 1, 0, sp, 2, red, _SK_WS) for sp, red in ((2, 0), (4, 0), (5, 1), (8, 0), (200, 0))
] + [
    c + (sp, 2, 0, _SK_WS + 0x100 * i)
    for i, (c, sp) in enumerate(zip(SM90_PROBE_CASES_EPI_TMA, (3, 2, 4, 2, 3, 4, 7, 1, 8, 2, 2)))
]


def sm90_fused(entry: dict) -> dict | None:
    """The fused epilogue of the instance (MANIFEST ``fusion``; family entries: ``epilogue``), or None."""
    if entry.get("fusion"):
        return entry["fusion"]
    if entry.get("epilogue") in EPILOGUES:
        return {"epilogue": entry["epilogue"], "activation": EPILOGUES[entry["epilogue"]]["activation"]}
    return None


def sm90_stream_k(entry: dict) -> bool:
    """Does the instance use CUTLASS's stream-K tile scheduler (MANIFEST / family ``tile_scheduler``)?"""
    return entry.get("tile_scheduler") == "StreamK"


def sm90_probe_kind(entry: dict) -> int:
    """The probe's code path: 0 direct-store epilogue, 1 TMA epilogue (LinearCombination), 2 fused bias
    (tree plus(acc, bias)), 3 fused bias + activation (tree act(plus(acc, bias))), 4 TMA epilogue
    (LinearCombination) with the stream-K tile scheduler."""
    f = sm90_fused(entry)
    if sm90_stream_k(entry):
        if f or not sm90_epi_tma(entry):
            raise RuntimeError(f"{entry.get('key')}: stream-K is probed with the LinearCombination TMA epilogue only")
        return 4
    if f:
        return 3 if f["activation"] else 2
    return int(sm90_epi_tma(entry))


# Fused: the bias node (Sm90RowBroadcast, Params = Arguments = {ptr_row, null_default, dRow}; dRow all static,
# no bytes) inside the tree's Params: Sm90EVT<op, children...> holds {op_0 .. op_k} = children, then the op's,
# so plus(acc, bias) has the bias at op_1, act(plus(acc, bias)) at op_0.op_1.
_FUSED_BIAS_PATH = {2: "op_1", 3: "op_0.op_1"}


def sm90_fused_members(kind: int) -> list[tuple[str, str]]:
    node = f"p->epilogue.thread.{_FUSED_BIAS_PATH[kind]}"
    return [("epilogue", "p->epilogue"), ("epilogue.thread", "p->epilogue.thread"),
            ("epilogue.thread.bias_ptr", f"{node}.ptr_row"),
            ("epilogue.thread.bias_null_default", f"{node}.null_default"),
            ("epilogue.tma_load_c", "p->epilogue.tma_load_c"),
            ("epilogue.tma_load_c.tma_desc_", "p->epilogue.tma_load_c.tma_desc_"),
            ("epilogue.tma_store_d", "p->epilogue.tma_store_d"),
            ("epilogue.tma_store_d.tma_desc_", "p->epilogue.tma_store_d.tma_desc_"),
            ("epilogue.tma_transaction_bytes", "p->epilogue.tma_transaction_bytes")]


def entry_layout(entry: dict) -> str:
    """The instance's operand layout tag ("tn" or "nn"; entries from before the tag are "tn")."""
    return entry.get("layout_tag", LAYOUT)


def sm90_epi_tma(entry: dict) -> bool:
    """Does the instance use CUTLASS's TMA (shared-memory) epilogue? (NoSmemWarpSpecialized and
    EpilogueTransposed store D directly from registers.)"""
    es = str(entry.get("epilogue_schedule") or "")
    return not es.startswith("NoSmem") and es != "EpilogueTransposed"


def sm90_probe_cases(entry: dict) -> list:
    if sm90_stream_k(entry):
        return SM90_PROBE_CASES_SK
    if sm90_fused(entry):
        return SM90_PROBE_CASES_FUSED
    if entry_layout(entry) == "nn":
        return SM90_PROBE_CASES_NN
    # float32 (tf32) C and D need 4-byte alignment even with direct stores: the cases with case 9's 2-byte
    # aligned C/D pair moved (those of the TMA epilogue)
    if sm90_epi_tma(entry) or entry.get("dtype") == "tf32":
        return SM90_PROBE_CASES_EPI_TMA
    return SM90_PROBE_CASES


def sm90_probe_members(entry: dict) -> list[tuple[str, str]]:
    """(name, C++ expression) of every member the probe prints for this instance, in order."""
    if not sm90_epi_tma(entry):
        return [(m, f"p->{m}") for m in SM90_PROBE_MEMBERS]
    out = []
    members = SM90_PROBE_MEMBERS
    if sm90_stream_k(entry):
        members = [m for m in SM90_PROBE_MEMBERS if not m.startswith("scheduler")]
        at = members.index("workspace")
        members = members[:at] + SM90_SK_SCHEDULER_MEMBERS + members[at:]
    for m in members:
        if m == "epilogue" and sm90_fused(entry):
            out += sm90_fused_members(sm90_probe_kind(entry))
        elif m == "epilogue":
            out += list(SM90_EPI_TMA_MEMBERS.items())
        elif not m.startswith("epilogue"):
            out.append((m, f"p->{m}"))
    return out


def sm90_probe_containers(entry: dict) -> list[str]:
    base = SM90_PROBE_CONTAINERS
    if sm90_stream_k(entry):
        base = [c for c in base if not c.startswith("scheduler")] + SM90_SK_CONTAINERS
    return base + (SM90_EPI_TMA_CONTAINERS if sm90_epi_tma(entry) else [])


# Members that hold others (with padding inside); every other member above is a leaf, and the bytes
# no leaf covers are padding, which the kernel never reads (the Python builder leaves them zero).
SM90_PROBE_CONTAINERS = ["mainloop", "mainloop.tma_load_a", "mainloop.tma_load_b", "epilogue", "epilogue.thread",
                         "scheduler", "scheduler.divmod_cluster_shape_major_", "scheduler.divmod_cluster_shape_minor_",
                         "scheduler.divmod_batch_", "scheduler.divmod_cluster_blk_major_"]

_SM90_PROBE_PRELUDE = r"""
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <cstdint>
#include <new>
#include <vector>
#include <cuda.h>

struct GpkEncodeRecord {
  int dtype; unsigned rank; unsigned long long addr;
  unsigned long long dims[5]; unsigned long long strides[4]; unsigned box[5]; unsigned estr[5];
  int interleave, swizzle, l2, oob;
};
static std::vector<GpkEncodeRecord> gpk_records;
static unsigned char gpk_stub_xor = 0;   // the second build's descriptors differ: stale copies show up

// Stands in for the driver: CUTLASS calls it by name (CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL).
extern "C" CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* addr, const cuuint64_t* dims,
    const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* estr,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oob) {
  GpkEncodeRecord r{};
  r.dtype = int(dt); r.rank = rank; r.addr = (unsigned long long)addr;
  for (unsigned i = 0; i < rank && i < 5; ++i) { r.dims[i] = dims[i]; r.box[i] = box[i]; r.estr[i] = estr[i]; }
  for (unsigned i = 0; i + 1 < rank && i < 4; ++i) r.strides[i] = strides[i];
  r.interleave = int(il); r.swizzle = int(sw); r.l2 = int(l2); r.oob = int(oob);
  unsigned n = unsigned(gpk_records.size());
  unsigned char* p = reinterpret_cast<unsigned char*>(map);
  for (unsigned i = 0; i < 128; ++i) p[i] = (unsigned char)(((i * 37u + 11u + n * 101u) & 0xffu) ^ gpk_stub_xor);
  gpk_records.push_back(r);
  return CUDA_SUCCESS;
}
"""

_SM90_PROBE_DUMP = r"""
// Fill the stack below the caller with one byte, so that padding which CUTLASS copies from
// uninitialized temporaries differs between the two builds below as well.
__attribute__((noinline)) static void gpk_dirty_stack(int v) {
  volatile unsigned char junk[1 << 16];
  for (unsigned i = 0; i < sizeof(junk); ++i) junk[i] = (unsigned char)v;
}

// Fused (EVT) instances: the bias node's Arguments inside the tree's (kind 2: plus(acc, bias); 3: act(...))
template <int Kind, class T>
static decltype(auto) gpk_bias_node(T& t) {
  if constexpr (Kind == 2) return (t.op_1); else return (t.op_0.op_1);
}

template <class Op, int Kind>
static void gpk_build(unsigned char* buf, int M, int N, int K, long long lda, long long ldb,
    long long ldc, long long ldd, float alpha, float beta, unsigned long long pa,
    unsigned long long pb, unsigned long long pc, unsigned long long pd, int sms, int swz, int raster,
    unsigned long long pbias, int splits, int decomp, int red, unsigned long long pws, bool* ok, size_t* ws) {
  using namespace cute;
  typename Op::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = typename Op::ProblemShape{M, N, K, 1};
  args.mainloop.ptr_A = reinterpret_cast<typename Op::ElementA const*>(pa);
  get<0>(args.mainloop.dA) = lda; get<2>(args.mainloop.dA) = (long long)M * lda;
  args.mainloop.ptr_B = reinterpret_cast<typename Op::ElementB const*>(pb);
  // B: (N, K) with stride (ldb, 1) ("tn", K-major) or (1, ldb) ("nn", N-major); packed batch stride
  if constexpr (cute::is_static<cute::remove_cvref_t<decltype(get<0>(args.mainloop.dB))>>::value) {
    get<1>(args.mainloop.dB) = ldb; get<2>(args.mainloop.dB) = (long long)K * ldb;
  } else {
    get<0>(args.mainloop.dB) = ldb; get<2>(args.mainloop.dB) = (long long)N * ldb;
  }
  if constexpr (Kind == 2 || Kind == 3) {
    // no alpha, beta or C (ElementC void): the bias row only
    gpk_bias_node<Kind>(args.epilogue.thread).ptr_row = reinterpret_cast<typename Op::ElementD const*>(pbias);
  } else {
    args.epilogue.thread.alpha = alpha;
    args.epilogue.thread.beta = beta;
    args.epilogue.ptr_C = reinterpret_cast<typename Op::ElementC const*>(pc);
    get<0>(args.epilogue.dC) = ldc; get<2>(args.epilogue.dC) = (long long)M * ldc;
  }
  args.epilogue.ptr_D = reinterpret_cast<typename Op::ElementD*>(pd);
  get<0>(args.epilogue.dD) = ldd;
  // the fused (EVT) instances' StrideD has a static batch stride (_0): only the others take a packed one
  if constexpr (!cute::is_static<cute::remove_cvref_t<decltype(get<2>(args.epilogue.dD))>>::value)
    get<2>(args.epilogue.dD) = (long long)M * ldd;
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = sms;
  args.scheduler.max_swizzle_size = swz;
  args.scheduler.raster_order = static_cast<typename Op::TileScheduler::RasterOrderOptions>(raster);
  if constexpr (Kind == 4) {
    // stream-K scheduler Arguments: splits, decomposition and reduction modes
    using TS = typename Op::TileScheduler;
    args.scheduler.splits = splits;
    args.scheduler.decomposition_mode = static_cast<typename TS::DecompositionMode>(decomp);
    args.scheduler.reduction_mode = static_cast<typename TS::ReductionMode>(red);
  }
  *ok = Op::can_implement(args);
  *ws = Op::get_workspace_size(args);
  gpk_records.clear();
  // the workspace address (0 but for the stream-K cases: the other instances' goldens keep a null workspace)
  new (buf) typename Op::Params(Op::to_underlying_arguments(args, reinterpret_cast<void*>(pws)));
}

template <class P, class = void> struct gpk_has_workspace : std::false_type {};
template <class P>
struct gpk_has_workspace<P, std::void_t<decltype(std::declval<P const&>().workspace)>> : std::true_type {};

#define GPK_MEMBER(name, expr) std::printf("%s\"%s\": [%td, %zu]", first ? "" : ", ", name, \
    (unsigned char const*)&(expr) - (unsigned char const*)p, sizeof(expr)); first = false;

template <class P, class = void> struct gpk_has_epi_tma : std::false_type {};
template <class P>
struct gpk_has_epi_tma<P, std::void_t<decltype(std::declval<P const&>().epilogue.tma_store_d)>> : std::true_type {};

// The TMA descriptors inside Params, in the order CUTLASS encodes them: A, B (mainloop), then C, D
// (TMA epilogue only)
template <class Params>
static int gpk_descs(Params const* p, std::ptrdiff_t* d) {
  unsigned char const* b = reinterpret_cast<unsigned char const*>(p);
  d[0] = (unsigned char const*)p->mainloop.tma_load_a.get_tma_descriptor() - b;
  d[1] = (unsigned char const*)p->mainloop.tma_load_b.get_tma_descriptor() - b;
  if constexpr (gpk_has_epi_tma<Params>::value) {
    d[2] = (unsigned char const*)p->epilogue.tma_load_c.get_tma_descriptor() - b;
    d[3] = (unsigned char const*)p->epilogue.tma_store_d.get_tma_descriptor() - b;
    return 4;
  }
  return 2;
}

// TMA epilogue: where alpha, beta, their pointers and batch strides sit in the fusion callbacks' Params.
// The callbacks' own to_underlying_arguments turns Arguments holding six distinct sentinels into Params;
// each sentinel must occur exactly once, at its leaf's offset.
static std::ptrdiff_t gpk_find_once(unsigned char const* b, size_t n, void const* v, size_t len) {
  std::ptrdiff_t at = -1;
  for (size_t i = 0; i + len <= n; ++i)
    if (std::memcmp(b + i, v, len) == 0) {
      if (at >= 0) { std::fprintf(stderr, "sentinel found twice\n"); std::exit(3); }
      at = std::ptrdiff_t(i);
    }
  if (at < 0) { std::fprintf(stderr, "sentinel not found\n"); std::exit(3); }
  return at;
}

template <class Op, class Params>
static void gpk_thread_leaves(Params const* p, bool& first) {
  using namespace cute;
  using FC = typename Op::CollectiveEpilogue::FusionCallbacks;
  typename FC::Arguments a{};
  float alpha = 1.2345678f, beta = -7.6543211f;
  unsigned long long ap = 0x1111222233334440ULL, bp = 0x5555666677778880ULL;
  long long da = 0x0102030405060708LL, db = 0x0a0b0c0d0e0f1011LL;
  a.alpha = alpha; a.beta = beta;
  a.alpha_ptr = reinterpret_cast<float const*>(ap); a.beta_ptr = reinterpret_cast<float const*>(bp);
  get<2>(a.dAlpha) = da; get<2>(a.dBeta) = db;
  auto tp = FC::to_underlying_arguments(typename Op::ProblemShape{1, 1, 1, 1}, a, nullptr);
  static_assert(sizeof(tp) == sizeof(p->epilogue.thread), "fusion Params");
  unsigned char const* b = reinterpret_cast<unsigned char const*>(&tp);
  std::ptrdiff_t base = (unsigned char const*)&(p->epilogue.thread) - (unsigned char const*)p;
  struct { const char* name; void const* v; size_t len; } leaves[] = {
    {"epilogue.thread.beta", &beta, 4}, {"epilogue.thread.beta_ptr", &bp, 8}, {"epilogue.thread.dBeta", &db, 8},
    {"epilogue.thread.alpha", &alpha, 4}, {"epilogue.thread.alpha_ptr", &ap, 8}, {"epilogue.thread.dAlpha", &da, 8}};
  for (auto const& l : leaves) {
    std::printf("%s\"%s\": [%td, %zu]", first ? "" : ", ", l.name,
                base + gpk_find_once(b, sizeof(tp), l.v, l.len), l.len);
    first = false;
  }
}

GPK_MEMBER_FUNCTIONS

template <class Op, int Kind>
static void gpk_dump(const char* key, int idx, int M, int N, int K, long long lda, long long ldb,
    long long ldc, long long ldd, float alpha, float beta, unsigned long long pa,
    unsigned long long pb, unsigned long long pc, unsigned long long pd, int sms, int swz, int raster,
    unsigned long long pbias = 0, int splits = 1, int decomp = 0, int red = 0, unsigned long long pws = 0) {
  using Params = typename Op::Params;
  alignas(Params) static unsigned char b0[sizeof(Params)], b1[sizeof(Params)];
  bool ok; size_t ws;
  // Two builds over different fill bytes: bytes that differ are never written (padding).
  // The stub's descriptors differ between the builds too, so that bytes CUTLASS copies from stale stack
  // temporaries (where a descriptor lay) into the padding of a TMA atom are seen as unwritten.
  std::memset(b1, 0xff, sizeof(Params));
  gpk_dirty_stack(0xff);
  gpk_stub_xor = 0xff;
  gpk_build<Op, Kind>(b1, M, N, K, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, raster, pbias,
                      splits, decomp, red, pws, &ok, &ws);
  std::memset(b0, 0x00, sizeof(Params));
  gpk_dirty_stack(0x00);
  gpk_stub_xor = 0;
  gpk_build<Op, Kind>(b0, M, N, K, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, raster, pbias,
                      splits, decomp, red, pws, &ok, &ws);
  Params const* p = reinterpret_cast<Params const*>(b0);
  dim3 g = Op::get_grid_shape(*p);
  dim3 blk = Op::get_block_shape();
  using CS = typename Op::DispatchPolicy::ClusterShape;
  std::ptrdiff_t descs[4];
  int nd = gpk_descs(p, descs);
  std::printf("{\"key\": \"%s\", \"case\": %d, \"size\": %zu, \"align\": %zu, \"smem\": %d, "
              "\"threads\": %u, \"min_blocks\": %u, \"block\": [%u, %u, %u], \"grid\": [%u, %u, %u], "
              "\"cluster\": [%d, %d, %d], \"can_implement\": %s, \"workspace\": %zu, \"swap_ab\": %s, \"descs\": [",
              key, idx, sizeof(Params), alignof(Params), int(Op::SharedStorageSize),
              unsigned(Op::MaxThreadsPerBlock), unsigned(Op::MinBlocksPerMultiprocessor),
              blk.x, blk.y, blk.z, g.x, g.y, g.z,
              int(cute::size<0>(CS{})), int(cute::size<1>(CS{})), int(cute::size<2>(CS{})),
              ok ? "true" : "false", ws,
              cutlass::gemm::kernel::detail::Has_SwapAB_v<typename Op::CollectiveMainloop> ? "true" : "false");
  for (int j = 0; j < nd; ++j) std::printf("%s%td", j ? ", " : "", descs[j]);
  std::printf("], \"offsets\": {");
  bool first = true;
  if constexpr (Kind == 0) gpk_members_0<Op>(p, first);
  else if constexpr (Kind == 1) gpk_members_1<Op>(p, first);
  else if constexpr (Kind == 2) gpk_members_2<Op>(p, first);
  else if constexpr (Kind == 3) gpk_members_3<Op>(p, first);
  else gpk_members_4<Op>(p, first);
  std::printf("}, \"hex\": \"");
  for (size_t i = 0; i < sizeof(Params); ++i) std::printf("%02x", b0[i]);
  std::printf("\", \"padding\": [");
  first = true;
  for (size_t i = 0; i < sizeof(Params); ++i) {
    bool in_desc = false;
    for (int j = 0; j < nd; ++j) in_desc |= std::ptrdiff_t(i) >= descs[j] && std::ptrdiff_t(i) < descs[j] + 128;
    if (b0[i] != b1[i] && !in_desc) { std::printf("%s%zu", first ? "" : ", ", i); first = false; }
  }
  std::printf("], \"encodes\": [");
  for (size_t j = 0; j < gpk_records.size(); ++j) {
    GpkEncodeRecord const& r = gpk_records[j];
    std::printf("%s{\"dtype\": %d, \"rank\": %u, \"addr\": %llu, \"dims\": [", j ? ", " : "", r.dtype, r.rank, r.addr);
    for (unsigned i = 0; i < r.rank; ++i) std::printf("%s%llu", i ? ", " : "", r.dims[i]);
    std::printf("], \"strides\": [");
    for (unsigned i = 0; i + 1 < r.rank; ++i) std::printf("%s%llu", i ? ", " : "", r.strides[i]);
    std::printf("], \"box\": [");
    for (unsigned i = 0; i < r.rank; ++i) std::printf("%s%u", i ? ", " : "", r.box[i]);
    std::printf("], \"elem_strides\": [");
    for (unsigned i = 0; i < r.rank; ++i) std::printf("%s%u", i ? ", " : "", r.estr[i]);
    std::printf("], \"interleave\": %d, \"swizzle\": %d, \"l2_promotion\": %d, \"oob_fill\": %d}",
                r.interleave, r.swizzle, r.l2, r.oob);
  }
  std::printf("]}\n");
}
"""


def sm90_stub_pattern(n: int) -> bytes:
    """The 128 bytes the probe's encode stub writes for its n-th call within one case."""
    return bytes((i * 37 + 11 + n * 101) & 0xFF for i in range(128))


def _sm90_probe_source(entries: list[dict], src_dir: Path) -> str:
    includes, bodies = [], []
    for i, e in enumerate(entries):
        text = (src_dir / e["file"]).read_text()
        head = text[:text.index('extern "C"')]
        rest = []
        for line in head.splitlines():
            if line.startswith("#include"):
                if line not in includes:
                    includes.append(line)
            else:
                rest.append(line)
        bodies.append(f"namespace gpk_i{i} {{\n" + "\n".join(rest) + f"\n}}  // namespace gpk_i{i}\n")
    # GemmUniversal's ping-pong Params has no workspace pointer (the cooperative one has): printed only
    # where the member exists. Kind 0: direct-store epilogue, 1: TMA epilogue.
    funcs = []
    for kind, probe_entry in ((0, {"epilogue_schedule": "NoSmemWarpSpecialized"}),
                              (1, {"epilogue_schedule": "TmaWarpSpecialized"}),
                              (2, {"epilogue_schedule": "TmaWarpSpecialized", "epilogue": "bias"}),
                              (3, {"epilogue_schedule": "TmaWarpSpecialized", "epilogue": "bias_gelu"}),
                              (4, {"epilogue_schedule": "TmaWarpSpecializedCooperative", "tile_scheduler": "StreamK"})):
        lines = []
        for m, x in sm90_probe_members(probe_entry):
            if m == "workspace":
                lines.append('if constexpr (gpk_has_workspace<Params>::value) '
                             '{ GPK_MEMBER("workspace", p->workspace) }')
            elif x is None:
                if m == "epilogue.thread.beta":
                    lines.append("gpk_thread_leaves<Op>(p, first);")
            else:
                lines.append(f'GPK_MEMBER("{m}", {x})')
        body = "\n  ".join(lines)
        funcs.append("template <class Op, class Params>\n"
                     f"static void gpk_members_{kind}(Params const* p, bool& first) {{\n"
                     f"  {body}\n}}\n")
    main = ["int main() {"]
    for i, e in enumerate(entries):
        for j, c in enumerate(sm90_probe_cases(e)):
            M, N, K, lda, ldb, ldc, ldd, al, be, pa, pb, pc, pd, sms, swz, ras = c[:16]
            if sm90_stream_k(e):     # no bias; splits, decomposition, reduction, workspace address
                bias = ", 0ULL, {}, {}, {}, {}ULL".format(*c[16:20])
            else:
                bias = f", {c[16]}ULL" if len(c) > 16 else ""
            main.append(f'  gpk_dump<gpk_i{i}::{e["kernel_type"]}, {sm90_probe_kind(e)}>'
                        f'("{e["key"]}", {j}, {M}, {N}, {K}, '
                        f"{lda}LL, {ldb}LL, {ldc}LL, {ldd}LL, {al!r}f, {be!r}f, {pa}ULL, {pb}ULL, "
                        f"{pc}ULL, {pd}ULL, {sms}, {swz}, {ras}{bias});")
    main += ["  return 0;", "}"]
    return ("\n".join(includes) + "\n" + _SM90_PROBE_PRELUDE + "\n".join(bodies)
            + _SM90_PROBE_DUMP.replace("GPK_MEMBER_FUNCTIONS", "\n".join(funcs)) + "\n".join(main) + "\n")


def probe_sm90_run(entries: list[dict], src_dir: Path, nvcc: str = "nvcc") -> list[dict]:
    """Compile (host code only matters; ~1-2 min with nvcc on two cores) and run the SM90 probe;
    return its JSON rows."""
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_probe90_") as tmp:
        src = Path(tmp) / "probe90.cu"
        src.write_text(_sm90_probe_source(entries, src_dir))
        exe = Path(tmp) / "probe90"
        # No -DNDEBUG: CUTLASS's host-side asserts (TMA address/stride/box limits) stay armed.
        cmd = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-O0", "-arch=sm_90a",
               "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1", "-I", str(cutlass_include_dir()),
               # the hand-written FUNCTOR_HEADER that fused instances include: beside them (else the package's)
               "-I", str(src_dir), "-I", str(OUT_DIR), "-o", str(exe), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode:
            raise RuntimeError("SM90 probe compile failed:\n" + r.stderr[-12000:])
        r = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
        if r.returncode:
            raise RuntimeError(f"SM90 probe failed ({r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]

def _ranges(idx: list[int]) -> list[list[int]]:
    """[3, 4, 5, 9] -> [[3, 6], [9, 10]] (half-open byte ranges)."""
    out: list[list[int]] = []
    for i in idx:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return out


def _zero_bytes(hexstr: str, where: list[int]) -> str:
    raw = bytearray.fromhex(hexstr)
    for i in where:
        raw[i] = 0
    return raw.hex()


def _probe_selected(key: str, families: list[str]) -> bool:
    """Does a --families item name this key? An item is a family ("ppt"), layout/family ("nn/ppt"),
    dtype/layout/family ("tf32/tn/ppt") or a dtype alone ("tf32")."""
    _, dtype, layout, family, _ = key.split("/")
    return bool({family, f"{layout}/{family}", f"{dtype}/{layout}/{family}", dtype} & set(families))


def probe_sm90_layout(entries: list[dict], src_dir: Path, nvcc: str = "nvcc",
                      families: list[str] | None = None) -> dict:
    """Run the SM90 probe; return {key: host_params} after checking that everything the Python builder
    takes as a per-instance constant (layout, TMA settings, transaction bytes) is the same in every case.
    ``families``: probe only these (the others keep their recorded host_params)."""
    sm90 = [e for e in entries if e["arch"] >= 90 and (families is None or _probe_selected(e["key"], families))]
    rows = probe_sm90_run(sm90, src_dir, nvcc)
    by_key: dict[str, list[dict]] = {}
    for r in rows:
        by_key.setdefault(r["key"], []).append(r)
    out = {}
    for e in sm90:
        dumps = sorted(by_key.get(e["key"], []), key=lambda r: r["case"])
        cases = sm90_probe_cases(e)
        epi_tma = sm90_epi_tma(e)
        fused = sm90_fused(e)
        containers = sm90_probe_containers(e)
        if len(dumps) != len(cases):
            raise RuntimeError(f"{e['key']}: probe printed {len(dumps)} cases")
        r0 = dumps[0]
        fixed = ("size", "align", "smem", "threads", "min_blocks", "block", "cluster", "offsets",
                 "descs", "workspace", "swap_ab")
        sk = sm90_stream_k(e)
        if sk:
            # the stream-K workspace (partials and barriers) depends on the problem and the splits: per golden
            fixed = tuple(f for f in fixed if f != "workspace")
        for r in dumps:
            for f in fixed:
                if r[f] != r0[f]:
                    raise RuntimeError(f"{e['key']}: {f} differs between probe cases")
            if not r["can_implement"]:
                raise RuntimeError(f"{e['key']}: CUTLASS cannot implement probe case {r['case']}")
            n_desc = (3 if fused else 4) if epi_tma else 2
            # the probe lists the C atom's descriptor offset even when nothing is encoded for it (fused)
            if len(r["encodes"]) != n_desc or len(r["descs"]) != (4 if epi_tma else 2):
                raise RuntimeError(f"{e['key']}: expected {n_desc} TMA descriptors, CUTLASS made {len(r['encodes'])}")
        offs = r0["offsets"]
        covered = set()
        for m, (off, size) in offs.items():
            if m not in containers:
                covered.update(range(off, off + size))
        padding = sorted(set(range(r0["size"])) - covered)
        for r in dumps:
            if not set(r["padding"]) <= set(padding):
                raise RuntimeError(f"{e['key']}: a byte the probe saw unwritten lies inside a member")
        enc0 = r0["encodes"]
        tma = {"data_type": enc0[0]["dtype"], "rank": enc0[0]["rank"],
               "box_A": enc0[0]["box"], "box_B": enc0[1]["box"], "elem_strides": enc0[0]["elem_strides"],
               "interleave": enc0[0]["interleave"], "swizzle": enc0[0]["swizzle"],
               "l2_promotion": enc0[0]["l2_promotion"], "oob_fill": enc0[0]["oob_fill"]}
        b_own = {f: enc0[1][f] for f in ("dtype", "rank", "elem_strides", "interleave", "swizzle",
                                          "l2_promotion", "oob_fill") if enc0[1][f] != enc0[0][f]}
        if b_own:
            # B's settings differ from A's (none of the pinned instances so far: an N-contiguous "nn" B
            # keeps A's 128-byte swizzle, only its box differs): record B's own, the builder takes them
            tma["B"] = {("data_type" if f == "dtype" else f): enc0[1][f] for f in
                        ("dtype", "rank", "elem_strides", "interleave", "swizzle", "l2_promotion", "oob_fill")}
        # encode order of the epilogue's descriptors: C load, D store; fused (ElementC void): D store only
        epi_encodes = ((2, "D"),) if fused else ((2, "C"), (3, "D"))
        if epi_tma:
            # the epilogue's C load and D store: their own box (the epilogue subtile) and swizzle
            tma["epilogue"] = {name: {"data_type": enc0[j]["dtype"], "rank": enc0[j]["rank"], "box": enc0[j]["box"],
                                      "elem_strides": enc0[j]["elem_strides"], "interleave": enc0[j]["interleave"],
                                      "swizzle": enc0[j]["swizzle"], "l2_promotion": enc0[j]["l2_promotion"],
                                      "oob_fill": enc0[j]["oob_fill"]} for j, name in epi_encodes}
        for r in dumps:
            for j, enc in enumerate(r["encodes"]):
                for f in ("dtype", "rank", "elem_strides", "interleave", "swizzle", "l2_promotion", "oob_fill"):
                    if enc[f] != enc0[j][f]:
                        raise RuntimeError(f"{e['key']}: TMA {f} depends on the problem")
                if j < 2 and enc["box"] != tma["box_A" if j == 0 else "box_B"]:
                    raise RuntimeError(f"{e['key']}: TMA box depends on the problem")
                if j >= 2 and enc["box"] != enc0[j]["box"]:
                    raise RuntimeError(f"{e['key']}: epilogue TMA box depends on the problem")
        raw0 = bytes.fromhex(r0["hex"])
        tx = [int.from_bytes(raw0[offs[m][0]:offs[m][0] + 4], "little") for m in
              ("mainloop.tma_transaction_bytes", "mainloop.tma_transaction_bytes_mk",
               "mainloop.tma_transaction_bytes_nk")]
        descs = dict(zip("ABCD", r0["descs"]))
        extra = {}
        if fused:
            # ElementC void: the C atom stays value-initialized (its descriptor all zero bytes, a leaf the
            # builder leaves zero), nothing is encoded for it; D is the third encode
            del descs["C"]
        if epi_tma:
            ep = offs["epilogue.tma_transaction_bytes"][0]
            extra["epilogue_tma_transaction_bytes"] = int.from_bytes(raw0[ep:ep + 4], "little")
            # CUTLASS encodes the C descriptor whatever beta is (ElementC is not void); the kernel skips the
            # C loads while beta == 0 (the LinearCombination tree's is_C_load_needed)
            extra["c_descriptor_when_beta_0"] = ("not encoded: no C operand (ElementC void)" if fused else
                                                 "encoded (a valid C address is needed; C is not read)")
        if fused:
            extra["fusion"] = {"bias_node": "epilogue.thread." + _FUSED_BIAS_PATH[sm90_probe_kind(e)],
                               "stub_pattern_D": 2}
        if sk:
            extra["stream_k"] = {
                "case_fields": "the SM90 case's 16, then splits, decomposition mode, reduction mode, workspace address",
                "decomposition_modes": SK_DECOMPOSITION, "reduction_modes": SK_REDUCTION,
                "workspace": "GemmKernel::get_workspace_size per golden (golden 'workspace'): the epilogue's (0), then "
                             "the scheduler's: fp32 partials of every output tile, then one int barrier per tile and "
                             "MMA warpgroup (each part rounded up to 128 bytes); to_underlying_arguments stores the "
                             "address in Params.workspace and scheduler.reduction_workspace_; initialize_workspace "
                             "zeroes the barriers before each launch"}
        out[e["key"]] = {
            "status": "probed",
            "probe": "gen_cutlass.py --probe-sm90: GemmKernel::to_underlying_arguments with a recording "
                     "cuTensorMapEncodeTiled stub",
            "params_size": r0["size"],
            "params_align": r0["align"],
            "smem_bytes": r0["smem"],
            "threads": r0["threads"],
            "min_blocks_per_sm": r0["min_blocks"],
            "block": r0["block"],
            "cluster": r0["cluster"],
            "workspace_bytes": "per golden" if sk else r0["workspace"],
            "offsets": {k: v[0] for k, v in offs.items()},
            "sizes": {k: v[1] for k, v in offs.items()},
            "containers": containers,
            "padding": _ranges(padding),
            "descriptors": descs,
            "tma": tma,
            "tma_transaction_bytes": tx,
            **extra,
            # CUTLASS's mainloop swaps A and B (tf32 "nn": B through the first descriptor, problem shape and
            # tiles (N, M)); recorded only where it does, so the other entries keep their host_params
            **({"swap_ab": True} if r0["swap_ab"] else {}),
            "stub_pattern": "byte i of the n-th descriptor of a case = (37 * i + 11 + 101 * n) & 0xff",
            # padding bytes zeroed: CUTLASS leaves stack leftovers there (ASLR-dependent); the kernel never
            # reads them, and the Python builder writes zeros, so the goldens compare whole
            "golden": [{"case": list(c), "grid": r["grid"], "hex": _zero_bytes(r["hex"], padding),
                        "encodes": r["encodes"], **({"workspace": r["workspace"]} if sk else {})}
                       for c, r in zip(cases, dumps)],
        }
    return out

# --------------------------------------------------------------------------------------------------
# Manifest and --check
# --------------------------------------------------------------------------------------------------
def _settings() -> dict:
    return {"cutlass_version": CUTLASS_VERSION, "python_hash_seed": HASH_SEED,
            "nvcc_version_for_emitter": NVCC_VERSION_FOR_EMITTER,
            "option_registry_cc": OPTION_REGISTRY_CC,
            "layouts": {tag: v["doc"]["B"] for tag, v in LAYOUTS.items()},
            "compile_flags": COMPILE_FLAGS, "compile_test_key": COMPILE_TEST_KEY,
            "include_dirs": ["<cutlass_library>/source/include", "<cuda>/include"]}


def _comparable(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "host_params"}


def write(out_dir: Path, probe: bool, probe_sm90: bool = False, families: list[str] | None = None) -> dict:
    old = {}
    if (out_dir / MANIFEST).is_file():
        old = {e["key"]: e for e in json.loads((out_dir / MANIFEST).read_text())["instances"]}
    entries = emit_all(out_dir)
    probed = probe_layout(entries, out_dir) if probe else {}
    if probe_sm90:
        probed.update(probe_sm90_layout(entries, out_dir, families=families))
    for e in entries:
        if e["key"] in probed:
            e["host_params"] = probed[e["key"]]
        elif e["key"] in old and old[e["key"]]["sha256"] == e["sha256"] and "host_params" in old[e["key"]]:
            e["host_params"] = old[e["key"]]["host_params"]
        elif e["arch"] >= 90:
            e["host_params"] = {"status": "not probed: run scripts/gen_cutlass.py --probe-sm90"}
        else:
            e["host_params"] = {"status": "not probed: run scripts/gen_cutlass.py --probe"}
    manifest = {"generator": "scripts/gen_cutlass.py", "settings": _settings(), "instances": entries}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def check(out_dir: Path) -> int:
    path = out_dir / MANIFEST
    if not path.is_file():
        print(f"missing {path}")
        return 1
    manifest = json.loads(path.read_text())
    bad = 0
    if manifest.get("settings") != _settings():
        print("settings in MANIFEST.json differ from the script's pinned settings")
        bad += 1
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_check_") as tmp:
        fresh = {e["key"]: e for e in emit_all(Path(tmp), header_dir=out_dir)}
    recorded = {e["key"]: e for e in manifest["instances"]}
    for key in sorted(set(fresh) | set(recorded)):
        f, r = fresh.get(key), recorded.get(key)
        if f is None or r is None:
            print(f"{key}: {'not emitted any more' if f is None else 'missing from MANIFEST.json'}")
            bad += 1
            continue
        if _comparable(f) != _comparable(r):
            print(f"{key}: regenerated entry differs from MANIFEST.json")
            bad += 1
        on_disk = out_dir / r["file"]
        if not on_disk.is_file() or hashlib.sha256(on_disk.read_bytes()).hexdigest() != r["sha256"]:
            print(f"{key}: {r['file']} on disk does not match its recorded sha256")
            bad += 1
    print(f"check: {len(fresh)} instances, {bad} mismatches")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("--probe", action="store_true", help="record the SM80 Params layout (needs nvcc)")
    ap.add_argument("--probe-sm90", action="store_true",
                    help="record the SM90 Params layout and TMA encode arguments (needs nvcc, no GPU)")
    ap.add_argument("--families", default=None,
                    help="with --probe-sm90: comma-separated SM90 families to probe (default: all)")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.check:
        return check(args.out)
    fams = args.families.split(",") if args.families else None
    manifest = write(args.out, args.probe, args.probe_sm90, fams)
    for e in manifest["instances"]:
        print(f"{e['key']:32s} {e['file']:36s} {e['bytes']:6d} B  {e['host_params']['status']}")
    return 0


if __name__ == "__main__":
    _force_hash_seed()
    sys.exit(main())
