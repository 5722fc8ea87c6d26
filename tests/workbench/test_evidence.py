"""Evidence records and fingerprints; doctor's view of which registry records need re-validation; the validation
plans and the error measure (against independent float64 computations)."""
import json
import math
import shutil

import numpy as np
import pytest

from gpk_array.workbench import api, candidates, checks, evidence, registry

from . import _fake


def test_fingerprint_covers_toolchain_and_gpu_not_the_clock():
    a = evidence.fingerprint(_fake.H200)
    assert a == evidence.fingerprint(_fake.env(clock_mhz=1500))
    for change in (dict(driver="12.8"), dict(name="NVIDIA H100"), dict(sm_count=114), dict(compute_capability="89")):
        b = evidence.fingerprint(_fake.env(**change))
        assert b["id"] != a["id"]
        assert len(evidence.fingerprint_diff(a, b)) == 1
    e = _fake.env()
    e["toolchain"]["cutlass"] = "4.3.0"
    assert evidence.fingerprint_diff(a, evidence.fingerprint(e)) == ["cutlass: 4.2.0.0 -> 4.3.0"]


def test_this_machine_has_no_gpu_and_a_fingerprint_of_its_own():
    env = evidence.environment()
    assert env["gpu"] is None                         # the CPU development machine
    fp = evidence.fingerprint(env)
    assert fp["id"] != evidence.fingerprint(_fake.H200)["id"] and len(fp["id"]) == 16


def test_evidence_record_round_trip_and_refusals(tmp_path):
    meta = candidates.create("gemm", "c", family="fr96", where="m=:1024", base=tmp_path)
    rec = _fake.validation(meta)
    p = evidence.write(rec, tmp_path / "ev")
    assert evidence.read(p) == rec
    assert rec["candidate"]["hash"] == meta["hash"] and rec["command"] == ["test"]
    q = tmp_path / "x.json"
    q.write_text(json.dumps({"schema": 1, "type": "other"}))
    with pytest.raises(evidence.EvidenceError, match="not an evidence record"):
        evidence.read(q)
    q.write_text("{")
    with pytest.raises(evidence.EvidenceError, match="not a readable"):
        evidence.read(q)


def test_doctor_names_records_whose_fingerprint_differs(tmp_path):
    reg = tmp_path / "reg"
    shutil.copytree(registry.PACKAGE_DIR, reg)
    meta = candidates.create("gemm", "fr96-512", family="fr96", where="m=256:1024,n=3072:3072,k=768:768",
                             shapes="512x3072x768", base=tmp_path)
    v, b = tmp_path / "v.json", tmp_path / "b.json"
    v.write_text(json.dumps(_fake.validation(meta)))
    b.write_text(json.dumps(_fake.bench(meta, 1.1)))
    rec = api.promote("fr96-512", v, b, registry_dir=reg, base=tmp_path)
    d = api.doctor(reg)
    assert d["env"]["gpu"] is None and d["can_run"]["validate/bench (real)"] is False
    assert d["can_run"]["validate/bench --dry-run"] is True
    mine = [r for r in d["records"] if r["id"] == rec["id"]]
    assert mine[0]["state"] == "needs re-validation here"
    assert any(x.startswith("gpu_name: NVIDIA H200 -> None") for x in mine[0]["differs"])
    assert all(r["status"] == "bootstrap" for r in d["records"] if r["id"] != rec["id"])
    (reg / "routing.json").write_text('{"schema": 1, "table": "routing", "records": [{"id": 3}]}')
    d = api.doctor(reg)
    assert len(d["registry_errors"]) == 1 and "routing.json" in d["registry_errors"][0]


def test_gemm_plan_has_the_family_and_cheat_cases(tmp_path):
    meta = candidates.create("gemm", "c", family="fr96", where="m=:1024", base=tmp_path)
    plan = checks.plan(meta)
    kinds = [c["case"] for c in plan["cases"]]
    assert kinds[:len(meta["shapes"])] == ["family"] * len(meta["shapes"])
    assert {"tail", "nan_inf", "stale_memory"} <= set(kinds)
    tile = meta["launch"]["tile"]
    tails = [c["shape"] for c in plan["cases"] if c["case"] == "tail"]
    assert all((s[0] % tile[0] or s[1] % tile[1]) and s[1] % 8 == 0 for s in tails)   # not whole tiles, aligned
    assert any(c.get("in_class") for c in plan["cases"] if c["case"] == "tail")
    assert plan["tolerance"] == 5e-2
    assert checks.plan(candidates.create("gemm", "t", dtype="tf32", family="ppt", base=tmp_path))["tolerance"] == 1e-3
    assert checks.plan(candidates.create("gemm", "b", dtype="bfloat16", family="ppt", base=tmp_path,
                                         tolerance=0.01))["tolerance"] == 0.01


@pytest.mark.parametrize("where,shapes,tail", [
    ("m=256:1024,n=3072:3072,k=768:768", None, (True, False)),     # N pinned to whole tiles: M ragged
    ("m=512:512,n=3000:3100,k=768:768", "512x3072x768", (False, True)),  # M pinned: N ragged, 8-aligned
    ("m=256:1024,n=:4096,k=768:768", None, (True, True)),
    ("m=512:512,n=3072:3072,k=768:768", None, None),              # whole tiles only: no tail in the class
])
def test_gemm_plan_has_a_tail_inside_the_class(tmp_path, where, shapes, tail):
    meta = candidates.create("gemm", "c", family="fr96", where=where, shapes=shapes, base=tmp_path, force=True)
    tm, tn = meta["launch"]["tile"][:2]
    plan = checks.plan(meta)
    for c in plan["cases"]:
        assert c["in_class"] == registry.where_holds(meta["where"], *c["shape"]), c
    inside = [c["shape"] for c in plan["cases"] if c["case"] == "tail" and c["in_class"]]
    if tail is None:
        assert inside == [] and "no shape of the class" in plan["in_class_tail"]
        return
    m, n, k = inside[0]
    assert (bool(m % tm), bool(n % tn)) == tail and n % 8 == 0 and k % 8 == 0
    assert plan["in_class_tail"] == inside[0]


def test_routing_plan_has_a_tail_our_kernels_take(tmp_path):
    meta = candidates.create("elementwise", "e", ops="add", min_elements=4096, base=tmp_path)
    plan = checks.plan(meta)
    inside = [c for c in plan["cases"] if c["case"] == "tail" and c["in_class"]]
    assert inside and all(c["size"] >= 4096 and c["size"] % 2 for c in inside)
    assert all(c["in_class"] == (c["size"] >= 4096) for c in plan["cases"])


def test_routing_plan_has_aliasing_and_tails(tmp_path):
    meta = candidates.create("elementwise", "e", ops="add,exp", min_elements=4096, base=tmp_path)
    plan = checks.plan(meta)
    assert plan["tolerance"] == {"float16": 5e-2, "float32": 1e-4}
    kinds = {(c["op"], c["case"]) for c in plan["cases"]}
    assert {("add", "aliasing"), ("exp", "stale_memory"), ("add", "nan_inf"), ("exp", "tail")} <= kinds
    assert {c["size"] for c in plan["cases"] if c["case"] == "tail"} >= {1, 7, 4097}


def test_compare_catches_errors_and_dropped_nans():
    ref = np.array([[1.0, -2.0], [np.nan, np.inf]])
    assert checks.compare(ref.copy(), ref, 1e-6)["passed"]
    bad = ref.copy()
    bad[0, 0] = 1.1
    r = checks.compare(bad, ref, 1e-2)
    assert not r["passed"] and r["rel"] == pytest.approx(0.05) and "rel error" in r["why"]
    dropped = ref.copy()
    dropped[1, 0] = 0.0                      # a kernel that turns NaN into 0
    r = checks.compare(dropped, ref, 1.0)
    assert not r["passed"] and "non-finite" in r["why"]
    flipped = ref.copy()
    flipped[1, 1] = -np.inf
    assert not checks.compare(flipped, ref, 1.0)["passed"]


def test_references_match_independent_formulas():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((5, 7)), rng.standard_normal((3, 7)), rng.standard_normal(3)
    y = checks.gemm_reference(x, w, "tn", b, "gelu")
    z = np.array([[sum(x[i, t] * w[j, t] for t in range(7)) + b[j] for j in range(3)] for i in range(5)])
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    np.testing.assert_allclose(y, gelu(z), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(checks.gemm_reference(x, w.T, "nn"), x @ w.T, rtol=1e-12)
    silu = checks.activation("silu", z)
    np.testing.assert_allclose(silu, z / (1 + np.exp(-z)), rtol=1e-12)


def test_summary_fails_declined_family_shapes():
    ok = {"case": "family", "shape": [1, 1, 1], "passed": True, "rel": 0.0}
    assert checks.summarize([ok])["passed"]
    assert not checks.summarize([ok, {"case": "family", "shape": [2, 2, 2], "declined": True}])["passed"]
    assert not checks.summarize([{"case": "tail", "shape": [3, 3, 3], "passed": True}])["passed"]


def test_summary_fails_declined_cheat_cases():
    """A cheat case the candidate declines fails the validation when it is inside the candidate's class
    (``in_class``) or when no case of its kind ran at all; a declined case outside the class passes where another
    case of its kind ran (records without ``in_class``, written before it existed, keep that rule)."""
    ok = {"case": "family", "shape": [1, 1, 1], "passed": True, "rel": 0.0}
    tail = {"case": "tail", "shape": [5, 5, 5], "passed": True, "rel": 0.0}
    out_tail = {"case": "tail", "shape": [3, 3, 3], "declined": True}
    assert checks.summarize([ok, tail, out_tail])["passed"]
    assert checks.summarize([ok, tail, dict(out_tail, in_class=False)])["passed"]
    s = checks.summarize([ok, out_tail])
    assert not s["passed"] and "tail" in s["failures"][0] and "no tail case ran" in s["failures"][0]
    s = checks.summarize([ok, tail, dict(out_tail, in_class=True)])
    assert not s["passed"] and "inside the candidate's class" in s["failures"][0]
    for kind in ("nan_inf", "stale_memory", "aliasing"):
        s = checks.summarize([ok, tail, {"case": kind, "shape": [1, 1, 1], "declined": True}])
        assert not s["passed"] and s["failures"][0].startswith(kind), (kind, s)
    assert s["declined"] == 1 and s["failed"] == 0


def test_create_refuses_bad_contracts(tmp_path):
    bad = [
        (dict(kind="gemm", family="nosuch"), "no launchable instance"),
        (dict(kind="gemm", family="fr96", layout="nn"), "no launchable instance"),
        (dict(kind="gemm", family="fr96", where="m=3000:3001"), "no shape of the GEMM sweep"),
        (dict(kind="gemm", family="fr96", where="q=1:2"), "QUANTITY=LO:HI"),
        (dict(kind="gemm", family="fr96", where="m=:1024", shapes="4096x3072x768"), "outside the candidate's class"),
        (dict(kind="gemm", family="fr96", source="my.cu"), "hand-written GEMM sources"),
        (dict(kind="gemm", family="ppt", epilogue="bias_gelu", dtype="tf32"), "--epilogue"),
        (dict(kind="gemm", family="fr96", arch="sm80"), "only sm90"),
        (dict(kind="kernel"), "no registry selector"),
        (dict(kind="elementwise", ops="add"), "--min-elements"),
        (dict(kind="reduction", ops="sum", dtype="float32", axis_kind="diag", min_elements=4), "--axis-kind"),
        (dict(kind="gemm", family="fr96", tolerance=2.0), "--tolerance"),
    ]
    for kw, match in bad:
        kind = kw.pop("kind")
        with pytest.raises(candidates.CandidateError, match=match):
            candidates.create(kind, "x", base=tmp_path, **kw)
    candidates.create("gemm", "x", family="fr96", where="m=:1024", base=tmp_path)
    with pytest.raises(candidates.CandidateError, match="exists"):
        candidates.create("gemm", "x", family="fr96", where="m=:1024", base=tmp_path)
    with pytest.raises(candidates.CandidateError, match="candidate name"):
        candidates.create("gemm", "../up", family="fr96", base=tmp_path)
    meta = json.loads((tmp_path / "x" / "candidate.json").read_text())
    meta["where"] = {}
    (tmp_path / "x" / "candidate.json").write_text(json.dumps(meta))
    with pytest.raises(candidates.CandidateError, match="does not match its hash"):
        candidates.load("x", tmp_path)


def test_reduction_candidate_selector(tmp_path):
    meta = candidates.create("reduction", "r", ops="sum", dtype="float32", axis_kind="rows",
                             min_elements=1 << 20, base=tmp_path)
    assert meta["selector"] == "reduce/f32/sum/rows/cuda"
    assert api._incumbent_threshold(meta, registry.load()) == 1 << 24


def test_environment_records_the_commit_of_the_tree(monkeypatch, tmp_path):
    """environment()["commit"]: GPK_COMMIT when set, else ``git rev-parse HEAD`` of the checkout gpk_array is
    imported from, else "unknown" (no checkout, no git, git failing): never an error."""
    import pathlib
    import subprocess
    root = pathlib.Path(evidence.__file__).resolve().parents[2]
    monkeypatch.delenv("GPK_COMMIT", raising=False)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert evidence.environment()["commit"] == head.strip() and len(head.strip()) == 40
    meta = candidates.create("gemm", "c", family="fr96", where="m=:1024", base=tmp_path)
    assert evidence.record("validation", meta, ["test"], True)["env"]["commit"] == head.strip()
    monkeypatch.setenv("GPK_COMMIT", "abc123")
    assert evidence.environment()["commit"] == "abc123"
    monkeypatch.delenv("GPK_COMMIT")
    monkeypatch.setattr(evidence, "_checkout_root", lambda: tmp_path)          # not a checkout
    assert evidence.commit() == "unknown"
    (tmp_path / ".git").mkdir()                                               # a broken one: git fails
    assert evidence.commit() == "unknown"

    def no_git(*a, **k):
        raise FileNotFoundError("git")
    monkeypatch.setattr(evidence.subprocess, "run", no_git)
    monkeypatch.setattr(evidence, "_checkout_root", lambda: root)
    assert evidence.commit() == "unknown"
    before = evidence.fingerprint(_fake.H200)
    assert evidence.fingerprint(dict(_fake.H200, commit="x")) == before      # the commit is no fingerprint field
