"""``.cu`` files as modules (``gpk_array.load_cu``, ``import gpk_array.cuimport``): attributes, struct dtypes, the
``.pyi`` stub, and rebuilds decided by content hash (a changed include counts; a touched but unchanged file
doesn't). No GPU: kernels compile (nvcc) but do not launch."""
import importlib
import os
import sys

import numpy as np
import pytest

import gpk_array as gp
from gpk_array._jit.kernel import JitKernel
from gpk_array._kernels import loader

from .conftest import requires_compiler

CU = r'''
#include "helpers.cuh"
struct Particle { float x, y; int id; };
extern "C" __global__ void move(Particle* p, float dt, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i].x += dt * SPEED;
}
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) * a;
}
__device__ float not_a_kernel(float v) { return v; }
'''
HELPERS = "#define SPEED 2.0f\n__device__ inline float twice(float v) { return 2.0f * v; }\n"


@pytest.fixture
def cudir(tmp_path, cache_dir):
    d = tmp_path / "src"
    d.mkdir()
    (d / "mykernels.cu").write_text(CU)
    (d / "helpers.cuh").write_text(HELPERS)
    return d


def test_load_cu_makes_a_module(cudir):
    m = gp.load_cu(cudir / "mykernels.cu")
    assert m.__name__ == "mykernels" and m.__cu_kernels__ == ("move", "scale")
    assert isinstance(m.move, JitKernel) and isinstance(m.scale, JitKernel)
    assert not hasattr(m, "not_a_kernel")
    assert m.Particle == np.dtype([("x", "f4"), ("y", "f4"), ("id", "i4")], align=True)
    assert m.move.params[0].dtype == m.Particle                     # a pointer to the struct
    assert [p.name for p in m.scale.params] == ["x", "a", "n"]
    stub = (cudir / "mykernels.pyi").read_text()
    assert "move: JitKernel  # move(Particle* p, float dt, int n)" in stub and "Particle: numpy.dtype" in stub
    compile(stub, "mykernels.pyi", "exec")                          # valid Python syntax


@requires_compiler
def test_one_cubin_for_the_file_with_its_include(cudir):
    m = gp.load_cu(cudir / "mykernels.cu")
    e = m.scale.compile("90")
    assert m.move.compile("90") is e                                # one module for every kernel of the file
    assert {"move", "scale"} <= loader.cubin_symbols(e.path.read_bytes())
    info = gp.kernel_cache_info()
    assert info["compiles"][-1]["identity"] == f"file:{(cudir / 'mykernels.cu').resolve()}"


@requires_compiler
def test_changes_are_found_by_content(cudir):
    path = cudir / "mykernels.cu"
    m = gp.load_cu(path)
    h0, e0 = m.__cu_hash__, m.scale.compile("90")
    # touching without changing: the same module, nothing rebuilt
    os.utime(path, (1, 1))
    assert gp.load_cu(path) is m and m.__cu_hash__ == h0
    # a changed include: same module object, updated in place, a new cubin with reason "source changed"
    (cudir / "helpers.cuh").write_text(HELPERS.replace("2.0f * v", "3.0f * v"))
    assert gp.load_cu(path) is m and m.__cu_hash__ != h0
    e1 = m.scale.compile("90")
    assert e1.key != e0.key and e1.reason == "source changed"
    # a new kernel in the file appears, a removed one goes
    path.write_text(CU.replace("void move(", "void move2("))
    gp.load_cu(path)
    assert hasattr(m, "move2") and not hasattr(m, "move")


@requires_compiler
def test_compile_error_in_an_include_is_reported(cudir):
    (cudir / "helpers.cuh").write_text(HELPERS.replace("return", "retrun"))
    m = gp.load_cu(cudir / "mykernels.cu")
    with pytest.raises(gp.KernelCompileError, match="helpers.cuh"):
        m.scale.compile("90")


def test_load_cu_bad_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        gp.load_cu(tmp_path / "missing.cu")
    (tmp_path / "x.py").write_text("")
    with pytest.raises(ValueError, match="not a .cu file"):
        gp.load_cu(tmp_path / "x.py")


@pytest.fixture
def on_path(cudir, monkeypatch):
    import gpk_array.cuimport as cuimport
    monkeypatch.syspath_prepend(str(cudir))
    yield cudir
    for name in ("mykernels", "otherkernels"):
        sys.modules.pop(name, None)
    cuimport.install()


def test_import_finds_cu_files(on_path):
    import gpk_array.cuimport as cuimport
    from gpk_array._jit.cufile import CuFinder
    assert CuFinder in sys.meta_path
    mk = importlib.import_module("mykernels")
    assert isinstance(mk.scale, JitKernel) and mk.__file__ == str((on_path / "mykernels.cu").resolve())
    assert mk.__spec__.origin.endswith("mykernels.cu")
    assert gp.load_cu(on_path / "mykernels.cu") is mk               # one module per file
    # reload: unchanged file -> the same attributes; changed file -> rebuilt
    scale = mk.scale
    importlib.reload(mk)
    assert mk.scale is scale
    (on_path / "mykernels.cu").write_text(CU + '\nextern "C" __global__ void extra(int n) {}\n')
    assert cuimport.reload_changed() == ["mykernels"]
    assert hasattr(mk, "extra") and cuimport.reload_changed() == []
    # a Python module of the same name comes first on the path
    (on_path / "otherkernels.cu").write_text(CU)
    (on_path / "otherkernels.py").write_text("WHO = 'python'\n")
    importlib.invalidate_caches()
    assert importlib.import_module("otherkernels").WHO == "python"
    cuimport.uninstall()
    assert CuFinder not in sys.meta_path
    sys.modules.pop("mykernels", None)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mykernels")
