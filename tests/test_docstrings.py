"""Every public callable of gpk_array has a docstring (scripts/check_docstrings.py), and ``gpk_array.__all__``
lists exactly the public names that ``import gpk_array`` binds."""
import importlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import gpk_array

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location("check_docstrings", ROOT / "scripts" / "check_docstrings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_public_callable_has_a_docstring():
    items = _checker().collect()
    assert len(items) > 400  # the walk found the namespace (functions, classes, methods, ufuncs)
    missing = [f"{kind} {name}" for name, kind, ok in items if not ok]
    assert missing == [], f"{len(missing)} public callables without a docstring:\n" + "\n".join(missing)


def test_checker_walks_the_public_modules():
    mods = _checker().public_modules()
    for name in ("gpk_array", "gpk_array.linalg", "gpk_array.fft", "gpk_array.random", "gpk_array.sched",
                 "gpk_array.llm", "gpk_array.llm.server", "gpk_array.testing", "gpk_array.lib.stride_tricks",
                 "gpk_array.emath", "gpk_array.cli"):
        assert name in mods
    assert not any(part.startswith("_") for m in mods for part in m.split(".")[1:] if m != "gpk_array.emath")


def _fresh_public_names():
    """The public names a fresh interpreter's ``import gpk_array`` binds (no other test's imports leak in)."""
    code = "import gpk_array, json; print(json.dumps([n for n in dir(gpk_array) if not n.startswith('_')]))"
    env = {**os.environ, "GPK_DEVICE": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=ROOT).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_all_equals_the_public_names():
    declared = gpk_array.__all__
    assert len(declared) == len(set(declared)), "duplicates in __all__"
    public = _fresh_public_names()
    assert sorted(public - set(declared)) == [], "public names missing from __all__"
    # a name __all__ declares that a fresh import has not bound yet must come on first use: a lazily resolved
    # attribute (a module __getattr__) or a submodule
    for name in set(declared) - public:
        assert hasattr(gpk_array, name) or importlib.util.find_spec(f"gpk_array.{name}") is not None, name


def test_all_is_importable():
    ns = {}
    exec("from gpk_array import *", ns)
    missing = [n for n in gpk_array.__all__ if n not in ns]
    assert missing == []
    for name in gpk_array.__all__:
        assert getattr(gpk_array, name) is ns[name]
