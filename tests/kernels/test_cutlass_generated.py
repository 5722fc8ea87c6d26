"""The emitted CUTLASS GEMM instances: regeneration matches MANIFEST.json, the Params builder matches
CUTLASS's own host constructor byte for byte, and (slow) one instance compiles with nvcc. No GPU."""

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpk_array._kernels.cutlass import params as P

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_cutlass.py"
KDIR = ROOT / "gpk_array" / "_kernels" / "cutlass"
MANIFEST = json.loads((KDIR / "MANIFEST.json").read_text())
# SM80 builder only; the SM90 instances are checked by test_cutlass_sm90_params.py
PROBED = [e for e in MANIFEST["instances"] if e["host_params"]["status"] == "probed" and e["arch"] < 90]

needs_cutlass = pytest.mark.skipif(importlib.util.find_spec("cutlass_cppgen") is None,
                                   reason="nvidia-cutlass (cutlass_cppgen) not installed")


def _nvcc():
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).is_file():
            return cand
    return None


@needs_cutlass
def test_generator_check_matches_manifest(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False,
                       cwd=str(tmp_path), timeout=600)
    assert r.returncode == 0, f"--check failed:\n{r.stdout}\n{r.stderr[-8000:]}"
    assert "0 mismatches" in r.stdout
    assert not (tmp_path / "compiled_cache.db").exists()
    assert not (ROOT / "compiled_cache.db").exists()


@needs_cutlass
def test_generator_check_detects_a_changed_file(tmp_path):
    out = tmp_path / "k"
    shutil.copytree(KDIR, out, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    victim = out / MANIFEST["instances"][0]["file"]
    victim.write_text(victim.read_text() + "// edited\n")
    r = subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(out)],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=600, check=False)
    assert r.returncode != 0
    assert "does not match its recorded sha256" in r.stdout


def test_generator_is_a_package_and_assembles_the_probe_from_its_cpp():
    """The generator imports as a package (no sys.path edit; CUTLASS's Python is imported only when emitting), and
    the SM90 probe program is assembled from probe_sm90.cpp: its fixed C++ before and after the instances, in that
    order, with no marker left."""
    from gpk_array._kernels.cutlass.gen import cli, families, probe_sm90
    assert families.OUT_DIR == KDIR and cli.OUT_DIR == KDIR
    entry = next(e for e in MANIFEST["instances"] if e["arch"] >= 90)
    src = probe_sm90._sm90_probe_source([entry], KDIR)
    assert "@GPK_" not in src and "GPK_MEMBER_FUNCTIONS" not in src
    at = [src.index(s) for s in ("CUresult CUDAAPI cuTensorMapEncodeTiled(", "namespace gpk_i0 {",
                                 "static void gpk_dirty_stack(", "static void gpk_members_0(", "int main() {")]
    assert at == sorted(at)
    assert src.count("int main() {") == 1 and f'"{entry["key"]}"' in src[at[-1]:]


def test_manifest_files_and_names():
    keys = set()
    for e in MANIFEST["instances"]:
        # family: [a-z0-9]+, with a fused epilogue "<family>_<epilogue>" (gemm/f16/tn/ppt_bias_gelu/sm90)
        assert re.fullmatch(r"gemm/(f16|bf16|tf32)/(tn|nn)/[a-z0-9]+(_[a-z0-9_]+)?/sm(80|90)", e["key"]), e["key"]
        # the operand layout is a property of the entry, named in its key and file and in CUTLASS's B tag
        assert e["layout_tag"] == e["key"].split("/")[2] and f"_{e['layout_tag']}_" in e["file"]
        assert e["layout"]["B"].startswith({"tn": "ColumnMajor", "nn": "RowMajor"}[e["layout_tag"]])
        assert e["key"] not in keys
        keys.add(e["key"])
        src = (KDIR / e["file"]).read_bytes()
        assert hashlib.sha256(src).hexdigest() == e["sha256"]
        text = src.decode()
        assert 'extern "C"' in text
        assert re.search(r"\b{}\(".format(re.escape(e["kernel"])), text)
    assert {"gemm/f16/tn/small/sm80", "gemm/bf16/tn/small/sm80"} <= keys
    assert MANIFEST["settings"]["compile_test_key"] in keys


@pytest.mark.parametrize("entry", PROBED, ids=[e["key"] for e in PROBED])
def test_params_bytes_match_cutlass_host_constructor(entry):
    goldens = entry["host_params"]["golden"]
    assert len(goldens) >= 3
    for g in goldens:
        m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd = g["case"]
        la = P.build_sm80_launch(entry, m, n, k, pa, pb, pc, pd, lda, ldb, ldc, ldd, alpha, beta)
        assert la.params.hex() == g["hex"], g["case"]
        assert list(la.grid) == g["grid"], g["case"]
        assert la.block == (entry["threads"], 1, 1)
        assert la.shared_mem == entry["host_params"]["smem_bytes"]
        assert la.kernel == entry["kernel"]


def test_params_layout_is_the_documented_one():
    for e in PROBED:
        hp = e["host_params"]
        assert hp["params_size"] % 8 == 0 and hp["params_align"] == 8
        t = e["tile"]
        bits = 16
        assert hp["smem_bytes"] >= e["stages"] * (t[0] * t[2] + t[1] * t[2]) * bits // 8
        assert hp["threads"] == e["threads"]
        off = hp["offsets"]
        assert off["problem_size"] == 0 and off["params_A"] < off["params_B"] < off["params_C"]


def test_schedule_swizzle_and_k_alignment():
    small = P.instance("gemm/f16/tn/small/sm80")
    s = P.sm80_schedule(small, 1, 3072, 768)
    assert s["tiled"] == (1, 48, 1) and s["log_tile"] == 0 and s["grid"] == (1, 48, 1)
    assert s["gemm_k_size"] == 768
    large = P.instance("gemm/bf16/tn/large/sm80")
    s = P.sm80_schedule(large, 4096, 4096, 4104)
    assert s["tiled"] == (32, 16, 1) and s["log_tile"] == 3 and s["grid"] == (256, 2, 1)
    assert s["gemm_k_size"] == 4104
    assert P.sm80_schedule(large, 128, 256, 64)["log_tile"] == 0   # one column of tiles
    assert P.sm80_schedule(large, 128, 512, 64)["log_tile"] == 1   # swizzle 8, tiled.n == 2


def test_params_rejects_what_the_instance_cannot_run():
    e = P.instance("gemm/f16/tn/small/sm80")
    ok = {"m": 64, "n": 64, "k": 64, "ptr_a": 0x1000, "ptr_b": 0x2000, "ptr_c": 0x3000, "ptr_d": 0x3000}
    P.build_sm80_launch(e, **ok)
    for bad in ({"k": 60}, {"n": 100}, {"lda": 70}, {"ptr_b": 0x2008}, {"m": 0}):
        with pytest.raises(ValueError):
            P.build_sm80_launch(e, **{**ok, **bad})
    with pytest.raises(ValueError):
        P.build_sm80_launch(P.instance("gemm/f16/tn/large/sm90"), **ok)


def test_params_scalar_round_trip():
    e = P.instance("gemm/bf16/tn/small/sm80")
    la = P.build_sm80_launch(e, 128, 256, 512, 0x1000, 0x2000, 0x3000, 0x4000, alpha=0.5)
    s = P.params_scalar(la.params)
    assert s.dtype.itemsize == len(la.params) and s.dtype.alignment == 8
    assert s.tobytes() == la.params


@pytest.mark.slow
@pytest.mark.skipif(_nvcc() is None, reason="nvcc not installed")
@pytest.mark.skipif(importlib.util.find_spec("cutlass_library") is None,
                    reason="nvidia-cutlass (CUTLASS headers) not installed")
def test_one_sm80_instance_compiles_with_nvcc(tmp_path):
    import cutlass_library

    inc = Path(cutlass_library.__file__).resolve().parent / "source" / "include"
    entry = P.instance(MANIFEST["settings"]["compile_test_key"])
    cubin = tmp_path / "k.cubin"
    cmd = [_nvcc(), "-cubin", "-arch=sm_80", *MANIFEST["settings"]["compile_flags"], "-I", str(inc),
           "-o", str(cubin), str(KDIR / entry["file"])]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=False)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-20000:]
    assert entry["kernel"].encode() in cubin.read_bytes()
    print(f"nvcc sm_80 {entry['key']}: {took:.1f} s")
