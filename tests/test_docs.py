"""The documentation pages under docs/ stay true to the code: every ```python example runs on the CPU device, and
the environment-variable page names every GPK_* variable gpk_array reads, as gpk_array/_config.py's table does.
(Blocks fenced ```py are GPU-only and are not run here.)"""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _examples():
    for page in sorted(DOCS.glob("*.md")):
        for i, m in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8"))):
            yield pytest.param(page.name, m.group(1), id=f"{page.stem}-{i}")


@pytest.mark.parametrize("page,code", list(_examples()))
def test_example_runs_on_the_cpu(page, code, tmp_path):
    if re.search(r"^import dask\b", code, re.M) and importlib.util.find_spec("dask") is None:
        pytest.skip("needs Dask (the dask extra)")
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # the pages use tests/llm/data/tiny-gpt2
    env = {**os.environ, "GPK_DEVICE": "cpu", "SCIPY_ARRAY_API": "1", "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"{page}:\n{code}\n--- stderr ---\n{r.stderr[-3000:]}"


def _library_rows():
    """``name -> row`` of the page's "The library" table."""
    page = (DOCS / "environment.md").read_text(encoding="utf-8")
    section = page.split("## The library", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(0) for m in re.finditer(r"^\| `(GPK_[A-Z0-9_]+)` \|.*$", section, re.M)}


def test_environment_page_lists_every_variable():
    """The page's library table and gpk_array/_config.py's table name the same variables, and each row names
    every file that reads the variable with when it reads it (tests/test_config.py checks that the table itself
    is true to the code)."""
    from gpk_array import _config
    rows = _library_rows()
    assert {"GPK_DEVICE", "GPK_GEMM", "GPK_OWN_KERNELS_MIN", "GPK_CACHE_DIR"} <= set(rows)  # the scan works
    assert sorted(set(_config.VARS) - set(rows)) == []      # read by the package, not on the page
    assert sorted(set(rows) - set(_config.VARS)) == []      # on the page, not read by the package
    wrong = [f"{name}: `{path}` (at {when}" for name, var in _config.VARS.items() for path, when in var.readers
             if f"`{path}` (at {when}" not in rows[name]]
    assert wrong == []


def test_site_builds_strict(tmp_path):
    """``mkdocs build --strict`` (every warning an error: broken links and anchors included), where the docs
    extra is installed (``pip install -e ".[docs]"``)."""
    for mod in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(mod)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "GPK_DEVICE": "cpu"}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-5000:]
    assert "WARNING" not in r.stderr
    assert (tmp_path / "site" / "benchmarks" / "index.html").is_file()
