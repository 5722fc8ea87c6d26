"""CPU-only tests of the kernel layer's pieces: cache keys and paths, atomic writes, compile errors
(NVRTC raw bindings or nvcc, with an explicit arch), cubin symbol reading, the strided-index
helpers and the reduction planner. None of these needs a GPU."""

import os
import pickle
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from gpk_array._kernels import KernelCompileError, _common, elementwise, loader, reduction
from gpk_array._kernels.errors import KernelCompileError as KCE2

BROKEN = 'extern "C" __global__ void broken(float* x) { x[0] = undefined_name + 1; }\n'
GOOD = 'extern "C" __global__ void gpk_test_ok(float* x) { x[threadIdx.x] *= 2.0f; }\n'

needs_nvcc = pytest.mark.skipif(loader.nvcc_path() is None, reason="nvcc not installed")
needs_nvrtc = pytest.mark.skipif(not loader.nvrtc_available(), reason="NVRTC library not loadable")


# ---------------------------------------------------------------------------------------------
# errors

def test_error_type_and_fields():
    e = KernelCompileError("compile failed", "line 1: error", file="x.cu", options=("-DX",), arch="90",
                           backend="nvrtc")
    assert isinstance(e, RuntimeError)
    assert KCE2 is KernelCompileError
    assert e.log == "line 1: error" and e.message == "compile failed"
    assert "compile failed" in str(e) and "line 1: error" in str(e)
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.log, e2.file, e2.options, e2.arch, e2.backend) == (e.log, "x.cu", ("-DX",), "90", "nvrtc")


# ---------------------------------------------------------------------------------------------
# keys, paths, atomic writes

def test_normalize_arch():
    assert loader.normalize_arch("90") == "90"
    assert loader.normalize_arch("sm_90") == "90"
    assert loader.normalize_arch("sm_90a") == "90a"
    assert loader.normalize_arch(80) == "80"
    assert loader.normalize_arch("9.0") == "90"
    with pytest.raises(ValueError):
        loader.normalize_arch("hopper")


def test_cache_key_is_stable_and_sensitive():
    k = loader.cache_key("src", ("-DA",), "90", versions="v1")
    assert k == loader.cache_key("src", ("-DA",), "sm_90", versions="v1")
    assert len(k) == 64 and int(k, 16) >= 0
    others = {
        loader.cache_key("src2", ("-DA",), "90", versions="v1"),
        loader.cache_key("src", ("-DB",), "90", versions="v1"),
        loader.cache_key("src", ("-DA", "-DB"), "90", versions="v1"),
        loader.cache_key("src", ("-DA",), "80", versions="v1"),
        loader.cache_key("src", ("-DA",), "90a", versions="v1"),
        loader.cache_key("src", ("-DA",), "90", versions="v2"),
    }
    assert k not in others and len(others) == 6
    # parts are separated: moving a character between fields changes the key
    assert loader.cache_key("ab", ("c",), "90", versions="v") != loader.cache_key("a", ("bc",), "90", versions="v")


def test_cached_lookup_does_not_probe_compilers(monkeypatch, tmp_path):
    """A cache hit must not load NVRTC or look for nvcc (that costs ~250 ms)."""
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    opts = ("-DGPK_SELECT", "-DGPK_DT_b", "-DGPK_GROUP_basic")
    key = loader.cache_key(loader.source_bundle("unary.cu"), opts, "90")
    loader.write_atomic(loader.cache_path(key, "90"), b"\x7fELF fake")

    def boom(*a, **k):
        raise AssertionError("compiler probed on a cache hit")
    monkeypatch.setattr(loader, "default_backend", boom)
    monkeypatch.setattr(loader, "nvrtc_available", boom)
    info = loader.build("unary.cu", opts, "90")
    assert info["cached"]


def test_default_versions_name_cupy_and_cuda():
    v = loader._toolchain_versions()
    assert "cupy=" in v and "cudart=" in v


def test_source_bundle_includes_headers():
    b = loader.source_bundle("binary.cu")
    assert "gpk_common.cuh" in b and "binary_contig" in b and "struct NdParams" in b


def test_cache_path_env(monkeypatch, tmp_path):
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    p = loader.cache_path("ab" * 32, "sm_90")
    assert p == tmp_path / "sm_90" / ("ab" * 32 + ".cubin")
    monkeypatch.delenv("GPK_CACHE_DIR")
    p = loader.cache_path("cd" * 32, "90")
    assert p == Path.home() / ".cache" / "gpk_array" / "kernels" / "sm_90" / ("cd" * 32 + ".cubin")


def test_write_atomic(tmp_path):
    p = tmp_path / "d" / "x.cubin"
    loader.write_atomic(p, b"one")
    loader.write_atomic(p, b"two")
    assert p.read_bytes() == b"two"
    assert sorted(os.listdir(p.parent)) == ["x.cubin"]


def test_every_cu_file_is_known():
    files = set(loader.cu_files())
    assert {"binary.cu", "unary.cu", "reduce.cu"} <= files
    import gpk_array._kernels.prebuild as pb
    used = {f for f, _ in pb.all_variants()}
    assert {f for f in used if not f.startswith("cutlass/")} == files
    from gpk_array._kernels import gemm
    assert {f for f in used if f.startswith("cutlass/")} == {gemm.cu_file(k) for k in gemm.REGISTRY}


# ---------------------------------------------------------------------------------------------
# compilers (explicit arch, no GPU)

@needs_nvcc
def test_nvcc_compile_and_symbols():
    cubin = loader.compile_cubin(GOOD, (), "90", backend="nvcc", name="ok.cu")
    assert cubin[:4] == b"\x7fELF"
    assert "gpk_test_ok" in loader.cubin_symbols(cubin)


@needs_nvcc
def test_nvcc_compile_error():
    with pytest.raises(KernelCompileError) as ei:
        loader.compile_cubin(BROKEN, (), "90", backend="nvcc", name="broken.cu")
    e = ei.value
    assert "undefined_name" in e.log
    assert e.backend == "nvcc" and e.arch == "90" and e.file == "broken.cu"
    assert "broken.cu" in str(e)


@needs_nvrtc
def test_nvrtc_compile_and_symbols():
    cubin = loader.compile_cubin(GOOD, (), "90", backend="nvrtc", name="ok.cu")
    assert "gpk_test_ok" in loader.cubin_symbols(cubin)


@needs_nvrtc
def test_nvrtc_compile_error():
    with pytest.raises(KernelCompileError) as ei:
        loader.compile_cubin(BROKEN, (), "80", backend="nvrtc", name="broken.cu")
    assert "undefined_name" in ei.value.log and ei.value.backend == "nvrtc"


def test_no_backend_gives_compile_error(monkeypatch):
    monkeypatch.setattr(loader, "nvcc_path", lambda: None)
    with pytest.raises(KernelCompileError):
        loader.compile_cubin(GOOD, (), "90", backend="nvcc")


@pytest.mark.skipif(loader.nvcc_path() is None and not loader.nvrtc_available(),
                    reason="no CUDA compiler")
def test_build_caches_and_notes(monkeypatch, tmp_path, capsys):
    """build() compiles a real module once into $GPK_CACHE_DIR, then finds it; a slow compile
    prints one progress line."""
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(loader, "_NOTE_AFTER_S", 0.0)
    opts = elementwise.module_options("b", "basic")
    info = loader.build("unary.cu", opts, "90")
    assert not info["cached"]
    path = Path(info["path"])
    assert path.parent == tmp_path / "sm_90" and path.suffix == ".cubin"
    syms = loader.cubin_symbols(path.read_bytes())
    assert {"gpk_bitwise_invert_b_v", "gpk_bitwise_invert_b_nd"} <= syms
    err = capsys.readouterr().err
    assert "gpk_array: compiling unary.cu for sm_90 ..." in err
    def compile_again(*args, **kwargs):
        raise AssertionError("compiled again: the cubin in the disk cache was not used")

    monkeypatch.setattr(loader, "_compile_first", compile_again)
    info2 = loader.build("unary.cu", opts, "90")
    assert info2["cached"] and info2["path"] == info["path"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_compile_error_from_build(monkeypatch, tmp_path):
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(loader, "read_source", lambda f: BROKEN)
    monkeypatch.setattr(loader, "source_bundle", lambda f: BROKEN)
    if loader.nvcc_path() is None and not loader.nvrtc_available():
        pytest.skip("no CUDA compiler")
    with pytest.raises(KernelCompileError) as ei:
        loader.build("broken.cu", (), "90")
    assert "undefined_name" in ei.value.log
    assert not list(tmp_path.rglob("*.cubin"))


# ---------------------------------------------------------------------------------------------
# strided helpers

def test_div_magic_exact():
    rng = random.Random(1234)
    divisors = list(range(1, 300)) + [2 ** k for k in range(31)] + [2 ** k + 1 for k in range(1, 31)] \
        + [2 ** k - 1 for k in range(2, 32)] + [rng.randrange(1, 2 ** 31) for _ in range(300)]
    for d in divisors:
        m, s = _common.div_magic(d)
        ns = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2 ** 31 - 1, 2 ** 31 - 2, (2 ** 31 - 1) // d * d,
              (2 ** 31 - 1) // d * d - 1] + [rng.randrange(0, 2 ** 31) for _ in range(40)]
        for n in ns:
            if 0 <= n < 2 ** 31:
                assert _common.emulate_fast_div(n, m, s) == n // d, (n, d)


def test_collapse_dims():
    # contiguous 3-d: one dim
    assert _common.collapse_dims((2, 3, 4), [[12, 4, 1], [12, 4, 1]]) == ((24,), [(1,), (1,)])
    # broadcast row vector over rows: cannot merge
    shape, st = _common.collapse_dims((5, 7), [[7, 1], [7, 1], [0, 1]])
    assert shape == (5, 7) and st == [(7, 1), (7, 1), (0, 1)]
    # extent-1 dims vanish
    assert _common.collapse_dims((1, 6, 1), [[6, 1, 1]]) == ((6,), [(1,)])
    assert _common.collapse_dims((1, 1), [[0, 0]]) == ((), [()])
    # transposed input keeps two dims
    shape, st = _common.collapse_dims((3, 4), [[4, 1], [1, 3]])
    assert shape == (3, 4) and st == [(4, 1), (1, 3)]


def _addresses(shape, strides):
    out = []
    for idx in np.ndindex(*shape):
        out.append(sum(i * s for i, s in zip(idx, strides)))
    return out


def test_collapse_dims_preserves_addresses():
    rng = np.random.default_rng(0)
    for _ in range(200):
        nd = int(rng.integers(0, 5))
        shape = tuple(int(x) for x in rng.integers(1, 4, nd))
        ops = []
        for _k in range(3):
            st = []
            acc = 1
            for s in reversed(shape):
                choice = rng.integers(0, 3)
                st.append(0 if choice == 0 else acc * (1 if choice == 1 else 2))
                acc *= s * 2
            ops.append(list(reversed(st)))
        cshape, cst = _common.collapse_dims(shape, ops)
        for k in range(3):
            assert _addresses(cshape, cst[k]) == _addresses(shape, ops[k])


def test_broadcast_strides():
    assert _common.broadcast_strides((4, 3), (3,), (8,), 8) == [0, 1]
    assert _common.broadcast_strides((4, 3), (4, 1), (8, 8), 8) == [1, 0]
    assert _common.broadcast_strides((2, 4, 3), (4, 3), (24, 8), 8) == [0, 3, 1]
    with pytest.raises(NotImplementedError):
        _common.broadcast_strides((4,), (4,), (3,), 2)


def test_chunk_indices_cover_everything():
    for shape, limit in [((10,), 3), ((5, 4), 7), ((3, 5, 4), 6), ((2, 3), 100), ((4, 10), 5), ((0, 3), 2)]:
        seen = np.zeros(shape, dtype=int)
        for idx in _common.chunk_indices(shape, limit):
            view = seen[idx]
            assert view.size <= limit
            seen[idx] += 1
        assert (seen == 1).all()


def test_nd_params_layout():
    p = _common.nd_params(100, (10, 10), [(10, 1), (0, 1), (10, 0)])
    assert p.dtype.itemsize == 400 and p.size == 1
    raw = p.view(np.int64)
    assert raw[0] == 100 and raw[1] == 2
    assert list(raw[2:4]) == [10, 10]
    m, s = _common.div_magic(10)
    assert raw[2 + 8] == m and raw[2 + 16] == s
    # stride[operand][dim] at 2 + 24 + 8 * operand + dim
    assert list(raw[26:28]) == [10, 1] and list(raw[34:36]) == [0, 1] and list(raw[42:44]) == [10, 0]


def test_dtype_codes():
    assert _common.dtype_code(np.float32) == "f32"
    assert _common.dtype_code(np.bool_) == "b"
    assert _common.dtype_code(np.uint16) == "u16"
    assert _common.dtype_code(np.complex64) is None
    assert _common.dtype_code(np.dtype(">f4")) is None
    ml = pytest.importorskip("ml_dtypes")
    assert _common.dtype_code(ml.bfloat16) == "bf16"


def test_unroll_mirror():
    assert [_common.unroll_for(4, s) for s in (1, 2, 4, 8)] == [1, 2, 4, 4]
    assert [_common.unroll_for(2, s) for s in (1, 2, 4, 8)] == [1, 1, 2, 2]


# ---------------------------------------------------------------------------------------------
# front-end tables and planners

def test_support_tables():
    assert elementwise.supports_binary("add", np.float32)
    assert elementwise.supports_binary("less", np.bool_)
    assert not elementwise.supports_binary("divide", np.int32)
    assert not elementwise.supports_binary("add", np.complex64)
    assert elementwise.supports_binary("logical_and", np.bool_)
    assert not elementwise.supports_binary("logical_and", np.int8)
    assert elementwise.supports_unary("gelu", np.float16)
    assert not elementwise.supports_unary("exp", np.int64)
    assert elementwise.supports_unary("logical_not", np.bool_)
    assert reduction.supports("sum", np.int8) and reduction.supports("argmax", np.bool_)
    assert not reduction.supports("mean", np.int32)
    assert reduction.supports("any", np.bool_) and not reduction.supports("any", np.float32)
    assert reduction.result_dtype("sum", np.int8) == np.int64
    assert reduction.result_dtype("sum", np.uint8) == np.uint64
    assert reduction.result_dtype("sum", np.float16) == np.float16
    assert reduction.result_dtype("argmin", np.float32) == np.int64


def test_expected_kernel_names_well_formed():
    names = elementwise.expected_kernels()
    assert "gpk_add_f32_vv" in names["binary.cu"] and "gpk_add_f32_sv" not in names["binary.cu"]
    assert "gpk_subtract_bf16_sv" in names["binary.cu"]
    assert "gpk_gelu_f16_v" in names["unary.cu"]
    r = reduction.expected_kernels()["reduce.cu"]
    assert {"gpk_red_sum_f32_row", "gpk_red_sum_f32_col", "gpk_red_sum_f32_fin"} <= r


def test_plan_layout():
    pl = reduction.plan_layout
    assert pl((4, 5, 6), (0, 1, 2), True, False) == ("c", 1, 120, 1, None)
    assert pl((4, 5, 6), (2,), True, False) == ("c", 20, 6, 1, None)
    assert pl((4, 5, 6), (0,), True, False) == ("c", 1, 4, 30, None)
    assert pl((4, 5, 6), (1,), True, False) == ("c", 4, 5, 6, None)
    assert pl((4, 5, 6), (0, 2), True, False) == ("copy", 5, 24, 1, (1, 0, 2))
    assert pl((4, 5, 6), (0,), False, True) == ("f", 30, 4, 1, None)
    assert pl((4, 5, 6), (1,), False, False) == ("copy", 24, 5, 1, (0, 2, 1))
    # extent-1 axes do not break a run
    assert pl((4, 1, 6), (0,), True, False) == ("c", 1, 4, 6, None)
    assert pl((4, 1, 6), (1,), True, False) == ("c", 24, 1, 1, None)
    assert pl((4, 3, 1, 6), (1, 3), True, False) == ("c", 4, 18, 1, None)
    assert pl((4, 3, 2, 6), (1, 3), True, False) == ("copy", 8, 18, 1, (0, 2, 1, 3))


@pytest.mark.parametrize("outer,K,inner", [(1, 1 << 28, 1), (1, 1000, 1), (64, 1000, 1), (8, 100000, 1),
                                           (1 << 20, 4, 1), (1, 100000, 3), (1, 4096, 4096),
                                           (10, 7, 33), (3, 1, 5), (1, 1, 1), (5, 31, 1)])
def test_plan_launch_invariants(outer, K, inner):
    p = reduction.plan_launch(outer, K, inner, 132, 4)
    assert p["grid"][0] >= 1
    threads = 1
    for b in p["block"]:
        threads *= b
    assert threads <= 256
    if p["kind"] == "row":
        assert inner == 1
        assert p["seg_len"] * p["splits"] >= K and p["seg_len"] * (p["splits"] - 1) < K
        assert p["block"][0] % 32 == 0
    else:
        tx, ty = p["block"]
        assert ty & (ty - 1) == 0  # the shared-memory tree needs a power of two
        assert p["kchunk"] * p["splits"] >= K and p["kchunk"] * (p["splits"] - 1) < K
    if p["splits"] > 1:
        f = reduction.plan_fin(outer * inner, p["splits"], 132)
        tx, ty = f["block"]
        assert tx * ty <= 256 and ty & (ty - 1) == 0


def test_kernels_package_import_touches_no_device():
    code = ("import gpk_array._kernels as k, gpk_array._kernels.elementwise, "
            "gpk_array._kernels.reduction; print('ok')")
    import subprocess
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(Path(__file__).resolve().parents[2]))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_kernel_log_records_compiles_only(tmp_path, monkeypatch):
    """GPK_KERNEL_LOG: one JSON line per module compiled at run time (what prebuild missed), none for a cached one."""
    import json
    from gpk_array._kernels import loader
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPK_KERNEL_LOG", str(tmp_path / "log.jsonl"))
    monkeypatch.setattr(loader, "_compile_first", lambda *a, **k: b"\x7fELF fake")
    loader.build("binary.cu", ("-DGPK_SELECT",), "90")
    loader.build("binary.cu", ("-DGPK_SELECT",), "90")       # cached now: not logged
    lines = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["file"] == "binary.cu" and lines[0]["options"] == ["-DGPK_SELECT"]
    assert lines[0]["arch"] == "90"
