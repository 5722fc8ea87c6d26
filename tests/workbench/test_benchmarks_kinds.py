"""``python -m benchmarks kernels``: the workbench's kernels benchmark kind, an alias that runs the elementwise and
reduction suites (benchmarks/kernels_bench.py) in one command, their results under their own kinds."""
import importlib
import json
import pathlib
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def bench_main(monkeypatch):
    main = importlib.import_module("benchmarks.__main__")
    calls = []

    def run(*args):
        calls.append(args)
        return [{"suite": args[0] if args else None}]
    real = importlib.import_module

    def fake_import(name, *a):
        return types.SimpleNamespace(run=run) if name.startswith("benchmarks.") else real(name, *a)
    monkeypatch.setattr(main.importlib, "import_module", fake_import)
    monkeypatch.setattr(main, "_env", lambda: {"commit": "test"})
    return main, calls


def test_kernels_runs_the_elementwise_and_reduction_suites(bench_main, tmp_path, capsys):
    main, calls = bench_main
    out = tmp_path / "k.json"
    assert main.main(["kernels", "--json", str(out)]) == 0
    assert calls == [("elementwise",), ("reduction",)]
    res = json.loads(out.read_text())["results"]
    assert res == {"elementwise": [{"suite": "elementwise"}], "reduction": [{"suite": "reduction"}]}
    printed = capsys.readouterr().out
    assert "== elementwise ==" in printed and "== reduction ==" in printed


def test_kernels_beside_its_suites_runs_each_once(bench_main):
    main, calls = bench_main
    assert main.main(["elementwise", "kernels"]) == 0
    assert calls == [("elementwise",), ("reduction",)]
    calls.clear()
    assert main.main(["all"]) == 0
    assert calls.count(("elementwise",)) == 1 and calls.count(("reduction",)) == 1
    assert "kernels" in main.__doc__


def test_the_benchmarks_page_names_the_kind():
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert "`kernels`" in text and "elementwise" in text.split("`kernels`", 1)[1][:200]
