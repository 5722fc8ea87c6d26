"""Import cycles among gpk_array's modules, from their source (nothing is imported).

Parses every module under gpk_array/ with ``ast`` and builds the graph of MODULE-LEVEL imports: the statements that
run when the module is imported (top level, and inside module-level ``if``/``try``/``with`` blocks and class
bodies). Imports inside functions do not count: deferring an import to call time is how a cycle is broken on
purpose. Nor do imports under ``if TYPE_CHECKING:``. An edge A -> B means importing A runs ``import B`` (or
``from B import ...``, or ``from A's package import B`` where B is a submodule); the parents a dotted import
initializes on the way are not edges (every module would otherwise be in a cycle with gpk_array/__init__.py).

Prints each cycle (a strongly connected component of two or more modules) with one cycle through it, and exits 1
if there is one not in ALLOWED (or ALLOWED lists one that is gone). ``.ci/run`` runs it; ``tests/test_import_cycles.py``
checks the same.

    python scripts/check_import_cycles.py [--package DIR]
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Cycles accepted for now, each the sorted modules of one strongly connected component, with a comment saying why it
# cannot simply be broken. Empty: the cycles the package has (Array's operators and gpk_array._ops, the namespace
# and its section modules) are broken on purpose by imports inside functions, which do not count.
ALLOWED: list[list[str]] = []


def module_names(package_dir: Path) -> dict[str, Path]:
    """Every module of the package rooted at ``package_dir``: dotted name -> file (``pkg.sub`` for sub/__init__.py)."""
    base = package_dir.parent
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if all(p.isidentifier() for p in parts):
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(body):
    """The Import/ImportFrom nodes that run at import time, in source order."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
        elif isinstance(node, ast.ClassDef):
            yield from _module_level_imports(node.body)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield from _module_level_imports(node.body)
            for h in node.handlers:
                yield from _module_level_imports(h.body)
            yield from _module_level_imports(node.orelse)
            yield from _module_level_imports(node.finalbody)
        elif isinstance(node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
            yield from _module_level_imports(node.body)
            yield from _module_level_imports(getattr(node, "orelse", []))
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from _module_level_imports(case.body)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports at module level (see the module docstring)."""
    modules = module_names(package_dir)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        here = name if is_pkg else name.rpartition(".")[0]   # the package relative imports start from
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _module_level_imports(tree.body):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[:len(parts) - (node.level - 1)]) if node.level > 1 else here
                    src = f"{base}.{node.module}" if node.module else base
                else:
                    src = node.module
                subs = [f"{src}.{a.name}" for a in node.names if f"{src}.{a.name}" in modules]
                # ``from <this package or a parent> import submodule``: only the submodule (the package is being
                # initialized already); a name defined in the package's __init__ is an edge to it
                ancestor = name == src or name.startswith(src + ".")
                targets = subs if ancestor and len(subs) == len(node.names) else [src] + subs
            for t in targets:
                if t in modules and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components that hold a cycle (two or more modules, or one importing itself, which
    import_graph never records), each sorted, the list sorted; Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1 or v in graph[v]:
                        out.append(sorted(comp))
    return sorted(out)


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, as [m0, m1, ..., m0] (breadth-first)."""
    comp = set(component)
    start = component[0]
    prev = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def main(argv=None) -> int:
    """Print the package's module-level import cycles; exit status 1 if one is not in ALLOWED."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", type=Path, default=ROOT / "gpk_array", help="the package directory")
    args = ap.parse_args(argv)
    graph = import_graph(args.package)
    found = cycles(graph)
    for comp in found:
        print(f"cycle of {len(comp)}{' (allowed)' if comp in ALLOWED else ''}: {', '.join(comp)}")
        print("  e.g. " + " -> ".join(one_cycle(graph, comp)))
    stale = [c for c in ALLOWED if c not in found]
    for comp in stale:
        print(f"ALLOWED lists a cycle that is gone (remove it): {', '.join(comp)}")
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} module-level imports, {len(found)} cycle(s)")
    return 1 if stale or any(c not in ALLOWED for c in found) else 0


if __name__ == "__main__":
    sys.exit(main())
