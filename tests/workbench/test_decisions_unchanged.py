"""Moving the dispatch rules into the registry changed no decision: every selection function of
gpk_array._kernels.gemm and every routing answer of gpk_array._gpu, compared with the rules as the code wrote them
before (tests/workbench/_legacy_rules.py, a verbatim copy), for every shape the GEMM benchmark sweeps
(benchmarks/gemm_bench.py) and a grid around every threshold. CPU only: the choices are pure functions of the shape."""
import itertools
import os

import numpy as np
import pytest

from benchmarks import gemm_bench
from gpk_array import _gpu
from gpk_array._kernels import gemm as new
from gpk_array.workbench import registry

from . import _legacy_rules as old

EDGES = [1, 7, 8, 64, 96, 127, 128, 129, 255, 256, 384, 511, 512, 513, 640, 768, 1000, 1023, 1024, 1025, 1536,
         2047, 2048, 2049, 2304, 3072, 4095, 4096, 4097, 6144, 8192, 16384, 32768]
SWEPT = sorted({(m, n, k) for m, k, n in gemm_bench._shapes()} | {(8192, 3072, 768), (512, 3072, 768)})
DTYPES = ["float16", "bfloat16", "float32", np.dtype("float16"), np.float32]
ACTIVATIONS = [None, "relu", "gelu", "gelu_tanh", "silu", "tanh"]


def _shapes():
    return SWEPT + list(itertools.product(EDGES, EDGES, EDGES))


def test_the_registry_in_use_is_the_shipped_one():
    assert "GPK_KERNEL_REGISTRY" not in os.environ
    assert registry.errors() == []
    recs = registry.load()
    assert {t: len(v["records"]) for t, v in recs.items()} == {"gemm_sm90": 7, "gemm_sm90_fused": 14, "routing": 64}


def test_the_swept_shapes_are_covered():
    assert len(SWEPT) >= 27
    # the sweep hits both sides of the plain rule: some shapes take ppt, most cuBLASLt
    picks = {old.select_sm90("float16", "nn", m, n, k) for m, n, k in SWEPT}
    assert "gemm/f16/nn/ppt/sm90" in picks and None in picks


@pytest.mark.parametrize("forced", [False, True])
def test_plain_gemm_choices_unchanged(forced):
    diff = []
    for m, n, k in _shapes():
        for dt, lay, tf in itertools.product(DTYPES, ("nn", "tn", "nt"), (False, True)):
            a = old.select_sm90(dt, lay, m, n, k, forced, tf)
            b = new.select_sm90(dt, lay, m, n, k, forced, tf)
            if a != b:
                diff.append((m, n, k, dt, lay, tf, a, b))
        for code, lay in itertools.product(("f16", "bf16", "tf32"), ("nn", "tn")):
            if old.sm90_family(m, n, k, forced, code, lay) != new.sm90_family(m, n, k, forced, code, lay):
                diff.append(("family", m, n, k, code, lay))
            if not forced and (old.sm90_family(m, n, k, False, code, lay, 2048)
                               != new.sm90_family(m, n, k, False, code, lay, 2048)):
                diff.append(("family min_m", m, n, k, code, lay))
    assert diff == []


@pytest.mark.parametrize("forced", [False, True])
def test_fused_choices_unchanged(forced):
    diff = []
    for m, n, k in _shapes():
        for dt, act in itertools.product(DTYPES, ACTIVATIONS):
            a = old.select_sm90_fused(dt, m, n, k, act, forced)
            b = new.select_sm90_fused(dt, m, n, k, act, forced)
            if a != b:
                diff.append((m, n, k, dt, act, a, b))
    assert diff == []


def test_cheap_preconditions_unchanged():
    diff = []
    for m, n, k in _shapes():
        for isz in (2, 4):
            if old.sm90_may_take(m, n, isz) != new.sm90_may_take(m, n, isz):
                diff.append(("may_take", m, n, isz))
            for act in ACTIVATIONS[:-1]:
                if old.sm90_fused_may_take(m, n, isz, act) != new.sm90_fused_may_take(m, n, isz, act):
                    diff.append(("fused_may_take", m, n, isz, act))
        if old._few_rows_family(m, n) != new._few_rows_family(m, n):
            diff.append(("few_rows", m, n))
    assert diff == []
    for name in ("SM90_MIN_M", "TF32_MIN_TILES", "FEW_ROWS_MAX", "WAVE_SMS", "TANH_PPT_MIN_M", "FUSED_ALWAYS"):
        assert getattr(new, name) == getattr(old, name), name


def test_routing_unchanged():
    assert dict(_gpu.REDUCE_ROUTE) == dict(old.REDUCE_ROUTE)
    assert _gpu.REDUCE_F32_FULL_MIN == old.REDUCE_F32_FULL_MIN and _gpu.REDUCE_F32_AXIS_MIN == old.REDUCE_F32_AXIS_MIN
    if "GPK_OWN_KERNELS_MIN" not in os.environ:
        assert _gpu.OWN_KERNELS_MIN == old.OWN_KERNELS_MIN
