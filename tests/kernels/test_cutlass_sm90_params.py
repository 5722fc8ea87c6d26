"""SM90 CUTLASS Params built in Python against CUTLASS's own host code, byte for byte. No GPU.

The goldens in MANIFEST.json come from ``scripts/gen_cutlass.py --probe-sm90``: CUTLASS's
``GemmKernel::to_underlying_arguments`` compiled on the host with a stub ``cuTensorMapEncodeTiled`` that
records its arguments and writes a known pattern into each descriptor. Here the Python builder runs with
a stub of the same behaviour, so every byte (descriptors included) and every encode argument must match.
"""

import ctypes
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpk_array._kernels.cutlass import params_sm90 as S

ROOT = Path(__file__).resolve().parents[2]
KDIR = ROOT / "gpk_array" / "_kernels" / "cutlass"
MANIFEST = json.loads((KDIR / "MANIFEST.json").read_text())
SM90 = [e for e in MANIFEST["instances"] if e["arch"] == 90 and "fusion" not in e]
# fused bias/activation instances (gemm/<dtype>/tn/ppt_<epilogue>/sm90): tested at the end of this module
FUSED = [e for e in MANIFEST["instances"] if e["arch"] == 90 and "fusion" in e and e["key"].split("/")[3][:4] == "ppt_"]
# the fused instances of the few-row bases fr96 and fr192 (candidates themselves), shipped (bias_gelu, bias_silu) or
# candidates
FUSED_CAND = [e for e in MANIFEST["instances"] if e["arch"] == 90 and "fusion" in e and e not in FUSED]
# candidates (MANIFEST "candidate": emitted and probed, in no rule, not shipped): their Params are checked with every
# instance's (SM90, ALL90); their settings by the tests at the end of this module
CANDIDATES = [e for e in SM90 if e.get("candidate")]
SM90_16 = [e for e in SM90 if e["dtype"] != "tf32" and not e.get("candidate")]   # FP16/BF16; TF32 below
TF32 = [e for e in SM90 if e["dtype"] == "tf32" and not e.get("candidate")]
ALL90 = [e for e in MANIFEST["instances"] if e["arch"] == 90]
SHIPPED90 = [e for e in ALL90 if not e.get("candidate")]
RASTER = ["heuristic", "along_m", "along_n"]


def stub_pattern(n):
    return bytes((i * 37 + 11 + n * 101) & 0xFF for i in range(128))


class RecordingEncoder:
    """Stands in for cuTensorMapEncodeTiled like the probe's stub: records, writes stub_pattern(n)."""

    def __init__(self):
        self.calls = []

    def __call__(self, out, offset, data_type, rank, address, dims, strides, box, elem_strides,
                 interleave, swizzle, l2_promotion, oob_fill):
        self.calls.append({"dtype": data_type, "rank": rank, "addr": address, "dims": list(dims),
                           "strides": list(strides), "box": list(box), "elem_strides": list(elem_strides),
                           "interleave": interleave, "swizzle": swizzle, "l2_promotion": l2_promotion,
                           "oob_fill": oob_fill})
        out[offset:offset + 128] = stub_pattern(len(self.calls) - 1)


REDUCTION = ["deterministic", "nondeterministic"]
SPLIT_K = 2     # DecompositionMode::SplitK, what params_sm90 builds for stream-K instances


def _stream_k_kwargs(entry, case):
    """build_sm90_launch's splits, reduction and workspace for a stream-K instance's case ({} for the others)."""
    if not S.is_stream_k(entry):
        return {}
    splits, decomposition, red, pws = case[16:20]   # after the 16 fields every SM90 case has
    assert decomposition == SPLIT_K
    return {"splits": splits, "reduction": REDUCTION[red], "workspace": pws}


def _build(entry, case, encode=None):
    m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, ras = case[:16]
    kw = _stream_k_kwargs(entry, case)
    enc = encode or RecordingEncoder()
    la = S.build_sm90_launch(entry, m, n, k, pa, pb, pc, pd, lda, ldb, ldc, ldd, alpha, beta,
                             sm_count=sms, encode=enc, max_swizzle=swz, raster=RASTER[ras], **kw)
    return la, enc


def _padding(entry):
    pad = set()
    for a, b in entry["host_params"]["padding"]:
        pad.update(range(a, b))
    return pad


# Per family: CTA tile, cluster, TMA boxes (A, B) and transaction bytes (all, A, B) of one k-block per CTA.
# xl: the 2x1x1 cluster shares each B tile between the CTA pair (multicast), so each CTA's B box is half of
# the 256-row tile while it still receives (and waits for) the whole tile.
FAMILY = {
    "large": {"tile": [128, 128, 64], "cluster": [1, 1, 1], "box_A": [64, 128, 1], "box_B": [64, 128, 1],
              "tx": [32768, 16384, 16384]},
    "xl": {"tile": [128, 256, 64], "cluster": [2, 1, 1], "box_A": [64, 128, 1], "box_B": [64, 128, 1],
           "tx": [49152, 16384, 32768]},
    "pp": {"tile": [128, 128, 64], "cluster": [2, 1, 1], "box_A": [64, 128, 1], "box_B": [64, 64, 1],
           "tx": [32768, 16384, 16384], "stages": 7, "schedule": "TmaWarpSpecializedPingpong"},
    # TMA epilogue: 1792-byte Params with C and D descriptors; epi: the epilogue subtile box (N, M, 1) and
    # its transaction bytes (one C subtile of 16-bit elements)
    "ppt": {"tile": [128, 128, 64], "cluster": [2, 1, 1], "box_A": [64, 128, 1], "box_B": [64, 64, 1],
            "tx": [32768, 16384, 16384], "stages": 6, "schedule": "TmaWarpSpecializedPingpong",
            "epilogue": "TmaWarpSpecialized", "params_size": 1792, "epi_box": [32, 64, 1], "epi_tx": 4096},
    "coopt": {"tile": [256, 128, 64], "cluster": [2, 1, 1], "box_A": [64, 256, 1], "box_B": [64, 64, 1],
              "tx": [49152, 32768, 16384], "stages": 4, "epilogue": "TmaWarpSpecializedCooperative",
              "params_size": 1792, "epi_box": [32, 128, 1], "epi_tx": 8192},
}
# "nn" (B = (K, N) row-major, N contiguous): the same two TMA-epilogue families; only B's TMA box differs.
# CUTLASS keeps the 128-byte swizzle and UINT16 type, boxes B as (64 of N, K per CTA, 1): the 2x1x1 cluster
# multicast halves the k-block (32 rows of K per CTA) and the 128-row N tile takes two 64-wide boxes.
NN_FAMILY = {f: {**FAMILY[f], "box_B": [64, 32, 1]} for f in ("ppt", "coopt")}
EPI_TMA = [e for e in SM90_16 if "epi_box" in FAMILY[e["key"].split("/")[3]]]
NN = [e for e in SM90_16 if S.layout_of(e) == "nn"]


def _family(entry):
    return entry["key"].split("/")[3]


def _fam(entry):
    return (NN_FAMILY if S.layout_of(entry) == "nn" else FAMILY)[_family(entry)]


def test_manifest_has_probed_sm90_instances():
    assert {e["key"] for e in SM90_16} == (
        {f"gemm/{d}/tn/{f}/sm90" for d in ("f16", "bf16") for f in FAMILY}
        | {f"gemm/{d}/nn/{f}/sm90" for d in ("f16", "bf16") for f in NN_FAMILY})
    for e in SM90_16:
        fam = _fam(e)
        hp = e["host_params"]
        assert hp["status"] == "probed"
        assert e["tile"] == fam["tile"] and e["cluster"] == fam["cluster"]
        assert e["stages"] == fam.get("stages", 4)
        assert e["kernel_schedule"] == fam.get("schedule", "TmaWarpSpecializedCooperative")
        assert e["epilogue_schedule"] == fam.get("epilogue", "NoSmemWarpSpecialized")
        assert len(hp["golden"]) >= 9
        assert hp["params_size"] == fam.get("params_size", 1024) and hp["params_align"] == 128
        assert hp["threads"] == 384 and hp["block"] == [384, 1, 1] and hp["cluster"] == fam["cluster"]
        assert hp["workspace_bytes"] == 0
        # the stages of (tile_m x 64 + tile_n x 64) halves plus the barriers
        tm, tn, tk = fam["tile"]
        assert e["stages"] * (tm * tk + tn * tk) * 2 <= hp["smem_bytes"] <= 227 * 1024
        # descriptors 64-byte aligned inside a 128-byte aligned Params
        assert all(off % 64 == 0 for off in hp["descriptors"].values())
        assert sorted(hp["descriptors"]) == (["A", "B", "C", "D"] if "epi_box" in fam else ["A", "B"])
        # TMA: 16-bit elements as UINT16, 3-D (K, rows, L), box = (tile_k, rows per CTA, 1), 128B swizzle
        t = hp["tma"]
        assert t["data_type"] == 1 and t["rank"] == 3 and t["swizzle"] == 3
        assert t["box_A"] == fam["box_A"] and t["box_B"] == fam["box_B"]
        assert hp["tma_transaction_bytes"] == fam["tx"]
        for g in hp["golden"]:     # CUTLASS's grid is a whole number of clusters (or empty: sm_count 1)
            assert all(x % c == 0 for x, c in zip(g["grid"], hp["cluster"])), (e["key"], g)
        if "epi_box" in fam:
            # C load and D store: 16-bit floats as FLOAT16 (6) / BFLOAT16 (9), the epilogue subtile as box,
            # 64-byte swizzle (32 elements of 2 bytes per row), 128-byte L2 promotion
            for name in ("C", "D"):
                d = t["epilogue"][name]
                assert d["data_type"] == {"f16": 6, "bf16": 9}[e["dtype"]] and d["rank"] == 3
                assert d["box"] == fam["epi_box"] and d["swizzle"] == 2 and d["l2_promotion"] == 2
            assert hp["epilogue_tma_transaction_bytes"] == fam["epi_tx"]
            assert "epilogue.ptr_C" not in hp["offsets"] and "epilogue.tma_store_d.tma_desc_" in hp["offsets"]
            # the probe had to keep C and D 16-byte aligned (CUTLASS asserts it when encoding)
            assert all(g["case"][11] % 16 == 0 and g["case"][12] % 16 == 0 for g in hp["golden"])
            # four encodes per case, C (even with beta == 0) and then D after A and B
            for g in hp["golden"]:
                assert [c["addr"] for c in g["encodes"]] == g["case"][9:13]


@pytest.mark.parametrize("entry", SM90, ids=[e["key"] for e in SM90])
def test_params_bytes_match_cutlass_to_underlying_arguments(entry):
    pad = _padding(entry)
    for g in entry["host_params"]["golden"]:
        la, enc = _build(entry, g["case"])
        gold = bytes.fromhex(g["hex"])
        assert len(la.params) == len(gold)
        diff = [i for i in range(len(gold)) if gold[i] != la.params[i]]
        assert not diff, (g["case"], diff[:16])         # every byte (padding: zero in both)
        assert all(la.params[i] == 0 for i in pad)
        assert enc.calls == g["encodes"], g["case"]      # exactly CUTLASS's encode arguments, in order
        assert list(la.grid) == g["grid"], g["case"]
        assert la.workspace_bytes == g.get("workspace", 0), g["case"]   # GemmKernel::get_workspace_size
        assert la.block == (384, 1, 1) and list(la.cluster) == entry["host_params"]["cluster"]
        assert la.shared_mem == entry["host_params"]["smem_bytes"] and la.kernel == entry["kernel"]


def test_padding_is_only_bytes_outside_every_member():
    e = SM90[0]
    hp = e["host_params"]
    pad = _padding(e)
    for name, off in hp["offsets"].items():
        if name in hp["containers"]:
            continue
        assert not pad & set(range(off, off + hp["sizes"][name])), name
    assert len(pad) < 600      # incl. the tails of the two TMA atoms past their descriptors


def test_descriptors_sit_where_the_stub_pattern_is():
    e = SM90[1]
    la, _ = _build(e, e["host_params"]["golden"][0]["case"])
    a, b = e["host_params"]["descriptors"]["A"], e["host_params"]["descriptors"]["B"]
    assert la.params[a:a + 128] == stub_pattern(0) and la.params[b:b + 128] == stub_pattern(1)


def test_fast_divmod_u64_divides_like_the_device():
    rng = random.Random(0)
    for d in list(range(1, 300)) + [rng.randrange(1, 1 << 40) for _ in range(200)]:
        div, mul, sh, ru = S.fast_divmod_u64(d)
        assert div == d
        for x in [0, 1, d - 1, d, d + 1, 2**31 - 1] + [rng.randrange(0, 1 << 32) for _ in range(20)]:
            # FastDivmodU64::divide on the device: __umul64hi(x + round_up, multiplier) >> shift
            q = ((((x + ru) * mul) >> 64) if mul else x) >> sh
            assert q == x // d, (d, x)


def test_schedule_grid_is_persistent_and_raster_follows_the_heuristic():
    e = SM90[0]
    s = S.sm90_schedule(e, 4096, 4096, 132)
    assert s["grid"] == (1, 132, 1) and s["raster_order"] == 1          # square: along N
    s = S.sm90_schedule(e, 128, 8192, 132)
    assert s["grid"] == (64, 1, 1) and s["raster_order"] == 0           # more N tiles: along M
    s = S.sm90_schedule(e, 1, 768, 114)
    assert s["grid"] == (6, 1, 1)                                       # fewer tiles than SMs
    s = S.sm90_schedule(e, 8192, 8192, 132, max_swizzle=8)
    assert s["log_swizzle"] == 3 and s["blocks_per_problem"] == 64 * 64


def test_cluster_schedule_follows_cutlass_get_grid_shape():
    e = S.instance("gemm/f16/tn/xl/sm90")
    s = S.sm90_schedule(e, 4096, 4096, 132)                               # 32 x 16 tiles of 128 x 256
    assert s["raster_order"] == 1 and s["grid"] == (2, 66, 1)             # along N: 66 clusters of 2
    assert s["tiles"] == (16, 16, 1) and s["divmod_major"] == (1, 0) and s["divmod_minor"] == (2, 1)
    s = S.sm90_schedule(e, 256, 8192, 132)                                # 2 x 32: along M
    assert s["raster_order"] == 0 and s["grid"] == (64, 1, 1)
    assert s["divmod_major"] == (2, 1) and s["divmod_minor"] == (1, 0)
    s = S.sm90_schedule(e, 1, 768, 132)                 # 1 x 3 tiles, M rounded up to a cluster: 2 x 3
    assert s["blocks_m"] == 2 and s["raster_order"] == 0 and s["grid"] == (6, 1, 1)
    # GPC model: 18 SMs per GPC, whole clusters per GPC, the rest as one more partial GPC
    assert S.max_cta_occupancy(2, 132) == 132 and S.max_cta_occupancy(2, 114) == 114
    assert S.max_cta_occupancy(2, 131) == 130 and S.max_cta_occupancy(4, 132) == 16 * 7 + 4
    assert S.max_cta_occupancy(1, 78) == 78 and S.max_cta_occupancy(2, 1) == 1
    s = S.sm90_schedule(e, 3000, 1000, 1)                                 # one SM: no whole cluster
    assert 0 in s["grid"]
    # below 18 SMs CUTLASS's GPC model caps at sm_count, so an odd count along M is no whole cluster
    # count either; launch_sm90 refuses such grids (check_cluster_grid) rather than launch them
    s = S.sm90_schedule(e, 1000, 1500, 3, 2, "along_m")
    assert s["grid"] == (3, 1, 1)


def test_tma_encode_args_follow_the_problem():
    e = SM90[0]
    a, b = S.tma_encode_args(e, 1000, 3000, 4104, 0x1000, 0x2000, 4112, 4120)
    assert a["dims"] == [4104, 1000, 1] and a["strides"] == [8224, 8224 * 1000] and a["address"] == 0x1000
    assert b["dims"] == [4104, 3000, 1] and b["strides"] == [8240, 8240 * 3000] and b["address"] == 0x2000


def test_unsupported_problems_give_reasons():
    e = SM90[0]
    ok = dict(m=17, n=24, k=64, lda=64, ldb=64, ldc=24, ldd=24, ptrs=(0x1000, 0x2000, 0x3000, 0x3000))
    assert S.sm90_unsupported(e, **ok) is None
    assert S.sm90_unsupported(e, **{**ok, "n": 13, "ldc": 13, "ldd": 13}) is None   # any N (per-element epilogue)
    for bad, word in (({"k": 60, "lda": 64, "ldb": 64}, "K must"), ({"lda": 68}, "lda and ldb"),
                      ({"ldb": 60}, "smaller"), ({"m": 0}, "empty"),
                      ({"ptrs": (0x1008, 0x2000, 0x3000, 0x3000)}, "16-byte"),
                      ({"ptrs": (0x1000, 0x2000, 0x3001, 0x3000)}, "2-byte"),
                      ({"m": 2**31}, "int32")):
        why = S.sm90_unsupported(e, **{**ok, **bad})
        assert why and word in why, (bad, why)
    assert "SM90" in S.sm90_unsupported(MANIFEST["instances"][0], **ok)
    with pytest.raises(ValueError, match="K must"):
        S.build_sm90_launch(e, 16, 16, 12, 0x1000, 0x2000, 0x3000, 0x3000, encode=RecordingEncoder())
    with pytest.raises(ValueError, match="raster"):
        S.build_sm90_launch(e, 16, 16, 16, 0x1000, 0x2000, 0x3000, 0x3000, encode=RecordingEncoder(),
                            raster="diagonal")


@pytest.mark.parametrize("entry", EPI_TMA, ids=[e["key"] for e in EPI_TMA])
def test_tma_epilogue_descriptors_follow_the_problem(entry):
    """C and D descriptors: (N, M, 1) with byte strides (ld, M * ld), encoded third and fourth (stub pattern
    2 and 3 at their offsets), C's even when beta == 0; alpha and beta at the probed leaves."""
    import struct
    hp = entry["host_params"]
    la, enc = _build(entry, (1000, 3000, 4104, 4112, 4120, 3008, 3016, 0.5, 0.0,
                             0x7f0000001000, 0x7f0000200000, 0x7f0000400000, 0x7f0000600000, 132, 1, 0))
    assert len(enc.calls) == 4
    c, d = enc.calls[2], enc.calls[3]
    assert c["addr"] == 0x7f0000400000 and c["dims"] == [3000, 1000, 1] and c["strides"] == [6016, 6016000]
    assert d["addr"] == 0x7f0000600000 and d["dims"] == [3000, 1000, 1] and d["strides"] == [6032, 6032000]
    for name, n in (("A", 0), ("B", 1), ("C", 2), ("D", 3)):
        o = hp["descriptors"][name]
        assert la.params[o:o + 128] == stub_pattern(n), name
    off = hp["offsets"]
    assert struct.unpack_from("<f", la.params, off["epilogue.thread.alpha"])[0] == 0.5
    assert struct.unpack_from("<f", la.params, off["epilogue.thread.beta"])[0] == 0.0
    for leaf in ("alpha_ptr", "beta_ptr", "dAlpha", "dBeta"):
        o = off[f"epilogue.thread.{leaf}"]
        assert la.params[o:o + 8] == bytes(8), leaf
    assert struct.unpack_from("<I", la.params, off["epilogue.tma_transaction_bytes"])[0] == \
        hp["epilogue_tma_transaction_bytes"]


def test_tma_epilogue_refuses_what_its_tma_store_cannot_do():
    e = S.instance("gemm/f16/tn/ppt/sm90")
    pp = S.instance("gemm/f16/tn/pp/sm90")
    ok = dict(m=17, n=24, k=64, lda=64, ldb=64, ldc=24, ldd=24, ptrs=(0x1000, 0x2000, 0x3000, 0x3000))
    assert S.sm90_unsupported(e, **ok) is None and S.is_epi_tma(e) and not S.is_epi_tma(pp)
    for bad, word in (({"n": 13, "ldc": 13, "ldd": 13}, "N must"), ({"ldc": 28}, "ldc and ldd"),
                      ({"ldd": 36}, "ldc and ldd"), ({"ptrs": (0x1000, 0x2000, 0x3008, 0x3000)}, "16-byte"),
                      ({"ptrs": (0x1000, 0x2000, 0x3000, 0x3002)}, "16-byte")):
        why = S.sm90_unsupported(e, **{**ok, **bad})
        assert why and word in why, (bad, why)
        assert S.sm90_unsupported(pp, **{**ok, **bad}) is None     # direct stores take them
    with pytest.raises(ValueError, match="N must"):
        S.build_sm90_launch(e, 16, 12, 16, 0x1000, 0x2000, 0x3000, 0x3000, encode=RecordingEncoder())


def test_modules_import_without_touching_the_driver():
    code = ("import sys; import gpk_array._kernels.cutlass.params_sm90, gpk_array._kernels.cutlass.tma, "
            "gpk_array._kernels.cutlass.launch_sm90 as L; "
            "assert 'cupy' not in sys.modules, 'cupy imported'; "
            "import gpk_array._kernels.cutlass.tma as t; assert not t._state and not L._driver")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr


def test_real_encoder_reports_a_missing_driver_or_encodes():
    """Without a driver: a clear TmaError. With one (GPU machines): a real descriptor, not the stub."""
    from gpk_array._kernels.cutlass import tma
    try:
        ctypes.CDLL("libcuda.so.1")
        have_driver = True
    except OSError:
        have_driver = False
    e = SM90[0]
    if not have_driver:
        with pytest.raises(tma.TmaError, match="libcuda"):
            S.build_sm90_launch(e, 128, 128, 64, 0x10000, 0x20000, 0x30000, 0x30000)
        return
    try:
        la = S.build_sm90_launch(e, 128, 128, 64, 0x10000, 0x20000, 0x30000, 0x30000)
    except tma.TmaError as err:   # a driver without a usable device (cuInit fails)
        pytest.skip(str(err))
    off = e["host_params"]["descriptors"]["A"]
    assert la.params[off:off + 128] != stub_pattern(0) and any(la.params[off:off + 128])


def _nvcc():
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).is_file():
            return cand
    return None


_SLOW = os.environ.get("GPK_SLOW_COMPILE") == "1"


@pytest.mark.slow
@pytest.mark.skipif(not _SLOW, reason="set GPK_SLOW_COMPILE=1 (nvcc, about 1 min per step)")
@pytest.mark.skipif(_nvcc() is None, reason="nvcc not installed")
@pytest.mark.skipif(importlib.util.find_spec("cutlass_library") is None, reason="nvidia-cutlass not installed")
def test_probe_reproduces_the_manifest(tmp_path):
    """Re-run the probe (nvcc host build of CUTLASS's to_underlying_arguments) and compare with MANIFEST."""
    from gpk_array._kernels.cutlass.gen import probe_sm90 as G
    fresh = G.probe_sm90_layout(MANIFEST["instances"], KDIR, nvcc=_nvcc())
    for e in SM90 + FUSED:
        assert fresh[e["key"]] == e["host_params"], e["key"]


@pytest.mark.slow
@pytest.mark.skipif(not _SLOW, reason="set GPK_SLOW_COMPILE=1 (nvcc, about 1 min)")
@pytest.mark.skipif(_nvcc() is None, reason="nvcc not installed")
@pytest.mark.skipif(importlib.util.find_spec("cutlass_library") is None, reason="nvidia-cutlass not installed")
def test_sm90_instance_compiles_and_takes_one_1024_byte_param(tmp_path, monkeypatch):
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    e = SM90[0]
    t0 = time.monotonic()
    info = L.build(e["key"], backend="nvcc")
    took = time.monotonic() - t0
    cubin = Path(info["path"]).read_bytes()
    assert e["kernel"] in loader.cubin_symbols(cubin)
    params, cbank = kernel_params(cubin, e["kernel"])
    # one parameter of sizeof(Params) bytes; the compiler places it 128-byte aligned in the constant
    # bank (alignas(128) Params), so the TMA descriptors inside it are 64-byte aligned there too
    assert [(o, size) for o, _, size in params] == [(0, e["host_params"]["params_size"])], params
    base = cbank[0] + params[0][1]
    assert base % 128 == 0 and cbank[1] == params[0][1] + params[0][2], (cbank, params)
    assert all((base + off) % 64 == 0 for off in e["host_params"]["descriptors"].values())
    assert b"Arch conditional MMA instruction" not in cubin   # the real sm_90a path, not the error stub
    print(f"nvcc sm_90a {e['key']}: {took:.1f} s")


def kernel_params(cubin: bytes, kernel: str):
    """([(ordinal, offset, size)] from EIATTR_KPARAM_INFO, (bank offset, size) from EIATTR_PARAM_CBANK)
    of a kernel, read from its .nv.info.<kernel> section."""
    import struct
    sh_off, = struct.unpack_from("<Q", cubin, 0x28)
    sh_entsize, sh_num, sh_strndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, sh_off + i * sh_entsize) for i in range(sh_num)]
    stroff = secs[sh_strndx][4]

    def name(s):
        end = cubin.index(b"\0", stroff + s[0])
        return cubin[stroff + s[0]:end].decode()
    info = next(s for s in secs if name(s) == f".nv.info.{kernel}")
    data = cubin[info[4]:info[4] + info[5]]
    out, cbank, i = [], None, 0
    while i + 4 <= len(data):
        fmt, attr, size = data[i], data[i + 1], struct.unpack_from("<H", data, i + 2)[0]
        if fmt == 0x04:            # EIFMT_SVAL: size-prefixed payload
            if attr == 0x17:       # EIATTR_KPARAM_INFO: index, ordinal, offset, flags (size in bits 18..31)
                _, ordinal, offset, word = struct.unpack_from("<IHHI", data, i + 4)
                out.append((ordinal, offset, (word >> 18) & 0x3FFF))
            elif attr == 0x0A:     # EIATTR_PARAM_CBANK: symbol, bank offset, size
                _, off, sz = struct.unpack_from("<IHH", data, i + 4)
                cbank = (off, sz)
            i += 4 + size
        else:                      # EIFMT_NVAL / HVAL: 2-byte value only
            i += 4
    return sorted(out), cbank


class _FakeArray:
    """Just what launch_sm90.prepare reads from a CuPy array."""

    def __init__(self, shape, strides, ptr, dtype="float16"):
        import numpy as np
        self.shape, self.strides, self.ndim = shape, strides, len(shape)
        self.dtype = np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        self.data = type("Mem", (), {"ptr": ptr})()


def test_launch_prepare_derives_leading_dims_pointers_and_aligned_params(monkeypatch):
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L, tma
    enc = RecordingEncoder()
    monkeypatch.setattr(tma, "encode_tiled", enc)
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(L, "_params_cache", {})
    m, n, k = 203, 250, 136
    x = _FakeArray((m, k), (2 * (k + 24), 2), 0x10010)     # a column slice of a wider buffer
    w = _FakeArray((n, k), (2 * (k + 8), 2), 0x20000)
    out = _FakeArray((m, n), (2 * (n + 13), 2), 0x30000 + 2 * (n + 13 + 5))
    key = "gemm/f16/tn/large/sm90"
    la, (raw, kp, cfg) = L.prepare(x, w, out, 1.0, 0.0, None, key, 132)
    assert cfg is None                                      # cluster 1x1x1: a plain cuLaunchKernel
    ref = S.build_sm90_launch(S.instance(key), m, n, k, 0x10010, 0x20000, out.data.ptr, out.data.ptr,
                              k + 24, k + 8, n + 13, n + 13, 1.0, 0.0, sm_count=132, encode=RecordingEncoder())
    assert la == ref
    assert kp[0] % 128 == 0 and ctypes.string_at(kp[0], len(la.params)) == la.params
    again = L.prepare(x, w, out, 1.0, 0.0, None, key, 132)
    assert again[0] is la and len(enc.calls) == 2          # cached: no second encode
    assert L.default_key(x.dtype) == key
    assert L.default_key(x.dtype, "xl") == "gemm/f16/tn/xl/sm90"
    with pytest.raises(ValueError, match="family"):
        L.default_key(x.dtype, "huge")
    with pytest.raises(TypeError):
        L.default_key(_FakeArray((1, 1), (8, 8), 0, "float64").dtype)
    with pytest.raises(ValueError, match="contiguous rows"):
        L._rows(_FakeArray((16, 8), (2, 32), 0), "x")


def test_cubin_key_ignores_runtime_versions_and_names_the_arch(tmp_path, monkeypatch):
    from gpk_array._kernels.cutlass import launch_sm90 as L
    monkeypatch.setenv("GPK_CACHE_DIR", str(tmp_path))
    p = L.cubin_path("gemm/bf16/tn/large/sm90")
    assert p.parent == tmp_path / "sm_90a" and p.suffix == ".cubin"
    assert L.cubin_key("gemm/f16/tn/large/sm90") != L.cubin_key("gemm/bf16/tn/large/sm90")
    monkeypatch.setattr(L, "cutlass_include_dir", lambda: None)
    assert L.build("gemm/f16/tn/large/sm90")["path"] == str(L.shipped_path("gemm/f16/tn/large/sm90"))
    monkeypatch.setattr(L, "SHIPPED_DIR", tmp_path / "none")    # nothing shipped, nothing cached, no headers
    with pytest.raises(L.CutlassUnavailable, match="prebuild"):
        L.build("gemm/f16/tn/large/sm90")


@pytest.mark.parametrize("key", [e["key"] for e in SHIPPED90])
def test_shipped_cubin_matches_the_instance(key):
    """The package ships every SM90 instance's cubin (candidates excepted) under the hash of its current .cu text,
    flags and CUTLASS version (a changed instance without a rebuilt cubin fails here): `launch_sm90 --ship` after a
    change."""
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    p = L.shipped_path(key)
    assert p.is_file(), f"{key}: no shipped cubin {p.name}: run python -m gpk_array._kernels.cutlass.launch_sm90 --ship"
    cubin = p.read_bytes()
    assert cubin[:4] == b"\x7fELF"
    assert S.instance(key)["kernel"] in loader.cubin_symbols(cubin)
    names = {L.shipped_path(e["key"]).name for e in SHIPPED90}
    assert {q.name for q in L.SHIPPED_DIR.glob("*.cubin")} == names     # nothing stale shipped, no candidate


@pytest.fixture
def tma_stub(tmp_path, monkeypatch):
    """tma.py bound to tests/kernels/cuda_tma_stub.c (gcc; against NVIDIA's cuda.h when found)."""
    from gpk_array._kernels.cutlass import tma
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler")
    out = tmp_path / "libcudastub.so"
    cmd = [gcc, "-O2", "-shared", "-fPIC", "-Wall", "-Werror", str(Path(__file__).parent / "cuda_tma_stub.c"),
           "-o", str(out)]
    for inc in ("/usr/local/cuda/include",):
        if Path(inc, "cuda.h").is_file():
            cmd[1:1] = ["-DGPK_REAL_HEADER", f"-I{inc}"]
            break
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    monkeypatch.setattr(tma, "_state", {})
    tma._bind(ctypes.CDLL(str(out)))
    yield tma
    tma._state.clear()


def _decode_stub_descriptor(raw):
    import struct
    dt, rank, addr = struct.unpack_from("<IIQ", raw, 0)
    dims = list(struct.unpack_from("<3Q", raw, 16))[:rank]
    strides = list(struct.unpack_from("<2Q", raw, 40))[:rank - 1]
    box = list(struct.unpack_from("<3I", raw, 56))[:rank]
    es = list(struct.unpack_from("<3I", raw, 68))[:rank]
    il, sw, l2, oob = struct.unpack_from("<4I", raw, 80)
    return {"dtype": dt, "rank": rank, "addr": addr, "dims": dims, "strides": strides, "box": box,
            "elem_strides": es, "interleave": il, "swizzle": sw, "l2_promotion": l2, "oob_fill": oob}


@pytest.mark.parametrize("entry", SM90, ids=[e["key"] for e in SM90])
def test_real_encoder_path_through_ctypes(entry, tma_stub):
    """build_sm90_launch with the default encoder (tma.encode_tiled, ctypes) against a C stand-in for the
    driver: the C side must receive exactly CUTLASS's encode arguments, and its 128 bytes must land at the
    descriptor offsets, with every other byte equal to CUTLASS's."""
    hp = entry["host_params"]
    offs = [hp["descriptors"][name] for name in sorted(hp["descriptors"])]    # A, B (, C, D): encode order
    for g in hp["golden"]:
        m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, ras = g["case"][:16]
        la = S.build_sm90_launch(entry, m, n, k, pa, pb, pc, pd, lda, ldb, ldc, ldd, alpha, beta,
                                 sm_count=sms, max_swizzle=swz, raster=RASTER[ras],
                                 **_stream_k_kwargs(entry, g["case"]))
        got = [_decode_stub_descriptor(la.params[o:o + 128]) for o in offs]
        assert got == g["encodes"], g["case"]
        gold = bytearray.fromhex(g["hex"])
        mine = bytearray(la.params)
        for o in offs:
            gold[o:o + 128] = mine[o:o + 128] = bytes(128)
        assert mine == gold, g["case"]
    with pytest.raises(tma_stub.TmaError, match="CUDA_ERROR_INVALID_VALUE"):   # the stub refuses rank 4
        tma_stub.encode_tiled(bytearray(128), 0, 1, 4, 0x1000, [1] * 4, [16] * 3, [1] * 4, [1] * 4, 0, 0, 0, 0)


@pytest.mark.parametrize("entry", ALL90, ids=[e["key"] for e in ALL90])
def test_set_pointers_equals_a_fresh_build(entry, tma_stub):
    """A Params buffer built for one pointer set and re-pointed with set_pointers (cuTensorMapReplaceAddress
    for descriptors, stores for the direct epilogue's C/D and a fused instance's bias) is byte for byte the
    buffer built for the new set, whatever the instance (A/B swapped, fused, TF32)."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    m, n, k = 1000, 3072, 768
    old = (0x7000_0000, 0x7100_0000, 0x7200_0000, 0x7200_0000)
    new = (0x9000_0100, 0x9100_0010, 0x9200_0400, 0x9200_0400)
    fused = S.fused_of(entry) is not None
    kw_old, kw_new = ({"bias": 0x7300_0000}, {"bias": 0x9300_0002}) if fused else ({}, {})
    la = S.build_sm90_launch(entry, m, n, k, *old, sm_count=132, **kw_old)
    fresh = S.build_sm90_launch(entry, m, n, k, *new, sm_count=132, **kw_new)
    raw, kp, _ = L._packed(la)
    L.set_pointers(entry, kp[0], new, kw_new.get("bias", 0))
    assert ctypes.string_at(kp[0], len(fresh.params)) == bytes(fresh.params)
    with pytest.raises(tma_stub.TmaError, match="ReplaceAddress"):      # the stub refuses a misaligned address
        L.set_pointers(entry, kp[0], (0x9000_0102,) + new[1:])


@pytest.fixture
def launch_stub(tmp_path):
    """tests/kernels/cuda_launch_stub.c built against NVIDIA's cuda.h (skips without gcc or cuda.h)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    inc = Path("/usr/local/cuda/include")
    if gcc is None or not (inc / "cuda.h").is_file():
        pytest.skip("needs a C compiler and /usr/local/cuda/include/cuda.h")
    out = tmp_path / "libcudalaunchstub.so"
    r = subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-Wall", "-Werror", f"-I{inc}",
                        str(Path(__file__).parent / "cuda_launch_stub.c"), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return ctypes.CDLL(str(out))


def test_launch_structs_match_cuda_h(launch_stub):
    from gpk_array._kernels.cutlass import launch_sm90 as L
    v = (ctypes.c_longlong * 24)()
    assert launch_stub.gpk_launch_layout(v, 24) == 24
    C, A, V = L.LaunchConfig, L.LaunchAttribute, L.LaunchAttributeValue
    mine = [ctypes.sizeof(C)] + [getattr(C, f).offset for f in (
        "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ", "sharedMemBytes",
        "hStream", "attrs", "numAttrs")]
    mine += [ctypes.sizeof(A), A.id.offset, A.value.offset, ctypes.sizeof(V),
             V.clusterDim.offset + L.ClusterDim.x.offset, V.clusterDim.offset + L.ClusterDim.y.offset,
             V.clusterDim.offset + L.ClusterDim.z.offset, ctypes.sizeof(ctypes.c_int),
             ctypes.alignment(A), ctypes.alignment(C), L._CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
             L._CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
             L._CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES]
    assert mine == list(v)


@pytest.mark.parametrize("key", ["gemm/f16/tn/xl/sm90", "gemm/bf16/tn/large/sm90", "gemm/bf16/tn/pp/sm90",
                                 "gemm/f16/tn/ppt/sm90", "gemm/f16/nn/ppt/sm90"])
def test_launch_passes_grid_cluster_and_params_to_the_driver(key, launch_stub, monkeypatch):
    """launch_sm90.launch through ctypes into a C stand-in for the driver: cluster instances go through
    cuLaunchKernelEx with one CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION attribute, 1x1x1 ones through
    cuLaunchKernel; grid, block, shared memory, stream and the 128-byte aligned Params arrive intact."""
    import struct
    from gpk_array._kernels.cutlass import launch_sm90 as L
    monkeypatch.setattr(L, "_driver", {"lib": L._declare(launch_stub)})
    monkeypatch.setattr(L, "get_function", lambda k: (None, 0xF00D, None))
    e = S.instance(key)
    la, _ = _build(e, (4096, 4096, 4096, 4096, 4096, 4096, 4096, 1.0, 0.0, 0x7e0000000000,
                       0x7e0100000000, 0x7e0200000000, 0x7e0200000000, 132, 1, 0))
    packed = L._packed(la)
    for rep in range(2):                    # the prepared config is reused with another stream
        stream = 0x5000 + rep
        L.launch(key, la, packed, stream_ptr=stream)
        last, attrs = (ctypes.c_longlong * 32)(), (ctypes.c_longlong * 64)()
        launch_stub.gpk_last_launch(last, attrs)
        clustered = list(la.cluster) != [1, 1, 1]
        assert last[0] == (2 if clustered else 1) and last[1] == 0xF00D
        assert tuple(last[2:5]) == la.grid and tuple(last[5:8]) == la.block
        assert last[8] == la.shared_mem and last[9] == stream
        if clustered:
            assert last[10] == 1 and last[11] == 4 and tuple(last[12:15]) == la.cluster
            assert la.grid == (2, 66, 1)
        assert last[15] % 128 == 0
        assert struct.pack("<16q", *last[16:32]) == la.params[:128]
    for grid in ((1, 1, 1), (3, 1, 1), (2, 0, 1)):
        bad = S.LaunchArgs(la.kernel, grid, la.block, (2, 1, 1), la.shared_mem, la.params)
        with pytest.raises(ValueError, match="multiple of cluster"):
            L._packed(bad)


def test_pdl_launch_attribute(launch_stub, monkeypatch):
    """The PDL families (ppt, fr96, fr64, fr192 and their fused instances) launch through cuLaunchKernelEx with the
    programmatic stream serialization attribute after the cluster's (a 1x1x1 instance with PDL: that attribute
    alone); the other families, and every family with GPK_PDL=0 (L.PDL False), without it."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    monkeypatch.setattr(L, "_driver", {"lib": L._declare(launch_stub)})
    monkeypatch.setattr(L, "get_function", lambda k: (None, 0xF00D, None))
    assert [L.pdl_for(k) for k in ("gemm/f16/tn/ppt/sm90", "gemm/bf16/tn/ppt_bias_gelu/sm90",
                                   "gemm/f16/tn/fr96_bias_silu/sm90", "gemm/f16/tn/fr64/sm90",
                                   "gemm/tf32/tn/ppt/sm90", "gemm/f16/nn/ppt/sm90", "gemm/f16/tn/coopt/sm90",
                                   "gemm/f16/tn/large/sm90", "gemm/f16/tn/xl/sm90")] == [True] * 6 + [False] * 3

    def attrs_of(key, case=(4096, 4096, 4096, 4096, 4096, 4096, 4096, 1.0, 0.0, 0x7e0000000000, 0x7e0100000000,
                            0x7e0200000000, 0x7e0200000000, 132, 1, 0), pdl=None):
        la, _ = _build(S.instance(key), case)
        L.launch(key, la, None if pdl is None else L._packed(la, pdl), stream_ptr=0x5000)
        last, a = (ctypes.c_longlong * 32)(), (ctypes.c_longlong * 16)()
        launch_stub.gpk_last_launch(last, (ctypes.c_longlong * 64)())
        launch_stub.gpk_last_attrs(a)
        assert last[0] == 2 or last[10] == 0
        return [(a[2 * i], a[2 * i + 1]) for i in range(last[10])] if last[0] == 2 else []
    assert attrs_of("gemm/f16/tn/ppt/sm90") == [(4, 2), (6, 1)]            # cluster 2x1x1, then PDL
    assert attrs_of("gemm/f16/tn/coopt/sm90") == [(4, 2)]
    assert attrs_of("gemm/f16/tn/large/sm90") == []                          # 1x1x1, no PDL: cuLaunchKernel
    assert attrs_of("gemm/f16/tn/large/sm90", pdl=True) == [(6, 1)]          # 1x1x1 with PDL: cuLaunchKernelEx
    monkeypatch.setattr(L, "PDL", False)
    assert not L.pdl_for("gemm/f16/tn/ppt/sm90") and attrs_of("gemm/f16/tn/ppt/sm90") == [(4, 2)]


def test_cubins_are_built_with_gdc():
    """Every SM90 instance compiles with CUTLASS_ENABLE_GDC_FOR_SM90 (its griddepcontrol wait/launch_dependents),
    which the PDL launches rely on; the flag is part of every cubin key."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    assert L._GDC == "-DCUTLASS_ENABLE_GDC_FOR_SM90" and L._GDC in L._NVCC_FLAGS and L._GDC in L._NVRTC_FLAGS


# --------------------------------------------------------------------------------------------------
# "nn" instances: B = (K, N) row-major (N contiguous), as matmul(a, b) holds it
# --------------------------------------------------------------------------------------------------
def _tn_twin(entry):
    return S.instance(entry["key"].replace("/nn/", "/tn/"))


@pytest.mark.parametrize("entry", NN, ids=[e["key"] for e in NN])
def test_nn_differs_from_its_tn_twin_only_in_b(entry):
    """Same Params layout, offsets, padding, smem and transaction bytes as the "tn" instance of the family;
    for every probe case the encode calls differ only in B's (dims (N, K, 1), strides (ldb, K * ldb) bytes,
    box (64, 32, 1)), so with the stub encoder the Params bytes are the twin's."""
    tn = _tn_twin(entry)
    hp, tp = entry["host_params"], tn["host_params"]
    for f in ("params_size", "params_align", "smem_bytes", "threads", "block", "cluster", "offsets", "sizes",
              "padding", "descriptors", "tma_transaction_bytes", "epilogue_tma_transaction_bytes"):
        assert hp[f] == tp[f], f
    assert hp["tma"] == {**tp["tma"], "box_B": [64, 32, 1]}
    assert entry["layout"]["B"].startswith("RowMajor") and "RowMajor, 8" in (KDIR / entry["file"]).read_text()
    for g in hp["golden"]:
        m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, ras = g["case"]
        assert ldb >= n and ldb % 8 == 0
        b = g["encodes"][1]
        assert b["dims"] == [n, k, 1] and b["strides"] == [2 * ldb, 2 * ldb * k] and b["box"] == [64, 32, 1]
        twin_case = (m, n, k, lda, k + ldb - n) + tuple(g["case"][5:])
        la, enc = _build(entry, g["case"])
        tla, tenc = _build(tn, twin_case)
        assert la.params == tla.params and la.grid == tla.grid, g["case"]
        assert enc.calls[0] == tenc.calls[0] and enc.calls[2:] == tenc.calls[2:]


def test_nn_unsupported_problems_give_reasons():
    e = S.instance("gemm/f16/nn/ppt/sm90")
    ok = dict(m=17, n=24, k=8, lda=8, ldb=24, ldc=24, ldd=24, ptrs=(0x1000, 0x2000, 0x3000, 0x3000))
    assert S.sm90_unsupported(e, **ok) is None
    assert S.sm90_unsupported(e, **{**ok, "k": 1000, "lda": 1000}) is None          # K needs no 64
    for bad, word in (({"n": 20, "ldc": 24, "ldd": 24}, "N must"),
                      ({"ldb": 16}, "smaller"),                                      # ldb >= N, not K
                      ({"ldb": 28}, "lda and ldb"),
                      ({"k": 12, "lda": 16}, "K must"),
                      ({"ptrs": (0x1000, 0x2008, 0x3000, 0x3000)}, "16-byte"),
                      ({"ptrs": (0x1000, 0x2000, 0x3000, 0x3004)}, "16-byte")):
        why = S.sm90_unsupported(e, **{**ok, **bad})
        assert why and word in why, (bad, why)
    # the "tn" twin wants ldb >= K instead: the nn problem's ldb of 24 with K = 1000 is fine for nn only
    assert S.sm90_unsupported(e, **{**ok, "k": 1000, "lda": 1000, "ldb": 24}) is None
    assert "smaller" in S.sm90_unsupported(_tn_twin(e), **{**ok, "k": 1000, "lda": 1000, "ldb": 24})
    # default ldb is N for nn (K for tn)
    rec = RecordingEncoder()
    S.build_sm90_launch(e, 17, 24, 40, 0x1000, 0x2000, 0x3000, 0x3000, encode=rec)
    assert rec.calls[1]["dims"] == [24, 40, 1] and rec.calls[1]["strides"] == [48, 48 * 40]
    with pytest.raises(ValueError, match="N must"):
        S.build_sm90_launch(e, 16, 12, 16, 0x1000, 0x2000, 0x3000, 0x3000, encode=RecordingEncoder())
    assert S.layout_of({"key": "old"}) == "tn"
    with pytest.raises(ValueError, match="layout"):
        S.layout_of({"key": "x", "layout_tag": "tt"})


def test_nn_launch_prepare_and_keys(monkeypatch):
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L, tma
    enc = RecordingEncoder()
    monkeypatch.setattr(tma, "encode_tiled", enc)
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(L, "_params_cache", {})
    m, n, k = 203, 248, 136
    a = _FakeArray((m, k), (2 * (k + 24), 2), 0x10000)
    b = _FakeArray((k, n), (2 * (n + 8), 2), 0x20000)       # (K, N) with padded rows
    out = _FakeArray((m, n), (2 * (n + 16), 2), 0x40000)
    key = "gemm/bf16/nn/coopt/sm90"
    la, (raw, kp, cfg) = L.prepare(a, b, out, 2.0, 0.0, None, key, 132)
    ref = S.build_sm90_launch(S.instance(key), m, n, k, 0x10000, 0x20000, 0x40000, 0x40000,
                              k + 24, n + 8, n + 16, n + 16, 2.0, 0.0, sm_count=132, encode=RecordingEncoder())
    assert la == ref and cfg is not None
    assert enc.calls[1]["dims"] == [n, k, 1] and enc.calls[1]["strides"] == [2 * (n + 8), 2 * (n + 8) * k]
    assert L.default_key(a.dtype, "ppt", "nn") == "gemm/f16/nn/ppt/sm90"
    assert L.default_key("bfloat16", "coopt", "nn") == key
    with pytest.raises(ValueError, match="family"):
        L.default_key(a.dtype, "large", "nn")                # only the TMA-epilogue families have nn
    with pytest.raises(ValueError, match="layout"):
        L.default_key(a.dtype, "ppt", "tt")
    assert set(L.LAYOUT_FAMILIES["nn"]) == {_family(e) for e in NN}


class _HostArray:
    """A NumPy array seen as launch_sm90.prepare sees a CuPy one (its host address as the device pointer)."""

    def __init__(self, a):
        self.a, self.shape, self.strides, self.ndim = a, a.shape, a.strides, a.ndim
        self.dtype, self.itemsize = a.dtype, a.itemsize
        self.data = type("Mem", (), {"ptr": a.ctypes.data})()


def _tma_view(call, dtype):
    """The (dims[1], dims[0]) matrix a TMA descriptor's arguments describe, read from host memory."""
    import numpy as np
    es = np.dtype(dtype).itemsize
    d0, d1, _ = call["dims"]
    s1 = call["strides"][0]
    size = (d1 - 1) * s1 + d0 * es
    buf = (ctypes.c_char * size).from_address(call["addr"])
    return np.lib.stride_tricks.as_strided(np.frombuffer(buf, dtype), (d1, d0), (s1, es), writeable=True)


@pytest.mark.parametrize("layout", ["tn", "nn"])
def test_encode_arguments_describe_the_operands_in_memory(layout, monkeypatch):
    """prepare() on padded, offset host arrays; the A, B, C, D descriptors' arguments read back the arrays
    themselves: A (M, K), B as stored ((N, K) for tn, (K, N) for nn), C and D (M, N); a GEMM through those
    views written through D's equals the reference and leaves D's borders alone."""
    import numpy as np
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L, tma
    enc = RecordingEncoder()
    monkeypatch.setattr(tma, "encode_tiled", enc)
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(L, "_params_cache", {})
    rng = np.random.default_rng(0)
    m, n, k = 37, 40, 24
    ab = rng.uniform(-1, 1, (m, k + 16)).astype(np.float16)
    bb = rng.uniform(-1, 1, (k, n + 8) if layout == "nn" else (n, k + 8)).astype(np.float16)
    cb = rng.uniform(-1, 1, (m, n + 8)).astype(np.float16)
    ob = np.full((m + 2, n + 24), 7.0, np.float16)
    a, c, out = ab[:, 8:8 + k], cb[:, :n], ob[1:1 + m, 8:8 + n]
    b = bb[:, 8:8 + n] if layout == "nn" else bb[:, :k]
    key = f"gemm/f16/{layout}/ppt/sm90"
    L.prepare(_HostArray(a), _HostArray(b), _HostArray(out), 0.5, 2.0, _HostArray(c), key, 132)
    va, vb, vc, vd = (_tma_view(call, np.float16) for call in enc.calls)
    assert va.shape == (m, k) and (va == a).all() and (vc == c).all() and vd.shape == (m, n)
    assert vb.shape == b.shape and (vb == b).all()
    bkn = vb if layout == "nn" else vb.T                     # the (K, N) operand the kernel multiplies by
    vd[...] = (0.5 * (va.astype(np.float64) @ bkn.astype(np.float64)) + 2.0 * vc).astype(np.float16)
    ref = 0.5 * (a.astype(np.float64) @ (b if layout == "nn" else b.T).astype(np.float64)) + 2.0 * c
    assert np.abs(out.astype(np.float64) - ref).max() < 1e-2
    mask = np.ones(ob.shape, bool)
    mask[1:1 + m, 8:8 + n] = False
    assert (ob[mask] == 7.0).all()


# --------------------------------------------------------------------------------------------------
# Fused bias/activation instances: ppt with an epilogue visitor tree, D = act(acc + bias[n]), no C
# --------------------------------------------------------------------------------------------------
# activation and functor (CUTLASS's cutlass/epilogue/thread/activation.h, or ours: gpk_epilogue.h)
EPILOGUES = {"bias": (None, None), "bias_gelu": ("gelu", "gpk::epilogue::Gelu"),
             "bias_gelu_tanh": ("gelu_tanh", "cutlass::epilogue::thread::GELU_taylor"),
             "bias_relu": ("relu", "cutlass::epilogue::thread::ReLu"), "bias_silu": ("silu", "gpk::epilogue::Silu")}


def _build_fused(entry, case, encode=None, **kw):
    m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, ras, pbias = case
    enc = encode or RecordingEncoder()
    la = S.build_sm90_launch(entry, m, n, k, pa, pb, pc, pd, lda, ldb, ldc, ldd, alpha, beta,
                             sm_count=sms, encode=enc, max_swizzle=swz, raster=RASTER[ras], bias=pbias, **kw)
    return la, enc


def test_fused_instances_are_ppt_with_a_visitor_epilogue():
    assert {e["key"] for e in FUSED} == {f"gemm/{d}/tn/ppt_{epi}/sm90" for d in ("f16", "bf16") for epi in EPILOGUES}
    for e in FUSED:
        ppt = S.instance(f"gemm/{e['dtype']}/tn/ppt/sm90")
        hp, pp = e["host_params"], ppt["host_params"]
        epi = e["key"].split("/")[3][len("ppt_"):]
        act, functor = EPILOGUES[epi]
        assert hp["status"] == "probed" and S.fused_of(e)["epilogue"] == epi and S.fused_of(e)["activation"] == act
        for f in ("tile", "cluster", "stages", "kernel_schedule", "epilogue_schedule", "warps"):
            assert e[f] == ppt[f], f
        # the fused instances pin a 64x128 epilogue subtile (gen_cutlass epi_tile; ppt: the auto 64x32)
        assert e["epi_tile"] == [64, 128] and "epi_tile" not in ppt
        assert e["kernel"] == ppt["kernel"] + "_" + epi + "_epi64x128"
        assert e["file"] == f"gemm_{e['dtype']}_tn_ppt_{epi}_sm90.cu"
        src = (KDIR / e["file"]).read_text()
        assert "using ElementC = void;" in src and "Sm90RowBroadcast" in src
        assert "cute::Shape<_128, _128, _64>, cute::Shape<cute::_64, cute::_128>," in src
        assert "EpilogueTileAuto" not in src
        if functor:
            assert f"Sm90Compute<\n    {functor}, " in src
            assert S.fused_of(e)["functor"] == functor
        # same Params size, block, cluster, mainloop; the A, B, D descriptors where ppt has them, no C encode
        assert hp["params_size"] == pp["params_size"] and hp["params_align"] == 128
        assert hp["block"] == [384, 1, 1] and hp["cluster"] == [2, 1, 1] and hp["workspace_bytes"] == 0
        assert sorted(hp["descriptors"]) == ["A", "B", "D"]
        assert all(hp["descriptors"][d] == pp["descriptors"][d] for d in "ABD")
        assert hp["tma_transaction_bytes"] == pp["tma_transaction_bytes"]
        assert {f: hp["tma"][f] for f in hp["tma"] if f != "epilogue"} == \
            {f: pp["tma"][f] for f in pp["tma"] if f != "epilogue"}
        # D's store as ppt's, but rank 2: the visitor's StrideD has a static zero batch stride, so CUTLASS
        # drops the L mode (dims (N, M), one byte stride); the 64x128 subtile goes out as two 64x64 boxes with the
        # 128-byte swizzle (64 halves a row) where ppt's 64x32 is one box with the 64-byte swizzle
        pd = pp["tma"]["epilogue"]["D"]
        assert pd["box"] == [32, 64, 1] and pd["swizzle"] == 2
        assert hp["tma"]["epilogue"] == {"D": {**pd, "rank": 2, "box": [64, 64], "swizzle": 3,
                                               "elem_strides": pd["elem_strides"][:2]}}
        for g in hp["golden"]:
            m, n, ldd, pd_addr = g["case"][0], g["case"][1], g["case"][6], g["case"][12]
            assert g["encodes"][2]["dims"] == [n, m] and g["encodes"][2]["strides"] == [2 * ldd]
            assert g["encodes"][2]["addr"] == pd_addr
        # no C in shared memory, but D staged in two 64x128 subtiles (32 KiB against ppt's 8): within the 227 KiB
        assert pp["smem_bytes"] < hp["smem_bytes"] <= 227 * 1024
        # the fusion Params: the bias pointer (8 bytes) and its null default (one element) inside epilogue.thread
        off, size = hp["offsets"], hp["sizes"]
        t0, t1 = off["epilogue.thread"], off["epilogue.thread"] + size["epilogue.thread"]
        assert size["epilogue.thread.bias_ptr"] == 8 and size["epilogue.thread.bias_null_default"] == 2
        assert t0 <= off["epilogue.thread.bias_ptr"] < t1 and t0 <= off["epilogue.thread.bias_null_default"] < t1
        assert off["epilogue.thread.bias_ptr"] % 8 == 0
        assert "epilogue.thread.alpha" not in off
        assert len(hp["golden"]) == 11


@pytest.mark.parametrize("entry", FUSED + FUSED_CAND, ids=[e["key"] for e in FUSED + FUSED_CAND])
def test_fused_params_bytes_match_cutlass_to_underlying_arguments(entry):
    import struct
    pad = _padding(entry)
    hp = entry["host_params"]
    for g in hp["golden"]:
        la, enc = _build_fused(entry, g["case"])
        gold = bytes.fromhex(g["hex"])
        diff = [i for i in range(len(gold)) if gold[i] != la.params[i]]
        assert not diff, (g["case"], diff[:16])
        assert all(la.params[i] == 0 for i in pad)
        assert enc.calls == g["encodes"], g["case"]      # A, B, then D (no C)
        assert list(la.grid) == g["grid"] and la.kernel == entry["kernel"]
        assert la.shared_mem == hp["smem_bytes"] and list(la.cluster) == entry["cluster"]
        assert struct.unpack_from("<Q", la.params, hp["offsets"]["epilogue.thread.bias_ptr"])[0] == g["case"][16]
        o = hp["offsets"]["epilogue.thread.bias_null_default"]
        assert la.params[o:o + 2] == b"\0\0"                  # a null bias reads zeros
        c = hp["offsets"]["epilogue.tma_load_c.tma_desc_"]
        assert la.params[c:c + 128] == bytes(128)           # the C atom: never encoded
        d = hp["descriptors"]["D"]
        assert la.params[d:d + 128] == stub_pattern(2)
    # the golden cases cover a null bias and a bias only 2-byte aligned
    assert {g["case"][16] % 16 for g in hp["golden"]} >= {0, 2} and any(g["case"][16] == 0 for g in hp["golden"])


@pytest.mark.parametrize("entry", FUSED_CAND, ids=[e["key"] for e in FUSED_CAND])
def test_fused_candidates_are_their_base_with_a_visitor_epilogue(entry):
    """A fused candidate (<base>_<epilogue>) is its base candidate's mainloop and cluster with the visitor epilogue
    of the shipped fused instances: no C, the bias row, the A, B and D descriptors of the base."""
    fam = entry["key"].split("/")[3]
    base_fam, epi = fam.split("_", 1)
    base = S.instance(f"gemm/{entry['dtype']}/tn/{base_fam}/sm90")
    assert base.get("candidate") and epi in EPILOGUES and S.fused_of(entry)["epilogue"] == epi
    assert bool(entry.get("candidate")) == (epi not in ("bias_gelu", "bias_silu"))   # the two gemm.py routes to
    for f in ("tile", "cluster", "stages", "kernel_schedule", "epilogue_schedule", "warps"):
        assert entry[f] == base[f], f
    hp, bp = entry["host_params"], base["host_params"]
    assert entry["kernel"] == base["kernel"] + "_" + epi
    assert hp["status"] == "probed" and sorted(hp["descriptors"]) == ["A", "B", "D"]
    assert all(hp["descriptors"][d] == bp["descriptors"][d] for d in "ABD")
    assert hp["smem_bytes"] <= bp["smem_bytes"] and hp["workspace_bytes"] == 0
    src = (KDIR / entry["file"]).read_text()
    assert "using ElementC = void;" in src and "Sm90RowBroadcast" in src


def test_fused_ignores_c_and_needs_alpha_1_beta_0():
    e = S.instance("gemm/f16/tn/ppt_bias_gelu/sm90")
    case = e["host_params"]["golden"][1]["case"]
    la, _ = _build_fused(e, case)
    # C's pointer and ldc play no part (the builder takes D's)
    moved = list(case)
    moved[5], moved[11] = 12344, 0x123
    la2, enc2 = _build_fused(e, tuple(moved))
    assert la2.params == la.params and all(c["addr"] != 0x123 for c in enc2.calls)
    for alpha, beta in ((2.0, 0.0), (1.0, 1.0)):
        bad = tuple(case[:7]) + (alpha, beta) + tuple(case[9:])
        with pytest.raises(ValueError, match="alpha 1 and beta 0"):
            _build_fused(e, bad)


def test_fused_unsupported_reasons():
    e = S.instance("gemm/bf16/tn/ppt_bias_silu/sm90")
    ok = dict(m=17, n=24, k=64, lda=64, ldb=64, ldc=1, ldd=24, ptrs=(0x1000, 0x2000, 0x3003, 0x3000))
    assert S.sm90_unsupported(e, **ok) is None                       # C's pointer and ldc are not looked at
    assert S.sm90_unsupported(e, **ok, bias_ptr=0x5002) is None      # element alignment is enough
    assert S.sm90_unsupported(e, **ok, bias_ptr=0) is None           # no bias: zeros
    assert "2-byte aligned" in S.sm90_unsupported(e, **ok, bias_ptr=0x5001)
    for bad, word in (({"n": 20, "ldd": 20}, "N must"), ({"ldd": 28}, "ldc and ldd"),
                      ({"ptrs": (0x1000, 0x2000, 0x3000, 0x3008)}, "16-byte"), ({"k": 60, "lda": 64}, "K must")):
        why = S.sm90_unsupported(e, **{**ok, **bad})
        assert why and word in why, (bad, why)
    plain = S.instance("gemm/bf16/tn/ppt/sm90")
    assert "no bias" in S.sm90_unsupported(plain, **{**ok, "ptrs": (0x1000, 0x2000, 0x3000, 0x3000)},
                                           bias_ptr=0x5000)
    with pytest.raises(ValueError, match="2-byte"):
        S.build_sm90_launch(e, 16, 16, 16, 0x1000, 0x2000, 0x3000, 0x3000, encode=RecordingEncoder(), bias=0x4001)


@pytest.mark.parametrize("entry", FUSED[:4], ids=[e["key"] for e in FUSED[:4]])
def test_fused_real_encoder_path_through_ctypes(entry, tma_stub):
    hp = entry["host_params"]
    offs = [hp["descriptors"][name] for name in "ABD"]
    for g in hp["golden"]:
        m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, ras, pbias = g["case"]
        la = S.build_sm90_launch(entry, m, n, k, pa, pb, pc, pd, lda, ldb, ldc, ldd, alpha, beta,
                                 sm_count=sms, max_swizzle=swz, raster=RASTER[ras], bias=pbias)
        assert [_decode_stub_descriptor(la.params[o:o + 128]) for o in offs] == g["encodes"], g["case"]
        gold, mine = bytearray.fromhex(g["hex"]), bytearray(la.params)
        for o in offs:
            gold[o:o + 128] = mine[o:o + 128] = bytes(128)
        assert mine == gold, g["case"]


def test_fused_keys_and_linear_tn_sm90_dispatch(monkeypatch):
    """linear_tn_sm90 with bias/activation picks the fused instance and passes the bias address into the Params;
    what it cannot run raises ValueError before any launch."""
    import struct
    import numpy as np
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L, tma
    f16 = np.dtype(np.float16)
    assert L.fused_key(f16) == "gemm/f16/tn/ppt_bias/sm90"
    assert L.fused_key("bfloat16", "ppt", "gelu_tanh") == "gemm/bf16/tn/ppt_bias_gelu_tanh/sm90"
    assert L.fused_key(f16, activation="identity") == "gemm/f16/tn/ppt_bias/sm90"
    assert {L.fused_key(d, "ppt", a) for d in ("float16", "bfloat16") for a in L.ACTIVATIONS} == \
        {e["key"] for e in FUSED}
    with pytest.raises(ValueError, match="activation"):
        L.fused_key(f16, "ppt", "tanh")
    with pytest.raises(ValueError, match="families"):
        L.fused_key(f16, "coopt", "gelu")
    enc = RecordingEncoder()
    launched = []
    monkeypatch.setattr(tma, "encode_tiled", enc)
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(loader, "sm_count", lambda device_id=None: 132)
    monkeypatch.setattr(L, "_params_cache", {})
    monkeypatch.setattr(L, "launch", lambda key, la, packed=None, stream_ptr=None: launched.append((key, la)))
    m, n, k = 203, 768, 136
    x = _FakeArray((m, k), (2 * k, 2), 0x10000)
    w = _FakeArray((n, k), (2 * k, 2), 0x20000)
    out = _FakeArray((m, n), (2 * n, 2), 0x40000)
    b = _FakeArray((n,), (2,), 0x50002)
    y = L.linear_tn_sm90(x, w, out=out, bias=b, activation="gelu")
    assert y is out and launched[-1][0] == "gemm/f16/tn/ppt_bias_gelu/sm90"
    e = S.instance(launched[-1][0])
    la = launched[-1][1]
    assert struct.unpack_from("<Q", la.params, e["host_params"]["offsets"]["epilogue.thread.bias_ptr"])[0] == 0x50002
    ref = S.build_sm90_launch(e, m, n, k, 0x10000, 0x20000, 0x40000, 0x40000, sm_count=132,
                              encode=RecordingEncoder(), bias=0x50002)
    assert la == ref
    L.linear_tn_sm90(x, w, out=out, activation="relu")              # no bias: a null pointer
    la = launched[-1][1]
    e = S.instance("gemm/f16/tn/ppt_bias_relu/sm90")
    assert launched[-1][0] == e["key"]
    assert struct.unpack_from("<Q", la.params, e["host_params"]["offsets"]["epilogue.thread.bias_ptr"])[0] == 0
    L.linear_tn_sm90(x, w, out=out, bias=b)
    assert launched[-1][0] == "gemm/f16/tn/ppt_bias/sm90"
    n_launches = len(launched)
    for kw, word in (({"bias": _FakeArray((n - 8,), (2,), 0x50000)}, "bias must be"),
                     ({"bias": _FakeArray((n,), (2,), 0x50000, "float32")}, "bias must be"),
                     ({"bias": _FakeArray((n,), (4,), 0x50000)}, "contiguous"),
                     ({"bias": _FakeArray((n,), (2,), 0x50001)}, "2-byte aligned"),
                     ({"bias": b, "alpha": 0.5}, "alpha"), ({"bias": b, "beta": 1.0, "c": out}, "alpha"),
                     ({"bias": b, "activation": "softplus"}, "activation"),
                     ({"bias": b, "family": "large"}, "families")):
        with pytest.raises(ValueError, match=word):
            L.linear_tn_sm90(x, w, out=out, **kw)
    w2 = _FakeArray((1004, k), (2 * k, 2), 0x20000)
    with pytest.raises(ValueError, match="N must"):
        L.linear_tn_sm90(x, w2, out=_FakeArray((m, 1004), (2 * 1008, 2), 0x40000), bias=None, activation="silu")
    assert len(launched) == n_launches


# TF32 instances (registry dtype "tf32": float32 A, B, C, D in memory, TF32 wgmma, float32 accumulation)
# --------------------------------------------------------------------------------------------------
# (layout, family) -> CTA tile, stages, kernel and epilogue schedule, Params size. "nn": CUTLASS swaps A and B
# (register-sourced mainloop, EpilogueTransposed direct stores, no C/D descriptors); its stages are the
# builder's auto count (StageCountAutoCarveout), which the smem size below pins down.
TF32_FAMILY = {
    ("tn", "ppt"): {"tile": [128, 128, 32], "stages": 6, "schedule": "TmaWarpSpecializedPingpong",
                    "epilogue": "TmaWarpSpecialized", "params_size": 1792},
    ("tn", "coopt"): {"tile": [256, 128, 32], "stages": 3, "schedule": "TmaWarpSpecializedCooperative",
                      "epilogue": "TmaWarpSpecializedCooperative", "params_size": 1792},
    ("nn", "pp"): {"tile": [128, 128, 32], "stages": 7, "schedule": "TmaWarpSpecializedPingpong",
                   "epilogue": "EpilogueTransposed", "params_size": 1024, "auto": True},
    ("nn", "coop"): {"tile": [256, 128, 32], "stages": 4, "schedule": "TmaWarpSpecializedCooperative",
                     "epilogue": "EpilogueTransposed", "params_size": 1024, "auto": True},
}
_SM90_SMEM = 227 * 1024


def _tf32_fam(entry):
    return TF32_FAMILY[(S.layout_of(entry), _family(entry))]


def test_tf32_manifest_instances():
    from gpk_array._kernels.cutlass import launch_sm90 as L
    assert {e["key"] for e in TF32} == {f"gemm/tf32/{lay}/{f}/sm90" for lay, f in TF32_FAMILY}
    assert {(lay, f) for lay in ("tn", "nn") for f in L.layout_families("tf32", lay)} == set(TF32_FAMILY)
    for e in TF32:
        fam, hp = _tf32_fam(e), e["host_params"]
        nn = S.layout_of(e) == "nn"
        assert hp["status"] == "probed" and e["element"] == "f32" and e["alignment"] == {"A": 4, "B": 4, "C": 4}
        assert e["tile"] == fam["tile"] and e["cluster"] == [2, 1, 1] and e["stages"] == fam["stages"]
        assert e["kernel_schedule"] == fam["schedule"] and e["epilogue_schedule"] == fam["epilogue"]
        assert hp["params_size"] == fam["params_size"] and hp["params_align"] == 128
        assert hp["threads"] == 384 and hp["block"] == [384, 1, 1] and hp["cluster"] == [2, 1, 1]
        assert hp["workspace_bytes"] == 0 and len(hp["golden"]) >= 9
        # stages of (tile_m + tile_n) x 32 floats; an auto count is the largest that fits (no epilogue smem)
        tm, tn, tk = fam["tile"]
        stage = (tm + tn) * tk * 4
        assert e["stages"] * stage <= hp["smem_bytes"] <= _SM90_SMEM
        if fam.get("auto"):
            assert (e["stages"] + 1) * stage > _SM90_SMEM and "StageCountAutoCarveout" in e["stage_count"]
        assert hp["tma_transaction_bytes"] == [stage, tm * tk * 4, tn * tk * 4]
        assert bool(hp.get("swap_ab")) == nn and S.swaps_ab(e) == nn
        assert sorted(hp["descriptors"]) == (["A", "B"] if nn else ["A", "B", "C", "D"])
        assert all(off % 64 == 0 for off in hp["descriptors"].values())
        t = hp["tma"]
        assert t["rank"] == 3
        if not nn:
            # K-major float tiles: 32 floats = one 128-byte swizzle row; C and D float32 with the epilogue subtile
            assert t["swizzle"] == 3 and "B" not in t
            assert t["box_A"] == [32, tm, 1] and t["box_B"] == [32, tn // 2, 1]     # B multicast: half per CTA
            for name in ("C", "D"):
                assert t["epilogue"][name]["data_type"] == 7 and t["epilogue"][name]["rank"] == 3   # FLOAT32
            assert t["data_type"] == 11                                      # TFLOAT32: TMA rounds on load
        else:
            # the first descriptor is B's N-contiguous tile: 32-byte swizzle, boxes of 8 floats of N by 32 of K;
            # the second A's K-major one as for "tn"
            assert t["swizzle"] == 1 and t["box_A"] == [8, 32, 1] and t["B"]["swizzle"] == 3
            assert t["box_B"] == [32, 64, 1] and t["data_type"] == t["B"]["data_type"] == 11
        for g in hp["golden"]:
            # CUTLASS's grid is a whole number of clusters once there are 2 SMs or more (with one SM it is not:
            # launch_sm90.check_cluster_grid refuses such a launch)
            if g["case"][13] >= 2:
                assert all(x % c == 0 for x, c in zip(g["grid"], hp["cluster"])), (e["key"], g)


@pytest.mark.parametrize("entry", [e for e in TF32 if S.layout_of(e) == "tn"],
                         ids=lambda e: e["key"])
def test_tf32_tn_descriptors_follow_the_problem(entry):
    """A, B, C, D encode arguments in 4-byte elements: dims (K, M, 1), (K, N, 1), (N, M, 1), byte strides ld * 4."""
    la, enc = _build(entry, (1000, 3000, 4104, 4112, 4120, 3008, 3016, 0.5, 0.0,
                             0x7f0000001000, 0x7f0000200000, 0x7f0000400000, 0x7f0000600000, 132, 1, 0))
    a, b, c, d = enc.calls
    assert a["dims"] == [4104, 1000, 1] and a["strides"] == [4112 * 4, 4112 * 4 * 1000] and a["addr"] == 0x7f0000001000
    assert b["dims"] == [4104, 3000, 1] and b["strides"] == [4120 * 4, 4120 * 4 * 3000] and b["addr"] == 0x7f0000200000
    assert c["dims"] == [3000, 1000, 1] and c["strides"] == [3008 * 4, 3008 * 4 * 1000]
    assert d["dims"] == [3000, 1000, 1] and d["strides"] == [3016 * 4, 3016 * 4 * 1000]
    import struct
    shape_at = entry["host_params"]["offsets"]["problem_shape"]
    assert struct.unpack_from("<4i", la.params, shape_at) == (1000, 3000, 4104, 1)


@pytest.mark.parametrize("entry", [e for e in TF32 if S.layout_of(e) == "nn"],
                         ids=lambda e: e["key"])
def test_tf32_nn_swaps_a_and_b(entry):
    """CUTLASS runs the tf32 "nn" GEMM as B^T A^T: the first descriptor is B's ((N, K) N-contiguous), the second A's,
    the Params' problem shape and the persistent schedule are those of (N, M); C and D keep the caller's pointers
    and (ldc, M * ldc) strides (the epilogue transposes on the device)."""
    import struct
    hp = entry["host_params"]
    off = hp["offsets"]
    for g in hp["golden"]:
        m, n, k, lda, ldb, ldc, ldd, alpha, beta, pa, pb, pc, pd, sms, swz, ras = g["case"]
        b_enc, a_enc = g["encodes"]
        assert b_enc["addr"] == pb and b_enc["dims"] == [n, k, 1] and b_enc["strides"] == [4 * ldb, 4 * ldb * k]
        assert a_enc["addr"] == pa and a_enc["dims"] == [k, m, 1] and a_enc["strides"] == [4 * lda, 4 * lda * m]
        la, _ = _build(entry, g["case"])
        assert struct.unpack_from("<4i", la.params, off["problem_shape"]) == (n, m, k, 1)
        assert la.grid == S.sm90_schedule(entry, n, m, sms, swz, RASTER[ras])["grid"]
        assert struct.unpack_from("<Q2q", la.params, off["epilogue.ptr_C"]) == (pc, ldc, m * ldc)
        assert struct.unpack_from("<Q2q", la.params, off["epilogue.ptr_D"]) == (pd, ldd, m * ldd)


def test_tf32_unsupported_problems_give_reasons():
    tn, nn = S.instance("gemm/tf32/tn/ppt/sm90"), S.instance("gemm/tf32/nn/pp/sm90")
    ok = dict(m=17, n=12, k=20, lda=20, ldb=20, ldc=12, ldd=12, ptrs=(0x1000, 0x2000, 0x3000, 0x3000))
    assert S.sm90_unsupported(tn, **ok) is None
    assert S.sm90_unsupported(nn, **{**ok, "ldb": 12}) is None
    for e, extra in ((tn, {}), (nn, {"ldb": 12})):
        for bad, word in (({"k": 18, "lda": 20}, "K must be a multiple of 4"),
                          ({"n": 10, "ldc": 12, "ldd": 12, "ldb": 20 if e is tn else 12}, "N must be a multiple of 4"),
                          ({"lda": 22}, "lda and ldb must be multiples of 4"),
                          ({"ptrs": (0x1008, 0x2000, 0x3000, 0x3000)}, "16-byte")):
            why = S.sm90_unsupported(e, **{**ok, **extra, **bad})
            assert why and word in why, (e["key"], bad, why)
    # the TMA epilogue wants 16-byte aligned C and D; the transposed direct-store one 4-byte aligned ones
    assert "16-byte" in S.sm90_unsupported(tn, **{**ok, "ptrs": (0x1000, 0x2000, 0x3004, 0x3000)})
    assert S.sm90_unsupported(nn, **{**ok, "ldb": 12, "ptrs": (0x1000, 0x2000, 0x3004, 0x3008)}) is None
    assert "4-byte" in S.sm90_unsupported(nn, **{**ok, "ldb": 12, "ptrs": (0x1000, 0x2000, 0x3002, 0x3000)})


def test_tf32_keys_and_prepare(monkeypatch):
    import numpy as np
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L, tma
    f32 = np.dtype(np.float32)
    assert L.default_key(f32) == "gemm/tf32/tn/ppt/sm90" and L.default_key(f32, "coopt") == "gemm/tf32/tn/coopt/sm90"
    assert L.default_key(f32, layout="nn") == "gemm/tf32/nn/pp/sm90"
    assert L.default_key(f32, "coop", "nn") == "gemm/tf32/nn/coop/sm90"
    assert L.default_key(np.dtype(np.float16)) == "gemm/f16/tn/large/sm90"          # 16-bit defaults unchanged
    assert L.default_key(np.dtype(np.float16), layout="nn") == "gemm/f16/nn/ppt/sm90"
    for fam, lay in (("large", "tn"), ("ppt", "nn"), ("coop", "tn")):
        with pytest.raises(ValueError, match="family"):
            L.default_key(f32, fam, lay)
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(L, "_params_cache", {})
    m, n, k = 203, 252, 132
    for key, b_shape, ldb in (("gemm/tf32/tn/coopt/sm90", (n, k), k + 4), ("gemm/tf32/nn/coop/sm90", (k, n), n + 8)):
        monkeypatch.setattr(tma, "encode_tiled", RecordingEncoder())    # stub patterns numbered per launch
        a = _FakeArray((m, k), (4 * (k + 12), 4), 0x10010, "float32")
        b = _FakeArray(b_shape, (4 * ldb, 4), 0x20000, "float32")
        out = _FakeArray((m, n), (4 * (n + 12), 4), 0x40010, "float32")
        la, _ = L.prepare(a, b, out, 1.5, 0.0, None, key, 132)
        ref = S.build_sm90_launch(S.instance(key), m, n, k, 0x10010, 0x20000, 0x40010, 0x40010, k + 12, ldb,
                                  n + 12, n + 12, 1.5, 0.0, sm_count=132, encode=RecordingEncoder())
        assert la == ref


# --------------------------------------------------------------------------------------------------
# launch_sm90.gemm_into: the namespace's cached launches, through the C stand-ins for the driver
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["gemm/f16/nn/ppt/sm90", "gemm/bf16/tn/coopt/sm90", "gemm/tf32/tn/ppt/sm90",
                                 "gemm/tf32/nn/pp/sm90", "gemm/f16/tn/ppt_bias_gelu/sm90"])
def test_gemm_into_caches_launches_and_repoints_params(key, tma_stub, launch_stub, monkeypatch):
    """Each distinct (pointers, shapes, strides, stream, bias) gets its own prepared launch; a new pointer set of
    known shapes re-points the cached template, whose Params then equal a fresh build byte for byte; a repeated
    call launches the prepared arguments again; operands the instance cannot take launch nothing."""
    import sys
    import types
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L
    stream = {"ptr": 0x5100}
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0),
        get_current_stream=lambda: types.SimpleNamespace(ptr=stream["ptr"])))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(L, "_driver", {"lib": L._declare(launch_stub)})
    monkeypatch.setattr(L, "get_function", lambda k: (None, 0xF00D, None))
    monkeypatch.setattr(loader, "sm_count", lambda device_id=None: 132)
    monkeypatch.setattr(L, "_calls", {})
    monkeypatch.setattr(L, "_templates", {})
    e = S.instance(key)
    dt = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32"}[e["dtype"]]
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
        import ml_dtypes  # noqa: F401
    isz = {"float16": 2, "bfloat16": 2, "float32": 4}[dt]
    nn = S.layout_of(e) == "nn"
    fused = S.fused_of(e) is not None
    m, n, k = 1000, 3072, 768

    def arrays(base):
        x = _FakeArray((m, k), (k * isz, isz), base, dt)
        w = _FakeArray((k, n) if nn else (n, k), ((n if nn else k) * isz, isz), base + 0x1000_0000, dt)
        out = _FakeArray((m, n), (n * isz, isz), base + 0x2000_0000, dt)
        bias = _FakeArray((n,), (isz,), base + 0x3000_0000, dt) if fused else None
        return x, w, out, bias

    def params_of(ck):
        args = L._calls[ck][1]
        kp = args[-2]                          # kernelParams of either driver entry point
        return ctypes.string_at(kp[0], e["host_params"]["params_size"])

    def fresh(x, w, out, bias):
        ptrs = (x.data.ptr, w.data.ptr, out.data.ptr, out.data.ptr)
        kw = {"bias": bias.data.ptr} if bias is not None else {}
        return bytes(S.build_sm90_launch(e, m, n, k, *ptrs, k, n if nn else k, n, n, 1.0, 0.0, sm_count=132,
                                         **kw).params)

    last = (ctypes.c_longlong * 32)()
    attrs = (ctypes.c_longlong * 64)()
    for i, base in enumerate((0x7e00_0000_0000, 0x7f00_0000_0100, 0x7f00_0000_0100)):
        x, w, out, bias = arrays(base)
        assert L.gemm_into(key, x, w, out, 0, bias)
        launch_stub.gpk_last_launch(last, attrs)
        assert last[1] == 0xF00D and last[9] == stream["ptr"]
        assert len(L._templates) == 1 and len(L._calls) == min(i + 1, 2)     # the third call: a hit
        ck = next(c for c in L._calls if c[1] == x.data.ptr)
        assert params_of(ck) == fresh(x, w, out, bias)
    stream["ptr"] = 0x5200                                                   # another stream: its own launch
    assert L.gemm_into(key, x, w, out, 0, bias) and len(L._calls) == 3
    launch_stub.gpk_last_launch(last, attrs)
    assert last[9] == 0x5200
    if fused:
        other = _FakeArray((n,), (isz,), 0x7f00_4000_0002, dt)               # another bias: re-pointed too
        assert L.gemm_into(key, x, w, out, 0, other) and len(L._calls) == 4
        assert params_of(next(c for c in L._calls if c[-1] == other.data.ptr)) == fresh(x, w, out, other)
    n_calls = len(L._calls)
    bad_x = _FakeArray((m, k), (k * isz, isz), 0x7e00_0000_0008, dt)          # 8 bytes off 16-byte alignment
    assert not L.gemm_into(key, bad_x, w, out, 0, bias) and len(L._calls) == n_calls


# --------------------------------------------------------------------------------------------------
# Candidates (MANIFEST "candidate"): probed and launchable by key, outside every rule, never shipped
# --------------------------------------------------------------------------------------------------
# key -> CTA tile, cluster, stages, kernel schedule, epilogue schedule (cutlass/gen/families.py, FAMILIES' candidates)
_CO, _PP = "TmaWarpSpecializedCooperative", "TmaWarpSpecializedPingpong"
CANDIDATE_SPEC = {
    "gemm/tf32/tn/xl/sm90": ([128, 256, 32], [2, 1, 1], 4, _CO, "NoSmemWarpSpecialized"),
    "gemm/tf32/tn/xl12/sm90": ([128, 256, 32], [1, 2, 1], 4, _CO, "NoSmemWarpSpecialized"),
    "gemm/tf32/tn/co12/sm90": ([256, 128, 32], [1, 2, 1], 4, _CO, "NoSmemWarpSpecialized"),
    "gemm/tf32/tn/pp64/sm90": ([64, 256, 32], [2, 1, 1], 5, _PP, "NoSmemWarpSpecialized"),
    "gemm/tf32/tn/pp64t/sm90": ([64, 256, 32], [2, 1, 1], 4, _PP, "TmaWarpSpecialized"),
    **{f"gemm/{d}/tn/coopt12/sm90": ([256, 128, 64], [1, 2, 1], 4, _CO, _CO) for d in ("f16", "bf16")},
    **{f"gemm/{d}/tn/xlt/sm90": ([128, 256, 64], [2, 1, 1], 4, _CO, _CO) for d in ("f16", "bf16")},
    **{f"gemm/{d}/tn/co128t/sm90": ([128, 128, 64], [1, 1, 1], 6, _CO, _CO) for d in ("f16", "bf16")},
    **{f"gemm/{d}/tn/co64t/sm90": ([128, 64, 64], [1, 1, 1], 8, _CO, _CO) for d in ("f16", "bf16")},
    **{f"gemm/{d}/tn/ppm64/sm90": ([64, 128, 64], [2, 1, 1], 8, _PP, "TmaWarpSpecialized") for d in ("f16", "bf16")},
    # co128t with CUTLASS's stream-K tile scheduler (split-K decomposition; STREAM_K below)
    **{f"gemm/{d}/tn/co128sk/sm90": ([128, 128, 64], [1, 1, 1], 6, _CO, _CO) for d in ("f16", "bf16")},
    # few-row tiles after cuBLAS's choices (one wave of about 128 tiles)
    **{f"gemm/{d}/tn/fr96/sm90": ([128, 96, 64], [1, 2, 1], 7, _CO, _CO) for d in ("f16", "bf16")},
    **{f"gemm/{d}/tn/fr64/sm90": ([64, 64, 64], [2, 4, 1], 12, _PP, "TmaWarpSpecialized") for d in ("f16", "bf16")},
    **{f"gemm/{d}/tn/fr192/sm90": ([128, 192, 64], [2, 1, 1], 4, _CO, _CO) for d in ("f16", "bf16")},
}
# one stage fewer than fits: the emitter writes the count as a cute integral constant and cute has no _13
CUTE_STAGE_CAP = {f"gemm/{d}/tn/fr64/sm90" for d in ("f16", "bf16")}
# the candidates with the stream-K tile scheduler, and their data-parallel twins (same .cu text but the scheduler)
STREAM_K = {f"gemm/{d}/tn/co128sk/sm90": f"gemm/{d}/tn/co128t/sm90" for d in ("f16", "bf16")}


def test_candidates_are_the_pinned_ones_and_most_stages_that_fit():
    """Each candidate as pinned: tile, cluster, schedules; the probed shared memory holds its stages and not one
    more (the pinned count is the most that fits 227 KiB); TMA boxes are the CTA tile's K x rows, the multicast
    operand split over the cluster (A over cluster N, B over cluster M); one k-block's transaction bytes."""
    assert {e["key"] for e in CANDIDATES} == set(CANDIDATE_SPEC)
    for e in CANDIDATES:
        tile, cluster, stages, ks, es = CANDIDATE_SPEC[e["key"]]
        hp = e["host_params"]
        assert hp["status"] == "probed" and e["layout_tag"] == "tn" and "fusion" not in e
        assert e["tile"] == tile and e["cluster"] == cluster and e["stages"] == stages
        assert e["kernel_schedule"] == ks and e["epilogue_schedule"] == es
        assert hp["cluster"] == cluster and hp["block"] == [384, 1, 1]
        assert S.is_stream_k(e) == (e["key"] in STREAM_K)
        assert hp["workspace_bytes"] == ("per golden" if S.is_stream_k(e) else 0)
        es_bytes = 4 if e["dtype"] == "tf32" else 2
        tm, tn, tk = tile
        stage = (tm + tn) * tk * es_bytes
        assert stages * stage <= hp["smem_bytes"] <= _SM90_SMEM
        assert (_SM90_SMEM < hp["smem_bytes"] + stage) != (e["key"] in CUTE_STAGE_CAP)
        t = hp["tma"]
        assert t["box_A"] == [tk, tm // cluster[1], 1] and t["box_B"] == [tk, tn // cluster[0], 1]
        assert hp["tma_transaction_bytes"] == [stage, tm * tk * es_bytes, tn * tk * es_bytes]
        assert t["data_type"] == (11 if e["dtype"] == "tf32" else 1) and t["swizzle"] == 3
        epi_tma = es != "NoSmemWarpSpecialized"
        # the stream-K scheduler's Params are 128 bytes longer than the persistent one's (padded to 128)
        assert S.is_epi_tma(e) == epi_tma
        assert hp["params_size"] == (1792 if epi_tma else 1024) + (128 if S.is_stream_k(e) else 0)
        assert sorted(hp["descriptors"]) == (["A", "B", "C", "D"] if epi_tma else ["A", "B"])
        for g in hp["golden"]:
            if g["case"][13] >= 2:
                assert all(x % c == 0 for x, c in zip(g["grid"], cluster)), (e["key"], g)
            # float32 C and D are 4-byte aligned in every case (direct stores need that much)
            assert e["dtype"] != "tf32" or (g["case"][11] % 16 == 0 and g["case"][12] % 16 == 0)
    names = [e["kernel"] for e in MANIFEST["instances"]]
    assert len(names) == len(set(names))


def test_candidates_are_unshipped_unlisted_and_outside_the_rule(tmp_path, monkeypatch):
    from gpk_array._kernels import gemm
    from gpk_array._kernels.cutlass import launch_sm90 as L
    cands = {e["key"] for e in CANDIDATES + FUSED_CAND if e.get("candidate")}
    assert set(L.instance_keys(candidates=True)) == cands and not cands & set(L.instance_keys())
    assert all(L.is_candidate(k) for k in cands) and not any(L.is_candidate(e["key"]) for e in SHIPPED90)
    assert not any(L.shipped_path(k).is_file() for k in cands)
    for dt in ("f16", "bf16", "tf32"):
        for lay in ("tn", "nn"):
            assert not {f"gemm/{dt}/{lay}/{f}/sm90" for f in L.layout_families(dt, lay)} & cands
    sizes = [1, 128, 768, 1024, 2048, 3072, 4096, 8192, 16384]
    for dt in ("f16", "bf16", "tf32"):
        for m in sizes:
            for n in sizes:
                for k in sizes:
                    for forced in (False, True):
                        fam = gemm.sm90_family(m, n, k, forced, dt, "tn")
                        assert fam is None or f"gemm/{dt}/tn/{fam}/sm90" not in cands, (dt, m, n, k, forced)
    # --ship never copies a candidate (and keeps the shipped set); --candidates --ship is refused
    shipped = []
    monkeypatch.setattr(L, "SHIPPED_DIR", tmp_path)
    monkeypatch.setattr(L, "build",
                        lambda k, backend=None, force=False: shipped.append(k) or {"path": str(tmp_path / "x")})
    monkeypatch.setattr("shutil.copyfile", lambda src, dst: Path(dst).write_bytes(b"\x7fELF"))
    assert L._main(["--ship"]) == 0
    assert set(shipped) == {e["key"] for e in SHIPPED90 if e["host_params"].get("status") == "probed"}
    with pytest.raises(SystemExit):
        L._main(["--ship", "--candidates"])


@pytest.mark.parametrize("entry", [e for e in CANDIDATES if e["dtype"] == "tf32" and not S.is_epi_tma(e)],
                         ids=lambda e: e["key"])
def test_tf32_direct_store_candidates_write_float32_c_and_d(entry):
    """The direct-store TF32 candidates take C and D by pointer and (ld, M * ld) element strides, 4-byte aligned
    (no TMA epilogue: any N, as for the 16-bit direct-store instances)."""
    import struct
    la, enc = _build(entry, (1000, 3000, 4104, 4112, 4120, 3008, 3016, 0.5, 0.25,
                             0x7f0000001000, 0x7f0000200000, 0x7f0000400004, 0x7f0000600008, 132, 1, 0))
    off = entry["host_params"]["offsets"]
    assert len(enc.calls) == 2
    assert struct.unpack_from("<Q2q", la.params, off["epilogue.ptr_C"]) == (0x7f0000400004, 3008, 1000 * 3008)
    assert struct.unpack_from("<Q2q", la.params, off["epilogue.ptr_D"]) == (0x7f0000600008, 3016, 1000 * 3016)
    ok = dict(m=17, n=12, k=20, lda=20, ldb=20, ldc=12, ldd=12, ptrs=(0x1000, 0x2000, 0x3004, 0x3008))
    assert S.sm90_unsupported(entry, **ok) is None
    assert S.sm90_unsupported(entry, **{**ok, "n": 13, "ldc": 13, "ldd": 13}) is None
    assert "4-byte" in S.sm90_unsupported(entry, **{**ok, "ptrs": (0x1000, 0x2000, 0x3002, 0x3008)})


def test_candidate_sweep_plan_covers_every_candidate():
    """benchmarks/diag/sm90_candidate_sweep.py (the GPU sweep that decides on the candidates) plans, without a GPU or
    CuPy, every candidate beside incumbents that exist in the manifest."""
    code = ("import sys, json; import benchmarks.diag.sm90_candidate_sweep as W; "
            "assert W.main(['--plan']) == 0; assert 'cupy' not in sys.modules, 'cupy imported'; "
            "print(json.dumps(W.plan(W.GROUPS)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=False)
    assert r.returncode == 0, r.stderr
    pl = json.loads(r.stdout.splitlines()[-1])
    assert {k for g in pl.values() for k in g["candidates"]} == {e["key"] for e in CANDIDATES}
    for g, v in pl.items():
        assert all(S.instance(k)["dtype"] == g and not S.instance(k).get("candidate") for k in v["incumbents"])


# --------------------------------------------------------------------------------------------------
# Stream-K candidates (co128sk): split-K Params, workspace, the launch's workspace handling
# --------------------------------------------------------------------------------------------------
SK = [S.instance(k) for k in STREAM_K]


@pytest.mark.parametrize("entry", SK, ids=lambda e: e["key"])
def test_stream_k_is_its_twin_but_for_the_scheduler(entry):
    """co128sk's .cu text is co128t's with cutlass::gemm::StreamKScheduler for void (and the kernel name suffixed);
    its Params hold the same mainloop and epilogue bytes, then the stream-K scheduler's fields and the workspace."""
    twin = S.instance(STREAM_K[entry["key"]])
    a = (KDIR / entry["file"]).read_text().replace("_streamk", "").splitlines()
    b = (KDIR / twin["file"]).read_text().splitlines()
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(a) == len(b) and [d[0].strip() for d in diff[1:]] == ["cutlass::gemm::StreamKScheduler"]
    assert entry["kernel"] == twin["kernel"] + "_streamk" and entry["tile_scheduler"] == "StreamK"
    hp, thp = entry["host_params"], twin["host_params"]
    assert hp["smem_bytes"] == thp["smem_bytes"] and hp["tma"] == thp["tma"]
    assert hp["descriptors"] == thp["descriptors"]
    assert hp["epilogue_tma_transaction_bytes"] == thp["epilogue_tma_transaction_bytes"]
    for m, off in thp["offsets"].items():
        if not m.startswith(("scheduler", "workspace")):
            assert hp["offsets"][m] == off, m
    case = (512, 3072, 768, 768, 768, 3072, 3072, 1.0, 0.0, 0x7f0000000000, 0x7f0010000000, 0x7f0020000000,
            0x7f0020000000, 132, 1, 0)
    la, _ = _build(entry, case + (4, SPLIT_K, 0, 0x7b0000000000))
    tla, _ = _build(twin, case)
    end = hp["offsets"]["scheduler"]
    assert la.params[:end] == tla.params[:end]
    # the data-parallel twin truncates its grid to the 96 tiles; the stream-K scheduler launches a whole wave
    assert tla.grid == (96, 1, 1) and la.grid == (132, 1, 1)


def test_stream_k_split_k_scheduler_fields():
    """What the split-K decomposition writes, read back: 512x768x3072 (M x K x N) with 5 splits of the 12 k-blocks of
    each of the 96 tiles (2 "big" splits of 3, 3 of 2), the workspace address in both places."""
    import struct
    e = SK[0]
    off = e["host_params"]["offsets"]
    la = S.build_sm90_launch(e, 512, 3072, 768, 0x10000, 0x20000, 0x30000, 0x30000, sm_count=132, splits=5,
                             workspace=0x7b0000000000, reduction="nondeterministic", encode=RecordingEncoder())

    def rd(fmt, m):
        return struct.unpack_from(fmt, la.params, off[m])

    assert rd("<Q", "scheduler.units_per_problem_") == (96,)
    assert rd("<i", "scheduler.divmod_splits_.divisor") == (5,)
    assert rd("<i", "scheduler.divmod_tiles_per_output_tile_.divisor") == (12,)
    assert rd("<I", "scheduler.big_units_") == (2,)
    assert rd("<i", "scheduler.divmod_k_tiles_per_sk_unit_.divisor") == (2,)
    assert rd("<i", "scheduler.divmod_k_tiles_per_sk_big_unit_.divisor") == (3,)
    assert rd("<i", "scheduler.reduction_mode_") == (1,)
    assert rd("<Q", "scheduler.reduction_workspace_") == rd("<Q", "workspace") == (0x7b0000000000,)
    assert la.workspace_bytes == 96 * 128 * 128 * 4 + 96 * 2 * 4 and la.workspace_zero == (96 * 128 * 128 * 4, 768)


def test_stream_k_fast_divmod_32_divides_like_the_device():
    """cutlass::FastDivmod (32-bit, host constructor): quotient = umulhi(x, multiplier) >> shift_right."""
    rng = random.Random(7)
    for d in list(range(2, 300)) + [rng.randrange(2, 1 << 20) for _ in range(200)]:
        dv, mul, sh = S._fast_divmod_32(d)
        assert dv == d and 0 < mul < 1 << 32
        for x in [0, 1, d - 1, d, d + 1, 5 * d + 3] + [rng.randrange(0, 1 << 24) for _ in range(20)]:
            assert ((x * mul) >> 32) >> sh == x // d, (d, x)
    assert S._fast_divmod_32(1) == (1, 0, 0)


def test_stream_k_workspace_and_splits():
    """The workspace follows CUTLASS's get_workspace_size (probed per golden: the Params test checks every one);
    splits are clamped to sm_count and the k-blocks per tile; 1 split needs none."""
    e = SK[0]
    hp = e["host_params"]
    assert any(g["workspace"] for g in hp["golden"]) and any(not g["workspace"] for g in hp["golden"])
    for g in hp["golden"]:
        m, n, k = g["case"][:3]
        w = S.sm90_workspace(e, m, n, k, g["case"][13], g["case"][16], g["case"][14], RASTER[g["case"][15]])
        assert w["bytes"] == g["workspace"], g["case"]
        if w["bytes"]:
            off, nbytes = w["zero"]
            assert off % 128 == 0 and nbytes % 128 == 0 and off + nbytes == w["bytes"]
    assert S.split_k_splits(e, 768, 132, 200) == 12 and S.split_k_splits(e, 3072, 132, 200) == 48
    assert S.split_k_splits(e, 3072, 4, 8) == 4 and S.split_k_splits(e, 64, 132, 8) == 1
    assert S.sm90_workspace(e, 512, 3072, 64, 132, 8)["bytes"] == 0        # one k-block: nothing to split
    with pytest.raises(ValueError, match="at least 1"):
        S.split_k_splits(e, 768, 132, 0)
    with pytest.raises(ValueError, match="workspace of"):
        S.build_sm90_launch(e, 512, 3072, 768, 0x10000, 0x20000, 0x30000, 0x30000, splits=2,
                            encode=RecordingEncoder())
    with pytest.raises(ValueError, match="aligned"):
        S.build_sm90_launch(e, 512, 3072, 768, 0x10000, 0x20000, 0x30000, 0x30000, splits=2, workspace=0x1008,
                            encode=RecordingEncoder())
    with pytest.raises(ValueError, match="reduction"):
        S.build_sm90_launch(e, 512, 3072, 768, 0x10000, 0x20000, 0x30000, 0x30000, splits=2, workspace=0x1000,
                            reduction="fast", encode=RecordingEncoder())
    # the data-parallel instances take none of it (and their LaunchArgs say: no workspace)
    twin = S.instance(STREAM_K[e["key"]])
    assert S.sm90_workspace(twin, 512, 3072, 768, 132, 4)["bytes"] == 0
    with pytest.raises(ValueError, match="stream-K"):
        S.build_sm90_launch(twin, 512, 3072, 768, 0x10000, 0x20000, 0x30000, 0x30000, splits=2, workspace=0x1000,
                            encode=RecordingEncoder())
    la = S.build_sm90_launch(twin, 512, 3072, 768, 0x10000, 0x20000, 0x30000, 0x30000, encode=RecordingEncoder())
    assert la.workspace_bytes == 0 and la.workspace_zero == (0, 0)


def test_stream_k_launch_zeroes_the_barriers_first(launch_stub, monkeypatch):
    """launch_sm90.launch of a split-K co128sk launch: cuMemsetD8Async clears the barrier part of the workspace
    (LaunchArgs.workspace_zero, after the fp32 partials) on the launch's stream, before cuLaunchKernel; a
    launch without a workspace (splits 1, or any other instance) sets nothing."""
    from gpk_array._kernels.cutlass import launch_sm90 as L
    monkeypatch.setattr(L, "_driver", {"lib": L._declare(launch_stub)})
    monkeypatch.setattr(L, "get_function", lambda k: (None, 0xF00D, None))
    e = SK[0]
    case = (512, 768, 3072, 3072, 3072, 768, 768, 1.0, 0.0, 0x7f0000000000, 0x7f0010000000, 0x7f0020000000,
            0x7f0020000000, 132, 1, 0)
    la, _ = _build(e, case + (4, SPLIT_K, 0, 0x7b0000000000))
    assert la.workspace == 0x7b0000000000 and la.workspace_zero == (24 * 128 * 128 * 4, 256)
    ms = (ctypes.c_longlong * 6)()
    for stream in (0x5001, 0x5002):
        L.launch(e["key"], la, L._packed(la), stream_ptr=stream)
        launch_stub.gpk_last_memset(ms)
        assert list(ms[:4]) == [0x7b0000000000 + 24 * 128 * 128 * 4, 0, 256, stream] and ms[4] < ms[5]
    seq = ms[5]
    la1, _ = _build(e, case + (1, SPLIT_K, 0, 0x7b0000000000))      # one split: no workspace, no memset
    assert la1.workspace_bytes == 0 and la1.workspace == 0
    L.launch(e["key"], la1, L._packed(la1), stream_ptr=0x5003)
    launch_stub.gpk_last_memset(ms)
    assert ms[5] == seq + 1 and ms[4] < seq


def test_stream_k_prepare_allocates_a_workspace_per_launch(monkeypatch):
    """launch_sm90.prepare with splits: a workspace of sm90_workspace's size from CuPy (kept with the prepared
    launch), its address in the Params; cached per splits and reduction mode; splits 1 allocates nothing."""
    import sys
    import types
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90 as L, tma
    allocs = []

    def empty(n, dtype=None):
        allocs.append(n)
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=0x7b00_0000_0000 + 0x1000_0000 * len(allocs)))
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(empty=empty, uint8="uint8"))
    monkeypatch.setattr(tma, "encode_tiled", RecordingEncoder())
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(L, "_params_cache", {})
    key = SK[0]["key"]
    m, k, n = 512, 3072, 768
    x = _FakeArray((m, k), (2 * k, 2), 0x10000)
    w = _FakeArray((n, k), (2 * k, 2), 0x20000)
    out = _FakeArray((m, n), (2 * n, 2), 0x30000)
    la, (raw, kp, _) = L.prepare(x, w, out, 1.0, 0.0, None, key, 132, splits=4)
    want = S.sm90_workspace(SK[0], m, n, k, 132, 4)
    assert allocs == [want["bytes"]] and la.workspace == 0x7b00_1000_0000 and raw._gpk_workspace is not None
    assert la == S.build_sm90_launch(SK[0], m, n, k, 0x10000, 0x20000, 0x30000, 0x30000, sm_count=132, splits=4,
                                     workspace=la.workspace, encode=RecordingEncoder())
    assert L.prepare(x, w, out, 1.0, 0.0, None, key, 132, splits=4)[0] is la and len(allocs) == 1
    la2 = L.prepare(x, w, out, 1.0, 0.0, None, key, 132, splits=4, reduction="nondeterministic")[0]
    assert len(allocs) == 2 and la2.workspace != la.workspace
    la3, (raw3, _, _) = L.prepare(x, w, out, 1.0, 0.0, None, key, 132)
    assert len(allocs) == 2 and la3.workspace_bytes == 0 and raw3._gpk_workspace is None
