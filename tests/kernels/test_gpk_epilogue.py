"""The fused epilogues' activation functors (gpk_array/_kernels/cutlass/gpk_epilogue.h: gpk::epilogue::Gelu, Silu),
without a GPU: the header compiled for the host (GPK_EPILOGUE_SCALAR_ONLY, the C++ compiler; 2^p and 1/d
correctly rounded there, or perturbed by the MUFU ops' error bounds) against float64 references on a dense grid
and special values; its constants are the ones scripts/fit_epilogue.py fits; the generator and the cubin key
take the header in (the fused gelu/silu instances include it). The same functors on the GPU (real MUFU ops):
test_gpk_epilogue_gpu.py."""

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
KDIR = ROOT / "gpk_array" / "_kernels" / "cutlass"
HEADER = KDIR / "gpk_epilogue.h"
MANIFEST = json.loads((KDIR / "MANIFEST.json").read_text())

needs_scipy = pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="scipy not installed")

# |y - ref| / max(1, |x|) in float32 before the output rounding: measured 3.3e-7 (gelu) and 1.5e-7 (silu) with
# exact 2^p and 1/d, 3.4e-7 and 2.7e-7 with the MUFU bounds; the bound is about 1e-6
TOL = 5e-7
# |y - ref| in f16 ulps of ref (f16's spacing at the exact value; 2^-24 below its normal range): measured 0.14
# (gelu: the relative error in its tail, x in [-5, -3]) and 0.001 (silu)
F16_ULPS = 0.2

_HARNESS = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
static double g_ex2_rel = 0.0, g_rcp_rel = 0.0;
// a MUFU-like result: exact, or off by rel where the exact result is not a power of two
static float perturbed(double exact, double rel) {
  int e;
  double m = std::frexp(exact, &e);
  if (!std::isfinite(exact) || exact == 0.0 || m == 0.5 || m == -0.5) return (float)exact;
  return (float)(exact * (1.0 + rel));
}
static float test_ex2(float p) {
  float r = perturbed(std::exp2((double)p), g_ex2_rel);
  return r < 0x1p-126f ? 0.0f : r;
}
static float test_rcp(float d) {
  float r = perturbed(1.0 / (double)d, g_rcp_rel);
  return std::fabs(r) < 0x1p-126f ? std::copysign(0.0f, r) : r;
}
#define GPK_EPILOGUE_SCALAR_ONLY
#define GPK_EPILOGUE_HOST_EX2(p) test_ex2(p)
#define GPK_EPILOGUE_HOST_RCP(d) test_rcp(d)
#include "gpk_epilogue.h"
// argv: in out ex2_rel rcp_rel; out holds gelu(x) then silu(x)
int main(int argc, char** argv) {
  if (argc != 5) return 2;
  g_ex2_rel = std::atof(argv[3]);
  g_rcp_rel = std::atof(argv[4]);
  FILE* f = std::fopen(argv[1], "rb");
  std::fseek(f, 0, SEEK_END);
  long n = std::ftell(f) / 4;
  std::fseek(f, 0, SEEK_SET);
  std::vector<float> x(n), y(2 * n);
  if (std::fread(x.data(), 4, n, f) != (size_t)n) return 3;
  std::fclose(f);
  gpk::epilogue::Gelu<float> gelu;
  gpk::epilogue::Silu<float> silu;
  for (long i = 0; i < n; ++i) {
    y[i] = gelu(x[i]);
    y[n + i] = silu(x[i]);
  }
  f = std::fopen(argv[2], "wb");
  std::fwrite(y.data(), 4, 2 * n, f);
  std::fclose(f);
  return 0;
}
"""


def _fit_module():
    spec = importlib.util.spec_from_file_location("fit_epilogue", ROOT / "scripts" / "fit_epilogue.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fit_epilogue"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def host_functors(tmp_path_factory):
    """f(x, ex2_rel=0, rcp_rel=0) -> (gelu(x), silu(x)) as float32, from the header compiled for the host."""
    cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    d = tmp_path_factory.mktemp("gpk_epi")
    src, exe = d / "h.cpp", d / "h"
    src.write_text(_HARNESS)
    # -ffp-contract=off: the header's FMAs are explicit (fmaf), nothing else may be fused
    r = subprocess.run([cxx, "-std=c++17", "-O2", "-ffp-contract=off", f"-I{KDIR}", "-o", str(exe), str(src)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-4000:]

    def run(x, ex2_rel=0.0, rcp_rel=0.0):
        x = np.ascontiguousarray(x, np.float32)
        (d / "x.bin").write_bytes(x.tobytes())
        rr = subprocess.run([str(exe), str(d / "x.bin"), str(d / "y.bin"), repr(ex2_rel), repr(rcp_rel)],
                            capture_output=True, text=True, check=False)
        assert rr.returncode == 0, rr.stderr
        y = np.frombuffer((d / "y.bin").read_bytes(), np.float32)
        return y[:len(x)], y[len(x):]

    return run


@needs_scipy
def test_header_holds_the_fitted_constants():
    fit = _fit_module()
    assert fit.header_constants() == fit.fit_gelu_f32(), "run python scripts/fit_epilogue.py and update the header"


@needs_scipy
@pytest.mark.parametrize("ex2_rel,rcp_rel", [(0.0, 0.0), (2.0 ** -22, 2.0 ** -23), (-(2.0 ** -22), -(2.0 ** -23))],
                         ids=["exact", "mufu_high", "mufu_low"])
def test_dense_grid_accuracy(host_functors, ex2_rel, rcp_rel):
    """max |y - ref| / max(1, |x|) over [-10, 10] (2e6 points), tiny and huge |x|, against float64 x Phi(x) and
    x sigmoid(x); 2^p and 1/d exact or at the MUFU ops' error bounds."""
    fit = _fit_module()
    x = fit.grid()
    g, s = host_functors(x, ex2_rel, rcp_rel)
    xf = x.astype(np.float64)
    fin = np.isfinite(xf)
    for name, y, ref in (("gelu", g, fit.gelu_ref), ("silu", s, fit.silu_ref)):
        r = ref(xf[fin])
        err = np.abs(y[fin].astype(np.float64) - r) / np.maximum(1.0, np.abs(xf[fin]))
        i = int(np.argmax(err))
        assert err[i] <= TOL, f"{name}: error {err[i]:.3g} at x = {xf[fin][i]!r}"
        assert np.isfinite(y[fin]).all()
        ulps = fit.f16_ulps(y[fin].astype(np.float64), r)
        assert ulps.max() <= F16_ULPS, f"{name}: {ulps.max():.3f} f16 ulps"
    if ex2_rel == 0.0:      # the Python emulation of the device code (fit_epilogue.py) is the same computation
        c = fit.header_constants()
        assert np.mean(fit.gelu_f32(x, c) == g) > 0.9999
        assert np.mean(fit.silu_f32(x) == s) > 0.9999


def _same(y, want):
    want = float(np.float32(want))
    return (np.isnan(y) and np.isnan(want)) or (y == want and np.signbit(y) == np.signbit(want))


@pytest.mark.parametrize("x,gelu,silu", [
    (0.0, 0.0, 0.0), (-0.0, -0.0, -0.0), (np.inf, np.inf, np.inf), (-np.inf, -0.0, -0.0), (np.nan, np.nan, np.nan),
    (3.4028235e38, 3.4028235e38, 3.4028235e38), (-3.4028235e38, -0.0, -0.0), (1e30, 1e30, 1e30),
    (-1e30, -0.0, -0.0), (-20.0, -0.0, None), (-200.0, -0.0, -0.0), (100.0, 100.0, 100.0)])
def test_special_values(host_functors, x, gelu, silu):
    """gelu(+-0) = +-0, gelu(+inf) = +inf, gelu(-inf) = -0 (x Phi(x) -> -0), NaN propagates, -0 where the result
    underflows; the same for silu (silu(-20) = -4.1e-8 is an ordinary value)."""
    g, s = host_functors(np.array([x], np.float32))
    assert _same(float(g[0]), gelu), f"gelu({x!r}) = {g[0]!r}, want {gelu!r}"
    if silu is not None:
        assert _same(float(s[0]), silu), f"silu({x!r}) = {s[0]!r}, want {silu!r}"


def test_fused_gelu_silu_instances_use_the_header():
    """The emitted gelu/silu instances include the header and name its functors in their visitor tree; their
    manifest entries list the header with its current sha256 (what launch_sm90's cubin key hashes); the other
    activations stay CUTLASS's."""
    sha = hashlib.sha256(HEADER.read_bytes()).hexdigest()
    seen = set()
    for e in MANIFEST["instances"]:
        fusion = e.get("fusion") or {}
        src = (KDIR / e["file"]).read_text()
        if fusion.get("activation") in ("gelu", "silu"):
            functor = {"gelu": "gpk::epilogue::Gelu", "silu": "gpk::epilogue::Silu"}[fusion["activation"]]
            assert fusion["functor"] == functor
            assert f"Sm90Compute<\n    {functor}, " in src
            assert '#include "gpk_epilogue.h"' in src
            assert e["local_headers"] == [{"file": "gpk_epilogue.h", "sha256": sha}], \
                "gpk_epilogue.h changed: run python scripts/gen_cutlass.py (and launch_sm90 --ship)"
            seen.add(e["key"])
        else:
            assert "gpk_epilogue.h" not in src and "local_headers" not in e
    assert seen == {f"gemm/{d}/tn/{f}_bias_{a}/sm90" for f in ("ppt", "fr96", "fr192") for d in ("f16", "bf16")
                    for a in ("gelu", "silu")}


def test_cubin_key_hashes_the_functor_header(tmp_path, monkeypatch):
    """A changed gpk_epilogue.h changes the cubin key of the instances that include it (so no stale shipped or
    cached cubin loads), and no other."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    gelu, plain = "gemm/f16/tn/ppt_bias_gelu/sm90", "gemm/f16/tn/ppt_bias/sm90"
    before = {k: L.cubin_key(k) for k in (gelu, plain)}
    copy = tmp_path / "cutlass"
    shutil.copytree(KDIR, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__", "cubin"))
    (copy / "gpk_epilogue.h").write_text(HEADER.read_text() + "// edited\n")
    monkeypatch.setattr(L, "KDIR", copy)
    assert L.cubin_key(plain) == before[plain]
    assert L.cubin_key(gelu) != before[gelu]
