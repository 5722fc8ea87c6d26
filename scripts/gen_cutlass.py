"""Emit the pinned CUTLASS GEMM instances under gpk_array/_kernels/cutlass/ (source only): the entry point of the
generator package gpk_array/_kernels/cutlass/gen/ (DESIGN.md there), which needs gpk_array importable (the dev
install). Nothing here needs a GPU.

    python scripts/gen_cutlass.py            # regenerate the .cu files and MANIFEST.json
    python scripts/gen_cutlass.py --check    # regenerate into a temp dir, compare sha256 with MANIFEST.json
    python scripts/gen_cutlass.py --probe    # also record the SM80 Params layout (nvcc, host only, ~1 min)
    python scripts/gen_cutlass.py --probe-sm90 [--families ppt,...]   # the SM90 Params layout and TMA goldens
"""
import sys

from gpk_array._kernels.cutlass.gen.cli import main
from gpk_array._kernels.cutlass.gen.emit import force_hash_seed

if __name__ == "__main__":
    force_hash_seed()
    sys.exit(main())
