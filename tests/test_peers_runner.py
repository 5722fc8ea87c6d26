"""The peers' runner (conformance/peers.py) and its pytest plugin (conformance/peers_plugin.py): gpk_array is injected
into scikit-learn's, SciPy's and array-api-extra's own array-API tests, the comparison namespaces run the same
selection, and a broken gpk_array makes the runner fail."""
import collections
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from conformance import peers

from .conftest import requires_gpu

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _has(mod):
    return importlib.util.find_spec(mod) is not None


needs_sklearn = pytest.mark.skipif(not _has("sklearn"), reason="scikit-learn is not installed")
needs_scipy = pytest.mark.skipif(not _has("scipy"), reason="SciPy is not installed")
needs_strict = pytest.mark.skipif(not _has("array_api_strict"), reason="array-api-strict is not installed")
needs_extra = pytest.mark.skipif(not _has("array_api_extra"), reason="array-api-extra is not installed")


def _pytest(tmp_path, *args, extra_path=None, device="cpu"):
    """Run pytest with the plugin in a fresh directory (no project configuration); returns the process."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    path = [str(ROOT)] + ([str(extra_path)] if extra_path else []) + [os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, SCIPY_ARRAY_API="1", GPK_DEVICE=device, PYTHONPATH=os.pathsep.join(p for p in path if p))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"),
           "--rootdir", str(tmp_path), "-p", "conformance.peers_plugin", *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)


def _ids(proc):
    return [line for line in proc.stdout.splitlines() if "::" in line]


@needs_sklearn
@needs_strict
def test_sklearn_tests_get_gpk_array_and_only_the_selected_namespaces(tmp_path):
    proc = _pytest(tmp_path, "--co", "--peers-suite=sklearn", "--peers-namespaces=gpk_array,array_api_strict",
                   "--pyargs", "sklearn.utils.tests.test_array_api")
    ids = _ids(proc)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    gpk = [i for i in ids if "gpk_array" in i]
    assert any("gpk_array-cpu-float64" in i for i in gpk) and any("gpk_array-cpu-float32" in i for i in gpk)
    assert any("array_api_strict" in i for i in ids)
    assert not any("torch" in i or "cupy" in i or "numpy-None-None" in i for i in ids), ids[:20]
    # the same tests run with both namespaces: every gpk_array test of the namespace/device/dtype generator has
    # array_api_strict's twin; mixed-input tests get gpk_array beside NumPy and array_api_strict
    twins = {peers._template(i, "array_api_strict") for i in ids if "array_api_strict" in i}
    assert all(peers._template(i, "gpk_array") in twins for i in gpk if "gpk_array-cpu-float" in i)
    assert {"numpy to gpk_array cpu", "gpk_array cpu to numpy", "array_api_strict to gpk_array cpu"} <= {
        i.split("[")[1][:-1] for i in gpk if "move_to_array_api_conversions" in i}


@needs_scipy
@needs_strict
def test_scipy_xp_fixture_gets_gpk_array(tmp_path):
    proc = _pytest(tmp_path, "--co", "--peers-suite=scipy", "--peers-namespaces=gpk_array,array_api_strict",
                   "--pyargs", "scipy.cluster.tests.test_vq", "-m", "array_api_backends")
    ids = _ids(proc)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    gpk = [i for i in ids if "gpk_array" in i]
    strict = [i for i in ids if "array_api_strict" in i]
    assert gpk and len(gpk) == len(strict)
    assert not any("numpy]" in i or "torch" in i for i in ids)


@needs_scipy
@needs_strict
def test_scipy_np_only_marks_skip_gpk_array_as_they_skip_the_others(tmp_path):
    test = tmp_path / "test_marks.py"
    test.write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.skip_xp_backends(np_only=True, reason="numpy only")
        def test_np_only(xp):
            pass

        @pytest.mark.skip_xp_backends(cpu_only=True, reason="cpu only")
        def test_cpu_only(xp):
            pass

        @pytest.mark.skip_xp_backends("numpy", reason="lazy backends only")
        @pytest.mark.skip_xp_backends("cupy", reason="lazy backends only")
        @pytest.mark.skip_xp_backends("array_api_strict", reason="lazy backends only")
        @pytest.mark.skip_xp_backends("torch", reason="lazy backends only")
        def test_lazy_only(xp):
            pass

        @pytest.mark.skip_xp_backends("array_api_strict", reason="strict only")
        def test_not_strict(xp):
            pass
    """))
    # SciPy's conftest is the one its package ships; run these two tests under it as if they were SciPy's
    import scipy
    conftest = pathlib.Path(scipy.__file__).parent / "conftest.py"
    (tmp_path / "conftest.py").write_text(conftest.read_text())
    report = tmp_path / "r.json"
    _pytest(tmp_path, "--peers-suite=scipy", "--peers-namespaces=gpk_array,array_api_strict",
            f"--peers-report={report}", str(test))
    res = json.loads(report.read_text())
    assert res["test_marks::test_np_only[gpk_array]"][1] == "skipped"
    assert res["test_marks::test_np_only[array_api_strict]"][1] == "skipped"
    assert res["test_marks::test_cpu_only[gpk_array]"][1] == "passed"  # on the CPU device
    assert res["test_marks::test_lazy_only[gpk_array]"][1] == "skipped"  # skipped for every eager backend
    assert res["test_marks::test_not_strict[gpk_array]"][1] == "passed"
    assert res["test_marks::test_not_strict[array_api_strict]"][1] == "skipped"


@needs_extra
def test_extra_backend_enum_gets_gpk_array(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest
        from array_api_extra._lib._backends import Backend

        @pytest.fixture(params=[b.pytest_param() for b in Backend])
        def library(request):
            return request.param

        @pytest.fixture
        def xp(library):
            xp = pytest.importorskip(library.modname)
            return xp
    """))
    (tmp_path / "test_lib.py").write_text(textwrap.dedent("""
        import pytest
        from array_api_extra._lib._backends import Backend

        def test_ones(xp, library):
            assert library in list(Backend)
            assert float(xp.sum(xp.ones(3))) == 3.0

        @pytest.mark.skip_xp_backend(Backend.ARRAY_API_STRICT, reason="array-agnostic fallback")
        def test_delegation(xp):
            pass
    """))
    report = tmp_path / "r.json"
    proc = _pytest(tmp_path, "--peers-suite=extra", "--peers-namespaces=gpk_array,array_api_strict",
                   f"--peers-report={report}", "test_lib.py")
    res = json.loads(report.read_text())
    assert res["test_lib::test_ones[gpk_array]"][:2] == ["gpk_array", "passed"], proc.stdout[-2000:]
    assert res["test_lib::test_ones[array_api_strictest]"][:2] == ["array_api_strictest", "passed"]
    assert {v[0] for v in res.values()} == {"gpk_array", "array_api_strict", "array_api_strictest"}
    # a test of delegation to the libraries array-api-extra knows by name skips gpk_array as array_api_strict
    assert res["test_lib::test_delegation[gpk_array]"][1] == "skipped"


BROKEN = '''
"""A deliberately broken gpk_array for the runner's own test: sum is off by one."""
def pytest_configure(config):
    import gpk_array
    good = gpk_array.sum
    gpk_array.sum = lambda x, /, *a, **k: good(x, *a, **k) + 1
'''
SELECTION = "--pyargs sklearn.preprocessing.tests.test_data -k standard_scaler_array_api"


@needs_sklearn
@needs_strict
@pytest.mark.parametrize("broken", [False, True], ids=["gpk_array", "broken"])
def test_runner_passes_and_fails(tmp_path, monkeypatch, capsys, broken):
    args = ["sklearn", "--compare", "array_api_strict", "-n", "0", "--select", SELECTION,
            "--json", str(tmp_path / "out.json")]
    if broken:
        (tmp_path / "peers_broken.py").write_text(BROKEN)
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
        args += ["--", "-p", "peers_broken"]
    status = peers.main(args)
    out = json.loads((tmp_path / "out.json").read_text())
    r = out["suites"]["sklearn"]
    gpk, strict = r["totals"]["gpk_array"], r["totals"]["array_api_strict"]
    assert strict.get("failed", 0) == 0 and strict.get("passed", 0) > 0
    assert out["versions"]["scikit-learn"] and out["device"] == "cpu"
    if broken:
        assert status == 1 and gpk.get("failed", 0) > 0
        assert all(f["others"] == {"array_api_strict": "passed"} for f in r["failures"]["gpk_array"])
        assert "FAILED" in capsys.readouterr().out
    else:
        assert status == 0 and gpk.get("failed", 0) == 0 and gpk.get("passed", 0) == strict["passed"]


@needs_sklearn
@needs_strict
@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # scikit-learn's test module, imported
def test_sklearn_probe_checks_documented_estimators_against_numpy(tmp_path, capsys):
    from conformance import sklearn_probe
    out = tmp_path / "probe.json"
    status = sklearn_probe.main(["--only", "StandardScaler(),PoissonRegressor(),r2_score,train_test_split",
                                 "--json", str(out)])
    data = json.loads(out.read_text())
    names = {r["probe"] for r in data["probes"]}
    assert {"StandardScaler()", "PoissonRegressor()", "train_test_split"} <= names
    assert any(n.startswith("r2_score") for n in names)
    for r in data["probes"]:
        assert r["results"]["gpk_array/cpu/float64"] == "passed", r
        assert r["results"]["array_api_strict/CPU_DEVICE/float64"] == "passed", r
    assert not [f for f in data["gpk_array_failures"] if f["config"].endswith("float64")]
    assert status == (1 if data["gpk_array_failures"] else 0)


@needs_sklearn
@needs_strict
@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")
def test_sklearn_probe_fails_on_a_broken_namespace(tmp_path, monkeypatch):
    import gpk_array

    from conformance import sklearn_probe
    good = gpk_array.sum
    monkeypatch.setattr(gpk_array, "sum", lambda x, /, *a, **k: good(x, *a, **k) + 1)
    out = tmp_path / "probe.json"
    assert sklearn_probe.main(["--only", "StandardScaler()", "--dtypes", "float64", "--json", str(out)]) == 1
    failures = {f["probe"]: f for f in json.loads(out.read_text())["gpk_array_failures"]}
    f = failures["StandardScaler()"]  # (and the FeatureUnion wrapping one)
    assert f["result"].startswith("types only: values differ")
    assert f["others"] == {"array_api_strict/CPU_DEVICE/float64": "passed"}


def test_a_suite_not_installed_is_skipped(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(peers, "_version", lambda dist: None if dist == "array-api-extra" else "1")
    assert peers.main(["extra", "--json", str(tmp_path / "o.json")]) == 0
    assert "extra: skipped (array-api-extra is not installed)" in capsys.readouterr().out
    assert json.loads((tmp_path / "o.json").read_text())["suites"]["extra"]["skipped"]


@pytest.mark.parametrize("nodeid, label, device, expected", [
    ("m.py::t[x-gpk_array-cpu-float32]", "gpk_array", "cpu", "m.py::t[x-NS-DEV-float32]"),
    ("m.py::t[x-array_api_strict-device1-float32]", "array_api_strict", "cpu", "m.py::t[x-NS-DEV-float32]"),
    ("m.py::t[x-torch-cpu-float32]", "torch", "cpu", "m.py::t[x-NS-DEV-float32]"),
    ("m.py::t[x-torch-cuda-float32]", "torch", "cpu", "m.py::t[x-NS-cuda-float32]"),
    ("m.py::t[x-torch-cuda-float32]", "torch", "cuda:0", "m.py::t[x-NS-DEV-float32]"),
    ("m.py::t[x-gpk_array-cuda:0-float64]", "gpk_array", "cuda:0", "m.py::t[x-NS-DEV-float64]"),
    ("t.py::e[P()-check(array_namespace=gpk_array,device_name=cpu,dtype_name=float64)]", "gpk_array", "cpu",
     "t.py::e[P()-check(array_namespace=NS,device_name=DEV,dtype_name=float64)]"),
    ("s.py::f[float64-gpk_array]", "gpk_array", "cpu", "s.py::f[float64-NS]"),
    ("s.py::f[numpy_gpk_array_x]", "gpk_array", "cpu", "s.py::f[numpy_gpk_array_x]"),
    ("m.py::t[numpy to gpk_array cpu]", "gpk_array", "cpu", "m.py::t[numpy to NS DEV]"),
    ("m.py::t[array_api_strict to torch cpu]", "torch", "cpu", "m.py::t[array_api_strict to NS DEV]"),
    ("m.py::t[torch mps to numpy]", "torch", "cpu", "m.py::t[NS mps to numpy]"),
])
def test_templates_pair_the_same_test_across_namespaces(nodeid, label, device, expected):
    assert peers._template(nodeid, label, device) == expected


def test_summary_counts_and_pairs_failures():
    results = {"a.py::t[gpk_array]": ["gpk_array", "failed", "boom"], "a.py::t[torch]": ["torch", "passed", ""],
               "a.py::u[gpk_array]": ["gpk_array", "passed", ""], "a.py::u[torch]": ["torch", "skipped", "x"],
               "a.py::v[torch]": ["torch", "failed", "y"]}
    by_label, common, failures = peers.summarize(results)
    assert by_label["gpk_array"] == {"failed": 1, "passed": 1}
    assert by_label["torch"] == {"passed": 1, "skipped": 1, "failed": 1}
    assert common["torch"] == {"passed": 1, "skipped": 1}  # v has no gpk_array twin
    assert failures["gpk_array"] == [{"test": "a.py::t[gpk_array]", "outcome": "failed", "message": "boom",
                                      "others": {"torch": "passed"}}]


@needs_scipy
@requires_gpu
@pytest.mark.gpu
def test_scipy_asserts_compare_gpu_arrays_on_the_host():
    """On a CUDA device SciPy's xp_assert_* compare gpk_array arrays on the host (as SciPy does for CuPy/torch)."""
    import gpk_array as xp
    from scipy._lib import _array_api as sa

    from conformance.peers_plugin import _host_compare
    close = _host_compare(sa._strict_check, sa.xp_assert_close)
    a = xp.asarray([1.0, 2.0], device="cuda:0")
    close(a, xp.asarray([1.0, 2.0 + 1e-15], device="cuda:0"), xp=xp)
    with pytest.raises(AssertionError):
        close(a, xp.asarray([1.0, 2.5], device="cuda:0"), xp=xp)
    with pytest.raises(AssertionError, match="dtypes do not match"):
        close(a, xp.asarray([1.0, 2.0], dtype=xp.float32, device="cuda:0"), xp=xp)


@needs_sklearn
@needs_strict
@requires_gpu
@pytest.mark.gpu
def test_runner_on_cuda(tmp_path):
    out = tmp_path / "o.json"
    status = peers.main(["sklearn", "--device", "cuda:0", "--compare", "array_api_strict", "-n", "0",
                         "--select", SELECTION, "--json", str(out)])
    r = json.loads(out.read_text())["suites"]["sklearn"]
    assert r["totals"]["gpk_array"].get("passed", 0) > 0
    assert status == 0, r["failures"]


class _Node:
    def __init__(self, *marks):
        self.marks = marks

    def iter_markers(self, name):
        return (m for m in self.marks if m.name == name)


class _Request:
    def __init__(self, *marks):
        self.node = _Node(*marks)


def _skip(*args, **kwargs):
    """A skip_xp_backends mark as SciPy's conftest reads it (name, args, kwargs)."""
    return collections.namedtuple("Mark", "name args kwargs")("skip_xp_backends", args, kwargs)


@pytest.mark.parametrize("marks, runs", [
    ((), True),
    ((_skip(cpu_only=True, exceptions=["cupy"]),), True),
    ((_skip(cpu_only=True, exceptions=["torch"]),), False),
    ((_skip(np_only=True, exceptions=["cupy"]),), False),
    ((_skip(cpu_only=True, exceptions=["cupy"]),
      _skip(cpu_only=True, reason="no delegation")), False),
    ((_skip("gpk_array"),), False),
    ((_skip(cpu_only=True, exceptions=["gpk_array"]),), True),
])
def test_on_a_gpu_gpk_array_runs_what_scipy_lets_cupy_run(marks, runs):
    from conformance.peers_plugin import _cupy_may_run
    assert _cupy_may_run(_Request(*marks), "skip") is runs
