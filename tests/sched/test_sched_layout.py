"""The package's layout as docs/scheduler.md describes it: every module of gpk_array/sched listed in its table (and
nothing else), each importing only the modules listed above it, so the modules form one layering with no cycles."""
import ast
import pathlib
import re

from gpk_array import sched

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = pathlib.Path(sched.__file__).parent


def _documented_order():
    text = (ROOT / "docs" / "scheduler.md").read_text()
    return re.findall(r"^\| `(\w+)\.py` \|", text, re.M)


def _siblings(path):
    """The modules of gpk_array.sched that ``path`` imports (relative or absolute imports)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                out.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif node.level == 0 and (node.module or "").startswith("gpk_array.sched."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith("gpk_array.sched."))
    return out


def test_every_module_is_documented_once():
    order = _documented_order()
    modules = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")
    assert len(order) == len(set(order)), order
    assert sorted(order) == modules


def test_modules_import_only_the_ones_above_them():
    order = _documented_order()
    wrong = []
    for i, name in enumerate(order):
        for dep in sorted(_siblings(PKG / f"{name}.py")):
            if dep not in order[:i]:
                wrong.append(f"{name} imports {dep}")
    assert wrong == []
