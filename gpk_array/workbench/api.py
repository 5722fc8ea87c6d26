"""The workbench's operations: validate, bench, profile, promote (the gate), list, show, compare, doctor. The
``gpk kernels`` command (gpk_array/cli.py) is a thin layer over these functions; each returns plain data."""
from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import statistics
import subprocess
import sys

from . import candidates, checks, evidence, registry

MIN_GAIN = 0.02        # promote: the candidate's median time at least 2% below the incumbent's
BOOTSTRAP_FLOOR = 0.98  # promote --bootstrap: the first promoted record of a selector may tie within 2%


class WorkbenchError(ValueError):
    """A workbench operation that cannot run here (no GPU for a real run, a bad profile command, ...)."""


class PromotionRefused(WorkbenchError):
    """``promote`` refused: ``.reasons`` lists every reason; nothing in the registry changed."""

    def __init__(self, name, reasons):
        self.reasons = list(reasons)
        super().__init__(f"promote {name}: refused: " + "; ".join(self.reasons))


def _require_gpu(what):
    env = evidence.environment()
    if env["gpu"] is None:
        raise WorkbenchError(f"{what} needs a usable CUDA GPU (none here: {what} --dry-run writes the planned "
                             f"evidence, which cannot be promoted)")
    return env


def _evidence_dir(meta):
    return pathlib.Path(meta["workspace"]) / "evidence"


def _load_current(name, base, what):
    """The metadata of candidate ``name``; WorkbenchError where its source changed since it was created
    (``candidates.source_drift``): evidence of ``what`` would be made for a source it does not record."""
    meta = candidates.load(name, base)
    drift = candidates.source_drift(meta)
    if drift:
        raise WorkbenchError(f"{what} {name}: {drift}")
    return meta


def validate(name, *, dry_run=False, base=None, command=None):
    """Validate candidate ``name`` against float64 references (checks.plan); write the evidence record into its
    workspace and return (path, record). ``dry_run``: the plan only, marked planned (no GPU needed). WorkbenchError
    where the candidate's source changed since it was created (nothing written)."""
    meta = _load_current(name, base, "validate")
    plan = checks.plan(meta)
    cmd = command or evidence.command_line()
    if dry_run:
        rec = evidence.record("validation", meta, cmd, True, plan=plan, results=[],
                              summary={"passed": None, "planned_cases": len(plan["cases"])})
    else:
        env = _require_gpu("validate")
        from . import gpu
        results = gpu.gemm_validate(meta, plan) if meta["kind"] == "gemm" else gpu.routing_validate(meta, plan)
        rec = evidence.record("validation", meta, cmd, False, env=env, plan=plan, results=results,
                              summary=checks.summarize(results))
    return evidence.write(rec, _evidence_dir(meta)), rec


def _incumbent_threshold(meta, tables):
    """The routing threshold in force for a routing candidate's selector (None: CuPy)."""
    sel = registry.parse_selector(meta["selector"], "routing")
    t = registry.compile_tables(tables, lambda *a: None)
    if sel == ("elementwise",):
        return t["elementwise_min"]
    c, op, kind = sel
    for key in ((c, op, kind), (c, op, "*"), ("*", op, kind), ("*", op, "*"), (c, "*", kind), (c, "*", "*")):
        if key in t["route"]:
            return t["route"][key]
    return None


def bench_summary(rows, kind):
    """median_ratio_vs_incumbent over the rows that count (GEMM: every shape; routing: where the candidate decides
    otherwise than the incumbent), the number of them, and the worst spread."""
    use = [r for r in rows if r.get("ratio_vs_incumbent") is not None and (kind == "gemm" or r["decision_differs"])]
    ratios = [r["ratio_vs_incumbent"] for r in use]
    return {"median_ratio_vs_incumbent": statistics.median(ratios) if ratios else None, "shapes_counted": len(use),
            "shapes": len(rows),
            "median_ratio_vs_cublaslt": statistics.median([r["ratio_vs_cublaslt"] for r in rows
                                                           if r.get("ratio_vs_cublaslt")]) if kind == "gemm" and any(
                r.get("ratio_vs_cublaslt") for r in rows) else None}


def bench(name, *, warmup=3, repeats=10, dry_run=False, base=None, command=None):
    """Benchmark candidate ``name`` beside the incumbent of its selector, cuBLASLt and torch (GEMM) or CuPy
    (routing), same run; write the evidence record and return (path, record). ``dry_run``: planned only.
    WorkbenchError where the candidate's source changed since it was created (nothing written)."""
    if warmup < 0 or repeats < 1:
        raise WorkbenchError(f"bench: --warmup must be >= 0 and --repeats >= 1, got {warmup}, {repeats}")
    meta = _load_current(name, base, "bench")
    cmd = command or evidence.command_line()
    settings = {"warmup": warmup, "repeats": repeats, "calls_per_graph": 20,
                "gpu_time": "CUDA graphs of 20 calls (GEMM)", "routing_time": "per call, 20 back to back"}
    if dry_run:
        rec = evidence.record("bench", meta, cmd, True, settings=settings, shapes=meta["shapes"], rows=[],
                              summary={"median_ratio_vs_incumbent": None})
    else:
        env = _require_gpu("bench")
        from . import gpu
        if meta["kind"] == "gemm":
            rows = gpu.gemm_bench(meta, warmup, repeats)
        else:
            rows = gpu.routing_bench(meta, _incumbent_threshold(meta, registry.load()), warmup, repeats)
        rec = evidence.record("bench", meta, cmd, False, env=env, settings=settings, shapes=meta["shapes"],
                              rows=rows, summary=bench_summary(rows, meta["kind"]))
    return evidence.write(rec, _evidence_dir(meta)), rec


def profile(name, command_template, *, base=None, timeout=600):
    """Run ``command_template`` (e.g. ``"ncu --set full {binary}"``) with ``{binary}`` replaced by a command that
    runs the candidate once per shape; store the command, its output and return code as a profile record."""
    if "{binary}" not in command_template:
        raise WorkbenchError("profile --command must contain {binary} (the candidate's runner goes there)")
    meta = candidates.load(name, base)
    runner = [sys.executable, "-m", "gpk_array.workbench.runner", meta["name"]]
    if base is not None:
        runner += ["--dir", str(base)]
    parts = []
    for p in shlex.split(command_template):
        parts += runner if p == "{binary}" else [p.replace("{binary}", shlex.join(runner))]
    try:
        r = subprocess.run(parts, capture_output=True, text=True, timeout=timeout)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except FileNotFoundError as e:
        rc, out, err = 127, "", str(e)
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", f"timed out after {timeout} s"
    rec = evidence.record("profile", meta, parts, False, template=command_template, returncode=rc,
                          stdout=(out or "")[-200000:], stderr=(err or "")[-50000:])
    return evidence.write(rec, _evidence_dir(meta)), rec


# --- the gate ----------------------------------------------------------------------------------------------------


def _table_of(selector):
    if selector.startswith("gemm/"):
        return "gemm_sm90"
    if selector.startswith("linear/"):
        return "gemm_sm90_fused"
    return "routing"


def _current_choice(meta, tables, shape):
    """What the registry ``tables`` choose today for one benchmarked shape of a GEMM candidate (an instance key or
    'cublaslt'): the bench's incumbent must still be the registry's."""
    from .._kernels import gemm
    t = registry.compile_tables(tables, gemm._few_rows)
    table = _table_of(meta["selector"])
    sel = registry.parse_selector(meta["selector"], table)
    fn = (t["plain_key"] if table == "gemm_sm90" else t["fused"]).get(sel)
    key = None if fn is None else fn(*shape)
    return key or "cublaslt"


def gate(meta, val, bench_rec, tables, bootstrap=False) -> list[str]:
    """Every reason the gate refuses to promote candidate ``meta`` on validation ``val`` and benchmark
    ``bench_rec`` into the registry ``tables``; [] when it admits it."""
    why = []
    if val.get("type") != "validation":
        why.append(f"--validation is a {val.get('type')} record, not a validation")
    if bench_rec.get("type") != "bench":
        why.append(f"--bench is a {bench_rec.get('type')} record, not a benchmark")
    for what, rec in (("validation", val), ("benchmark", bench_rec)):
        if rec.get("planned"):
            why.append(f"the {what} is planned evidence from --dry-run (no measurements): it cannot be promoted")
        if rec.get("candidate", {}).get("hash") != meta["hash"]:
            why.append(f"the {what} was made for another version of the candidate (hash "
                       f"{str(rec.get('candidate', {}).get('hash'))[:12]}, the candidate is {meta['hash'][:12]})")
    if why:
        return why
    if not val.get("summary", {}).get("passed"):
        s = val.get("summary", {})
        why.append(f"validation did not pass ({s.get('failed')} failed, {s.get('declined')} declined: "
                   f"{'; '.join(s.get('failures', [])[:3]) or 'no family shape ran'})")
    gpu = bench_rec.get("env", {}).get("gpu")
    if not gpu:
        why.append("the benchmark has no GPU in its record")
    elif meta["arch"] == "sm90" and gpu.get("compute_capability") != "90":
        why.append(f"the benchmark ran on {gpu.get('name')} (sm_{gpu.get('compute_capability')}), not the target "
                   f"sm_90 GPU")
    if val["fingerprint"]["id"] != bench_rec["fingerprint"]["id"]:
        why.append("validated and benchmarked on different machines or toolchains (" +
                   ", ".join(evidence.fingerprint_diff(val["fingerprint"], bench_rec["fingerprint"])) + ")")
    if meta["kind"] == "gemm":
        stale = [r["shape"] for r in bench_rec.get("rows", [])
                 if r.get("incumbent") != _current_choice(meta, tables, r["shape"])]
        if stale:
            why.append(f"the registry's choice changed since the benchmark for {len(stale)} shape(s) (e.g. "
                       f"{'x'.join(map(str, stale[0]))}): benchmark again against today's incumbent")
    ratio = bench_rec.get("summary", {}).get("median_ratio_vs_incumbent")
    if ratio is None:
        why.append("the benchmark has no shape where the candidate and the incumbent differ: nothing to gain")
    else:
        promoted = [r for r in tables.get(_table_of(meta["selector"]), {}).get("records", [])
                    if r["selector"] == meta["selector"] and r["status"] == "promoted"]
        if bootstrap and promoted:
            why.append(f"--bootstrap is for a selector's first promoted record; {meta['selector']} has "
                       f"{promoted[0]['id']!r}")
        floor = BOOTSTRAP_FLOOR if bootstrap else 1.0 + MIN_GAIN
        if ratio < floor:
            why.append(f"median {ratio:.3f}x the incumbent's speed, below the {floor:.2f}x "
                       f"{'bootstrap floor' if bootstrap else 'gate (a 2% median improvement)'}")
    return why


def _atomic_write(path: pathlib.Path, data: dict):
    registry.validate_file(data, path)
    tmp = path.with_name(path.name + ".tmp")
    body = '{\n  "schema": 1,\n  "table": "%s",\n  "records": [\n' % data["table"]
    body += ",\n".join("    " + json.dumps(r) for r in data["records"]) + "\n  ]\n}\n"
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, path)


def promote(name, validation, bench_path, *, bootstrap=False, registry_dir=None, base=None) -> dict:
    """The gate: add candidate ``name`` to the registry (``registry_dir``, default the one dispatch reads) as a
    promoted record, its evidence copied into ``<registry>/evidence/``; PromotionRefused (every reason, nothing
    changed) without a passing validation, benchmark evidence from the target GPU, or a >= 2% median improvement
    over the incumbent of its selector (``bootstrap``: a selector's first promoted record, within 2%), or where
    the candidate's source changed since it was created (``candidates.source_drift``: the evidence is the old
    source's)."""
    meta = candidates.load(name, base)
    drift = candidates.source_drift(meta)
    reasons = [drift] if drift else []
    recs = {}
    for what, p in (("validation", validation), ("bench", bench_path)):
        try:
            recs[what] = evidence.read(p)
        except evidence.EvidenceError as e:
            reasons.append(str(e))
    rdir = pathlib.Path(registry_dir) if registry_dir is not None else registry.directory()
    try:
        tables = registry.load(rdir)
    except registry.RegistryError as e:
        raise PromotionRefused(name, [f"the registry does not load: {e}"]) from None
    if len(recs) == 2:
        reasons += gate(meta, recs["validation"], recs["bench"], tables, bootstrap)
    if reasons:
        raise PromotionRefused(name, reasons)
    val, b = recs["validation"], recs["bench"]
    table = _table_of(meta["selector"])
    data = tables[table]
    ev_dir = rdir / "evidence"
    ev_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{meta['name']}-{meta['hash'][:8]}"
    cited = []
    for what, p in (("validation", validation), ("bench", bench_path)):
        dest = ev_dir / f"{tag}-{what}.json"
        shutil.copyfile(p, dest)
        cited.append(f"evidence/{dest.name}")
    s = b["summary"]
    gpu = b["env"]["gpu"]
    rec = {"id": tag, "selector": meta["selector"], "where": meta["where"], "choice": meta["choice"],
           "status": "promoted",
           "summary": (f"{meta.get('instance') or meta['choice']}: median {s['median_ratio_vs_incumbent']:.3f}x "
                       f"the incumbent over {s['shapes_counted']} shape(s) on {gpu['name']}, validation worst rel "
                       f"error {val['summary'].get('worst_rel') or 0:.2e}" + (" (bootstrap)" if bootstrap else "")),
           "evidence": cited, "fingerprint": b["fingerprint"], "promoted_at": evidence.utc_now(),
           "candidate": {"name": meta["name"], "hash": meta["hash"], "kind": meta["kind"],
                         "gate": "bootstrap" if bootstrap else f">= {1 + MIN_GAIN:.2f}x"}}
    records = list(data["records"])
    if table == "routing":
        records = [r for r in records if r["selector"] != meta["selector"]]
        records.append(rec)
    else:
        at = next((i for i, r in enumerate(records) if r["selector"] == meta["selector"]), len(records))
        records.insert(at, rec)
    try:
        _atomic_write(rdir / f"{table}.json", dict(data, records=records))
    except Exception:
        for c in cited:
            (rdir / c).unlink(missing_ok=True)
        raise
    return rec


# --- list, show, compare, doctor -------------------------------------------------------------------------------


def list_candidates(base=None) -> list[dict]:
    """Each candidate of the workspace root: name, kind, selector, instance/ops and its evidence counts."""
    out = []
    for n in candidates.names(base):
        try:
            m = candidates.load(n, base)
        except candidates.CandidateError as e:
            out.append({"name": n, "error": str(e)})
            continue
        ev = candidates.evidence_files(n, base)
        out.append({"name": n, "kind": m["kind"], "selector": m["selector"],
                    "runs": m.get("instance") or ",".join(m.get("ops") or []),
                    "evidence": {t: sum(1 for p in ev if p.name.startswith(t)) for t in ("validation", "bench",
                                                                                       "profile")}})
    return out


def show(name, base=None) -> dict:
    """A candidate's metadata and the one-line summary of each of its evidence records."""
    meta = candidates.load(name, base)
    ev = []
    for p in candidates.evidence_files(name, base):
        try:
            r = evidence.read(p)
        except evidence.EvidenceError as e:
            ev.append({"path": str(p), "error": str(e)})
            continue
        ev.append({"path": str(p), "type": r["type"], "planned": r["planned"], "created": r["created"],
                   "fingerprint": r["fingerprint"]["id"], "summary": r.get("summary", {"returncode":
                                                                                   r.get("returncode")})})
    return {"candidate": meta, "evidence": ev}


def _row_key(r):
    return (r.get("op"), r.get("dtype"), tuple(r.get("shape") or ()))


def compare(a_path, b_path) -> dict:
    """Two evidence records of one type side by side: per shape (benchmarks: the candidate's median time in each
    and b / a; validations: the rel error in each), and the fingerprint fields that differ."""
    a, b = evidence.read(a_path), evidence.read(b_path)
    if a["type"] != b["type"]:
        raise WorkbenchError(f"compare: a {a['type']} record against a {b['type']} record")
    rows = []
    if a["type"] == "bench":
        def med(r):
            if "candidate" in r:                       # GEMM rows: the candidate's GPU time
                g = (r["candidate"] or {}).get("gpu")
            else:                                      # routing rows: the backend the candidate chooses
                g = r.get(r.get("candidate_choice") or "")
            return g.get("median_us") if g else None
        bi = {_row_key(r): r for r in b.get("rows", [])}
        for r in a.get("rows", []):
            o = bi.get(_row_key(r))
            ta, tb = med(r), (med(o) if o else None)
            rows.append({"key": _row_key(r), "a_us": ta, "b_us": tb,
                         "b_over_a": None if not (ta and tb) else tb / ta})
    elif a["type"] == "validation":
        bi = {(r["case"], _row_key(r)): r for r in b.get("results", [])}
        for r in a.get("results", []):
            o = bi.get((r["case"], _row_key(r)))
            rows.append({"key": (r["case"],) + _row_key(r), "a_rel": r.get("rel"), "b_rel": o and o.get("rel")})
    return {"type": a["type"], "a": {"candidate": a["candidate"], "fingerprint": a["fingerprint"]["id"]},
            "b": {"candidate": b["candidate"], "fingerprint": b["fingerprint"]["id"]},
            "same_candidate": a["candidate"]["hash"] == b["candidate"]["hash"],
            "fingerprint_diff": evidence.fingerprint_diff(a["fingerprint"], b["fingerprint"]), "rows": rows,
            "summaries": [a.get("summary"), b.get("summary")]}


def doctor(registry_dir=None) -> dict:
    """The toolchain, the GPU and driver, what can run here, and the registry's records: which fail to load,
    which promoted records' fingerprints differ from this machine's (they need re-validation here; dispatch still
    uses them), and which are bootstrap rules without a workbench fingerprint."""
    env = evidence.environment()
    fp = evidence.fingerprint(env)
    rdir = pathlib.Path(registry_dir) if registry_dir is not None else registry.directory()
    try:
        from .._kernels.cutlass import launch_sm90
        headers = launch_sm90.cutlass_include_dir()
    except Exception:  # noqa: BLE001
        headers = None
    gpu = env["gpu"]
    can = {"validate/bench (real)": gpu is not None, "validate/bench --dry-run": True,
           "build SM90 instances": bool(env["toolchain"]["nvcc"] or env["toolchain"]["nvrtc"]) and bool(headers),
           "promote": True}
    records, bad = [], []
    for t in registry.TABLES:
        f = rdir / f"{t}.json"
        if not f.exists():
            continue
        try:
            data = registry.read_file(f)
        except registry.RegistryError as e:
            bad.append(str(e))
            continue
        for r in data["records"]:
            if r["status"] == "bootstrap":
                state, diff = "bootstrap (no workbench fingerprint: re-validate with gpk kernels to promote it)", []
            else:
                diff = evidence.fingerprint_diff(r["fingerprint"], fp)
                state = "needs re-validation here" if diff else "fingerprint matches this machine"
            records.append({"table": t, "id": r["id"], "status": r["status"], "state": state, "differs": diff})
    return {"env": env, "fingerprint": fp, "can_run": can, "cutlass_headers": None if headers is None else
            str(headers), "registry": str(rdir), "registry_errors": bad, "records": records}
