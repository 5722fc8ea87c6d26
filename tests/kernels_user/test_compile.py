"""Every generated CUDA source of the test and example kernels (cases.py) compiles with nvcc for sm_90a and
holds its kernel. Needs nvcc, not a GPU (CI's compile step: GPK_NVCC_TESTS=1)."""
import shutil
from pathlib import Path

import pytest

from gpk_array._kernels.loader import cubin_symbols
from gpk_array._pykernel.backend import compile_only

from .cases import CASES

HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").is_file()


@pytest.mark.nvcc
@pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_generated_source_compiles_for_sm90a(case):
    _, kernel, make, geometry = case
    args = make()
    k = kernel if geometry is None else kernel[geometry]
    k.explain(*args, print_=False)
    spec = kernel.specializations[tuple(a.key for a in map(_norm, args, kernel.params))]
    cubin = compile_only(spec.source, "90a", backend="nvcc")
    assert spec.cname in cubin_symbols(cubin)


def _norm(a, p):
    from gpk_array._pykernel.types import normalize
    return normalize(a, p)


@pytest.mark.nvcc
@pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")
def test_debug_mode_source_compiles():
    """GPK_KERNEL_DEBUG's CUDA: every index goes through gpk_idx, which records the first bad one."""
    import gpk_array as gk
    import numpy as np
    from . import kernels as KS
    k = gk.kernel(debug=True)(KS.oob.__wrapped__)
    args = (np.zeros(5), np.zeros(5))
    k.explain(*args, print_=False)
    spec = next(iter(k.specializations.values()))
    assert "gpk_idx(" in spec.source and "__device__ long long gpk_err[5];" in spec.source
    assert spec.array_names == ["out", "x"] or set(spec.array_names) == {"out", "x"}
    cubin = compile_only(spec.source, "90a", backend="nvcc")
    assert spec.cname in cubin_symbols(cubin) and "gpk_err" in cubin_symbols(cubin)


@pytest.mark.nvcc
@pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cuda_launch_class_source_compiles_for_sm90a(case):
    """The source of a CUDA call's launch class (api.launch_class): __restrict__ pointers, and a 1-D loop domain
    unrolled as a large domain makes it."""
    from gpk_array._pykernel import launch
    from gpk_array._pykernel.codegen import Generator
    _, kernel, make, geometry = case
    args = make()
    k = kernel if geometry is None else kernel[geometry]
    k.explain(*args, print_=False)
    key = tuple(a.key for a in map(_norm, args, kernel.params))
    unroll = launch.UNROLL if kernel._info.domain[0] == "range" else 1
    src = Generator(kernel._info, key + (("R", unroll, True, True),), "gpk_lc").source()
    assert "__restrict__" in src
    cubin = compile_only(src, "90a", backend="nvcc")
    assert "gpk_lc" in cubin_symbols(cubin)
