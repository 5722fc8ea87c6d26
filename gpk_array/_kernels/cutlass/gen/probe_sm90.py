"""Host layout probe (SM90): CUTLASS 3.x to_underlying_arguments compiled host-only with a recording TMA-encode
stub (probe_sm90.cpp); the Params offsets, TMA settings and golden dumps of MANIFEST ``host_params``."""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from .families import EPILOGUES, LAYOUT, OUT_DIR
from .emit import cutlass_include_dir

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


_PROBE_CPP = Path(__file__).with_name("probe_sm90.cpp")
_INSTANCES_MARK = "// @GPK_INSTANCES@"


def _probe_cpp_parts() -> tuple[str, str]:
    """probe_sm90.cpp's fixed C++, the parts before and after the instances (each starting with a newline)."""
    text = _PROBE_CPP.read_text().split("// @GPK_PROBE_BEGIN@\n", 1)[1]
    before, after = text.split(_INSTANCES_MARK, 1)
    return "\n" + before, "\n" + after.split("\n", 1)[1]


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
    prelude, dump = _probe_cpp_parts()
    return ("\n".join(includes) + "\n" + prelude + "\n".join(bodies)
            + dump.replace("GPK_MEMBER_FUNCTIONS", "\n".join(funcs)) + "\n".join(main) + "\n")


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
