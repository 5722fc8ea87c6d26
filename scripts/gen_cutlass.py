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
Element types: A, B, C, D all FP16 (or all BF16), accumulator and epilogue scalars FP32.
Epilogue: D = alpha * acc + beta * C (``LinearCombination``; C may alias D or be any valid pointer
when beta == 0, it is not read then).

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

SM90 instances (wgmma + TMA, CUTLASS 3.x ``GemmUniversal<Shape<int,int,int,int>, ...>``) are emitted
too, but their Params hold TMA descriptors (CUtensorMap, 128 bytes each, built on the host with
cuTensorMapEncodeTiled from the global address, shape and strides, and the kernel's smem box) inside a
``__grid_constant__`` argument; the block is ``MaxThreadsPerBlock`` (384 for the cooperative schedule)
and the shared memory ``SharedStorageSize``. No launcher builder exists for them yet (see MANIFEST
``host_params``: "not built").
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
LAYOUT = "tn"                        # A row-major (M, K), B column-major (K, N) = W (N, K) row-major
COMPILE_FLAGS = ["--expt-relaxed-constexpr", "-DNDEBUG", "-O3", "-std=c++17"]

DTYPES = {"f16": "f16", "bf16": "bf16"}   # registry dtype name -> cutlass_library DataType attribute

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
]

# The SM80 instance the slow compile test builds (smallest tile, fewest template instantiations).
COMPILE_TEST_KEY = "gemm/f16/tn/small/sm80"


def registry_key(dtype: str, fam: dict) -> str:
    return f"gemm/{dtype}/{LAYOUT}/{fam['family']}/sm{fam['arch']}"


def file_name(dtype: str, fam: dict) -> str:
    return f"gemm_{dtype}_{LAYOUT}_{fam['family']}_sm{fam['arch']}.cu"


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


def _build_operation(dtype: str, fam: dict):
    cg = _import_emitter()
    import cutlass_library as cl
    from cutlass_cppgen.backend.library import TileDescription
    from cutlass_cppgen.op import Gemm
    from cutlass_cppgen.swizzle import SwizzlingFunctor

    elem = getattr(cl.DataType, DTYPES[dtype])
    arch = fam["arch"]
    gemm = Gemm(element=elem, element_accumulator=cl.DataType.f32,
                layout_A=cl.LayoutType.RowMajor, layout_B=cl.LayoutType.ColumnMajor,
                layout_C=cl.LayoutType.RowMajor, cc=arch, kernel_cc=arch)
    if gemm.opclass != cl.OpcodeClass.TensorOp:
        raise RuntimeError(f"{dtype} sm{arch}: emitter did not pick TensorOp")
    # The math instruction the emitter's own catalogue uses for this arch and type combination.
    math_inst = gemm.tile_descriptions()[0].math_instruction
    cluster = list(fam["cluster"])
    tile = list(fam["tile"])
    if arch >= 90:
        tile = [t * c for t, c in zip(tile, cluster)]   # emitter divides by the cluster shape
    ks = getattr(cl.KernelScheduleType, fam["kernel_schedule"] or "ScheduleAuto")
    es = getattr(cl.EpilogueScheduleType, fam["epilogue_schedule"] or "ScheduleAuto")
    td = TileDescription(tile, fam["stages"], list(fam["warps"]), math_inst, cluster,
                         kernel_schedule=ks, epilogue_schedule=es,
                         tile_scheduler=cl.TileSchedulerType.Default)
    gemm.swizzling_functor = getattr(SwizzlingFunctor, f"Identity{fam['swizzle']}")
    op = gemm.construct(td, alignment_A=fam["align"], alignment_B=fam["align"],
                        alignment_C=fam["align"])
    del cg
    return op, math_inst


def _emit_one(dtype: str, fam: dict) -> tuple[str, dict]:
    op, math_inst = _build_operation(dtype, fam)
    rt = op.rt_module
    name = op.procedural_name()
    body = rt.emit()
    kernel = rt.KernelTemplate.replace("${operation_name}", name).replace(
        "${operation_suffix}", rt.emitter.operation_suffix)
    includes = "".join(f'#include "{inc}"\n' for inc in rt.emitter.includes)
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
        "layout": {"A": "RowMajor (M,K)", "B": "ColumnMajor (K,N) = W (N,K) row-major",
                   "C": "RowMajor (M,N)", "D": "RowMajor (M,N)"},
        "epilogue": "LinearCombination: D = alpha*acc + beta*C",
        "tile": tile_cta,
        "warp_tile": warp_tile,
        "warps": list(fam["warps"]),
        "instruction_shape": list(math_inst.instruction_shape),
        "stages": fam["stages"],
        "cluster": list(fam["cluster"]),
        "swizzle": f"GemmIdentityThreadblockSwizzle<{fam['swizzle']}>" if fam["arch"] < 90 else
                   "sm90 default tile scheduler",
        "swizzle_n": fam["swizzle"],
        "kernel_schedule": fam["kernel_schedule"],
        "epilogue_schedule": fam["epilogue_schedule"],
        "alignment": {"A": fam["align"], "B": fam["align"], "C": fam["align"]},
        "threads": 32 * fam["warps"][0] * fam["warps"][1] * fam["warps"][2] if fam["arch"] < 90
                   else None,
        "compile_flags": COMPILE_FLAGS + [f"-arch=sm_{fam['arch']}{'a' if fam['arch'] >= 90 else ''}"],
        "sha256": hashlib.sha256(src.encode()).hexdigest(),
        "bytes": len(src.encode()),
    }
    return src, info


def emit_all(out_dir: Path) -> list[dict]:
    """Write every pinned instance into out_dir; return the manifest entries (without probe data)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_emit_") as scratch:
        os.chdir(scratch)   # compiled_cache.db lands here, never in the repo
        try:
            for fam in FAMILIES:
                for dtype in DTYPES:
                    src, info = _emit_one(dtype, fam)
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
    lines.append("      (void const*)pb, (void const*)pc, (void*)pd, int64_t(0), int64_t(0), int64_t(0), int64_t(0), lda, ldb, ldc, ldd);")
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
# Manifest and --check
# --------------------------------------------------------------------------------------------------
def _settings() -> dict:
    return {"cutlass_version": CUTLASS_VERSION, "python_hash_seed": HASH_SEED,
            "nvcc_version_for_emitter": NVCC_VERSION_FOR_EMITTER,
            "option_registry_cc": OPTION_REGISTRY_CC, "layout": LAYOUT,
            "compile_flags": COMPILE_FLAGS, "compile_test_key": COMPILE_TEST_KEY,
            "include_dirs": ["<cutlass_library>/source/include", "<cuda>/include"]}


def _comparable(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "host_params"}


def write(out_dir: Path, probe: bool) -> dict:
    old = {}
    if (out_dir / MANIFEST).is_file():
        old = {e["key"]: e for e in json.loads((out_dir / MANIFEST).read_text())["instances"]}
    entries = emit_all(out_dir)
    probed = probe_layout(entries, out_dir) if probe else {}
    for e in entries:
        if e["key"] in probed:
            e["host_params"] = probed[e["key"]]
        elif e["arch"] >= 90:
            e["host_params"] = {"status": "not built: needs TMA descriptors (cuTensorMapEncodeTiled)"}
        elif e["key"] in old and old[e["key"]]["sha256"] == e["sha256"] and "host_params" in old[e["key"]]:
            e["host_params"] = old[e["key"]]["host_params"]
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
        fresh = {e["key"]: e for e in emit_all(Path(tmp))}
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
    ap.add_argument("--out", type=Path, default=OUT_DIR, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.check:
        return check(args.out)
    manifest = write(args.out, args.probe)
    for e in manifest["instances"]:
        print(f"{e['key']:32s} {e['file']:36s} {e['bytes']:6d} B  {e['host_params']['status']}")
    return 0


if __name__ == "__main__":
    _force_hash_seed()
    sys.exit(main())
