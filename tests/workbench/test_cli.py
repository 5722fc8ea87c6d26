"""``gpk kernels ...`` round trips through the cli's main() (and one through a subprocess): create, the dry-run
validate/bench, list, show, compare, doctor, and the gate's refusal as a one-line error with exit status 2."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from gpk_array import cli
from gpk_array.workbench import registry

from . import _fake

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("GPK_WORKBENCH_DIR", str(tmp_path / "ws"))
    return tmp_path / "ws"


def test_round_trip_without_a_gpu(capsys, ws, tmp_path):
    rc, out, _ = _run(capsys, "kernels", "create", "gemm", "--name", "fr96-512", "--family", "fr96",
                      "--where", "m=256:1024,n=3072:3072,k=768:768")
    assert rc == 0 and "created fr96-512" in out and "gemm/f16/tn/sm90" in out and "2 shapes" in out
    assert (ws / "fr96-512" / "candidate.json").is_file()          # GPK_WORKBENCH_DIR is the root
    rc, out, _ = _run(capsys, "kernels", "validate", "fr96-512", "--dry-run")
    assert rc == 0 and "planned validation" in out
    vpath = out.strip().rsplit(": ", 1)[1]
    rc, out, _ = _run(capsys, "kernels", "bench", "fr96-512", "--dry-run")
    assert rc == 0 and "planned benchmark (2 shapes" in out
    bpath = out.strip().rsplit(": ", 1)[1]
    v = json.loads(pathlib.Path(vpath).read_text())
    assert v["planned"] and v["type"] == "validation" and v["command"][-3:] == ["validate", "fr96-512", "--dry-run"]
    assert v["env"]["gpu"] is None and v["fingerprint"]["id"]
    rc, out, err = _run(capsys, "kernels", "validate", "fr96-512")
    assert rc == 2 and "needs a usable CUDA GPU" in err and "--dry-run" in err and len(err.splitlines()) == 1
    rc, out, _ = _run(capsys, "kernels", "list", "--json")
    rows = json.loads(out)
    assert rows[0]["name"] == "fr96-512" and rows[0]["evidence"] == {"validation": 1, "bench": 1, "profile": 0}
    rc, out, _ = _run(capsys, "kernels", "show", "fr96-512")
    shown = json.loads(out)
    assert shown["candidate"]["instance"] == "gemm/f16/tn/fr96/sm90" and len(shown["evidence"]) == 2
    reg = tmp_path / "reg"
    shutil.copytree(registry.PACKAGE_DIR, reg)
    before = {p.name: p.read_bytes() for p in reg.iterdir()}
    rc, out, err = _run(capsys, "kernels", "promote", "fr96-512", "--validation", vpath, "--bench", bpath,
                        "--registry", str(reg))
    assert rc == 2 and err.startswith("gpk kernels promote: error: promote fr96-512: refused:")
    assert "planned evidence from --dry-run" in err
    assert {p.name: p.read_bytes() for p in reg.iterdir()} == before
    rc, out, _ = _run(capsys, "kernels", "compare", vpath, vpath, "--json")
    assert rc == 0 and json.loads(out)["same_candidate"] is True
    rc, out, err = _run(capsys, "kernels", "compare", vpath, bpath)
    assert rc == 2 and "a validation record against a bench record" in err
    rc, out, _ = _run(capsys, "kernels", "doctor", "--registry", str(reg))
    assert rc == 0 and "gpu: none usable here" in out and "85 record(s): bootstrap" in out


def test_promote_accepts_gpu_evidence_through_the_cli(capsys, ws, tmp_path):
    _run(capsys, "kernels", "create", "gemm", "--name", "fr96-512", "--family", "fr96", "--where",
         "m=256:1024,n=3072:3072,k=768:768")
    from gpk_array.workbench import candidates
    meta = candidates.load("fr96-512")
    v, b = tmp_path / "v.json", tmp_path / "b.json"
    v.write_text(json.dumps(_fake.validation(meta)))
    b.write_text(json.dumps(_fake.bench(meta, 1.04)))
    reg = tmp_path / "reg"
    shutil.copytree(registry.PACKAGE_DIR, reg)
    rc, out, err = _run(capsys, "kernels", "promote", "fr96-512", "--validation", str(v), "--bench", str(b),
                        "--registry", str(reg))
    assert rc == 0, err
    assert "promoted fr96-512-" in out and "median 1.040x" in out
    rc, out, _ = _run(capsys, "kernels", "doctor", "--registry", str(reg))
    assert "1 record(s): needs re-validation here" in out and "gpu_name: NVIDIA H200 -> None" in out


def test_kernel_kind_and_bad_options_are_user_errors(capsys, ws):
    rc, _, err = _run(capsys, "kernels", "create", "kernel", "--name", "k")
    assert rc == 2 and "no registry selector" in err
    with pytest.raises(SystemExit) as e:
        cli.main(["kernels", "create", "gemm", "--name", "x", "--min-elements", "-3"])
    assert e.value.code == 2
    rc, _, err = _run(capsys, "kernels", "show", "nosuch")
    assert rc == 2 and "no candidate 'nosuch'" in err
    rc, _, err = _run(capsys, "kernels", "profile", "nosuch", "--command", "ncu")
    assert rc == 2 and "{binary}" in err


def test_profile_stores_command_output_and_return_code(capsys, ws):
    _run(capsys, "kernels", "create", "gemm", "--name", "p", "--family", "fr96", "--where", "m=:1024")
    rc, out, _ = _run(capsys, "kernels", "profile", "p", "--command",
                      f"{sys.executable} -c \"import sys; print('ran', sys.argv[1:]); sys.exit(3)\" {{binary}}")
    assert rc == 0 and "exited 3" in out
    rec = json.loads(pathlib.Path(out.strip().rsplit(": ", 1)[1]).read_text())
    assert rec["type"] == "profile" and rec["returncode"] == 3 and "gpk_array.workbench.runner" in rec["stdout"]
    assert rec["template"].endswith("{binary}")


def test_subprocess_round_trip(tmp_path):
    env = {**os.environ, "GPK_WORKBENCH_DIR": str(tmp_path), "GPK_DEVICE": "cpu"}
    r = subprocess.run([sys.executable, "-m", "gpk_array.cli", "kernels", "create", "elementwise", "--name", "e",
                        "--min-elements", "2097152", "--ops", "add"], env=env, cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "gpk_array.cli", "kernels", "list"], env=env, cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "elementwise/*/cuda" in r.stdout
