#!/usr/bin/env python3
"""SASS cost of the fused epilogues' activations, without a GPU: instructions per element on sm_90a.

    python scripts/epilogue_sass.py                 # the functors in a tiny kernel (nvcc, ~10 s)
    python scripts/epilogue_sass.py --instances     # also the fused SM90 instances' cubins (shipped, or the cache)
    python scripts/epilogue_sass.py --sass gelu     # also print the SASS of one tiny kernel (gelu, silu, ...)

The tiny kernel loads a fragment of 16 floats per thread, applies one functor to it as the epilogue visitor does
(ComputeFn<cutlass::Array<float, 16>>), and stores it; the count per element is (instructions of the kernel -
instructions of the identity kernel) / 16, NOPs left out. CUTLASS's functors (cutlass::epilogue::thread::GELU,
GELU_taylor, SiLu, ReLu) against ours (gpk_array/_kernels/cutlass/gpk_epilogue.h: gpk::epilogue::Gelu, Silu), compiled
with the instances' flags (--expt-relaxed-constexpr -DNDEBUG -O3 -std=c++17 -arch=sm_90a). "static" counts every
instruction of the kernel, including the branch to a slow path that may never run (CUTLASS's SiLu calls the IEEE
division's slow-path subroutine, counted apart as "subroutine"); MUFU ops (ex2, rcp, tanh: 16 per clock per SM on
sm_90 against 128 FP32 FMAs) are listed apart as well.

--instances: the fused instances gemm/<f16|bf16>/tn/ppt_bias_<act>/sm90 against ppt_bias (the same kernel without an
activation): (instructions - ppt_bias's) / 128, each thread of a consumer warpgroup holding 128 accumulators of the
128x128 tile, the epilogue loop fully unrolled.

Needs nvcc and the CUTLASS headers (nvidia-cutlass 4.2.0.0), and cuobjdump with nvdisasm (CUDA's bin/, or the PyPI
packages nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm, found under site-packages' nvidia/cu*/bin).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KDIR = ROOT / "gpk_array" / "_kernels" / "cutlass"
FRAG = 16

FUNCTORS = {
    "identity": "Identity",
    "cutlass_relu": "cutlass::epilogue::thread::ReLu",
    "cutlass_gelu_tanh": "cutlass::epilogue::thread::GELU_taylor",
    "cutlass_gelu": "cutlass::epilogue::thread::GELU",
    "cutlass_silu": "cutlass::epilogue::thread::SiLu",
    "gelu": "gpk::epilogue::Gelu",
    "silu": "gpk::epilogue::Silu",
}

_SRC = """\
#include "cutlass/cutlass.h"
#include "cutlass/array.h"
#include "cutlass/epilogue/thread/activation.h"
#include "gpk_epilogue.h"

template <class T> struct Identity { CUTLASS_DEVICE T operator()(T const& v) const { return v; } };

template <template <class> class F>
__device__ __forceinline__ void apply(float const* __restrict__ x, float* __restrict__ y) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * FRAG;
  cutlass::Array<float, FRAG> a;
  CUTLASS_PRAGMA_UNROLL
  for (int j = 0; j < FRAG; j += 4) {
    *reinterpret_cast<float4*>(a.data() + j) = *reinterpret_cast<float4 const*>(x + i + j);
  }
  F<cutlass::Array<float, FRAG>> f;
  cutlass::Array<float, FRAG> r = f(a);
  CUTLASS_PRAGMA_UNROLL
  for (int j = 0; j < FRAG; j += 4) {
    *reinterpret_cast<float4*>(y + i + j) = *reinterpret_cast<float4 const*>(r.data() + j);
  }
}
"""


def _tool(name: str) -> str | None:
    p = shutil.which(name)
    if p:
        return p
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and Path(base, "bin", name).is_file():
            return str(Path(base, "bin", name))
    import site
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        for cand in sorted(Path(sp).glob(f"nvidia/cu*/bin/{name}")):
            return str(cand)
    return None


def sass(cubin: Path) -> str:
    cuobjdump, nvdisasm = _tool("cuobjdump"), _tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        raise SystemExit("needs cuobjdump and nvdisasm (CUDA bin/, or pip install nvidia-cuda-cuobjdump "
                         "nvidia-cuda-nvdisasm)")
    env = dict(os.environ, PATH=str(Path(nvdisasm).parent) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True,
                          env=env).stdout


_INSN = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z0-9_]+)")


def functions(text: str) -> dict[str, list[str]]:
    """{function name: [opcode, ...]} (NOPs left out) from cuobjdump -sass output."""
    out: dict[str, list[str]] = {}
    for blk in re.split(r"\n\s+Function : ", text)[1:]:
        name = blk.split("\n", 1)[0].strip()
        ops = []
        for line in blk.split("\n"):
            m = _INSN.match(line)
            if m and m.group(1) != "NOP":
                ops.append(m.group(1))
        out[name] = ops
    return out


def _split_subroutine(ops: list[str]) -> tuple[list[str], list[str]]:
    """(the kernel up to its last EXIT, what follows it: called subroutines)."""
    last = max((i for i, o in enumerate(ops) if o == "EXIT"), default=len(ops) - 1)
    return ops[:last + 1], ops[last + 1:]


def tiny_kernels(keep: Path | None = None) -> dict[str, list[str]]:
    from gpk_array._kernels.cutlass.launch_sm90 import cutlass_include_dir
    nvcc = _tool("nvcc")
    if nvcc is None:
        raise SystemExit("needs nvcc")
    src = _SRC.replace("FRAG", str(FRAG)) + "".join(
        f'extern "C" __global__ void k_{k}(float const* x, float* y) {{ apply<{f}>(x, y); }}\n'
        for k, f in FUNCTORS.items())
    with tempfile.TemporaryDirectory(prefix="gpk_epi_sass_") as tmp:
        cu, cubin = Path(tmp) / "epi.cu", Path(tmp) / "epi.cubin"
        cu.write_text(src)
        cmd = [nvcc, "-cubin", "-arch=sm_90a", "-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-O3",
               f"-I{cutlass_include_dir()}", f"-I{KDIR}", "-o", str(cubin), str(cu)]
        subprocess.run(cmd, check=True)
        text = sass(cubin)
        if keep is not None:
            keep.write_text(text)
    return {k[2:]: v for k, v in functions(text).items()}


def _row(name: str, ops: list[str], base: list[str], per: int) -> str:
    main, sub = _split_subroutine(ops)
    c, b = Counter(main), Counter(_split_subroutine(base)[0])
    n = (len(main) - len(_split_subroutine(base)[0])) / per
    mufu = (c["MUFU"] - b["MUFU"]) / per
    kinds = {k: (c[k] - b.get(k, 0)) / per for k in sorted(c) if c[k] != b.get(k, 0)}
    top = ", ".join(f"{k} {v:g}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]) if v)
    return (f"{name:22s} {n:7.2f} {mufu:5.2f} {'yes' if c['BRA'] > b['BRA'] or c['CALL'] else 'no':>6s}"
            f" {len(sub):6d}   {top}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", action="store_true", help="also count the fused SM90 instances' cubins")
    ap.add_argument("--sass", default=None, help="print the SASS of this tiny kernel (" + ", ".join(FUNCTORS) + ")")
    args = ap.parse_args(argv)
    fns = tiny_kernels()
    print(f"tiny kernel, cutlass::Array<float, {FRAG}> per thread; per element:")
    print(f"{'functor':22s} {'instr':>7s} {'MUFU':>5s} {'branch':>6s} {'subrtn':>6s}   by opcode")
    for k in FUNCTORS:
        if k != "identity":
            print(_row(k, fns[f"{k}"], fns["identity"], FRAG))
    if args.sass:
        print(f"\nSASS of k_{args.sass} (opcodes):\n" + " ".join(fns[args.sass]))
    if args.instances:
        from gpk_array._kernels.cutlass import launch_sm90 as L
        print("\nfused instances (cubin per registry key), per accumulator element against ppt_bias:")
        print(f"{'instance':34s} {'instr':>7s} {'MUFU':>5s} {'branch':>6s} {'subrtn':>6s}   by opcode")
        for dt in ("f16", "bf16"):
            base_key = f"gemm/{dt}/tn/ppt_bias/sm90"
            base = next(iter(functions(sass(Path(L.build(base_key)["path"]))).values()))
            for act in ("relu", "gelu_tanh", "gelu", "silu"):
                key = f"gemm/{dt}/tn/ppt_bias_{act}/sm90"
                ops = next(iter(functions(sass(Path(L.build(key)["path"]))).values()))
                print(_row(key, ops, base, 128) + f"   [{len(ops)} total]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
