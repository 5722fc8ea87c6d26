"""gpk_array._kernels.gemm without a GPU: the registry, select()'s keys and refusals, the shape rule, the Params of a
launch (pointers patched into a cached template) against CUTLASS's own bytes, the loader building an SM80 instance
for sm_90 (nvcc, and NVRTC where its library loads), and the GPK_GEMM switch. The GPU side: test_cutlass_gpu.py."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gpk_array._kernels import gemm, loader
from gpk_array._kernels.cutlass import params as P

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"gemm/f16/tn/large/sm80", "gemm/bf16/tn/large/sm80", "gemm/f16/tn/small/sm80", "gemm/bf16/tn/small/sm80"}


def test_registry_holds_the_probed_sm80_instances():
    assert set(gemm.REGISTRY) == KEYS
    for key, e in gemm.REGISTRY.items():
        assert e["key"] == key and e["arch"] == 80 and e["host_params"]["status"] == "probed"
        assert gemm.cu_file(key) == "cutlass/" + e["file"]
        assert loader.source_path(gemm.cu_file(key)).is_file()
    assert gemm.compile_options() == ("--expt-relaxed-constexpr", "-DNDEBUG", "-O3")
    assert {f for f, _ in gemm.variants()} == {gemm.cu_file(k) for k in KEYS}


@pytest.mark.parametrize("args, want", [
    (("f16", "tn", 1, 3072, 768, 90), "gemm/f16/tn/small/sm80"),
    ((np.float16, "tn", 1000, 1000, 1000, "90"), "gemm/f16/tn/small/sm80"),
    (("bf16", "tn", 8192, 3072, 768, "sm_90a"), "gemm/bf16/tn/large/sm80"),
    (("float16", "tn", 2048, 2048, 2048, 80), "gemm/f16/tn/large/sm80"),
    (("bfloat16", "tn", 3, 24, 8, 90), "gemm/bf16/tn/small/sm80"),
    (("f16", "tn", 8192, 8192, 8192, 86), "gemm/f16/tn/small/sm80"),     # 99 KiB of smem: no large tile
    (("f16", "tn", 8192, 8192, 8192, 120), "gemm/f16/tn/small/sm80"),
    (("f16", "tn", 8192, 8192, 8192, 100), "gemm/f16/tn/large/sm80"),
    (("f16", "tn", 64, 64, 64, 75), None),                                 # no mma.sync m16n8k16 / cp.async
    (("f16", "tn", 64, 64, 64, 95), None),                                 # unknown arch: no smem figure
    (("f16", "tn", 64, 64, 60, 90), None),                                 # K not a multiple of 8
    (("f16", "tn", 64, 100, 64, 90), None),                                # N not a multiple of 8
    (("f16", "tn", 0, 64, 64, 90), None),
    (("f16", "tn", 64, 0, 64, 90), None),
    (("f16", "tn", 2**20, 2**12, 8, 90), None),                            # M*N >= 2**31
    (("f16", "tn", 8, 2**20, 2**12, 90), None),                            # N*K >= 2**31
    (("float32", "tn", 64, 64, 64, 90), None),
    (("float64", "tn", 64, 64, 64, 90), None),
    (("f16", "nn", 64, 64, 64, 90), None),
    (("f16", "nt", 64, 64, 64, 90), None),
])
def test_select(args, want):
    assert gemm.select(*args) == want


def test_shape_rule_boundary():
    # LARGE_MIN_TILES tiles of 128x256: 8 x 16 = 128 -> large; 8 x 15 = 120 -> small
    assert gemm.family(1024, 4096) == "large"
    assert gemm.family(1024, 4088) == "large"   # 4088 / 256 rounds up to 16
    assert gemm.family(1024, 3840) == "small"
    assert gemm.family(1025, 3840) == "large"   # 9 x 15 = 135
    assert gemm.family(8192, 256) == "small"    # 64 x 1 = 64: one column of tiles
    assert gemm.select("f16", "tn", 1024, 3840, 64, 90) == "gemm/f16/tn/small/sm80"
    assert gemm.select("f16", "tn", 1024, 4096, 64, 90) == "gemm/f16/tn/large/sm80"


@pytest.mark.parametrize("key", sorted(KEYS))
def test_launch_args_are_cutlass_bytes(key):
    e = gemm.REGISTRY[key]
    for g in e["host_params"]["golden"]:
        m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd = g["case"]
        for _ in range(2):  # the second call comes from the cached template
            la, arg = gemm.launch_args(key, m, n, k, lda, ldb, ldc, ldd, alpha, beta, (pa, pb, pc, pd))
            assert isinstance(arg, np.ndarray) and arg.size == 1
            assert arg.dtype.itemsize == e["host_params"]["params_size"]
            assert arg.tobytes().hex() == g["hex"], g["case"]
            assert list(la.grid) == g["grid"] and la.kernel == e["kernel"]
            assert la.shared_mem == e["host_params"]["smem_bytes"] and la.block == (e["threads"], 1, 1)


def test_launch_args_template_keeps_no_pointers():
    key = "gemm/f16/tn/small/sm80"
    _, a1 = gemm.launch_args(key, 64, 64, 64, 64, 64, 64, 64, 1.0, 0.0, (0x1000, 0x2000, 0x3000, 0x4000))
    _, a2 = gemm.launch_args(key, 64, 64, 64, 64, 64, 64, 64, 1.0, 0.0, (0x5000, 0x6000, 0x7000, 0x8000))
    ref = P.build_sm80_launch(gemm.REGISTRY[key], 64, 64, 64, 0x5000, 0x6000, 0x7000, 0x8000)
    assert a1.tobytes() != a2.tobytes() and a2.tobytes() == ref.params
    assert ref.params == P.build_sm80_launch(gemm.REGISTRY[key], 64, 64, 64, 0x5000, 0x6000, 0x7000, 0x8000).params


def test_nvrtc_spelling_of_the_cutlass_flags():
    assert loader._nvrtc_options(gemm.compile_options()) == ["-default-device", "-DNDEBUG"]
    assert loader._nvrtc_options(("-DGPK_SELECT", "-DGPK_DT_f32")) == ["-DGPK_SELECT", "-DGPK_DT_f32"]


def test_cutlass_source_key():
    inc, version = loader.cutlass_headers()
    f = gemm.cu_file("gemm/f16/tn/small/sm80")
    bundle = loader.source_bundle(f)
    assert loader.read_source(f) in bundle and f"CUTLASS headers {version}" in bundle
    assert "// header" not in bundle  # cuda/*.cuh are not part of a CUTLASS instance's key
    k1 = loader.cache_key(bundle, gemm.compile_options(), "90", versions="v")
    k2 = loader.cache_key(loader.source_bundle(gemm.cu_file("gemm/bf16/tn/small/sm80")), gemm.compile_options(),
                          "90", versions="v")
    assert k1 != k2
    with pytest.raises(FileNotFoundError):
        loader.source_path("cutlass/../cuda/nn.cu")
    if inc is not None:
        assert (Path(inc) / "cutlass" / "gemm" / "kernel" / "default_gemm_universal.h").is_file()
        assert loader.source_include_dirs(f) == (inc,)
    assert loader.source_include_dirs("nn.cu") == ()


def _backends():
    out = [pytest.param("nvcc", marks=pytest.mark.skipif(loader.nvcc_path() is None, reason="nvcc not installed"))]
    out.append(pytest.param("nvrtc", marks=pytest.mark.skipif(not loader.nvrtc_available(),
                                                               reason="NVRTC library not loadable")))
    return out


@pytest.mark.skipif(loader.cutlass_headers()[0] is None, reason="nvidia-cutlass (CUTLASS headers) not installed")
@pytest.mark.parametrize("backend", _backends())
def test_loader_builds_an_sm80_instance_for_sm90(backend, monkeypatch, tmp_path):
    """What a first GPK_GEMM=cutlass call on an H200 does: loader.build of the instance for sm_90 (6 to 18 s on two
    cores with either compiler), the cubin in the disk cache, holding the kernel's extern "C" name."""
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    key = "gemm/f16/tn/small/sm80"
    t0 = time.perf_counter()
    info = loader.build(gemm.cu_file(key), gemm.compile_options(), "90", backend=backend, note=False)
    took = time.perf_counter() - t0
    assert not info["cached"] and Path(info["path"]).parent == tmp_path / "sm_90"
    cubin = Path(info["path"]).read_bytes()
    assert cubin[:4] == b"\x7fELF"
    assert gemm.REGISTRY[key]["kernel"] in loader.cubin_symbols(cubin)
    assert loader.build(gemm.cu_file(key), gemm.compile_options(), "90", backend=backend)["cached"]
    print(f"{backend} sm_90 {key}: {took:.1f} s")


def test_gpk_gemm_switch_is_read_at_import():
    code = "import gpk_array._gpu as g; print(g.GEMM_MODE, g.GEMM_CUTLASS, g._sm90_off)"
    for value, want in (("cutlass", "cutlass True False"), ("CUTLASS ", "cutlass True False"),
                        ("cublas", "cublas False True"), ("", "auto False False"), ("auto", "auto False False")):
        env = dict(os.environ, GPK_GEMM=value, GPK_DEVICE="cpu")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(ROOT),
                           timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == want, (value, r.stdout)


def test_gpk_gemm_switch_values():
    from gpk_array import _gpu
    assert _gpu._gemm_mode("cutlass") == "cutlass" and _gpu._gemm_mode(None) == "auto"
    assert _gpu._gemm_mode("default") == "auto" and _gpu._gemm_mode(" cuBLAS") == "cublas"
    with pytest.warns(UserWarning, match="GPK_GEMM"):
        assert _gpu._gemm_mode("cutlas") == "auto"


@pytest.mark.parametrize("m, n, k, fam, fam_bf16", [
    (8192, 3072, 768, "ppt", "ppt"), (8192, 2304, 768, "ppt", "ppt"), (8192, 768, 3072, None, None),
    (8192, 768, 768, None, None), (1, 3072, 768, None, None), (4096, 4096, 4096, None, None),
    (8192, 8192, 8192, None, None), (4096, 8192, 8192, None, None), (128, 768, 3072, None, None),
    (1024, 3072, 768, None, None), (2048, 2048, 2048, None, None), (4096, 4096, 1024, "ppt", "ppt")])
def test_sm90_shape_rule(m, n, k, fam, fam_bf16):
    assert gemm.sm90_family(m, n, k) == fam
    assert gemm.sm90_family(m, n, k, dt="bf16") == fam_bf16
    assert gemm.sm90_family(m, n, k, forced=True) in ("ppt", "coopt")
    for dt, want in (("float16", fam), ("bfloat16", fam_bf16)):
        key = gemm.select_sm90(dt, "nn", m, n, k)
        code = "f16" if dt == "float16" else "bf16"
        assert key == (None if want is None else f"gemm/{code}/nn/{want}/sm90")
        if key is not None:
            from gpk_array._kernels.cutlass import params_sm90 as P
            assert P.instance(key)["arch"] == 90          # every key the rule makes is a real instance
            assert P.instance(key.replace("/nn/", "/tn/"))["arch"] == 90
    assert gemm.select_sm90("float32", "nn", m, n, k) is None
    assert gemm.select_sm90("float16", "nt", m, n, k) is None
    assert gemm.select_sm90("float16", "nn", 0, n, k) is None


def test_cutlass_instances_try_nvcc_then_nvrtc(monkeypatch, tmp_path):
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPK_KERNEL_BACKEND", raising=False)
    monkeypatch.setattr(loader, "nvcc_path", lambda: "/x/nvcc")
    monkeypatch.setattr(loader, "nvrtc_available", lambda: True)
    f = gemm.cu_file("gemm/f16/tn/small/sm80")
    assert loader.backends_for(f) == ("nvcc", "nvrtc")
    assert loader.backends_for(f, "nvrtc") == ("nvrtc",)
    assert loader.backends_for("nn.cu") == (loader.default_backend(),)
    monkeypatch.setenv("GPK_KERNEL_BACKEND", "nvrtc")
    assert loader.backends_for(f) == ("nvrtc",)
    monkeypatch.delenv("GPK_KERNEL_BACKEND")
    monkeypatch.setattr(loader, "nvcc_path", lambda: None)
    assert loader.backends_for(f) == ("nvrtc",)
    monkeypatch.setattr(loader, "nvcc_path", lambda: "/x/nvcc")
    monkeypatch.setattr(loader, "cutlass_headers", lambda: ("/x/include", "4.2.0"))
    monkeypatch.setattr(loader, "_sources", {})

    tried = []

    def fake(source, options, arch, backend=None, name="k.cu", include_dirs=()):
        tried.append((backend, include_dirs))
        if backend == "nvcc":
            raise loader.KernelCompileError("nvcc broke", "log nvcc", backend="nvcc")
        return b"\x7fELF from nvrtc"

    monkeypatch.setattr(loader, "compile_cubin", fake)
    info = loader.build(f, gemm.compile_options(), "90", note=False)
    assert tried == [("nvcc", ("/x/include",)), ("nvrtc", ("/x/include",))]
    assert Path(info["path"]).read_bytes() == b"\x7fELF from nvrtc"

    def broken(source, options, arch, backend=None, name="k.cu", include_dirs=()):
        raise loader.KernelCompileError(f"{backend} broke", f"log {backend}", backend=backend)

    monkeypatch.setattr(loader, "compile_cubin", broken)
    with pytest.raises(loader.KernelCompileError) as ei:
        loader.build(gemm.cu_file("gemm/bf16/tn/small/sm80"), gemm.compile_options(), "90", note=False)
    assert "nvcc broke" in str(ei.value) and "nvrtc broke" in str(ei.value) and "log nvrtc" in ei.value.log


@pytest.mark.parametrize("m, n, k, fam", [
    (2048, 2048, 2048, "ppt"), (8192, 3072, 768, "ppt"), (1024, 3072, 768, "ppt"), (4096, 4096, 4096, None),
    (8192, 8192, 8192, None), (128, 3072, 768, None), (129, 3969, 768, "ppt")])
def test_sm90_tf32_rule(m, n, k, fam):
    """TF32: only the "tn" ppt instance, from 64 tiles of 128x128 up to 2^35 multiply-adds; float32 only with tf32."""
    assert gemm.sm90_family(m, n, k, dt="tf32", layout="tn") == fam
    assert gemm.sm90_family(m, n, k, dt="tf32", layout="nn") is None
    key = gemm.select_sm90("float32", "tn", m, n, k, tf32=True)
    assert key == (None if fam is None else "gemm/tf32/tn/ppt/sm90")
    assert gemm.select_sm90("float32", "tn", m, n, k) is None           # TF32 not allowed: full FP32, cuBLAS
    if key is not None:
        from gpk_array._kernels.cutlass import params_sm90 as P
        assert P.instance(key)["dtype"] == "tf32"


def test_sm90_tf32_takes_what_numpy_calls_float32():
    """select_sm90's TF32 check: a float32 dtype, its names and the scalar type select the TF32 instance (a dtype
    costs one C-level attribute read); other dtypes, and objects that are no dtype, never do."""
    import numpy as np
    m, n, k = 2048, 2048, 2048
    for dt in (np.dtype(np.float32), "float32", "f4", "single", np.float32):
        assert gemm.select_sm90(dt, "tn", m, n, k, tf32=True) == "gemm/tf32/tn/ppt/sm90", dt
    for dt in (np.dtype(np.float64), "float64", np.int32, np.dtype(np.complex64), object(), None):
        assert gemm.select_sm90(dt, "tn", m, n, k, tf32=True) is None, dt


@pytest.mark.parametrize("act", [None, "gelu", "gelu_tanh", "relu", "silu"])
def test_sm90_fused_rule(act):
    from gpk_array._kernels.cutlass import params_sm90 as P
    big = gemm.select_sm90_fused("bfloat16", 8192, 3072, 768, act)
    assert big == "gemm/bf16/tn/ppt_" + ("bias" if act is None else f"bias_{act}") + "/sm90"
    assert P.fused_of(P.instance(big)) is not None
    small = gemm.select_sm90_fused("float16", 512, 3072, 768, act)      # gelu/silu: no cuBLASLt epilogue
    assert (small is not None) == (act in ("gelu", "silu"))
    if small is not None:   # few rows: the fr96 instance (128x96 tiles), from FEW_ROWS_MAX + 1 rows on ppt
        assert small == f"gemm/f16/tn/fr96_bias_{act}/sm90" and not P.instance(small).get("candidate")
        # fr192 (128x192 tiles) where its waves cost no more: 1024 rows x3072 (128 tiles against fr96's 256)
        mid = gemm.select_sm90_fused("float16", gemm.FEW_ROWS_MAX, 3072, 768, act)
        assert mid == f"gemm/f16/tn/fr192_bias_{act}/sm90" and not P.instance(mid).get("candidate")
        assert gemm.select_sm90_fused("float16", 1024, 768, 3072, act) == f"gemm/f16/tn/fr96_bias_{act}/sm90"
        assert gemm.select_sm90_fused("float16", gemm.FEW_ROWS_MAX + 1, 3072, 768, act).split("/")[3] == \
            f"ppt_bias_{act}"
    # gelu_tanh: ppt from TANH_PPT_MIN_M rows (else cuBLASLt's epilogue); bias and relu from the plain ppt rule
    tanh_mid = gemm.select_sm90_fused("float16", gemm.TANH_PPT_MIN_M, 3072, 768, act)
    assert (tanh_mid is not None) == (act in ("gelu", "gelu_tanh", "silu"))
    assert gemm.select_sm90_fused("float16", gemm.TANH_PPT_MIN_M - 1, 3072, 768, "gelu_tanh") is None
    assert gemm.select_sm90_fused("float16", gemm.TANH_PPT_MIN_M, 3072, 3072, "gelu_tanh") is None
    assert gemm.select_sm90_fused("float16", gemm.TANH_PPT_MIN_M, 1024, 768, "gelu_tanh") is None


def test_few_rows_family_counts_whole_clusters():
    """fr96's 1x2x1 cluster runs an even number of column tiles, fr192's 2x1x1 an even number of row tiles: a
    single 128-row tile row is one wave of fr96 tiles but two of fr192's padded pair at N = 16384."""
    assert gemm._few_rows_family(128, 16384) == "fr96"
    assert gemm._few_rows_family(384, 8192) == "fr96"
    assert gemm._few_rows_family(1024, 3072) == "fr192" and gemm._few_rows_family(640, 3072) == "fr192"
    assert gemm._few_rows_family(512, 3072) == "fr96" and gemm._few_rows_family(1024, 768) == "fr96"


def test_fused_rule_never_picks_a_candidate():
    """Every key select_sm90_fused gives (not forced) is a shipped instance, never a candidate."""
    from gpk_array._kernels.cutlass import params_sm90 as P
    sizes = [1, 8, 9, 127, 128, 129, 383, 384, 640, 1023, 1024, 1025, 2047, 2048, 4095, 4096, 8192]
    for dt in ("float16", "bfloat16"):
        for act in (None, "gelu", "gelu_tanh", "relu", "silu"):
            for m in sizes:
                for n in (8, 768, 2304, 3072, 8192, 16384, 65536):
                    for k in (8, 768, 4096):
                        key = gemm.select_sm90_fused(dt, m, n, k, act)
                        if key is not None:
                            assert not P.instance(key).get("candidate"), key
    assert gemm.select_sm90_fused("float16", 512, 3072, 768, act, forced=True) is not None
    assert gemm.select_sm90_fused("float32", 8192, 3072, 768, act) is None
    assert gemm.select_sm90_fused("float16", 8192, 3072, 768, "tanh") is None


def test_sm90_pre_check_is_necessary_for_the_shape_rule():
    """_gpu skips the SM90 path where sm90_may_take (plain GEMMs) or sm90_fused_may_take (linear with a bias or an
    activation) is False: no problem the rule or the fused rule gives an instance may fail its pre-check."""
    sizes = [1, 8, 127, 128, 129, 1000, 2048, 4095, 4096, 4097, 8192, 16384]
    for m in sizes:
        for n in sizes:
            for k in (8, 768, 1024, 4096):
                for dt, isz in (("f16", 2), ("bf16", 2), ("tf32", 4)):
                    if gemm.sm90_family(m, n, k, False, dt, "tn") is not None:
                        assert gemm.sm90_may_take(m, n, isz), (m, n, k, dt)
                for act in (None, "gelu", "gelu_tanh", "relu", "silu"):
                    if gemm.select_sm90_fused("float16", m, n, k, act) is not None:
                        assert gemm.sm90_fused_may_take(m, n, 2, act), (m, n, k, act)
    assert not gemm.sm90_may_take(4095, 8192, 2) and not gemm.sm90_may_take(512, 512, 4)


class _Meta:
    """Shape/dtype/strides stand-in: linear_sm90 must decline before touching a GPU."""

    def __init__(self, shape, dtype, strides=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.ndim, self.itemsize = len(self.shape), self.dtype.itemsize
        self.strides = strides if strides is not None else tuple(
            int(np.prod(self.shape[i + 1:])) * self.itemsize for i in range(self.ndim))


def test_linear_sm90_declines_a_bias_it_cannot_read_as_a_row():
    x, w = _Meta((8192, 768), np.float16), _Meta((3072, 768), np.float16)
    for bias in (_Meta((3072,), np.float16, (4,)),          # strided view
                 _Meta((3072,), np.float16, (0,)),          # broadcast
                 _Meta((3072,), np.float32),                # other dtype
                 _Meta((1, 3072), np.float16),              # not (N,)
                 _Meta((768,), np.float16)):                # wrong length
        assert gemm.linear_sm90(x, w, bias, "gelu") is None
    assert gemm.linear_sm90(x, _Meta((3072, 512), np.float16), None, "gelu") is None   # K mismatch


def test_fused_key_refuses_float32():
    from gpk_array._kernels.cutlass import launch_sm90 as L
    assert L.fused_key(np.dtype(np.float16), "ppt", "gelu") == "gemm/f16/tn/ppt_bias_gelu/sm90"
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        L.fused_key(np.dtype(np.float32), "ppt", "gelu")
