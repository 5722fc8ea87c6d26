"""Probe real NumPy code on gpk_array: each item runs with ``np`` (and ``import numpy``) bound to NumPy and to
gpk_array (its default device set to ``--device``), and every value it computes is compared with NumPy's.

    python -m conformance.numpy_probe [--device cpu|cuda:0|fakecuda] [--numpy100 PATH] [--no-docstrings]
                                      [--modules numpy,numpy.linalg,...] [--only NAME,...] [--part I/N]
                                      [--json OUT.json]
    python -m conformance.numpy_probe --merge PART1.json PART2.json ... [--json ALL.json]

Sources of items:
- numpy-100 (github.com/rougier/numpy-100): its exercises' solutions, read from ``source/exercises100.ktx`` of
  ``--numpy100 PATH`` (a clone, a bare git directory, or the .ktx file itself; nothing of it is kept here);
- NumPy's own docstrings: the Examples section of every public function, class and method of the installed
  NumPy in ``--modules`` (doctest syntax; aliases sharing one docstring count once).

How values are compared, and when an item passes, fails or is skipped: conformance/numpy_probe_core.py. Prints a
table (source, items, passed, failed, skipped, pass rate = passed / (passed + failed)) and the failures grouped by
reason (exception type and message head), and writes JSON (commit, device, versions, counts, groups, per-item
outcomes). ``fakecuda`` is the test suite's stand-in CUDA device (tests/numpy_compat/fakegpu.py: NumPy dressed
as CuPy), usable on a machine without a GPU from a checkout of the repository.
"""
import argparse
import collections
import contextlib
import inspect
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy

from conformance import numpy_probe_core as core

DEFAULT_MODULES = "numpy,numpy.linalg,numpy.fft,numpy.random,numpy.random.Generator,numpy.ndarray"
KTX = "source/exercises100.ktx"


# --- items -----------------------------------------------------------------------------------------------------

def read_ktx(path):
    """The text of exercises100.ktx from a .ktx file, a clone, or a bare git directory."""
    p = pathlib.Path(path)
    if p.is_file():
        return p.read_text()
    if (p / KTX).is_file():
        return (p / KTX).read_text()
    r = subprocess.run(["git", "--git-dir", str(p), "show", f"HEAD:{KTX}"], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"--numpy100 {path}: no {KTX} there ({r.stderr.strip()})")
    return r.stdout


def parse_ktx(text):
    """[(name, source)] of the answers ("< aN" blocks) of a ktx file, in order."""
    out, key, lines = [], None, []
    for line in text.splitlines() + ["< end"]:
        m = re.match(r"^< ([qha])(\d+)\s*$", line)
        if m or line == "< end":
            if key is not None and key[0] == "a":
                out.append((f"numpy-100 #{key[1]}", "\n".join(lines).strip() + "\n"))
            key, lines = (m.group(1), m.group(2)) if m else None, []
        elif key is not None:
            lines.append(line)
    return out


def _members(spec):
    obj = numpy
    for part in spec.split(".")[1:]:
        obj = getattr(obj, part)
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None) or [n for n in dir(obj) if not n.startswith("_")]
        return [(f"{spec}.{n}", getattr(obj, n)) for n in sorted(names) if hasattr(obj, n)
                and not inspect.ismodule(getattr(obj, n))]
    return [(spec, obj)] + [(f"{spec}.{n}", getattr(obj, n, None)) for n in dir(obj) if not n.startswith("_")]


def docstring_items(modules):
    """[(name, examples)] of the public objects of ``modules`` whose docstrings have examples."""
    seen, out = set(), []
    for spec in modules:
        for name, obj in _members(spec):
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or doc in seen:
                continue
            seen.add(doc)
            examples = core.examples_of(doc)
            if examples:
                out.append((name, examples))
    return out


# --- running ---------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def device_context(name):
    """gpk_array with its default device set to ``name`` (``fakecuda``: the test suite's stand-in cuda:0)."""
    import gpk_array
    old = gpk_array._device._default
    if name == "fakecuda":
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
        from tests.numpy_compat.fakegpu import fake_cuda_device
        with fake_cuda_device() as d:
            gpk_array.set_default_device(d)
            try:
                yield gpk_array, "cuda:0"
            finally:
                gpk_array._device._default = old
        return
    gpk_array.set_default_device(name)
    try:
        yield gpk_array, name
    finally:
        gpk_array._device._default = old


def probe(items, module, device, progress=None):
    """Rows {"source", "name", "outcome", "reason", "compared", ...} for [(source, name, kind, payload)]; the
    scripts run in order in one session (a notebook), each docstring in a namespace of its own."""
    rows = []
    scripts = [payload for _, _, kind, payload in items if kind == "script"]
    session = iter(core.probe_session(scripts, module, device)) if scripts else None
    for i, (source, name, kind, payload) in enumerate(items):
        try:
            if kind == "script":
                r = next(session)
            else:
                r = core.probe_examples(payload, module, device)
        except core.ProbeTimeout as e:
            r = {"outcome": "failed", "reason": f"ProbeTimeout: {e}", "compared": 0}
        except Exception as e:  # noqa: BLE001  (the probe itself must report, not stop)
            r = {"outcome": "failed", "reason": f"probe error {core._reason(e)}", "compared": 0}
        rows.append({"source": source, "name": name, **r})
        if progress:
            progress(i + 1, len(items), rows[-1])
    return rows


def counts(rows):
    """{source: {"items", "passed", "failed", "skipped", "pass rate"}}."""
    out = {}
    for src in dict.fromkeys(r["source"] for r in rows):
        rs = [r for r in rows if r["source"] == src]
        n = {k: sum(r["outcome"] == k for r in rs) for k in ("passed", "failed", "skipped")}
        done = n["passed"] + n["failed"]
        out[src] = {"items": len(rs), **n, "pass rate": round(n["passed"] / done, 4) if done else None}
    return out


def group_key(reason):
    """The reason without its specifics: exception type and message head, numbers and quoted names kept short."""
    head = re.sub(r"\s+", " ", reason)[:90]
    return re.sub(r"(values differ \(\d+ of \d+\)).*", r"\1", head)


def groups(rows):
    """[{"reason", "count", "items"}] of the failures, most frequent first."""
    g = collections.defaultdict(list)
    for r in rows:
        if r["outcome"] == "failed":
            g[group_key(r["reason"])].append(r["name"])
    return [{"reason": k, "count": len(v), "items": v} for k, v in
            sorted(g.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def report(rows, device, how, path, meta):
    """Print the table and the failures by reason; write the JSON (commit, device, counts, groups, items)."""
    c, g = counts(rows), groups(rows)
    print(f"NumPy {numpy.__version__} code on gpk_array ({device}): {len(rows)} items, {how}")
    print(f"{'source':12} {'items':>6} {'passed':>7} {'failed':>7} {'skipped':>8} {'pass rate':>10}")
    for src, n in c.items():
        rate = f"{100 * n['pass rate']:.1f}%" if n["pass rate"] is not None else "-"
        print(f"{src:12} {n['items']:6} {n['passed']:7} {n['failed']:7} {n['skipped']:8} {rate:>10}")
    print("failures by reason:")
    for grp in g:
        names = ", ".join(grp["items"][:4]) + (", ..." if grp["count"] > 4 else "")
        print(f"  {grp['count']:4}  {grp['reason']}  [{names}]")
    if path:
        from conformance.peers import versions
        keep = {k: meta[k] for k in ("numpy100", "modules", "part", "parts") if k in meta}
        out = {"device": device, "date": time.strftime("%Y-%m-%d"), "versions": meta.get("versions") or
               versions([]), **keep, "counts": c, "failure_groups": g, "items": rows}
        with open(path, "w") as f:
            json.dump(out, f, indent=1, default=str)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu, cuda:0, ... or fakecuda (the tests' stand-in)")
    ap.add_argument("--numpy100", help="numpy-100: a clone, a bare git directory or exercises100.ktx")
    ap.add_argument("--no-docstrings", action="store_true", help="leave NumPy's docstring examples out")
    ap.add_argument("--modules", default=DEFAULT_MODULES, help="where the docstrings come from")
    ap.add_argument("--only", help="comma-separated substrings: probe only item names containing one")
    ap.add_argument("--timeout", type=int, default=core.TIMEOUT_S, help="seconds per item and binding")
    ap.add_argument("--part", help="I/N: only every N-th docstring from the I-th (1-based), to split a long run; "
                    "numpy-100 goes with part 1")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="combine the results of earlier runs (parts) and "
                    "report them as one (nothing is run)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each item's outcome")
    a = ap.parse_args(argv)
    core.TIMEOUT_S = a.timeout
    if a.merge:
        runs = []
        for p in a.merge:
            with open(p) as f:
                runs.append(json.load(f))
        rows = [r for run in runs for r in run["items"]]
        report(rows, runs[0]["device"], f"{len(runs)} runs merged", a.json, dict(runs[0], parts=a.merge))
        return 0
    items = []
    if a.numpy100:
        items += [("numpy-100", n, "script", s) for n, s in parse_ktx(read_ktx(a.numpy100))]
    if not a.no_docstrings:
        items += [("docstrings", n, "examples", e)
                  for n, e in docstring_items([m for m in a.modules.split(",") if m])]
    if a.only:
        keys = [k for k in a.only.split(",") if k]
        items = [i for i in items if any(k in i[1] for k in keys)]
    if a.part:   # docstrings split; numpy-100's exercises (one session) all go with part 1
        i, n = (int(v) for v in a.part.split("/"))
        docs = [it for it in items if it[2] == "examples"]
        items = ([it for it in items if it[2] == "script"] if i == 1 else []) + docs[i - 1::n]

    def progress(i, n, row):
        if a.verbose:
            print(f"[{i}/{n}] {row['outcome']:8} {row['name']}  {row['reason'][:150]}", file=sys.stderr)

    t0 = time.monotonic()
    with device_context(a.device) as (gpk, device):
        rows = probe(items, gpk, device, progress)
    meta = {"numpy100": os.path.abspath(a.numpy100) if a.numpy100 else None, "modules": a.modules,
            "part": a.part}
    report(rows, a.device, f"{time.monotonic() - t0:.0f} s", a.json, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
