"""Launch arguments for the emitted SM90 CUTLASS GEMM instances (hand-written, not generated).

An SM90 instance (CUTLASS 3.x ``GemmUniversal``, TMA warp-specialized cooperative, persistent tile
scheduler) takes one ``__grid_constant__ GemmKernel::Params`` by value. CUTLASS builds it on the host in
``GemmKernel::to_underlying_arguments``; this module repeats that in Python:

* problem shape, mode, epilogue (alpha, beta, C/D pointers and strides), hardware info and the
  persistent tile scheduler (tile counts, swizzle, raster order, FastDivmodU64 magic numbers) are
  arithmetic, done here;
* the two TMA descriptors of the mainloop (A and B, 128 bytes each) come from the driver's
  ``cuTensorMapEncodeTiled``; ``build_sm90_launch`` calls an ``encode`` callable with exactly the
  arguments CUTLASS passes (``tma.encode_tiled`` is the real one, tests pass a recording stub).
* instances with CUTLASS's TMA epilogue (``epi_tma``: families "ppt" and "coopt"; Params of 1792 bytes)
  have two more descriptors, C (TMA load) and D (TMA store), encoded after A and B; their epilogue
  Params hold no C/D pointers or strides, only the LinearCombination scalars (alpha, beta, their null
  pointers and zero batch strides), the two TMA atoms and the epilogue's transaction bytes. CUTLASS
  encodes the C descriptor whatever beta is; with beta == 0 the kernel never loads C (any valid,
  16-byte aligned address of an (M, N) tensor with stride ldc does, e.g. D's).

* fused-epilogue instances (``fused_of``: MANIFEST ``fusion``; families "ppt_bias", "ppt_bias_gelu",
  "ppt_bias_gelu_tanh", "ppt_bias_relu", "ppt_bias_silu", "tn" only) compute D = act(acc + bias[n]) with an
  epilogue visitor tree (no C operand, no alpha or beta): their Params are the TMA epilogue's with the C atom
  left zero (nothing encoded for it: the encodes are A, B, D), and the fusion callbacks' Params reduced to the
  bias row broadcast's pointer and its null default (0: a null bias reads as zeros, i.e. act(acc)).

* the operand layout is the instance's (``layout_of``: MANIFEST ``layout_tag``): "tn" takes B as the (N, K)
  row-major weight (D = A @ B^T), "nn" (families ppt and coopt) as (K, N) row-major, N contiguous
  (D = A @ B, matmul's layout); only B's encode arguments (dims, strides, box) and the unsupported rules
  (N and ldb multiples of 8, ldb >= N) differ, the Params layout is the same.

* stream-K instances (``is_stream_k``: MANIFEST ``tile_scheduler`` "StreamK", candidate "co128sk"): the scheduler
  Params are CUTLASS's PersistentTileSchedulerSm90StreamKParams, built here for its split-K decomposition only
  (``splits``, ``reduction``; the grid a whole wave, never truncated), and GemmKernel::Params.workspace holds a
  global workspace's address (``sm90_workspace``: fp32 partial tiles and reduction barriers; the barriers must be
  zero before each launch, launch_sm90 clears them).

* TF32 instances (registry dtype "tf32": float32 A, B, C, D, TF32 wgmma, float32 accumulation): element size 4,
  so the 16-byte TMA alignment is 4 elements (K, N and the leading dimensions multiples of 4); the TMA data
  types, boxes and swizzles are CUTLASS's (probed). Their "nn" instances swap A and B (``swaps_ab``).

Member offsets, sizes, shared memory, threads and the TMA settings (data type, box, swizzle, L2
promotion) were measured by ``scripts/gen_cutlass.py --probe-sm90`` (CUTLASS's own host code with a
stub encoder) and are read from MANIFEST.json; ``tests/kernels/test_cutlass_sm90_params.py`` checks the
bytes made here against the probe's dumps byte for byte. Nothing here touches the GPU or imports CuPy.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from .params import _log_tile
from .params import instance, load_manifest  # noqa: F401  (re-exported for callers)

# bytes per element of the instance's dtype ("tf32": float32 in memory, TF32 multiplies)
_ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4}
_GEMM_MODE_KGEMM = 0            # cutlass::gemm::GemmUniversalMode::kGemm
RASTER_OPTIONS = {"heuristic": 0, "along_m": 1, "along_n": 2}   # RasterOrderOptions
_RASTER_ALONG_M, _RASTER_ALONG_N = 0, 1                          # RasterOrder
_TMA_ALIGN_BYTES = 16           # TMA: global address and every byte stride multiple of 16
_TMA_MAX_STRIDE = 1 << 40
_TMA_MAX_DIM = 1 << 32

# encode(out, offset, data_type, rank, address, dims, strides, box, elem_strides, interleave, swizzle,
#        l2_promotion, oob_fill) writes the 128-byte CUtensorMap into out[offset:offset + 128].
# strides are the byte strides of dims 1..rank-1 (dim 0 is contiguous), as cuTensorMapEncodeTiled takes them.
Encoder = Callable[..., None]


@dataclass(frozen=True)
class LaunchArgs:
    kernel: str                       # extern "C" name in the emitted .cu
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int]     # (1, 1, 1): ordinary launch; else a cluster launch of this shape
    shared_mem: int                   # dynamic shared memory bytes (also the max-dynamic-smem attribute)
    params: bytes                     # GemmKernel::Params, the kernel's only argument
    # stream-K instances (``is_stream_k``) with splits > 1: the global workspace the Params point at (bytes; 0: none)
    # and the (offset, bytes) of it that must be zero before every launch (the reduction barriers, as CUTLASS's
    # initialize_workspace clears them); the fp32 partials need no clearing (the first split stores, the others add)
    workspace_bytes: int = 0
    workspace_zero: tuple[int, int] = (0, 0)
    workspace: int = 0                # its device address (as in the Params)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


def _log2_floor(x: int) -> int:
    return x.bit_length() - 1 if x > 0 else 0


def fast_divmod_u64(divisor: int) -> tuple[int, int, int, int]:
    """cutlass::FastDivmodU64(divisor): (divisor, multiplier, shift_right, round_up)."""
    if divisor == 0:
        return 0, 0, 0, 0
    shift = _log2_floor(divisor)
    if divisor & (divisor - 1) == 0:
        return divisor, 0, shift, 0
    p = 1 << shift
    mask = (1 << 64) - 1
    multiplier_lo = ((p << 64) // divisor) & mask
    multiplier = (((p << 64) | p) // divisor) & mask
    return divisor, multiplier, shift, int(multiplier_lo == multiplier)


def _log_swizzle(tiles_m: int, tiles_n: int, max_swizzle: int) -> int:
    # PersistentTileSchedulerSm90Params::get_log_swizzle_size: the SM80 swizzle's thresholds, on the shorter side
    return _log_tile(max_swizzle, min(tiles_m, tiles_n))


_MAX_SM_PER_GPC = 18   # CUTLASS's GH100 model: 8 GPCs of up to 9 TPCs (18 SMs)


def max_cta_occupancy(cluster_size: int, sm_count: int) -> int:
    """cutlass::gemm::kernel::detail::get_max_cta_occupancy(18, cluster, sm_count): the CTAs of whole
    clusters that fit the GPCs CUTLASS assumes (18 SMs each, the remainder as one more GPC), capped at
    sm_count."""
    gpcs = 1 if sm_count < _MAX_SM_PER_GPC else sm_count // _MAX_SM_PER_GPC
    ctas = gpcs * (_MAX_SM_PER_GPC - _MAX_SM_PER_GPC % cluster_size)
    residual = 0 if sm_count < _MAX_SM_PER_GPC else sm_count % _MAX_SM_PER_GPC
    ctas += residual - residual % cluster_size
    return min(sm_count, ctas)


def _grid_shape(order: int, total: int, cm: int, cn: int, sm_count: int,
                truncate: bool = True) -> tuple[int, int, int]:
    """PersistentTileSchedulerSm90Params::get_grid_shape with hw_info.max_active_clusters == 0 (CUTLASS's
    GPC heuristic, not an occupancy query) and truncation by the problem size (``truncate``; the stream-K
    scheduler asks for none: a whole wave of CTAs whatever the tile count). The grid's x extent is a
    multiple of cluster M, its y extent of cluster N (a cluster launch needs that)."""
    cap = (lambda a, b: min(a, b)) if truncate else (lambda a, b: a)
    if cm * cn == 1:
        ctas = cap(sm_count, total)
        return (1, ctas, 1) if order == _RASTER_ALONG_N else (ctas, 1, 1)
    ctas = max_cta_occupancy(cm * cn, sm_count)
    if order == _RASTER_ALONG_N:
        return (cm, cap(ctas // cm, total // cm), 1)
    return (cap(ctas // cn, total // cn), cn, 1)


def sm90_schedule(entry: dict, m: int, n: int, sm_count: int, max_swizzle: int = 1,
                  raster: str = "heuristic") -> dict:
    """The persistent tile scheduler's parameters and the launch grid (any cluster shape, L = 1)."""
    tm, tn, _ = entry["tile"]
    cm, cn, _ = entry["cluster"]
    # get_tiled_cta_shape_mnl: CTA tiles rounded up to whole clusters
    blocks_m = _ceil_div(_ceil_div(m, tm), cm) * cm
    blocks_n = _ceil_div(_ceil_div(n, tn), cn) * cn
    log_sw = _log_swizzle(blocks_m, blocks_n, max_swizzle)
    blocks_m = _round_up(blocks_m, (1 << log_sw) * cm)
    blocks_n = _round_up(blocks_n, (1 << log_sw) * cn)
    opt = RASTER_OPTIONS[raster]
    if opt == RASTER_OPTIONS["heuristic"]:
        order = _RASTER_ALONG_M if blocks_n > blocks_m else _RASTER_ALONG_N
    else:
        order = _RASTER_ALONG_N if opt == RASTER_OPTIONS["along_n"] else _RASTER_ALONG_M
    total = blocks_m * blocks_n
    if order == _RASTER_ALONG_N:
        major, minor, blk_major = cn, cm, blocks_n // cn
    else:
        major, minor, blk_major = cm, cn, blocks_m // cm
    grid = _grid_shape(order, total, cm, cn, sm_count, truncate=not is_stream_k(entry))
    return {"blocks_m": blocks_m, "blocks_n": blocks_n, "log_swizzle": log_sw, "raster_order": order,
            "blocks_per_problem": total, "divmod_batch": fast_divmod_u64(total),
            "divmod_major": (major, _log2_floor(major)), "divmod_minor": (minor, _log2_floor(minor)),
            "divmod_blk_major": fast_divmod_u64(blk_major), "tiles": (blocks_m // cm, blocks_n // cn, 1),
            "grid": grid}


# ---- stream-K tile scheduler (PersistentTileSchedulerSm90StreamK), split-K decomposition only ----------------------
# cutlass::gemm::kernel::detail::DecompositionMode / ReductionMode
_DECOMPOSITION_SPLIT_K = 2
REDUCTION_MODES = {"deterministic": 0, "nondeterministic": 1}
_L2_LINE = 128                  # CUTLASS rounds each workspace part up to a 128-byte L2 line
_WORKSPACE_ALIGN = 16           # cutlass::MinWorkspaceAlignment
_BARRIER_BYTES = 4              # one int per (output tile, MMA warpgroup): NamedBarrierManager's T
_ACC_BYTES = 4                  # fp32 partial accumulators


def is_stream_k(entry: dict) -> bool:
    """Does the instance use CUTLASS's stream-K tile scheduler (MANIFEST ``tile_scheduler`` "StreamK")?

    Its Params hold the stream-K scheduler's fields (PersistentTileSchedulerSm90StreamKParams) and a global
    workspace address; this module builds them for DecompositionMode::SplitK only (``splits``): each output tile's
    k-blocks are split over ``splits`` work units (CTAs of a persistent, never truncated, grid of one wave), the
    first stores its fp32 partial tile in the workspace, the others add theirs in k order (deterministic reduction,
    each waiting for its predecessor on a per-tile barrier; nondeterministic: in any order after the first), and the
    last split adds the sum to its accumulators and runs the epilogue. splits 1: data-parallel, no workspace."""
    return entry.get("tile_scheduler") == "StreamK"


def _fast_divmod_32(divisor: int) -> tuple[int, int, int]:
    """cutlass::FastDivmod(divisor) (32-bit): (divisor, multiplier, shift_right); 1 keeps multiplier 0."""
    if divisor == 1:
        return 1, 0, 0
    log2 = (divisor - 1).bit_length()          # ceil(log2(divisor)) (find_log2 rounds up)
    p = 31 + log2
    return divisor, ((1 << p) + divisor - 1) // divisor, p - 32


def split_k_splits(entry: dict, k: int, sm_count: int, splits: int) -> int:
    """The splits CUTLASS's split-K decomposition uses (adjust_split_count): the caller's, at most sm_count and at
    most the k-blocks per output tile (ceil(K / tile_k))."""
    if splits < 1:
        raise ValueError("splits must be at least 1")
    return max(1, min(splits, sm_count, _ceil_div(k, entry["tile"][2])))


def _mma_warp_groups(entry: dict) -> int:
    # warp-specialized kernels: one producer warpgroup, the rest MMA (cooperative: 384 threads, 2 MMA warpgroups)
    return entry["host_params"]["threads"] // 128 - 1


def sm90_workspace(entry: dict, m: int, n: int, k: int, sm_count: int, splits: int = 1, max_swizzle: int = 1,
                   raster: str = "heuristic") -> dict:
    """The global workspace a stream-K instance needs for a split-K launch (GemmKernel::get_workspace_size), and the
    part initialize_workspace zeroes before each launch.

    {"splits": the splits CUTLASS uses, "bytes": total, "zero": (offset, bytes)}: the epilogue's part (0 bytes for the
    TMA epilogue), then the scheduler's: the fp32 partials of every output tile (tile_m x tile_n x 4 bytes each),
    rounded up to 128 bytes, then one int barrier per output tile and MMA warpgroup, rounded up to 128 bytes (the
    part to zero); the total rounded up to 16 bytes. Nothing (0 bytes) when the splits come to 1 or the instance has
    no stream-K scheduler."""
    if not is_stream_k(entry):
        return {"splits": 1, "bytes": 0, "zero": (0, 0)}
    eff = split_k_splits(entry, k, sm_count, splits)
    if eff == 1:
        return {"splits": 1, "bytes": 0, "zero": (0, 0)}
    s = sm90_schedule(entry, m, n, sm_count, max_swizzle, raster)
    tiles = s["blocks_per_problem"]
    tm, tn, _ = entry["tile"]
    reduction = _round_up(tiles * tm * tn * _ACC_BYTES, _L2_LINE)
    barriers = _round_up(tiles * _mma_warp_groups(entry) * _BARRIER_BYTES, _L2_LINE)
    return {"splits": eff, "bytes": _round_up(reduction + barriers, _WORKSPACE_ALIGN), "zero": (reduction, barriers)}


def _pack_stream_k_scheduler(buf: bytearray, off: dict, entry: dict, s: dict, k: int, splits: int,
                             reduction: int, workspace: int) -> None:
    """PersistentTileSchedulerSm90StreamKParams for DecompositionMode::SplitK (set_params_base + set_params_basic):
    the persistent scheduler's cluster, swizzle and raster fields, the tile counts, k-blocks per tile and per split
    (a "big" split takes one more: the first k_tiles % splits), no stream-K units or groups, the workspace address.
    divmod_epilogue_subtile_ stays value-initialized (zero)."""
    k_tiles = _ceil_div(k, entry["tile"][2])
    tiles = s["blocks_per_problem"]
    cluster = entry["cluster"][0] * entry["cluster"][1]

    def u64(name, fd):
        d, mul, sh, ru = fd
        struct.pack_into("<QQII", buf, off[f"scheduler.{name}"], d, mul, sh, ru)

    def d32(name, divisor):
        struct.pack_into("<iII", buf, off[f"scheduler.{name}"], *_fast_divmod_32(divisor))

    for name, (d, sh) in (("major", s["divmod_major"]), ("minor", s["divmod_minor"])):
        struct.pack_into("<QI", buf, off[f"scheduler.divmod_cluster_shape_{name}_"], d, sh)
    u64("divmod_batch_", s["divmod_batch"])
    u64("divmod_cluster_blk_major_", s["divmod_blk_major"])
    u64("divmod_clusters_mnl_", fast_divmod_u64(tiles // cluster))
    u64("divmod_sk_groups_", fast_divmod_u64(1))
    u64("divmod_sk_units_per_group_", fast_divmod_u64(1))
    struct.pack_into("<Q", buf, off["scheduler.units_per_problem_"], tiles)
    d32("divmod_tiles_per_output_tile_", k_tiles)
    struct.pack_into("<i", buf, off["scheduler.log_swizzle_size_"], s["log_swizzle"])
    struct.pack_into("<i", buf, off["scheduler.raster_order_"], s["raster_order"])
    d32("divmod_splits_", splits)
    struct.pack_into("<I", buf, off["scheduler.big_units_"], k_tiles % splits)
    struct.pack_into("<I", buf, off["scheduler.big_groups_"], 0)
    struct.pack_into("<Q", buf, off["scheduler.reduction_workspace_"], workspace)   # after the epilogue's 0 bytes
    struct.pack_into("<II", buf, off["scheduler.sk_tiles_"], 0, 0)                 # sk_tiles_, sk_units_
    d32("divmod_k_tiles_per_sk_unit_", k_tiles // splits)
    d32("divmod_k_tiles_per_sk_big_unit_", k_tiles // splits + 1)
    struct.pack_into("<i", buf, off["scheduler.reduction_mode_"], reduction)
    struct.pack_into("<I", buf, off["scheduler.separate_reduction_units_"], 0)
    struct.pack_into("<I", buf, off["scheduler.ktile_start_alignment_count_"], 1)


LAYOUTS = ("tn", "nn")
_TMA_SETTINGS = ("data_type", "rank", "elem_strides", "interleave", "swizzle", "l2_promotion", "oob_fill")


def layout_of(entry: dict) -> str:
    """The instance's operand layout (MANIFEST ``layout_tag``; entries without one are "tn").

    "tn": B is the (N, K) row-major weight (K contiguous), D = A @ B^T; "nn": B is (K, N) row-major
    (N contiguous), D = A @ B. A is (M, K) row-major and C, D are (M, N) row-major in both."""
    tag = entry.get("layout_tag", "tn")
    if tag not in LAYOUTS:
        raise ValueError(f"{entry.get('key')}: unknown operand layout {tag!r}")
    return tag


def b_rows(entry: dict, n: int, k: int) -> tuple[int, int]:
    """(rows, row length) of B as stored: (N, K) for "tn", (K, N) for "nn"; ldb >= row length."""
    return (n, k) if layout_of(entry) == "tn" else (k, n)


def tma_encode_args(entry: dict, m: int, n: int, k: int, ptr_a: int, ptr_b: int, lda: int,
                    ldb: int) -> list[dict]:
    """The arguments CUTLASS passes to cuTensorMapEncodeTiled for A and B, in call order.

    A is (M, K) row-major: TMA dims (K, M, L=1), byte strides (lda, M * lda) * element size. B as stored
    (``b_rows``): "tn", the (N, K) row-major weight: dims (K, N, 1), strides (ldb, N * ldb) * element
    size; "nn", (K, N) row-major: dims (N, K, 1), strides (ldb, K * ldb) * element size (the L strides
    are the packed ones, as cutlass::make_cute_packed_stride gives them; with L = 1 they are never
    stepped). B's settings are A's unless the probe recorded its own (``tma["B"]``: an N-contiguous B
    may get another swizzle or box)."""
    t = entry["host_params"]["tma"]
    es = _ELEMENT_BYTES[entry["dtype"]]
    common = {f: (list(t[f]) if f == "elem_strides" else t[f]) for f in _TMA_SETTINGS}
    b_set = {f: (list(v) if isinstance(v, list) else v) for f, v in t.get("B", common).items()}
    rows, length = b_rows(entry, n, k)
    geo_a = {"address": ptr_a, "dims": [k, m, 1], "strides": [lda * es, m * lda * es]}
    geo_b = {"address": ptr_b, "dims": [length, rows, 1], "strides": [ldb * es, rows * ldb * es]}
    # the mainloop's first descriptor (tma_load_a, box_A, A's settings) is B's when CUTLASS swaps the operands
    first, second = (geo_b, geo_a) if swaps_ab(entry) else (geo_a, geo_b)
    return [{**first, "box": list(t["box_A"]), **common}, {**second, "box": list(t["box_B"]), **b_set}]


def swaps_ab(entry: dict) -> bool:
    """Does CUTLASS's mainloop swap A and B (MANIFEST host_params ``swap_ab``)?

    CUTLASS 4.2's SM90 builder runs a 32-bit (tf32) GEMM whose A is K-major and B MN-major (the "nn" layout)
    as B^T A^T: its register-sourced mainloop (CollectiveMma ``SwapAB``; wgmma takes only K-major tf32 from
    shared memory, so the MN-major operand goes through registers) loads B through the first descriptor
    (tma_load_a) and A through the second, the kernel keeps the problem shape as (N, M, K, 1) and tiles it so
    (the tile's M extent runs along N; the scheduler, grid and cluster too), and the EpilogueTransposed
    epilogue swaps C's and D's strides back on the device. The C and D pointers and strides in Params stay
    the caller's."""
    return bool(entry.get("host_params", {}).get("swap_ab"))


def is_epi_tma(entry: dict) -> bool:
    """Does the instance write D (and read C) through TMA descriptors (CUTLASS's TMA epilogue)?"""
    return "D" in entry.get("host_params", {}).get("descriptors", {})


def fused_of(entry: dict) -> dict | None:
    """The instance's fused epilogue (MANIFEST ``fusion``: epilogue, activation, functor, ...), or None."""
    return entry.get("fusion")


def tma_epilogue_encode_args(entry: dict, m: int, n: int, ptr_c: int, ptr_d: int, ldc: int,
                             ldd: int) -> list[dict]:
    """cuTensorMapEncodeTiled arguments of the TMA epilogue's C load and D store, in call order (after
    A and B; fused instances: D only, rank 2). C and D are (M, N) row-major: dims (N, M, L=1), byte strides
    (ld, M * ld) * element size (rank 2: (N, M), (ld,));
    the box is the epilogue subtile, data type, swizzle and L2 promotion as CUTLASS chose them (probed)."""
    t = entry["host_params"]["tma"]["epilogue"]
    es = _ELEMENT_BYTES[entry["dtype"]]
    out = []
    for name, ptr, ld in (("C", ptr_c, ldc), ("D", ptr_d, ldd)):
        if name not in t:       # fused instances: no C operand, D's descriptor only
            continue
        d = t[name]
        r = d["rank"]   # 3; 2 where the batch stride is a static 0 (fused instances: CUTLASS drops the L mode)
        out.append({"address": ptr, "dims": [n, m, 1][:r], "strides": [ld * es, m * ld * es][:r - 1],
                    "box": list(d["box"]), "data_type": d["data_type"], "rank": d["rank"],
                    "elem_strides": list(d["elem_strides"]), "interleave": d["interleave"],
                    "swizzle": d["swizzle"], "l2_promotion": d["l2_promotion"], "oob_fill": d["oob_fill"]})
    return out


def sm90_unsupported(entry: dict, m: int, n: int, k: int, lda: int, ldb: int, ldc: int, ldd: int,
                     ptrs: tuple[int, ...] = (), sm_count: int = 1, bias_ptr: int | None = None) -> str | None:
    """Why this instance cannot run the problem (None if it can). ptrs = (A, B, C, D); a fused instance
    reads no C (its C pointer and ldc are not checked) and takes ``bias_ptr`` (0: no bias)."""
    if entry.get("arch") != 90 or entry.get("host_params", {}).get("status") != "probed":
        return "not a probed SM90 instance"
    if min(m, n, k) <= 0:
        return "empty problem"
    if max(m, n, k) >= 2**31:
        return "problem size does not fit int32"
    if sm_count < 1:
        return "sm_count must be positive"
    es = _ELEMENT_BYTES[entry["dtype"]]
    align = _TMA_ALIGN_BYTES // es
    b_n, b_len = b_rows(entry, n, k)
    if fused_of(entry):
        ldc = ldd                                   # no C operand
        ptrs = tuple(ptrs[:2]) + (ptrs[3], ptrs[3]) if ptrs else ()
        # the bias row broadcast loads one element per thread: element alignment (no TMA, no vector loads)
        if bias_ptr and bias_ptr % es:
            return f"bias must be {es}-byte aligned (fused epilogue: the bias row is read element by element)"
    elif bias_ptr:
        return "the instance has no bias (not a fused-epilogue instance)"
    # CollectiveMainloop::can_implement: A (M, K) TMA-aligned in its contiguous K, B in its contiguous
    # dimension (K for "tn", N for "nn")
    if k % align:
        return f"K must be a multiple of {align} (16-byte TMA rows)"
    if b_len % align:
        return f"N must be a multiple of {align} (16-byte TMA rows of B)"
    if lda < k or ldb < b_len or ldc < n or ldd < n:
        return "leading dimension smaller than the row"
    if lda % align or ldb % align:
        return f"lda and ldb must be multiples of {align} (16-byte TMA strides)"
    if max(m * lda, b_n * ldb) * es >= _TMA_MAX_STRIDE or max(m, n, k) > _TMA_MAX_DIM:
        return "operand too large for a TMA descriptor"
    if is_epi_tma(entry):
        # CollectiveEpilogue::can_implement (TMA store of D, TMA load of C): 16-byte rows and strides
        if n % align:
            return f"N must be a multiple of {align} (TMA epilogue: 16-byte rows of C and D)"
        if ldc % align or ldd % align:
            return f"ldc and ldd must be multiples of {align} (TMA epilogue)"
        if max(m * ldc, m * ldd) * es >= _TMA_MAX_STRIDE:
            return "C or D too large for a TMA descriptor"
    if ptrs:
        pa, pb = ptrs[0], ptrs[1]
        if pa % _TMA_ALIGN_BYTES or pb % _TMA_ALIGN_BYTES:
            return "A and B must be 16-byte aligned (TMA)"
        if is_epi_tma(entry):
            if any(p % _TMA_ALIGN_BYTES for p in ptrs[2:]):
                return "C and D must be 16-byte aligned (TMA epilogue)"
        elif any(p % es for p in ptrs[2:]):
            return f"C and D must be {es}-byte aligned"
    return None


def build_sm90_launch(entry: dict, m: int, n: int, k: int, ptr_a: int, ptr_b: int, ptr_c: int,
                      ptr_d: int, lda: int | None = None, ldb: int | None = None,
                      ldc: int | None = None, ldd: int | None = None, alpha: float = 1.0,
                      beta: float = 0.0, sm_count: int = 132, encode: Encoder | None = None,
                      max_swizzle: int = 1, raster: str = "heuristic",
                      device_id: int = 0, bias: int = 0, splits: int = 1,
                      reduction: str = "deterministic", workspace: int = 0) -> LaunchArgs:
    """Launch arguments for D(m, n) = alpha * A(m, k) @ op(B) + beta * C(m, n).

    A, C, D row-major with leading dimensions lda, ldc, ldd (defaults k, n, n); B as the instance's
    layout stores it: "tn", the (n, k) row-major weight, op(B) = B^T (ldb, default k); "nn", (k, n)
    row-major, op(B) = B (ldb, default n). Pointers are device addresses. C is not read when beta == 0 (pass ptr_d).
    ``sm_count``: the device's multiprocessor count (the persistent grid is min(sm_count, tiles)).
    ``encode``: see ``Encoder``; default ``tma.encode_tiled`` (the driver, needs libcuda).
    ``max_swizzle`` (1, 2, 4, 8) and ``raster`` ("heuristic", "along_m", "along_n"): the tile
    scheduler's Arguments (CUTLASS's defaults: 1, heuristic).
    ``bias``: device address of the (n,) bias row of a fused-epilogue instance (``fused_of``), which computes
    D = act(A @ op(B) + bias) and takes no C (``ptr_c``, ``ldc`` ignored), alpha 1 and beta 0 only; 0: no bias.
    ``splits``, ``reduction`` ("deterministic", "nondeterministic") and ``workspace``: a stream-K instance's
    (``is_stream_k``) split-K decomposition (CUTLASS's DecompositionMode::SplitK; splits clamped as
    ``split_k_splits``) and the device address of its global workspace (``sm90_workspace``: its size, and the part
    to zero before every launch; LaunchArgs.workspace_bytes / workspace_zero say the same); other instances take
    splits 1 and no workspace only."""
    lda = k if lda is None else lda
    ldb = b_rows(entry, n, k)[1] if ldb is None else ldb
    ldc = n if ldc is None else ldc
    ldd = n if ldd is None else ldd
    fused = fused_of(entry)
    if fused:
        if alpha != 1.0 or beta != 0.0:
            raise ValueError(f"{entry.get('key')}: a fused-epilogue instance computes act(acc + bias): "
                             "alpha 1 and beta 0 only")
        ptr_c, ldc = ptr_d, ldd
    why = sm90_unsupported(entry, m, n, k, lda, ldb, ldc, ldd, (ptr_a, ptr_b, ptr_c, ptr_d), sm_count,
                           bias_ptr=bias)
    if why:
        raise ValueError(f"{entry.get('key')}: {why}")
    if raster not in RASTER_OPTIONS:
        raise ValueError(f"raster must be one of {sorted(RASTER_OPTIONS)}")
    stream_k = is_stream_k(entry)
    if not stream_k and (splits != 1 or workspace or reduction != "deterministic"):
        raise ValueError(f"{entry.get('key')}: splits, reduction and workspace need a stream-K instance")
    if reduction not in REDUCTION_MODES:
        raise ValueError(f"reduction must be one of {sorted(REDUCTION_MODES)}")
    ws = sm90_workspace(entry, m, n, k, sm_count, splits, max_swizzle, raster)
    if ws["bytes"] and not workspace:
        raise ValueError(f"{entry.get('key')}: {ws['splits']} splits need a workspace of {ws['bytes']} bytes")
    if workspace % _WORKSPACE_ALIGN:
        raise ValueError(f"the workspace must be {_WORKSPACE_ALIGN}-byte aligned")
    if encode is None:
        from . import tma
        encode = tma.encode_tiled
    hp = entry["host_params"]
    off = hp["offsets"]
    buf = bytearray(hp["params_size"])
    struct.pack_into("<i", buf, off["mode"], _GEMM_MODE_KGEMM)
    swap = swaps_ab(entry)
    # the kernel's own problem shape: (N, M, K, 1) when the mainloop swaps A and B
    struct.pack_into("<4i", buf, off["problem_shape"], *((n, m) if swap else (m, n)), k, 1)
    # mainloop: the two TMA descriptors (the rest of each TMA atom is padding, left zero), then transaction bytes
    for name, a in zip(("A", "B"), tma_encode_args(entry, m, n, k, ptr_a, ptr_b, lda, ldb)):
        encode(buf, hp["descriptors"][name], a["data_type"], a["rank"], a["address"], a["dims"],
               a["strides"], a["box"], a["elem_strides"], a["interleave"], a["swizzle"],
               a["l2_promotion"], a["oob_fill"])
    tx, tx_mk, tx_nk = hp["tma_transaction_bytes"]
    struct.pack_into("<I", buf, off["mainloop.tma_transaction_bytes"], tx)
    struct.pack_into("<I", buf, off["mainloop.tma_transaction_bytes_mk"], tx_mk)
    struct.pack_into("<I", buf, off["mainloop.tma_transaction_bytes_nk"], tx_nk)
    if fused:
        # epilogue visitor tree: the bias row broadcast's pointer (null: its null_default, left 0, is read)
        struct.pack_into("<Q", buf, off["epilogue.thread.bias_ptr"], bias)
    else:
        # epilogue: LinearCombination params (alpha, beta; the scalar pointers stay null)
        struct.pack_into("<f", buf, off["epilogue.thread.alpha"], alpha)
        struct.pack_into("<f", buf, off["epilogue.thread.beta"], beta)
    if is_epi_tma(entry):
        # TMA epilogue: the C load and D store descriptors (their atoms' tails are padding), the
        # epilogue's transaction bytes; the scalars' batch strides stay 0 (one alpha, one beta). Fused: D only
        # (the C atom stays zero, as CUTLASS leaves it)
        for name, a in zip(("D",) if fused else ("C", "D"),
                           tma_epilogue_encode_args(entry, m, n, ptr_c, ptr_d, ldc, ldd)):
            encode(buf, hp["descriptors"][name], a["data_type"], a["rank"], a["address"], a["dims"],
                   a["strides"], a["box"], a["elem_strides"], a["interleave"], a["swizzle"],
                   a["l2_promotion"], a["oob_fill"])
        struct.pack_into("<I", buf, off["epilogue.tma_transaction_bytes"],
                         hp["epilogue_tma_transaction_bytes"])
    else:
        # direct stores: C and D with their (ld, 1, batch) strides; cute's static 1 takes no bytes
        struct.pack_into("<Q", buf, off["epilogue.ptr_C"], ptr_c)
        struct.pack_into("<2q", buf, off["epilogue.dC"], ldc, m * ldc)
        struct.pack_into("<Q", buf, off["epilogue.ptr_D"], ptr_d)
        struct.pack_into("<2q", buf, off["epilogue.dD"], ldd, m * ldd)
    # hw_info: device id, sm count; max_active_clusters 0 (not given), the rest zero
    struct.pack_into("<i", buf, off["hw_info.device_id"], device_id)
    struct.pack_into("<i", buf, off["hw_info.sm_count"], sm_count)
    s = sm90_schedule(entry, *((n, m) if swap else (m, n)), sm_count, max_swizzle, raster)
    if stream_k:
        _pack_stream_k_scheduler(buf, off, entry, s, k, ws["splits"], REDUCTION_MODES[reduction], workspace)
        # GemmKernel::Params.workspace: the address as given (CUTLASS stores it whether or not it needs one)
        struct.pack_into("<Q", buf, off["workspace"], workspace)
        return LaunchArgs(kernel=entry["kernel"], grid=s["grid"], block=tuple(hp["block"]),
                          cluster=tuple(hp["cluster"]), shared_mem=hp["smem_bytes"], params=bytes(buf),
                          workspace_bytes=ws["bytes"], workspace_zero=ws["zero"],
                          workspace=workspace if ws["bytes"] else 0)
    for name, (d, sh) in (("major", s["divmod_major"]), ("minor", s["divmod_minor"])):
        base = f"scheduler.divmod_cluster_shape_{name}_"
        struct.pack_into("<Q", buf, off[base + ".divisor"], d)
        struct.pack_into("<I", buf, off[base + ".shift_right"], sh)
    for base, fd in (("scheduler.divmod_batch_", s["divmod_batch"]),
                     ("scheduler.divmod_cluster_blk_major_", s["divmod_blk_major"])):
        d, mul, sh, ru = fd
        struct.pack_into("<Q", buf, off[base + ".divisor"], d)
        struct.pack_into("<Q", buf, off[base + ".multiplier"], mul)
        struct.pack_into("<I", buf, off[base + ".shift_right"], sh)
        struct.pack_into("<I", buf, off[base + ".round_up"], ru)
    struct.pack_into("<Q", buf, off["scheduler.blocks_per_problem_"], s["blocks_per_problem"])
    struct.pack_into("<i", buf, off["scheduler.log_swizzle_size_"], s["log_swizzle"])
    struct.pack_into("<i", buf, off["scheduler.raster_order_"], s["raster_order"])
    for name, v in zip(("m", "n", "l"), s["tiles"]):
        struct.pack_into("<I", buf, off[f"scheduler.problem_tiles_{name}_"], v)
    struct.pack_into("<I", buf, off["scheduler.cluster_shape_m_"], entry["cluster"][0])
    struct.pack_into("<I", buf, off["scheduler.cluster_shape_n_"], entry["cluster"][1])
    # workspace: null (this scheduler and epilogue need none: workspace_bytes == 0)
    return LaunchArgs(kernel=entry["kernel"], grid=s["grid"], block=tuple(hp["block"]),
                      cluster=tuple(hp["cluster"]), shared_mem=hp["smem_bytes"], params=bytes(buf))
