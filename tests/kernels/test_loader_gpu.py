"""GPU tests of the loader: compile-and-load, the in-process cache, the disk cache seen from a second
process (well under 100 ms to load), a damaged cache file, and prebuild for the local GPU."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np


from tests.kernels._gpu_common import gpu_marks  # noqa: E402

pytestmark = gpu_marks()

ROOT = Path(__file__).resolve().parents[2]
OPTS = ("-DGPK_SELECT", "-DGPK_DT_f32", "-DGPK_GROUP_basic")


def test_get_function_compiles_loads_and_caches(monkeypatch, tmp_path):
    import cupy
    from gpk_array._kernels import loader
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    loader.clear_memory_cache()
    try:
        fn = loader.get_function("unary.cu", "gpk_negative_f32_v", OPTS)
        assert list(tmp_path.rglob("*.cubin"))
        t0 = time.perf_counter()
        for _ in range(1000):
            assert loader.get_function("unary.cu", "gpk_negative_f32_v", OPTS) is fn
        assert (time.perf_counter() - t0) / 1000 < 20e-6  # a dict lookup
        x = cupy.arange(1000, dtype=cupy.float32)
        y = cupy.empty_like(x)
        loader.launch(fn, 4, 256, (x, y, np.int64(1000)))
        assert bool((y == -x).all())
    finally:
        loader.clear_memory_cache()


def test_second_process_loads_from_disk_fast(tmp_path):
    env = dict(os.environ, GPK_CACHE_DIR=str(tmp_path))
    script = textwrap.dedent("""
        import sys, time, json
        import cupy
        cupy.empty(1)  # CUDA context first: its cost is not the loader's
        from gpk_array._kernels import loader
        t0 = time.perf_counter()
        fn = loader.get_function("unary.cu", "gpk_negative_f32_v", %r)
        dt = time.perf_counter() - t0
        print(json.dumps({"seconds": dt}))
    """ % (OPTS,))
    first = subprocess.run([sys.executable, "-c", script], env=env, cwd=str(ROOT), capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", script], env=env, cwd=str(ROOT), capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    import json
    t = json.loads(second.stdout.strip().splitlines()[-1])["seconds"]
    assert t < 0.1, f"warm load took {t * 1e3:.1f} ms"
    assert "compiling" not in second.stderr


def test_damaged_cache_file_is_rebuilt(monkeypatch, tmp_path):
    import cupy
    from gpk_array._kernels import loader
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    loader.clear_memory_cache()
    try:
        info = loader.build("unary.cu", OPTS)
        Path(info["path"]).write_bytes(b"\x7fELF garbage")
        fn = loader.get_function("unary.cu", "gpk_abs_f32_v", OPTS)
        x = -cupy.arange(100, dtype=cupy.float32)
        y = cupy.empty_like(x)
        loader.launch(fn, 1, 256, (x, y, np.int64(100)))
        assert bool((y == -x).all())
    finally:
        loader.clear_memory_cache()


def test_prebuild_local_gpu(monkeypatch, tmp_path):
    import gpk_array._kernels as K
    from gpk_array._kernels import loader
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    variants = [("unary.cu", ("-DGPK_SELECT", "-DGPK_DT_b", "-DGPK_GROUP_basic"))]
    import gpk_array._kernels.prebuild as pb
    res = pb.prebuild(variants=variants)
    assert len(res) == 1 and not res[0]["cached"] and res[0]["arch"] == loader.device_arch()
    res2 = K.prebuild(variants=variants)
    assert res2[0]["cached"]
