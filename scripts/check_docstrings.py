"""List gpk_array's public callables that have no docstring.

    python scripts/check_docstrings.py            # the missing ones, one a line, and the counts; exit 1 if any
    python scripts/check_docstrings.py --all      # every public callable, documented or not
    python scripts/check_docstrings.py --counts   # the counts only

Public modules: ``gpk_array`` and every module under it whose dotted name has no part starting with ``_``
(``gpk_array.linalg``, ``fft``, ``random``, ``sched``, ``llm``, ``llm.server``, ``testing``, ``lib``, ...), plus
the modules the namespace hands out as attributes (``gpk_array.emath``). Public names: those not starting with
``_``. Callables: functions, classes, and the callable objects gpk_array defines (NumPy-style ufuncs), counted
once each however many names or modules reach them; for each class its public methods, properties, classmethods
and staticmethods, from the classes of its MRO that gpk_array defines. Objects defined outside gpk_array
(``numpy.min_scalar_type``, ``numpy.s_``, modules imported by a module) are not ours to document and are skipped.
"""
import argparse
import importlib
import importlib.util
import os
import pkgutil
import sys
import types

ROOT = "gpk_array"
# Imported for the walk; they need optional dependencies (the server: starlette) that the dev extra installs.
SKIP_MODULES = set()
# Modules that exist only with an optional dependency (gpk_array.dask: the `dask` extra): walked where it is installed.
OPTIONAL_MODULES = {"gpk_array.dask": "dask.array"}


def _ours(obj):
    mod = getattr(obj, "__module__", None)
    if mod is None and not isinstance(obj, (types.FunctionType, type)):
        mod = getattr(type(obj), "__module__", None)
    return isinstance(mod, str) and (mod == ROOT or mod.startswith(ROOT + "."))


def _installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:   # its parent package is missing
        return False


def public_modules():
    """Every public module of gpk_array, imported, in a stable order."""
    pkg = importlib.import_module(ROOT)
    mods = {ROOT: pkg}
    for info in pkgutil.walk_packages(pkg.__path__, ROOT + "."):
        name = info.name
        if any(part.startswith("_") for part in name.split(".")[1:]) or name in SKIP_MODULES:
            continue
        if name in OPTIONAL_MODULES and not _installed(OPTIONAL_MODULES[name]):
            continue
        mods[name] = importlib.import_module(name)
    # modules the namespace hands out under a public name (gpk_array.emath is gpk_array._numpy.emath)
    for name in list(mods):
        m = mods[name]
        for attr in dir(m):
            if attr.startswith("_"):
                continue
            sub = getattr(m, attr, None)
            if isinstance(sub, types.ModuleType) and sub.__name__.startswith(ROOT + ".") \
                    and sub.__name__ not in mods.values() and f"{name}.{attr}" not in mods:
                if sub not in mods.values():
                    mods[f"{name}.{attr}"] = sub
    return dict(sorted(mods.items()))


def _doc(obj):
    d = getattr(obj, "__doc__", None)
    return d if isinstance(d, str) and d.strip() else None


def _is_callable_object(obj):
    return (not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType))
            and callable(obj) and _ours(type(obj)))


def _members(cls):
    """(name, raw member) for the public methods/properties of cls defined in gpk_array's classes of its MRO."""
    seen = {}
    for base in cls.__mro__:
        if base is object or not _ours(base):
            continue
        for name, raw in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            if isinstance(raw, (staticmethod, classmethod)):
                seen[name] = raw.__func__
            elif isinstance(raw, property):
                seen[name] = raw
            elif isinstance(raw, types.FunctionType):
                seen[name] = raw
    return seen


def collect():
    """[(qualified name, kind, has_doc)] for every public callable, each object once."""
    out = []
    done = set()

    def add(qual, kind, obj, doc_holder=None):
        key = id(obj)
        if key in done:
            return
        done.add(key)
        out.append((qual, kind, _doc(doc_holder if doc_holder is not None else obj) is not None))

    for modname, mod in public_modules().items():
        names = [n for n in dir(mod) if not n.startswith("_")]
        for name in names:
            try:
                obj = getattr(mod, name)
            except AttributeError:
                continue
            qual = f"{modname}.{name}"
            if isinstance(obj, type):
                if not _ours(obj):
                    continue
                add(qual, "class", obj)
                for mname, raw in _members(obj).items():
                    kind = "property" if isinstance(raw, property) else "method"
                    fn = raw.fget if isinstance(raw, property) else raw
                    if fn is None or (not _ours(fn) and not isinstance(raw, property)):
                        continue
                    add(f"{qual}.{mname}", kind, raw, raw if isinstance(raw, property) else fn)
            elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
                if _ours(obj):
                    add(qual, "function", obj)
            elif _is_callable_object(obj):
                add(qual, "callable", obj)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="list every public callable, with its status")
    ap.add_argument("--counts", action="store_true", help="print the counts only")
    a = ap.parse_args(argv)
    os.environ.setdefault("GPK_DEVICE", "cpu")
    items = collect()
    missing = [(q, k) for q, k, ok in items if not ok]
    if not a.counts:
        for q, k, ok in items:
            if a.all or not ok:
                print(f"{'ok  ' if ok else 'MISS'} {k:9s} {q}" if a.all else f"{k:9s} {q}")
    print(f"{len(missing)} of {len(items)} public callables have no docstring", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
