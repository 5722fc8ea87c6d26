"""scripts/gpu_tune_red.py without a GPU: its candidate tables name real settings, each build is a distinct set of
modules, and every build's reduce.cu settings compile (f32 basic, sm_90a, nvcc)."""
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from gpk_array._kernels import loader, reduction

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("gpu_tune_red", ROOT / "scripts" / "gpu_tune_red.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tables_name_real_settings():
    s = _script()
    for cfg in s.BUILDS.values():
        assert set(cfg) <= set(reduction._BUILD)
    for launches in s.LAUNCH.values():
        for cfg in launches:
            assert set(cfg) <= set(reduction.CONFIG) - set(reduction._BUILD)
    opts = set()
    for name in s.BUILDS:
        s.configure(name)
        opts.add(reduction.module_options("f32", "basic"))
    s.configure()
    assert len(opts) == len(s.BUILDS)
    assert reduction.CONFIG == s.SAVED


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_build_compiles():
    s = _script()
    for name in s.BUILDS:
        s.configure(name)
        opts = reduction.module_options("f32", "basic")
        s.configure()
        cmd = ["nvcc", "-cubin", "-arch=sm_90a", "-std=c++17", f"-I{loader.CUDA_DIR}", *opts, "-o", "/dev/null",
               str(loader.CUDA_DIR / "reduce.cu")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr[-3000:])
