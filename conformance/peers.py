"""Run the peers' own array-API test suites (scikit-learn, SciPy, array-api-extra) with gpk_array injected as one
more backend beside the namespaces they already test, and compare.

    python -m conformance.peers {sklearn,scipy,extra,all} [--device cpu|cuda:0] [--subset ci|full]
                                [--compare array_api_strict,torch] [-n 2] [--json OUT.json]
                                [--select ARGS] [--extra-tests DIR] [-- extra pytest args]

Each suite runs once, from its installed package (array-api-extra's tests are not in its wheel: they come from its
sdist, downloaded with pip into a cache directory unless ``--extra-tests`` gives them), with gpk_array added to its
backends by the pytest plugin ``conformance.peers_plugin`` (no installed file is edited). gpk_array and every
namespace of ``--compare`` run the same selection in the same process. Prints, per suite, a table of passed /
failed / skipped / xfailed / errors per namespace (beside it the same counts over the tests gpk_array runs too:
same test, same parameters but the namespace and its device), then each failure of gpk_array with what the other
namespaces did in the same test. ``--json`` writes it all with versions, commit and device.

``--subset ci`` runs a representative part (a few minutes on two cores); ``--subset full`` (the default) the whole
array-API part of each suite. Exit status: 0 when gpk_array fails no test, 1 when it fails some, 2 when a suite
could not be run. A suite whose package is not installed is reported and skipped.
"""
import argparse
import collections
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import platform
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
GPK = "gpk_array"
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "gpk_array" / "peers"

# The CI subset: modules (and -k filters) that together touch each suite's main array-API areas in a few minutes.
SKLEARN_CI = ["sklearn.utils.tests.test_array_api", "sklearn.metrics.tests.test_common", "sklearn.tests.test_common",
              "sklearn.preprocessing.tests.test_data", "sklearn.decomposition.tests.test_pca",
              "sklearn.linear_model.tests.test_ridge", "sklearn.linear_model.tests.test_logistic",
              "sklearn.mixture.tests.test_gaussian_mixture"]
SCIPY_CI = ["scipy._lib.tests.test__util", "scipy.stats.tests.test_device_dtype", "scipy.stats.tests.test_correlation",
            "scipy.stats.tests.test_continued_fraction", "scipy.stats.tests.test_morestats",
            "scipy.special.tests.test_logsumexp", "scipy.fft.tests.test_basic", "scipy.fft.tests.test_helper",
            "scipy.integrate.tests.test_tanhsinh", "scipy.optimize.tests.test_chandrupatla",
            "scipy.differentiate.tests.test_differentiate", "scipy.spatial.transform.tests.test_rigid_transform",
            "scipy.cluster.tests.test_vq", "scipy.ndimage.tests.test_measurements",
            "scipy.interpolate.tests.test_bsplines", "scipy.linalg.tests.test_special_matrices"]
EXTRA_CI = ["tests/main"]

SUITES = {
    "sklearn": {"dist": "scikit-learn", "module": "sklearn"},
    "scipy": {"dist": "scipy", "module": "scipy"},
    "extra": {"dist": "array-api-extra", "module": "array_api_extra"},
}


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def extra_tests_dir(version, cache=CACHE):
    """array-api-extra's tests for ``version``: its sdist, fetched with pip into ``cache`` once and unpacked."""
    root = cache / f"array_api_extra-{version}"
    if (root / "tests").is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"array_api_extra-{version}.tar.gz"
    if not tarball.exists():
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                               "array-api-extra", f"array-api-extra=={version}", "-d", str(cache)],
                              capture_output=True, text=True)
        if not tarball.exists():
            raise RuntimeError(f"could not fetch array-api-extra {version}'s sdist:\n{proc.stderr[-2000:]}")
    with tarfile.open(tarball) as tf:
        tf.extractall(cache, filter="data")
    return root


def suite_command(suite, subset, extra_dir=None):
    """(pytest arguments, working directory or None) selecting ``suite``'s array-API tests."""
    if suite == "sklearn":
        if subset == "ci":
            return ["--pyargs", *SKLEARN_CI], None
        return ["--pyargs", "sklearn"], None
    if suite == "scipy":
        mods = SCIPY_CI if subset == "ci" else ["scipy"]
        return ["--pyargs", *mods, "-m", "array_api_backends"], None
    paths = EXTRA_CI if subset == "ci" else ["tests/main"]  # tests/vendoring and tests/run_deps test packaging
    # pytest-benchmark, where installed, turns its "disabled under xdist" warning into an error at configure time
    return [str(extra_dir / p) for p in paths] + ["-p", "no:benchmark"], extra_dir


def _template(nodeid, label, device="cpu"):
    """The test id with the namespace (and the device its parameters name) replaced, to pair up namespaces: the
    same test on torch's device of the same kind as gpk_array's, on either of array_api_strict's devices."""
    base = label.split(":")[0] if label else ""
    kind = "cpu" if device == "cpu" else "cuda"
    devices = {"array_api_strict": ("CPU_DEVICE", "device1"), "torch": (kind,),
               GPK: (re.escape(device), "None")}.get(base, ())
    out = re.sub(rf"(?<=[\[\-=,( ]){re.escape(label)}(?=[\]\-,) ])", "NS", nodeid) if label else nodeid
    for dev in devices:
        out = re.sub(rf"(?<=NS[- ]){dev}(?=[\]\-,) ])|(?<=device_name=){dev}(?=[\],)])", "DEV", out)
    return out


def summarize(results, device="cpu"):
    """{label: Counter(outcome)}, {label: Counter} over the templates gpk_array runs, failures per label."""
    by_label = collections.defaultdict(collections.Counter)
    templates = collections.defaultdict(dict)
    failures = collections.defaultdict(list)
    for nodeid, (label, outcome, message, *_) in sorted(results.items()):
        by_label[label][outcome] += 1
        templates[label][_template(nodeid, label, device)] = (nodeid, outcome)
        if outcome in ("failed", "error"):
            failures[label].append({"test": nodeid, "outcome": outcome, "message": message})
    gpk = set(templates.get(GPK, {}))
    common = {label: collections.Counter(o for t, (_, o) in tpl.items() if t in gpk)
              for label, tpl in templates.items() if label != GPK}
    for f in failures.get(GPK, []):
        t = _template(f["test"], GPK, device)
        f["others"] = {label: tpl[t][1] for label, tpl in sorted(templates.items()) if label != GPK and t in tpl}
    return by_label, common, failures


def versions(suites):
    v = {"python": platform.python_version(), "pytest": _version("pytest"), "numpy": _version("numpy"),
         "array-api-strict": _version("array-api-strict"), "array-api-compat": _version("array-api-compat"),
         "torch": _version("torch"), "cupy": _version("cupy-cuda13x") or _version("cupy-cuda12x")}
    for s in suites:
        v[SUITES[s]["dist"]] = _version(SUITES[s]["dist"])
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    v["gpk_array commit"] = (commit.stdout.strip() or "unknown") + ("+dirty" if dirty else "")
    return v


def run_suite(suite, a, namespaces):
    """Run one suite; returns its result dict (or one with "error")."""
    info = SUITES[suite]
    version = _version(info["dist"])
    if version is None:
        return {"suite": suite, "skipped": f"{info['dist']} is not installed"}
    extra_dir = None
    if suite == "extra":
        extra_dir = pathlib.Path(a.extra_tests).resolve() if a.extra_tests else extra_tests_dir(version)
    args, cwd = suite_command(suite, a.subset, extra_dir)
    if a.select:
        args = shlex.split(a.select)
    env = dict(os.environ, SCIPY_ARRAY_API="1", GPK_DEVICE=a.device,
               PYTHONPATH=os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p))
    if a.device != "cpu":
        env.setdefault("SCIPY_DEVICE", "cuda")  # torch's device in SciPy's conftest
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conformance.peers_plugin",
               f"--peers-suite={suite}", f"--peers-namespaces={','.join(namespaces)}", f"--peers-device={a.device}",
               f"--peers-report={report}", "-o", "console_output_style=classic", "--no-header", "-rN"]
        if cwd is None:  # an installed package: no project's configuration applies
            ini = pathlib.Path(tmp) / "pytest.ini"
            ini.write_text("[pytest]\n")
            cmd += ["-c", str(ini), "--rootdir", tmp]
        if a.workers not in ("0", ""):
            cmd += ["-n", a.workers]
        cmd += args + list(a.pytest_args)
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=cwd or tmp, env=env, capture_output=True, text=True)
        elapsed = time.monotonic() - t0
        if not report.exists():
            return {"suite": suite, "version": version, "command": cmd, "returncode": proc.returncode,
                    "error": (proc.stdout[-3000:] + proc.stderr[-3000:]).strip()}
        results = json.loads(report.read_text())
    by_label, common, failures = summarize(results, a.device)
    seconds = collections.Counter()
    for label, _, _, *t in results.values():
        seconds[label] += t[0] if t else 0.0
    return {"suite": suite, "version": version, "command": cmd[2:], "returncode": proc.returncode,
            "seconds": round(elapsed, 1), "tail": proc.stdout.strip().splitlines()[-1:],
            "totals": {k: dict(v) for k, v in sorted(by_label.items(), key=lambda kv: str(kv[0]))},
            "same_selection": {k: dict(v) for k, v in sorted(common.items(), key=lambda kv: str(kv[0]))},
            "seconds_per_namespace": {k: round(v, 1) for k, v in sorted(seconds.items(), key=lambda kv: str(kv[0]))},
            "failures": dict(failures), "results": results if a.per_test else None}


def _row(name, c):
    return (f"{name:24} {c.get('passed', 0):8} {c.get('failed', 0):7} {c.get('skipped', 0):8} "
            f"{c.get('xfailed', 0):8} {c.get('xpassed', 0):8} {c.get('error', 0):7}")


def print_suite(r, out=None):
    """The table and gpk_array's failures of one suite's result."""
    w = (out or sys.stdout).write
    if "skipped" in r:
        w(f"\n{r['suite']}: skipped ({r['skipped']})\n")
        return
    if "error" in r:
        w(f"\n{r['suite']} {r['version']}: could not run (pytest exit {r['returncode']})\n{r['error']}\n")
        return
    w(f"\n{r['suite']} {r['version']}  ({r['seconds']} s; pytest: {' '.join(r['tail'])})\n")
    head = f"{'namespace':24} {'passed':>8} {'failed':>7} {'skipped':>8} {'xfailed':>8} {'xpassed':>8} {'errors':>7}\n"
    w(head)
    for label, c in r["totals"].items():
        w(_row(str(label), c) + "\n")
    if r["same_selection"]:
        w("  over the tests gpk_array runs too:\n")
        for label, c in r["same_selection"].items():
            w(_row("  " + str(label), c) + "\n")
    for f in r["failures"].get(GPK, []):
        others = ", ".join(f"{k} {v}" for k, v in f.get("others", {}).items())
        w(f"  {f['outcome'].upper()} {f['test']}  {f['message'][:160]}" + (f"  [{others}]" if others else "") + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", choices=[*SUITES, "all"])
    ap.add_argument("--device", default="cpu", help="gpk_array's device (cpu, cuda:0)")
    ap.add_argument("--subset", default="full", choices=["ci", "full"])
    ap.add_argument("--compare", default="array_api_strict,torch",
                    help="comma-separated namespaces the suite already tests, run beside gpk_array "
                         "(array_api_strict, torch, numpy, cupy); an uninstalled one is left out")
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (0 for none)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--per-test", action="store_true", help="put every test's outcome in the JSON too")
    ap.add_argument("--select", help="pytest arguments that replace the suite's own selection, e.g. "
                    "'--pyargs sklearn.preprocessing.tests.test_data -k scaler' (one suite only)")
    ap.add_argument("--extra-tests", help="a directory with array-api-extra's tests/ (default: its sdist, cached)")
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:len(argv) - len(rest) - 1] if "--" in argv else argv)
    a.pytest_args = rest
    compare = [n for n in a.compare.split(",") if n and n != GPK]
    importable = {n: importlib.util.find_spec(n.split(".")[0]) is not None for n in compare}
    namespaces = [GPK] + [n for n in compare if importable[n]]
    suites = list(SUITES) if a.suite == "all" else [a.suite]
    out = {"device": a.device, "subset": a.subset, "namespaces": namespaces,
           "not_installed": [n for n in compare if not importable[n]], "versions": versions(suites),
           "date": time.strftime("%Y-%m-%d"), "suites": {}}
    print(f"peers' array-API suites, gpk_array on {a.device}, subset {a.subset}; beside: {', '.join(namespaces[1:])}"
          + (f" (not installed: {', '.join(out['not_installed'])})" if out["not_installed"] else ""))
    status = 0
    for suite in suites:
        r = run_suite(suite, a, namespaces)
        out["suites"][suite] = r
        print_suite(r)
        sys.stdout.flush()
        if "error" in r:
            status = 2
        elif "totals" in r:
            c = r["totals"].get(GPK, {})
            if (c.get("failed", 0) + c.get("error", 0)) and status == 0:
                status = 1
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
