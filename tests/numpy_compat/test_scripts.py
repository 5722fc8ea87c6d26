"""The script corpus (tests/numpy_scripts): each script runs with ``np`` bound to NumPy and to gpk_array (on each
device, made the default device), and every value of its ``result`` must match NumPy's."""
import pathlib
import warnings

import numpy
import pytest

import gpk_array

from .helpers import assert_match

SCRIPT_DIR = pathlib.Path(__file__).resolve().parent.parent / "numpy_scripts"
SCRIPTS = sorted(p for p in SCRIPT_DIR.glob("*.py") if not p.name.startswith("_"))


def run_script(path, module):
    ns = {"np": module, "__name__": "__numpy_script__", "__file__": str(path)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with numpy.errstate(all="ignore"):
            exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns["result"]


def test_corpus_size():
    assert len(SCRIPTS) >= 50


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_script(script, dev):
    want = run_script(script, numpy)
    got = run_script(script, gpk_array)
    rtol = 1e-9 if str(dev) == "cpu" else 1e-7
    assert_match(got, want, dev, rtol=rtol, atol=1e-12, what=script.stem)
