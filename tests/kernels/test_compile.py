"""The CI compile check: every .cu file under gpk_array/_kernels/cuda compiles with nvcc for sm_80
and sm_90a, and holds every kernel name the Python side may request. Needs nvcc, not a GPU."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_kernels.py"


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").is_file(),
                    reason="nvcc not installed")
def test_all_kernels_compile_with_nvcc():
    r = subprocess.run([sys.executable, str(SCRIPT), "--jobs", "2"], capture_output=True, text=True,
                       cwd=str(ROOT), timeout=1200)
    assert r.returncode == 0, f"check_kernels failed:\n{r.stdout}\n{r.stderr[-20000:]}"
    n_files = len(list((ROOT / "gpk_array" / "_kernels" / "cuda").glob("*.cu")))
    assert f"{2 * n_files} compiles" in r.stdout  # every .cu for sm_80 and sm_90a
