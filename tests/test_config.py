"""gpk_array/_config.py: the one table of GPK_* environment variables. No other module of the package reads a GPK_*
variable from the environment; the table names every reader truthfully; each variable parses as its reader did
before the table existed (the expressions below are those readers' own, kept here as the specification), and is
read when the table says (at import, at first use, at each use)."""
import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

from gpk_array import _config

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "gpk_array"
_ENV_FUNCS = {"getenv", "putenv", "unsetenv"}
_ENV_WORD = re.compile(r"\benvironb?\b|\bgetenv\b")


def _sources():
    for p in sorted(PKG.rglob("*.py")):
        yield p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")


def _is_environ(node):
    return (isinstance(node, ast.Attribute) and node.attr in ("environ", "environb")) or \
        (isinstance(node, ast.Name) and node.id in ("environ", "environb"))


def _environment_accesses(tree):
    """(line, the name read or None where it is not a literal) for every os.environ / getenv access."""
    for node in ast.walk(tree):
        arg = None
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and _is_environ(f.value) and f.attr in ("get", "pop", "setdefault"):
                arg = node.args[0] if node.args else None
            elif (isinstance(f, ast.Attribute) and f.attr in _ENV_FUNCS) or \
                    (isinstance(f, ast.Name) and f.id in _ENV_FUNCS):
                arg = node.args[0] if node.args else None
            else:
                continue
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):    # environ["..."]
            arg = node.slice
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):   # "..." in environ
            arg = node.left
        else:
            continue
        name = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
        yield node.lineno, name


# os.environ reads outside _config.py whose name is not a literal: the loop over the CUDA toolkit's variables
_NON_LITERAL_OK = {"gpk_array/_kernels/loader.py"}


def test_no_gpk_variable_is_read_outside_config():
    bad = []
    for rel, text in _sources():
        if rel == "gpk_array/_config.py":
            continue
        for line, name in _environment_accesses(ast.parse(text)):
            if name is None and rel not in _NON_LITERAL_OK:
                bad.append(f"{rel}:{line}: environment read of a computed name")
            elif name is not None and name.startswith("GPK_"):
                bad.append(f"{rel}:{line}: {name}")
        for i, ln in enumerate(text.splitlines(), 1):   # the plain grep, for what the walk cannot see
            if "GPK_" in ln and _ENV_WORD.search(ln) and not ln.lstrip().startswith("#"):
                bad.append(f"{rel}:{i}: {ln.strip()}")
    assert bad == [], "read GPK_* variables through gpk_array._config.get:\n" + "\n".join(sorted(set(bad)))


def test_the_scan_finds_environment_reads():
    """The check above is not vacuous: it sees each form of access."""
    code = ('import os\nfrom os import environ, getenv\na = os.environ.get("GPK_A")\nb = os.environ["GPK_B"]\n'
            'c = getenv("GPK_C")\nd = "GPK_D" in environ\ne = os.environ.setdefault("X", "1")\nf = os.getenv(n)\n')
    assert sorted(_environment_accesses(ast.parse(code))) == [
        (3, "GPK_A"), (4, "GPK_B"), (5, "GPK_C"), (6, "GPK_D"), (7, "X"), (8, None)]


def _config_calls(text):
    """Names passed as literals to _config.get / _config.is_set in a module's source."""
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "is_set") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "_config" and node.args \
                and isinstance(node.args[0], ast.Constant):
            out.add(node.args[0].value)
    return out


def test_the_table_names_its_readers():
    """Every _config.get("X") in the package names a variable of the table and is in one of X's listed readers;
    every listed reader calls _config.get / is_set for X."""
    calls = {rel: _config_calls(text) for rel, text in _sources()}
    for rel, names in calls.items():
        for n in names:
            assert n in _config.VARS, f"{rel}: _config.get({n!r}) is not in the table"
            assert rel in {r for r, _ in _config.VARS[n].readers}, f"{rel} reads {n} but is not listed as a reader"
    for name, var in _config.VARS.items():
        assert name.startswith("GPK_") and var.name == name and var.readers
        for rel, when in var.readers:
            assert when in (_config.IMPORT, _config.FIRST_USE, _config.EACH_USE), (name, when)
            assert name in calls.get(rel, ()), f"{name}: {rel} is listed as a reader but does not read it"


def _expect(name, raw, monkeypatch):
    if raw is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, raw)
    return _config.get(name)


RAWS = (None, "", "0", "1", " 0 ", "2", "no", "nvcc", " NVRTC ", "~/x")


@pytest.mark.parametrize("raw", RAWS, ids=[f"raw{i}" for i in range(len(RAWS))])
def test_parsers_match_the_former_readers(raw, monkeypatch):
    env = {} if raw is None else {"v": raw}
    g = env.get
    want = {   # the expressions each reader used before the table, applied to the same text
        "GPK_OWN_REDUCTIONS": g("v", "1") != "0",
        "GPK_FLASH_ATTENTION": g("v", "1") != "0",
        "GPK_GEMM_LT": g("v", "1") != "0",
        "GPK_PDL": g("v", "1") != "0",
        "GPK_INDEX_CHECK": g("v", "1").strip() != "0",
        "GPK_TF32": g("v", "") == "1",
        "GPK_NO_TF32": g("v", "") == "1",
        "GPK_KERNEL_DEBUG": g("v") == "1",
        "GPK_DEVICE": g("v") or None,
        "GPK_KERNEL_LOG": g("v") or None,
        "GPK_CUTLASS_BACKEND": g("v") or None,
        "GPK_CACHE_DIR": pathlib.Path(g("v")).expanduser() if g("v") else None,
        "GPK_WORKBENCH_DIR": pathlib.Path(g("v")).expanduser() if g("v") else None,
        "GPK_CUTLASS_INCLUDE": pathlib.Path(g("v")) if g("v") else None,
        "GPK_KERNEL_REGISTRY": pathlib.Path(g("v")) if g("v") else None,
        "GPK_KERNEL_BACKEND": (g("v", "").strip().lower() if g("v", "").strip().lower() in ("nvrtc", "nvcc")
                               else None),
    }
    for name, expected in want.items():
        got = _expect(name, raw, monkeypatch)
        assert got == expected and type(got) is type(expected), (name, raw, got, expected)
    assert _config.is_set("GPK_KERNEL_BACKEND") is bool(g("v"))
    if raw is None or raw.strip().lstrip("-").isdigit():
        assert _expect("GPK_OWN_KERNELS_MIN", raw, monkeypatch) == (None if raw is None else int(raw))
    if raw is None or (raw or "1").strip().lstrip("-").isdigit():
        assert _expect("GPK_BLAS_AUTOTUNE", raw, monkeypatch) == max(1, int(g("v", "8") or 1))


@pytest.mark.parametrize("name", ["GPK_OWN_KERNELS_MIN", "GPK_BLAS_AUTOTUNE"])
@pytest.mark.parametrize("raw", ["x", "1.5", "8k"])
def test_malformed_integers_raise_naming_the_variable(name, raw, monkeypatch):
    monkeypatch.setenv(name, raw)
    with pytest.raises(ValueError, match=name):
        _config.get(name)


def test_integers(monkeypatch):
    monkeypatch.setenv("GPK_BLAS_AUTOTUNE", "-3")
    assert _config.get("GPK_BLAS_AUTOTUNE") == 1
    monkeypatch.setenv("GPK_BLAS_AUTOTUNE", "")
    assert _config.get("GPK_BLAS_AUTOTUNE") == 1
    monkeypatch.setenv("GPK_OWN_KERNELS_MIN", "")
    with pytest.raises(ValueError, match="GPK_OWN_KERNELS_MIN"):   # int("") raised before the table too
        _config.get("GPK_OWN_KERNELS_MIN")


def test_gemm_mode_and_api_version(monkeypatch):
    for raw, want in ((None, "auto"), ("", "auto"), ("default", "auto"), (" CUTLASS ", "cutlass"),
                      ("cuBLAS", "cublas")):
        assert _expect("GPK_GEMM", raw, monkeypatch) == want
    monkeypatch.setenv("GPK_GEMM", "cutlas")
    with pytest.warns(UserWarning, match="GPK_GEMM='cutlas'"):
        assert _config.get("GPK_GEMM") == "auto"
    for raw in ("2024.12", "2025.12"):
        assert _expect("GPK_ARRAY_API_VERSION", raw, monkeypatch) == raw
    assert _expect("GPK_ARRAY_API_VERSION", None, monkeypatch) == "2025.12"
    for raw in ("2023.12", " 2024.12", ""):
        monkeypatch.setenv("GPK_ARRAY_API_VERSION", raw)
        with pytest.raises(ValueError, match="GPK_ARRAY_API_VERSION"):
            _config.get("GPK_ARRAY_API_VERSION")


def test_settings():
    assert _config.parse_settings("unroll=16, fin=kernel,,blocks_per_sm=None,col_vec=False,x=True,y=-2") == (
        ("unroll", 16), ("fin", "kernel"), ("blocks_per_sm", None), ("col_vec", False), ("x", True), ("y", -2))
    assert _config.parse_settings("") == ()


def test_unknown_names_raise():
    with pytest.raises(KeyError):
        _config.get("GPK_NO_SUCH_VARIABLE")
    with pytest.raises(KeyError):
        _config.is_set("GPK_NO_SUCH_VARIABLE")


def test_each_use_readers_follow_the_environment(monkeypatch, tmp_path):
    """Variables read at each use: a change between two calls is seen by the second."""
    from gpk_array._kernels import loader
    from gpk_array.workbench import candidates, registry
    for name, read in (("GPK_CACHE_DIR", loader.cache_root), ("GPK_WORKBENCH_DIR", candidates.root),
                       ("GPK_KERNEL_REGISTRY", registry.directory)):
        monkeypatch.setenv(name, str(tmp_path / "a"))
        assert read() == tmp_path / "a"
        monkeypatch.setenv(name, str(tmp_path / "b"))
        assert read() == tmp_path / "b"
        monkeypatch.delenv(name)
        assert read() != tmp_path / "b"
    assert registry.directory() == registry.PACKAGE_DIR
    monkeypatch.setenv("GPK_KERNEL_BACKEND", " NVCC")
    assert loader.default_backend() == "nvcc" and loader.backends_for("nn.cu") == ("nvcc",)
    monkeypatch.setenv("GPK_KERNEL_BACKEND", "nvrtc")
    assert loader.default_backend() == "nvrtc"


def test_import_time_readers_take_the_environment_of_the_import():
    """Module-level constants come from the environment of the process at import (a fresh interpreter here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPK_")}
    env.update(GPK_DEVICE="cpu", GPK_OWN_KERNELS_MIN="123", GPK_OWN_REDUCTIONS="0", GPK_GEMM=" cuBLAS",
               GPK_GEMM_LT="0", GPK_FLASH_ATTENTION="0", GPK_INDEX_CHECK=" 0", GPK_NO_TF32="1", GPK_TF32="1",
               GPK_BLAS_AUTOTUNE="0", GPK_PDL="0", GPK_RED_CONFIG="unroll=16,fin=kernel",
               GPK_ARRAY_API_VERSION="2024.12", PYTHONPATH=str(ROOT))
    code = ("import gpk_array\nfrom gpk_array import _gpu as g, _precision as p\n"
            "from gpk_array._kernels import blas as b, reduction as r\nfrom gpk_array._ops import indexing as i\n"
            "from gpk_array._kernels.cutlass import launch_sm90 as L\n"
            "print(g.OWN_KERNELS_MIN, g.OWN_REDUCTIONS, g.GEMM_MODE, g.LT_FIRST, g.FLASH_ATTENTION, i.INDEX_CHECK,"
            " b.TF32_DEFAULT, b.AUTOTUNE_ALGOS, L.PDL, r.CONFIG['unroll'], r.CONFIG['fin'],"
            " p.get_float32_matmul_precision(), gpk_array.__array_api_version__, gpk_array._version.get())")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["123", "False", "cublas", "False", "False", "False", "False", "1", "False", "16",
                                "kernel", "highest", "2024.12", "2024.12"]


def test_a_bad_api_version_fails_the_import():
    env = dict(os.environ, GPK_DEVICE="cpu", GPK_ARRAY_API_VERSION="2023.12", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", "import gpk_array"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0
    assert "ImportError: GPK_ARRAY_API_VERSION='2023.12' is not one of ('2024.12', '2025.12')" in r.stderr
