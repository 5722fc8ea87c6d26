"""The workbench on a GPU: create -> validate -> bench -> promote for a GEMM candidate (the fr96 instance on GPT-2's
512-row shapes, where cuBLASLt is the incumbent), an elementwise routing candidate, and the shipped fused fr96 +
bias + GELU instance as a bootstrap record; a kernel made wrong on purpose fails validation. Promotion goes into a
copy of the registry, never the package's. Whatever the timings, the gate must be consistent: it admits exactly
when the validation passed and the benchmark's median ratio reaches 1.02 (bootstrap: 0.98), and a refusal leaves the
registry unchanged."""
import json
import shutil

import pytest

from gpk_array.workbench import api, candidates, gpu, registry

from ..conftest import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.fixture
def reg(tmp_path):
    d = tmp_path / "registry"
    shutil.copytree(registry.PACKAGE_DIR, d)
    return d


def _snapshot(d):
    return {p.name: p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _full_path(name, ws, reg, floor=1.02, bootstrap=False):
    vpath, v = api.validate(name, base=ws)
    assert not v["planned"] and v["env"]["gpu"]["compute_capability"] == "90"
    assert v["summary"]["passed"], json.dumps([v["summary"], [r for r in v["results"] if not r.get("passed", True)]])
    bpath, b = api.bench(name, base=ws, warmup=3, repeats=10)
    ratio = b["summary"]["median_ratio_vs_incumbent"]
    print(f"\n{name}: median ratio vs incumbent {ratio}, vs cuBLASLt {b['summary'].get('median_ratio_vs_cublaslt')}")
    for r in b["rows"]:
        print("  ", {k: r[k] for k in r if k in ("shape", "op", "dtype", "incumbent", "ratio_vs_incumbent",
                                                 "ratio_vs_cublaslt")})
    before = _snapshot(reg)
    try:
        rec = api.promote(name, vpath, bpath, registry_dir=reg, base=ws, bootstrap=bootstrap)
    except api.PromotionRefused as e:
        assert ratio is None or ratio < floor, e.reasons
        assert _snapshot(reg) == before
        return None, ratio
    assert ratio >= floor
    return rec, ratio


def test_gemm_candidate_create_to_promote(tmp_path, reg):
    ws = tmp_path / "ws"
    candidates.create("gemm", "fr96-512", dtype="float16", layout="tn", family="fr96",
                      where="m=512:512,n=3072:3072,k=768:768", shapes="512x3072x768", base=ws)
    rec, ratio = _full_path("fr96-512", ws, reg)
    b = json.loads(sorted((ws / "fr96-512" / "evidence").glob("bench-*.json"))[-1].read_text())
    row = b["rows"][0]
    assert row["incumbent"] == "cublaslt"                     # no SM90 record covers 512 rows today
    for who in ("candidate", "dispatch", "cublaslt"):     # "dispatch": the incumbent, timed
        assert row[who]["gpu"]["median_us"] > 0 and row[who]["host"]["median_us"] > 0
    if rec is not None:
        from gpk_array._kernels import gemm
        t = registry.compile_tables(registry.load(reg), gemm._few_rows)
        assert t["plain_key"][("f16", "tn")](512, 3072, 768) == "gemm/f16/tn/fr96/sm90"


def test_elementwise_candidate_create_to_promote(tmp_path, reg):
    ws = tmp_path / "ws"
    candidates.create("elementwise", "ew-2m", ops="add", dtype="float16", min_elements=1 << 21, base=ws)
    rec, ratio = _full_path("ew-2m", ws, reg)
    if rec is not None:
        from gpk_array._kernels import gemm
        assert registry.compile_tables(registry.load(reg), gemm._few_rows)["elementwise_min"] == 1 << 21


def test_shipped_fused_instance_as_a_bootstrap_record(tmp_path, reg):
    ws = tmp_path / "ws"
    candidates.create("gemm", "fr96-gelu", dtype="float16", layout="tn", family="fr96", epilogue="bias_gelu",
                      where="m=256:512,n=3072:3072,k=768:768", shapes="256x3072x768,512x3072x768", base=ws)
    rec, ratio = _full_path("fr96-gelu", ws, reg, floor=0.98, bootstrap=True)
    if rec is not None:
        assert rec["candidate"]["gate"] == "bootstrap"


def test_a_wrong_kernel_fails_validation(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    candidates.create("elementwise", "wrong", ops="add,exp", dtype="float32", min_elements=1 << 16, base=ws)
    real = gpu._ours

    def off_by_a_bit(meta, op, args, out=None):
        y = real(meta, op, args, out=out)
        return None if y is None else y * 1.001          # 1e-3 relative: 10x the float32 tolerance
    monkeypatch.setattr(gpu, "_ours", off_by_a_bit)
    _, v = api.validate("wrong", base=ws)
    assert not v["summary"]["passed"] and v["summary"]["failed"] > 0
    assert any("rel error" in f for f in v["summary"]["failures"])


def test_doctor_on_the_gpu_machine():
    d = api.doctor()
    assert d["env"]["gpu"] is not None and d["can_run"]["validate/bench (real)"]
    assert d["registry_errors"] == []
