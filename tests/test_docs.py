"""The documentation pages under docs/ stay true to the code: every ```python example runs on the CPU device, and
the environment-variable page names every GPK_* variable gpk_array reads. (Blocks fenced ```py are GPU-only and
are not run here.)"""
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


def _variables_read():
    """GPK_* names that gpk_array's Python code reads from the environment (directly or through a table)."""
    names = set()
    pattern = re.compile(r"""(?:environ(?:\.get)?|getenv)\(\s*["'](GPK_[A-Z0-9_]+)["']"""
                         r"""|environ\[["'](GPK_[A-Z0-9_]+)["']""")
    for p in (ROOT / "gpk_array").rglob("*.py"):
        for m in pattern.finditer(p.read_text(encoding="utf-8")):
            names.add(m.group(1) or m.group(2))
    return names


def test_environment_page_lists_every_variable():
    names = _variables_read()
    assert {"GPK_DEVICE", "GPK_GEMM", "GPK_OWN_KERNELS_MIN", "GPK_CACHE_DIR"} <= names  # the scan works
    page = (DOCS / "environment.md").read_text(encoding="utf-8")
    missing = sorted(n for n in names if f"`{n}`" not in page)
    assert missing == []


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
