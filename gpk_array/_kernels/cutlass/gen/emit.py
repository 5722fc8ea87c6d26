"""Emission: the CUTLASS Python emitter (cutlass_cppgen) driven, pinned, as a C++ source generator; one .cu
file and one manifest entry per instance."""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from .families import (
    COMPILE_FLAGS, CUTLASS_VERSION, ELEMENTS, EPI_TILE_AUTO, EPILOGUES, fam_dtypes, fam_layout, FAMILIES, file_name,
    FUNCTOR_HEADER, HASH_SEED, LAYOUTS, NVCC_VERSION_FOR_EMITTER, OPTION_REGISTRY_CC, OUT_DIR, registry_key,
    TILE_SCHEDULERS,
)

# --------------------------------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------------------------------
def force_hash_seed() -> None:
    """Re-run the generator (``python -m gpk_array._kernels.cutlass.gen``, the same arguments) under the pinned
    PYTHONHASHSEED unless it is set already: the emitter's output depends on set iteration order."""
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        env = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
        os.execve(sys.executable, [sys.executable, "-m", __package__] + sys.argv[1:], env)


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
