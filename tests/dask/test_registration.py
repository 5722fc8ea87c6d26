"""When gpk_array registers with Dask: `import gpk_array` never imports Dask; where Dask is imported already it
registers by itself (as in a Dask worker that unpickles an Array); `import gpk_array.dask` always does. Fresh
interpreters, so the test session's own imports do not count."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("dask.array")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PROBE = r"""
import json, sys
{first}
import gpk_array
from dask.array.chunk_types import is_valid_chunk_type
print(json.dumps({{"dask": "dask" in sys.modules, "hooks": "gpk_array.dask" in sys.modules,
                  "chunk_type": is_valid_chunk_type(gpk_array.Array)}}))
"""


def _probe(first):
    env = {**os.environ, "GPK_DEVICE": "cpu", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", _PROBE.format(first=first)], capture_output=True, text=True,
                         check=True, env=env, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_gpk_array_alone_does_not_import_dask():
    code = ("import sys, gpk_array; print('dask' in sys.modules, 'distributed' in sys.modules, "
            "'gpk_array.dask' in sys.modules)")
    env = {**os.environ, "GPK_DEVICE": "cpu", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=ROOT).stdout.split()
    assert out == ["False", "False", "False"]


def test_dask_imported_first_registers():
    assert _probe("import dask.array") == {"dask": True, "hooks": True, "chunk_type": True}


def test_gpk_array_first_then_gpk_array_dask():
    r = _probe("import gpk_array\nimport dask.array\nimport gpk_array.dask")
    assert r == {"dask": True, "hooks": True, "chunk_type": True}


def test_gpk_array_first_without_gpk_array_dask_is_not_registered():
    """The documented limit: gpk_array imported before Dask, and gpk_array.dask never imported."""
    r = _probe("import gpk_array\nimport dask.array")
    assert r == {"dask": True, "hooks": False, "chunk_type": False}


def test_backend_entry_point():
    """Dask finds the "gpk_array" backend through the package's entry point, with no gpk_array import first."""
    from importlib.metadata import entry_points
    if not any(ep.name == "gpk_array" for ep in entry_points(group="dask.array.backends")):
        pytest.skip("gpk_array is not installed with its entry points (pip install -e .)")
    code = ("import dask, dask.array as da, json\n"
            "with dask.config.set({'array.backend': 'gpk_array'}):\n"
            "    x = da.ones((4, 2), chunks=2)\n"
            "print(json.dumps([type(x._meta).__module__, str(x._meta.device), float(x.sum().compute())]))")
    env = {**os.environ, "GPK_DEVICE": "cpu", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=ROOT).stdout
    assert json.loads(out.strip().splitlines()[-1]) == ["gpk_array._array", "cpu", 8.0]
