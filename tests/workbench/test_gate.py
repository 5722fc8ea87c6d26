"""The promotion gate: a candidate enters the registry only with a passing validation, benchmark evidence from the
target GPU (the same machine as the validation, today's incumbent) and a >= 2% median improvement over the
incumbent of its selector; every refusal names its reasons and leaves the registry byte for byte as it was. The
evidence is declared (tests/workbench/_fake.py): what the gate decides from it is what is tested."""
import json
import shutil

import pytest

from gpk_array._kernels import gemm
from gpk_array.workbench import api, candidates, evidence, registry

from . import _fake


@pytest.fixture
def reg(tmp_path):
    d = tmp_path / "registry"
    shutil.copytree(registry.PACKAGE_DIR, d)
    return d


@pytest.fixture
def ws(tmp_path):
    return tmp_path / "ws"


def _fr96(ws, **kw):
    args = dict(dtype="float16", layout="tn", family="fr96", where="m=256:1024,n=3072:3072,k=768:768",
                shapes="512x3072x768,1024x3072x768", base=ws)
    args.update(kw)
    return candidates.create("gemm", kw.pop("name", "fr96-512"), **args)


def _write(rec, tmp_path, name):
    p = tmp_path / name
    p.write_text(json.dumps(rec))
    return p


def _snapshot(d):
    return {p.name: p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _refused(tmp_path, reg, ws, v, b, match, **kw):
    before = _snapshot(reg)
    with pytest.raises(api.PromotionRefused) as e:
        api.promote("fr96-512", _write(v, tmp_path, "v.json"), _write(b, tmp_path, "b.json"), registry_dir=reg,
                    base=ws, **kw)
    assert any(match in r for r in e.value.reasons), e.value.reasons
    assert _snapshot(reg) == before          # nothing in the registry changed
    return e.value.reasons


def test_accepted_candidate_drives_the_compiled_lookup(tmp_path, reg, ws):
    meta = _fr96(ws)
    v, b = _fake.validation(meta), _fake.bench(meta, 1.05)
    rec = api.promote("fr96-512", _write(v, tmp_path, "v.json"), _write(b, tmp_path, "b.json"), registry_dir=reg,
                      base=ws)
    assert rec["status"] == "promoted" and rec["selector"] == "gemm/f16/tn/sm90"
    assert rec["fingerprint"] == evidence.fingerprint(_fake.H200)
    for c in rec["evidence"]:
        assert (reg / c).is_file()
    tables = registry.load(reg)                      # the file still validates
    recs = tables["gemm_sm90"]["records"]
    sel = [r["id"] for r in recs if r["selector"] == "gemm/f16/tn/sm90"]
    assert sel[0] == rec["id"]                       # before the selector's older records
    fn = registry.compile_tables(tables, gemm._few_rows)["plain_key"][("f16", "tn")]
    assert fn(512, 3072, 768) == "gemm/f16/tn/fr96/sm90" and fn(1024, 3072, 768) == "gemm/f16/tn/fr96/sm90"
    assert fn(512, 768, 3072) is None                # outside its class: the split-K record, cuBLASLt
    assert fn(8192, 3072, 768) == "gemm/f16/tn/ppt/sm90"
    other = registry.compile_tables(tables, gemm._few_rows)["plain_key"][("f16", "nn")]
    assert other(512, 3072, 768) is None             # another selector is untouched


def test_refuses_planned_evidence(tmp_path, reg, ws):
    meta = _fr96(ws)
    _refused(tmp_path, reg, ws, _fake.validation(meta, planned=True), _fake.bench(meta, 1.05),
             "planned evidence from --dry-run")
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 1.05, planned=True),
             "planned evidence from --dry-run")


def test_refuses_failed_validation(tmp_path, reg, ws):
    meta = _fr96(ws)
    why = _refused(tmp_path, reg, ws, _fake.validation(meta, passed=False), _fake.bench(meta, 1.5),
                   "validation did not pass")
    assert any("rel error 0.3" in r for r in why)


def test_refuses_a_benchmark_from_another_gpu(tmp_path, reg, ws):
    meta = _fr96(ws)
    a100 = _fake.env(name="NVIDIA A100", compute_capability="80", sm_count=108)
    why = _refused(tmp_path, reg, ws, _fake.validation(meta, environment=a100),
                   _fake.bench(meta, 1.2, environment=a100), "not the target sm_90 GPU")
    assert len(why) == 1


def test_refuses_validation_and_bench_from_different_machines(tmp_path, reg, ws):
    meta = _fr96(ws)
    other_driver = _fake.env(driver="12.8")
    why = _refused(tmp_path, reg, ws, _fake.validation(meta, environment=other_driver), _fake.bench(meta, 1.2),
                   "different machines or toolchains")
    assert any("driver: 12.8 -> 13.0" in r for r in why)


def test_refuses_below_two_percent(tmp_path, reg, ws):
    meta = _fr96(ws)
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 1.015), "a 2% median improvement")
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 0.7), "below the 1.02x")


def test_refuses_evidence_of_another_candidate_version(tmp_path, reg, ws):
    meta = _fr96(ws)
    v, b = _fake.validation(meta), _fake.bench(meta, 1.1)
    _fr96(ws, shapes="512x3072x768", force=True)      # same name, another contract: another hash
    _refused(tmp_path, reg, ws, v, b, "another version of the candidate")


def test_refuses_a_benchmark_against_a_stale_incumbent(tmp_path, reg, ws):
    meta = _fr96(ws)
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 1.1, incumbent="gemm/f16/tn/ppt/sm90"),
             "registry's choice changed since the benchmark")


def test_refuses_missing_or_wrong_evidence_files(tmp_path, reg, ws):
    meta = _fr96(ws)
    before = _snapshot(reg)
    with pytest.raises(api.PromotionRefused, match="no such evidence file"):
        api.promote("fr96-512", tmp_path / "nope.json", tmp_path / "nope2.json", registry_dir=reg, base=ws)
    b = _write(_fake.bench(meta, 1.1), tmp_path, "b.json")
    with pytest.raises(api.PromotionRefused, match="not a validation"):
        api.promote("fr96-512", b, b, registry_dir=reg, base=ws)
    assert _snapshot(reg) == before


def test_refuses_into_a_corrupted_registry(tmp_path, reg, ws):
    meta = _fr96(ws)
    (reg / "gemm_sm90.json").write_text("{}")
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 1.1), "the registry does not load")


def test_bootstrap_admits_a_tie_once(tmp_path, reg, ws):
    meta = _fr96(ws)
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 0.95), "bootstrap floor",
             bootstrap=True)
    v, b = _write(_fake.validation(meta), tmp_path, "v1.json"), _write(_fake.bench(meta, 0.99), tmp_path, "b1.json")
    rec = api.promote("fr96-512", v, b, registry_dir=reg, base=ws, bootstrap=True)
    assert rec["candidate"]["gate"] == "bootstrap"
    # the selector now has a promoted record: no second bootstrap; and the incumbent for its shapes is fr96 now
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 1.0, incumbent="gemm/f16/tn/fr96/sm90"),
             "first promoted record", bootstrap=True)


def test_routing_candidate_replaces_its_selector_record(tmp_path, reg, ws):
    meta = candidates.create("elementwise", "ew-2m", min_elements=1 << 21, ops="add", dtype="float16", base=ws)
    assert meta["selector"] == "elementwise/*/cuda" and [1 << 21] in meta["shapes"]
    same = _fake.routing_bench(meta, 1.3, incumbent_from=1 << 21)    # decides like the incumbent everywhere
    with pytest.raises(api.PromotionRefused, match="nothing to gain"):
        api.promote("ew-2m", _write(_fake.validation(meta), tmp_path, "v.json"), _write(same, tmp_path, "s.json"),
                    registry_dir=reg, base=ws)
    b = _fake.routing_bench(meta, 1.3, incumbent_from=1 << 22)
    rec = api.promote("ew-2m", _write(_fake.validation(meta), tmp_path, "v.json"), _write(b, tmp_path, "b.json"),
                      registry_dir=reg, base=ws)
    tables = registry.load(reg)
    ew = [r for r in tables["routing"]["records"] if r["selector"] == "elementwise/*/cuda"]
    assert ew == [rec]
    assert registry.compile_tables(tables, gemm._few_rows)["elementwise_min"] == 1 << 21


@pytest.fixture
def reemit(tmp_path, monkeypatch):
    """A copy of the CUTLASS MANIFEST (and of the fr96 instance's source) that the runtime reads instead of the
    package's; ``reemit(manifest_too=True)`` changes the source as re-emitting it would (the MANIFEST's sha256
    follows), ``manifest_too=False`` edits the file by hand (the MANIFEST still has the old hash). Returns the new
    source hash."""
    import hashlib

    from gpk_array._kernels.cutlass import params
    d = tmp_path / "cutlass"
    d.mkdir()
    man = json.loads(params.MANIFEST_PATH.read_text())
    entry = next(e for e in man["instances"] if e["key"] == "gemm/f16/tn/fr96/sm90")
    shutil.copyfile(params.MANIFEST_PATH.parent / entry["file"], d / entry["file"])
    (d / "MANIFEST.json").write_text(json.dumps(man))
    monkeypatch.setattr(params, "MANIFEST_PATH", d / "MANIFEST.json")

    def change(manifest_too=True):
        src = d / entry["file"]
        src.write_text(src.read_text() + "\n// re-emitted with another tile schedule\n")
        new = hashlib.sha256(src.read_bytes()).hexdigest()
        if manifest_too:
            entry["sha256"] = new
            (d / "MANIFEST.json").write_text(json.dumps(man))
        return new
    return change


@pytest.mark.parametrize("manifest_too", [True, False])
def test_refuses_a_re_emitted_instance_on_old_evidence(tmp_path, reg, ws, reemit, manifest_too):
    meta = _fr96(ws)
    old = meta["source_sha256"]
    v, b = _fake.validation(meta), _fake.bench(meta, 1.1)
    assert api.gate(meta, v, b, registry.load(reg)) == []       # the evidence itself is fine
    new = reemit(manifest_too)
    why = _refused(tmp_path, reg, ws, v, b, "changed since the candidate was created")
    drift = [r for r in why if "changed since" in r][0]
    assert old in drift and new in drift and "gemm/f16/tn/fr96/sm90" in drift
    for op in (lambda: api.validate("fr96-512", dry_run=True, base=ws),
               lambda: api.validate("fr96-512", base=ws),
               lambda: api.bench("fr96-512", dry_run=True, base=ws)):
        with pytest.raises(api.WorkbenchError, match="changed since the candidate was created") as e:
            op()
        assert old in str(e.value) and new in str(e.value)
    assert not list((ws / "fr96-512" / "evidence").glob("*.json"))   # nothing was written


def test_refuses_an_instance_gone_from_the_manifest(tmp_path, reg, ws, reemit):
    from gpk_array._kernels.cutlass import params
    meta = _fr96(ws)
    man = json.loads(params.MANIFEST_PATH.read_text())
    man["instances"] = [e for e in man["instances"] if e["key"] != meta["instance"]]
    params.MANIFEST_PATH.write_text(json.dumps(man))
    _refused(tmp_path, reg, ws, _fake.validation(meta), _fake.bench(meta, 1.1), "is no longer in")
