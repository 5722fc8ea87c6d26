"""No import cycle among gpk_array's modules at module level (scripts/check_import_cycles.py), except those in
its ALLOWED list (commented there); and the checker itself finds the cycles it should, on small packages written
here."""
import importlib.util
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _checker():
    # the script is not in a package: load it from its file, as `python scripts/check_import_cycles.py` runs it
    spec = importlib.util.spec_from_file_location("check_import_cycles", ROOT / "scripts" / "check_import_cycles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


check = _checker()


def test_no_module_level_import_cycles():
    graph = check.import_graph(ROOT / "gpk_array")
    assert len(graph) > 100          # the whole package was read
    found = check.cycles(graph)
    new = [c for c in found if c not in check.ALLOWED]
    assert not new, "module-level import cycles: " + "; ".join(" -> ".join(check.one_cycle(graph, c)) for c in new)
    stale = [c for c in check.ALLOWED if c not in found]
    assert not stale, f"ALLOWED lists cycles that no longer exist (remove them): {stale}"


def _write(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path / "pkg"


def test_checker_finds_a_cycle_and_skips_deferred_imports(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from . import a\nfrom .sub import c\n",
        "pkg/a.py": "from .b import thing\n",
        "pkg/b.py": "try:\n    import pkg.a\nexcept ImportError:\n    pass\nthing = 1\n",
        # imports deferred to call time, or for type checkers only, do not count
        "pkg/sub/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n",
        "pkg/sub/c.py": "def f():\n    from .. import a\n    return a\n\nfrom . import d\n",
        # `from . import submodule` does not depend on the package's __init__; a name defined there does
        "pkg/sub/d.py": "from . import c\n",
        "pkg/sub/e.py": "from . import NAME\n",
    })
    graph = check.import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.sub"] == set() and graph["pkg.sub.c"] == {"pkg.sub.d"} and graph["pkg.sub.d"] == {"pkg.sub.c"}
    assert graph["pkg.sub.e"] == {"pkg.sub"}
    assert graph["pkg"] == {"pkg.a", "pkg.sub", "pkg.sub.c"}
    assert check.cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.sub.c", "pkg.sub.d"]]
    assert check.one_cycle(graph, ["pkg.a", "pkg.b"]) == ["pkg.a", "pkg.b", "pkg.a"]


def test_checker_script_exit_status(tmp_path, capsys, monkeypatch):
    pkg = _write(tmp_path, {"pkg/__init__.py": "", "pkg/x.py": "from .y import v\n", "pkg/y.py": "from .x import w\n"})
    assert check.main(["--package", str(pkg)]) == 1
    monkeypatch.setattr(check, "ALLOWED", [["pkg.x", "pkg.y"]])
    assert check.main(["--package", str(pkg)]) == 0
    monkeypatch.setattr(check, "ALLOWED", [])
    assert "pkg.x -> pkg.y -> pkg.x" in capsys.readouterr().out
    (pkg / "y.py").write_text("def f():\n    from .x import w\n")
    assert check.main(["--package", str(pkg)]) == 0
    monkeypatch.setattr(check, "ALLOWED", [["pkg.x", "pkg.y"]])   # allowed, but gone: stale
    assert check.main(["--package", str(pkg)]) == 1


@pytest.mark.parametrize("body", ["import pkg.m\n", "from pkg import m\n", "from . import m\n"])
def test_checker_self_import_forms(tmp_path, body):
    # a module importing itself is no cycle; each spelling of an import of a sibling is the same edge
    pkg = _write(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": body, "pkg/n.py": body})
    graph = check.import_graph(pkg)
    assert graph["pkg.m"] == set() and graph["pkg.n"] == {"pkg.m"}
