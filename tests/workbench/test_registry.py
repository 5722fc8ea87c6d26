"""The registry's schema: the shipped files load and validate; a corrupted file is refused at load with the file and
the field named, and dispatch then falls back to cuBLASLt (GEMMs) or CuPy (routing) for what that file covered,
while the other files still drive dispatch."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from gpk_array.workbench import registry

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_shipped_files_validate_and_cite_existing_evidence():
    tables = registry.load(registry.PACKAGE_DIR)
    ids = set()
    for t, data in tables.items():
        assert data["records"], t
        for r in data["records"]:
            assert r["status"] == "bootstrap"
            assert r["id"] not in ids
            ids.add(r["id"])
            for path in r["evidence"]:
                assert path.startswith("benchmarks/results/") and (ROOT / path).is_file(), (r["id"], path)


def test_package_data_ships_the_registry():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"_kernels/registry/*.json"' in text


def _copy(tmp_path):
    d = tmp_path / "reg"
    shutil.copytree(registry.PACKAGE_DIR, d)
    return d


def _edit(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


CORRUPTIONS = [
    ("gemm_sm90", lambda d: d["records"][0]["where"].update(m=[4096, "x"]), "records[0].where.m"),
    ("gemm_sm90", lambda d: d["records"][1].pop("evidence"), "records[1].evidence"),
    ("gemm_sm90", lambda d: d["records"][0].update(selector="gemm/f16/nt/sm90"), "records[0].selector"),
    ("gemm_sm90", lambda d: d["records"][0].update(choice={"family": "ppt; import os"}), "records[0].choice.family"),
    ("gemm_sm90", lambda d: d.update(schema=2), "schema"),
    ("gemm_sm90_fused", lambda d: d["records"][3]["choice"]["few_rows"].update(wave_sms=0),
     "records[3].choice.few_rows.wave_sms"),
    ("gemm_sm90_fused", lambda d: d["records"][2].update(status="great"), "records[2].status"),
    ("routing", lambda d: d["records"][1].update(choice={"own_from": -1}), "records[1].choice"),
    ("routing", lambda d: d["records"].append(dict(d["records"][0])), "records[64].id"),
    ("gemm_sm90", lambda d: d["records"][0].update(status="promoted"), "records[0].fingerprint"),
    # names that are identifiers but no instance of the CUTLASS MANIFEST the runtime reads
    ("gemm_sm90", lambda d: d["records"][0].update(choice={"family": "nosuch"}), "records[0].choice.family"),
    ("gemm_sm90_fused", lambda d: d["records"][3]["choice"]["few_rows"].update(wide="fr193"),
     "records[3].choice.few_rows.wide"),
    ("gemm_sm90_fused", lambda d: d["records"][3]["choice"]["few_rows"].update(narrow="ppt_bias"),
     "records[3].choice.few_rows.narrow"),
    ("gemm_sm90_fused", lambda d: d["records"][0].update(choice={"family": "large"}), "records[0].choice.family"),
]


@pytest.mark.parametrize("table,corrupt,field", CORRUPTIONS)
def test_corrupted_file_is_refused_naming_file_and_field(tmp_path, table, corrupt, field):
    d = _copy(tmp_path)
    _edit(d / f"{table}.json", corrupt)
    with pytest.raises(registry.RegistryError) as e:
        registry.load(d)
    assert e.value.field == field
    assert e.value.file.endswith(f"{table}.json")
    assert f"{table}.json" in str(e.value) and field in str(e.value)


def test_broken_json_is_refused_with_its_line(tmp_path):
    d = _copy(tmp_path)
    (d / "gemm_sm90.json").write_text('{"schema": 1,\n "table": "gemm_sm90", "records": [}')
    with pytest.raises(registry.RegistryError, match=r"gemm_sm90\.json: \(JSON, line 2"):
        registry.load(d)


_PROBE = r"""
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    from gpk_array._kernels import gemm
    from gpk_array import _gpu
print(json.dumps({
    "plain": gemm.select_sm90("float16", "nn", 8192, 3072, 768),
    "fused": gemm.select_sm90_fused("float16", 512, 3072, 768, "gelu"),
    "may_take": gemm.sm90_may_take(8192, 3072, 2),
    "forced": gemm.select_sm90("float16", "nn", 512, 512, 512, forced=True),
    "route": len(_gpu.REDUCE_ROUTE), "ew": _gpu.OWN_KERNELS_MIN,
    "warnings": [str(x.message) for x in w]}))
"""


def _probe(d):
    env = {k: v for k, v in os.environ.items() if k != "GPK_OWN_KERNELS_MIN"}
    env.update(GPK_KERNEL_REGISTRY=str(d), GPK_DEVICE="cpu")
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, cwd=ROOT,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_dispatch_falls_back_to_cublaslt_for_a_corrupted_gemm_file(tmp_path):
    d = _copy(tmp_path)
    good = _probe(d)
    assert good["plain"] == "gemm/f16/nn/ppt/sm90" and good["fused"] == "gemm/f16/tn/fr96_bias_gelu/sm90"
    assert good["warnings"] == [] and good["route"] == 63 and good["ew"] == 1 << 22
    _edit(d / "gemm_sm90.json", lambda data: data["records"][0]["where"].update(k=[None, -5]))
    bad = _probe(d)
    assert bad["plain"] is None and bad["may_take"] is False     # None: the caller uses cuBLASLt
    assert bad["fused"] == good["fused"] and bad["route"] == 63  # the other files still drive dispatch
    assert bad["forced"] == "gemm/f16/nn/ppt/sm90"               # the checking mode is no registry rule
    assert len(bad["warnings"]) == 1
    assert "gemm_sm90.json" in bad["warnings"][0] and "records[0].where.k" in bad["warnings"][0]
    assert "cuBLASLt" in bad["warnings"][0]


def test_dispatch_falls_back_to_cupy_for_a_corrupted_routing_file(tmp_path):
    d = _copy(tmp_path)
    (d / "routing.json").write_text("not json")
    bad = _probe(d)
    assert bad["route"] == 0 and bad["ew"] >= 1 << 62 and bad["plain"] == "gemm/f16/nn/ppt/sm90"
    assert len(bad["warnings"]) == 1 and "routing.json" in bad["warnings"][0] and "CuPy" in bad["warnings"][0]


def test_compiled_lookup_follows_record_order_and_bounds():
    rec = {"id": "a", "selector": "gemm/f16/tn/sm90", "status": "bootstrap", "summary": "", "evidence": ["x"]}
    tables = {"gemm_sm90": {"records": [
        dict(rec, id="a", where={"m": [None, 1024], "n": [3072, 3072]}, choice={"family": "fr96"}),
        dict(rec, id="b", where={"m": [None, 1024]}, choice={"backend": "cublaslt"}),
        dict(rec, id="c", where={"mnk": [1 << 30, None]}, choice={"family": "ppt"}),
    ]}}
    for i, r in enumerate(tables["gemm_sm90"]["records"]):
        registry.validate_record(r, "gemm_sm90", "t.json", i)
    t = registry.compile_tables(tables, lambda *a: "fr")
    fn = t["plain_key"][("f16", "tn")]
    assert fn(512, 3072, 768) == "gemm/f16/tn/fr96/sm90"
    assert fn(512, 3073, 768) is None            # record b: cuBLASLt, before c
    assert fn(2048, 1024, 1024) == "gemm/f16/tn/ppt/sm90" and fn(2048, 1024, 256) is None
    assert registry.lower_bound(tables["gemm_sm90"]["records"], "m", 99) == 0
    assert registry.where_holds({"tiles128": [64, None]}, 1024, 1024, 1) and \
        not registry.where_holds({"tiles128": [65, None]}, 1024, 1024, 1)


def test_families_are_checked_against_the_manifest_the_runtime_reads(tmp_path):
    """A family the MANIFEST does not have (as an SM90 instance of the record's dtype, layout and epilogue) is
    refused at load naming the file, the field and the instance key; the MANIFEST's instance keys are computed once
    per process (the registry is read on dispatch's first use)."""
    d = _copy(tmp_path)
    _edit(d / "gemm_sm90_fused.json", lambda data: data["records"][3]["choice"]["few_rows"].update(wide="fr193"))
    with pytest.raises(registry.RegistryError) as e:
        registry.load(d)
    assert "gemm_sm90_fused.json" in str(e.value) and "choice.few_rows.wide" in str(e.value)
    assert "fr193_bias" in str(e.value) and "MANIFEST" in str(e.value)
    assert registry.manifest_instances() is registry.manifest_instances()
    assert "gemm/f16/tn/fr96/sm90" in registry.manifest_instances()
    assert "gemm/f16/tn/large/sm80" not in registry.manifest_instances()       # an SM80 instance
    rec = {"id": "a", "selector": "gemm/f16/tn/sm90", "where": {}, "choice": {"family": "ppt"},
           "status": "bootstrap", "summary": "", "evidence": ["x"]}
    registry.validate_record(rec, "gemm_sm90", "t.json", 0)
    with pytest.raises(registry.RegistryError, match="records.0..choice.family"):
        registry.validate_record(rec, "gemm_sm90", "t.json", 0, instances=frozenset())


def test_dispatch_falls_back_for_a_family_the_manifest_lacks(tmp_path):
    d = _copy(tmp_path)
    _edit(d / "gemm_sm90.json", lambda data: [r.update(choice={"family": "gone"}) for r in data["records"]
                                              if r["choice"] == {"family": "ppt"}])
    bad = _probe(d)
    assert bad["plain"] is None and len(bad["warnings"]) == 1
    assert "gemm_sm90.json" in bad["warnings"][0] and "choice.family" in bad["warnings"][0]
    assert "gemm/f16/nn/gone/sm90" in bad["warnings"][0] and "cuBLASLt" in bad["warnings"][0]
