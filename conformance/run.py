"""Run the official array API conformance suite (data-apis/array-api-tests) against gpk_array.

    python -m conformance.run --suite PATH [--device cpu|cuda:0] [--version 2025.12|2024.12]
                              [--max-examples 100] [-n 2] [--json OUT.json] [-- extra pytest args]

PATH is a checkout of array-api-tests with its array-api submodule (or $ARRAY_API_TESTS_DIR). No xfails or skips
file is passed. Prints passed / failed / skipped per test file, and each failing test with its first error line.
"""
import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.environ.get("ARRAY_API_TESTS_DIR"), help="array-api-tests checkout")
    ap.add_argument("--device", default="cpu", help="device the arrays live on (default device of gpk_array)")
    ap.add_argument("--version", default="2025.12", choices=["2024.12", "2025.12"])
    ap.add_argument("--max-examples", type=int, default=100)
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (0 for none)")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("pytest_args", nargs="*")
    a = ap.parse_args(argv)
    if not a.suite:
        ap.error("give --suite PATH or set ARRAY_API_TESTS_DIR")
    suite = pathlib.Path(a.suite).resolve()
    if not (suite / "array_api_tests").is_dir():
        ap.error(f"{suite} is not an array-api-tests checkout")
    if (suite / "COMMIT").exists():  # a copy without .git records its commit in COMMIT
        commit = (suite / "COMMIT").read_text().strip()
    else:
        commit = subprocess.run(["git", "-C", str(suite), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="gpk_array", ARRAY_API_TESTS_VERSION=a.version,
               GPK_ARRAY_API_VERSION=a.version, GPK_DEVICE=a.device,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conformance.unskip",
               "--json-report",
               f"--json-report-file={report}", "--json-report-omit", "log", "streams", "keywords", "collectors",
               f"--max-examples={a.max_examples}", "array_api_tests"]
        if a.workers not in ("0", ""):
            cmd[3:3] = ["-n", a.workers]
        cmd += a.pytest_args
        proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
        if not report.exists():
            sys.stdout.write(proc.stdout[-5000:] + proc.stderr[-5000:])
            return 2
        data = json.loads(report.read_text())
    per_file = collections.defaultdict(collections.Counter)
    failures = []
    for t in data.get("tests", []):
        f = t["nodeid"].split("::")[0].split("/")[-1]
        per_file[f][t["outcome"]] += 1
        if t["outcome"] in ("failed", "error"):
            msg = ""
            for phase in ("setup", "call", "teardown"):
                crash = t.get(phase, {}).get("crash")
                if crash:
                    msg = crash.get("message", "").splitlines()[0][:200] if crash.get("message") else ""
                    break
            failures.append((t["nodeid"], msg))
        elif t["outcome"] == "skipped":
            failures.append((t["nodeid"], "SKIPPED"))
    totals = collections.Counter()
    print(f"array-api-tests {commit[:12]}  version {a.version}  device {a.device}  "
          f"max-examples {a.max_examples}")
    print(f"{'file':42} {'passed':>7} {'failed':>7} {'skipped':>7}")
    for f in sorted(per_file):
        c = per_file[f]
        totals.update(c)
        print(f"{f:42} {c['passed']:7} {c['failed'] + c['error']:7} {c['skipped']:7}")
    print(f"{'total':42} {totals['passed']:7} {totals['failed'] + totals['error']:7} {totals['skipped']:7}")
    for nodeid, msg in failures:
        print(f"  {nodeid}  {msg}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({
            "suite_commit": commit, "version": a.version, "device": a.device, "max_examples": a.max_examples,
            "totals": {"passed": totals["passed"], "failed": totals["failed"] + totals["error"],
                       "skipped": totals["skipped"]},
            "per_file": {f: dict(c) for f, c in per_file.items()},
            "failures": [{"test": n, "message": m} for n, m in failures]}, indent=1))
    return 0 if totals["failed"] + totals["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
