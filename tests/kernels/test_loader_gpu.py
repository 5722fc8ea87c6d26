"""GPU tests of the loader: compile-and-load, the in-process cache, the disk cache seen from a second
process (loaded without compiling), a damaged cache file, and prebuild for the local GPU."""

import os
import subprocess
import sys
import textwrap
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

        def not_again(*args, **kwargs):
            raise AssertionError("a cached kernel was looked up past the in-process cache")

        class NoLock:
            __enter__ = __exit__ = not_again

        with monkeypatch.context() as m:  # a dict lookup: no module lookup, no build, not even the lock
            m.setattr(loader, "get_module", not_again)
            m.setattr(loader, "build", not_again)
            m.setattr(loader, "_lock", NoLock())
            for _ in range(1000):
                assert loader.get_function("unary.cu", "gpk_negative_f32_v", OPTS) is fn
        x = cupy.arange(1000, dtype=cupy.float32)
        y = cupy.empty_like(x)
        loader.launch(fn, 4, 256, (x, y, np.int64(1000)))
        assert bool((y == -x).all())
    finally:
        loader.clear_memory_cache()


def test_second_process_loads_from_disk_without_compiling(tmp_path):
    env = dict(os.environ, GPK_CACHE_DIR=str(tmp_path))
    script = textwrap.dedent("""
        import json
        import cupy
        cupy.empty(1)
        from gpk_array._kernels import loader
        compiles, builds = [], []
        compile_first, build = loader._compile_first, loader.build

        def counting_compile(*args, **kwargs):
            compiles.append(1)
            return compile_first(*args, **kwargs)

        def recording_build(*args, **kwargs):
            info = build(*args, **kwargs)
            builds.append(info["cached"])
            return info

        loader._compile_first, loader.build = counting_compile, recording_build
        fn = loader.get_function("unary.cu", "gpk_negative_f32_v", %r)
        print(json.dumps({"compiles": len(compiles), "cached": builds}))
    """ % (OPTS,))
    first = subprocess.run([sys.executable, "-c", script], env=env, cwd=str(ROOT), capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", script], env=env, cwd=str(ROOT), capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    import json
    got = [json.loads(r.stdout.strip().splitlines()[-1]) for r in (first, second)]
    assert got == [{"compiles": 1, "cached": [False]}, {"compiles": 0, "cached": [True]}], got
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
