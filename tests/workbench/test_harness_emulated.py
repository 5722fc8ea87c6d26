"""The validation harness (gpk_array/workbench/gpu.py) run on the CPU with NumPy standing in for the device and for
the kernel: an honest kernel passes every case, and each kind of cheat (dropping NaNs, skipping the tail tiles,
accumulating into the output buffer, a loose result) fails the case made to catch it."""
import types

import numpy as np
import pytest

from gpk_array.workbench import candidates, checks, gpu


class _Stream:
    def synchronize(self):
        pass


@pytest.fixture
def host_device(monkeypatch):
    fake = types.SimpleNamespace(asnumpy=np.asarray, cuda=types.SimpleNamespace(
        get_current_stream=lambda: _Stream(), runtime=types.SimpleNamespace(getDevice=lambda: 0)))
    monkeypatch.setattr(gpu, "_cp", lambda: fake)
    monkeypatch.setattr(gpu, "_to_dev", lambda a: np.array(a))
    monkeypatch.setattr(gpu, "_to_host", lambda a: np.asarray(a, dtype=np.float64))


def _kernel(cheat=None, tile=(128, 96)):
    def gemm_into(key, x, w, out, dev, bias=None):
        y = x.astype(np.float32) @ w.astype(np.float32).T
        if bias is not None:
            y = y + bias.astype(np.float32)
        if cheat == "drop_nan":
            y = np.nan_to_num(y, nan=0.0)
        if cheat == "loose":
            y = y * 1.1
        if cheat == "accumulate":
            out += y.astype(out.dtype)
            return True
        if cheat == "whole_tiles":
            m, n = (out.shape[0] // tile[0]) * tile[0], (out.shape[1] // tile[1]) * tile[1]
            out[:m, :n] = y[:m, :n].astype(out.dtype)
            return True
        with np.errstate(over="ignore"):   # nan_to_num's float32 max becomes float16 inf
            out[...] = y.astype(out.dtype)
        return True
    return gemm_into


def _validate(monkeypatch, tmp_path, cheat):
    from gpk_array._kernels.cutlass import launch_sm90
    monkeypatch.setattr(launch_sm90, "gemm_into", _kernel(cheat))
    meta = candidates.create("gemm", "c", family="fr96", shapes="256x192x128,384x288x64", base=tmp_path,
                             force=True)
    results = gpu.gemm_validate(meta, checks.plan(meta))
    return {r["case"]: r for r in results if not r.get("passed")}, checks.summarize(results)


def test_an_honest_kernel_passes(host_device, monkeypatch, tmp_path):
    failed, summary = _validate(monkeypatch, tmp_path, None)
    assert failed == {} and summary["passed"] and summary["cases"] == 6
    assert summary["worst_rel"] < 5e-2


@pytest.mark.parametrize("cheat,caught_by", [("drop_nan", "nan_inf"), ("whole_tiles", "tail"),
                                             ("accumulate", "stale_memory"), ("loose", "family")])
def test_each_cheat_fails_its_case(host_device, monkeypatch, tmp_path, cheat, caught_by):
    failed, summary = _validate(monkeypatch, tmp_path, cheat)
    assert caught_by in failed and not summary["passed"], (cheat, failed)


def test_routing_harness_catches_an_aliasing_bug(host_device, monkeypatch, tmp_path):
    meta = candidates.create("elementwise", "e", ops="add", dtype="float32", min_elements=64, base=tmp_path)

    def honest(meta, op, args, out=None):
        y = np.add(*args)
        if out is None:
            return y
        out[...] = y
        return out

    def aliasing_bug(meta, op, args, out=None):
        if out is None:
            return np.add(*args)
        for i in range(out.size):           # writes element by element while reading a shifted input
            out.flat[i] = args[0].flat[i - 1] + args[1].flat[i] if i and out is args[0] else \
                args[0].flat[i] + args[1].flat[i]
        return out
    monkeypatch.setattr(gpu, "_ours", honest)
    assert checks.summarize(gpu.routing_validate(meta, checks.plan(meta)))["passed"]
    monkeypatch.setattr(gpu, "_ours", aliasing_bug)
    results = gpu.routing_validate(meta, checks.plan(meta))
    assert [r["case"] for r in results if not r.get("passed")] == ["aliasing"]


def _compile_error():
    from gpk_array._errors import KernelCompileError
    log = "".join(f"note: line {i}\n" for i in range(400)) + 'gemm.cu(12): error: identifier "foo" is undefined\n'
    return KernelCompileError("gpk_array: nvcc failed to compile gemm_f16_tn_fr96_sm90.cu for sm_90a", log,
                              file="cutlass/gemm_f16_tn_fr96_sm90.cu", backend="nvcc", line=12,
                              source_line="foo();")


def _load_error():
    from gpk_array._kernels.cutlass import launch_sm90
    return launch_sm90.CutlassUnavailable("gpk_array: the driver cannot load x.cubin (gemm/f16/tn/fr96/sm90): "
                                          "CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available")


@pytest.mark.parametrize("make,stage", [(_compile_error, "compile"), (_load_error, "load")])
def test_a_build_failure_is_evidence_and_the_gate_refuses_it(host_device, monkeypatch, tmp_path, make, stage):
    """A candidate that does not compile (or whose module does not load) is a failed "compile" case in the
    evidence ``validate`` writes, with the reason and the compiler log's tail; validate reports the failure (the
    command exits 1) and promote refuses naming the case."""
    import json

    from gpk_array import cli
    from gpk_array._kernels.cutlass import launch_sm90
    from gpk_array.workbench import api, evidence, registry

    from . import _fake

    def broken(key, *a, **k):
        raise make()
    monkeypatch.setattr(launch_sm90, "gemm_into", broken)
    monkeypatch.setattr(evidence, "environment", lambda device=0: _fake.env())     # "a GPU is here"
    ws = tmp_path / "ws"
    meta = candidates.create("gemm", "c", family="fr96", shapes="256x192x128,384x288x64", base=ws)
    path, rec = api.validate("c", base=ws)
    written = json.loads(path.read_text())
    comp = [r for r in written["results"] if r["case"] == "compile"]
    assert len(comp) == 1 and comp[0]["passed"] is False and comp[0]["stage"] == stage
    assert comp[0]["instance"] == "gemm/f16/tn/fr96/sm90"
    if stage == "compile":
        assert "nvcc failed to compile" in comp[0]["why"] and comp[0]["log_tail"].endswith('"foo" is undefined\n')
        assert len(comp[0]["log_tail"]) <= 4000 and comp[0]["line"] == 12
    else:
        assert "NO_BINARY_FOR_GPU" in comp[0]["why"]
    s = written["summary"]
    assert s["passed"] is False and s["failed"] == 1 and s["failures"][0].startswith("compile gemm/f16/tn/fr96/sm90")
    monkeypatch.setenv("GPK_WORKBENCH_DIR", str(ws))
    assert cli.main(["kernels", "validate", "c"]) == 1
    reg = tmp_path / "reg"
    import shutil
    shutil.copytree(registry.PACKAGE_DIR, reg)
    b = tmp_path / "b.json"
    b.write_text(json.dumps(_fake.bench(meta, 1.2)))
    with pytest.raises(api.PromotionRefused) as e:
        api.promote("c", path, b, registry_dir=reg, base=ws)
    assert any("validation did not pass" in r and "compile gemm/f16/tn/fr96/sm90" in r for r in e.value.reasons)


def test_a_routing_build_failure_is_evidence(host_device, monkeypatch, tmp_path):
    meta = candidates.create("elementwise", "e", ops="add", dtype="float32", min_elements=64, base=tmp_path)

    def broken(meta, op, args, out=None):
        raise _compile_error()
    monkeypatch.setattr(gpu, "_ours", broken)
    results = gpu.routing_validate(meta, checks.plan(meta))
    assert [r["case"] for r in results] == ["compile"] and results[0]["op"] == "add"
    s = checks.summarize(results)
    assert not s["passed"] and s["failures"][0].startswith("compile add float32")


def test_other_errors_still_raise(host_device, monkeypatch, tmp_path):
    from gpk_array._kernels.cutlass import launch_sm90

    def buggy(key, *a, **k):
        raise ZeroDivisionError("a bug in the harness, not a build failure")
    monkeypatch.setattr(launch_sm90, "gemm_into", buggy)
    meta = candidates.create("gemm", "c", family="fr96", shapes="256x192x128", base=tmp_path)
    with pytest.raises(ZeroDivisionError):
        gpu.gemm_validate(meta, checks.plan(meta))


def _declining(what, tile=(128, 96)):
    """A kernel that computes honestly but declines (returns False, as an instance that cannot take the operands
    does) the inputs a cheat case is made of: shapes off the tile grid, or non-finite inputs."""
    honest = _kernel()

    def gemm_into(key, x, w, out, dev, bias=None):
        if what == "tails" and (out.shape[0] % tile[0] or out.shape[1] % tile[1]):
            return False
        if what == "nan_inf" and not np.isfinite(x).all():
            return False
        return honest(key, x, w, out, dev, bias)
    return gemm_into


@pytest.mark.parametrize("what", ["tails", "nan_inf"])
def test_declining_a_cheat_case_does_not_pass(host_device, monkeypatch, tmp_path, what):
    """A candidate of a class off the tile grid in M (n pinned to whole tiles) that declines every tail, or the
    NaN/inf input: before, those cases were 'declined' and the validation passed."""
    from gpk_array._kernels.cutlass import launch_sm90
    monkeypatch.setattr(launch_sm90, "gemm_into", _declining(what))
    meta = candidates.create("gemm", "c", family="fr96", where="m=256:1024,n=3072:3072,k=768:768",
                             shapes="256x3072x768", base=tmp_path)
    plan = checks.plan(meta)
    inside = [c for c in plan["cases"] if c["case"] == "tail" and c.get("in_class")]
    assert inside and all(registry_holds(meta, c["shape"]) for c in inside)
    results = gpu.gemm_validate(meta, plan)
    s = checks.summarize(results)
    assert not s["passed"] and any("declined" in f and f.startswith(what.rstrip("s")) for f in s["failures"]), s
    monkeypatch.setattr(launch_sm90, "gemm_into", _kernel())
    assert checks.summarize(gpu.gemm_validate(meta, plan))["passed"]          # the honest kernel still passes


def registry_holds(meta, shape):
    from gpk_array.workbench import registry
    return registry.where_holds(meta["where"], *shape)
