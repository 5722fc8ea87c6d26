"""Launcher of the token sampler kernels in cuda/sampling.cu, on CuPy arrays (the current CuPy stream).

Two kernels choose the same tokens: on SM90 and later, for vocabularies of up to CLUSTER_MAX_V tokens, one
thread block cluster of CLUSTER blocks per row (``gpk_sample_cl_<dt>``, cuda/sampling_cluster.cuh: the row in the
registers of 8 SMs); elsewhere one block per row (``gpk_sample_<dt>``, with the ``work`` scratch buffer).
The caller (gpk_array.llm.sampling.SlotSampler) owns every buffer; the launch allocates nothing, synchronizes
nothing and copies nothing to the host, so it can be recorded in a CUDA graph.
"""

from __future__ import annotations

import numpy as np

from . import loader
from ._common import dtype_code

SAMPLING_FILE = "sampling.cu"
DTYPES = ("f32", "f16", "bf16")
THREADS = 1024
CLUSTER = 8                             # blocks per row of the cluster kernel (sampling_cluster.cuh: CL)
CLUSTER_MAX_V = CLUSTER * 8 * THREADS   # its capacity: 8 elements per thread (E)
CLUSTER_MAX_ROWS = 16                   # more rows: one block per row (8 SMs a row would run in several waves)
_cluster_arch: dict = {}                # device id -> whether it has thread block clusters (SM90+)


def variants() -> list[tuple[str, tuple]]:
    return [(SAMPLING_FILE, ())]


def expected_kernels() -> dict[str, set[str]]:
    return {SAMPLING_FILE: {f"gpk_sample_{p}{dt}" for dt in DTYPES for p in ("", "cl_")}}


def expected_by_module() -> dict[tuple[str, tuple], set[str]]:
    return {(SAMPLING_FILE, ()): expected_kernels()[SAMPLING_FILE]}


def _i64(a, n, what):
    if a is None:
        return None
    if a.dtype != np.int64 or a.size != n or not a.flags.c_contiguous:
        raise ValueError(f"sampler: {what} must be {n} contiguous int64 values, got {a.dtype} {a.shape}")
    return a


def use_cluster(V: int, rows: int = 1) -> bool:
    """Whether `rows` rows of V logits go to the cluster kernel on the current device (SM90+, V <= CLUSTER_MAX_V,
    rows <= CLUSTER_MAX_ROWS)."""
    if V > CLUSTER_MAX_V or rows > CLUSTER_MAX_ROWS:
        return False
    dev = loader.current_device_id()
    ok = _cluster_arch.get(dev)
    if ok is None:
        ok = _cluster_arch[dev] = int(loader.device_arch(dev)[:2]) >= 90
    return ok


def sample(logits, table, counts, seen, bias, counted, work, out, logprobs, logprob_ids, *, tok, pos, slots=None,
           prompt=None, next_tok=None, next_pos=None, max_pos=0):
    """One sampler step over the rows of logits (R, V) (float32, float16 or bfloat16, unit stride along V); the
    arguments are those of gpk_array.llm.sampling.run_numpy (work: float32 scratch of >= R rows of >= V, a
    multiple of 4, 16-byte aligned). ValueError when a buffer has the wrong dtype or layout."""
    dt = dtype_code(logits.dtype)
    if dt not in DTYPES or logits.ndim != 2 or logits.strides[1] != logits.itemsize:
        raise ValueError(f"sampler: logits must be (rows, vocab) float32/float16/bfloat16 with unit stride, got "
                         f"{logits.dtype} {logits.shape}")
    R, V = logits.shape
    B = table.shape[0]
    if R == 0:
        return
    checks = ((table, np.uint64, (B, 8)), (counts, np.int32, (B, V)), (seen, np.uint8, (B, V)),
              (bias, np.float32, (B, V)), (counted, np.int64, (B,)), (out, np.int64, (R,)),
              (logprobs, np.float32, (R, 21)), (logprob_ids, np.int32, (R, 20)))
    for a, dtype, shape in checks:
        if a.dtype != dtype or tuple(a.shape[:len(shape)]) != shape or not a.flags.c_contiguous:
            raise ValueError(f"sampler: a buffer must be {np.dtype(dtype)} {shape}, got {a.dtype} {a.shape}")
    if (work.dtype != np.float32 or work.ndim != 2 or work.shape[0] < R or work.shape[1] < V or work.shape[1] % 4
            or not work.flags.c_contiguous or work.data.ptr % 16):
        raise ValueError(f"sampler: work must be float32 (>= {R}, >= {V}), rows of a multiple of 4, 16-byte aligned")
    tok, pos, slots = _i64(tok, R, "tok"), _i64(pos, R, "pos"), _i64(slots, R, "slots")
    if prompt is not None and (prompt.dtype != np.int64 or prompt.ndim != 2 or not prompt.flags.c_contiguous):
        raise ValueError("sampler: prompt must be (rows, length) contiguous int64")
    stride = 0 if prompt is None or prompt.shape[0] == 1 else prompt.shape[1]
    if use_cluster(V, R):
        fn = loader.get_function(SAMPLING_FILE, f"gpk_sample_cl_{dt}")
        loader.launch(fn, R * CLUSTER, THREADS, (logits, np.int64(logits.strides[0] // logits.itemsize), np.int32(V),
                                                 slots, tok, pos, table, counts, seen, bias, counted, prompt,
                                                 np.int64(stride), out, logprobs, logprob_ids, next_tok, next_pos,
                                                 np.int64(max_pos)), pdl=True)
        return
    fn = loader.get_function(SAMPLING_FILE, f"gpk_sample_{dt}")
    loader.launch(fn, R, THREADS, (logits, np.int64(logits.strides[0] // logits.itemsize), np.int32(V), slots, tok,
                                   pos, table, counts, seen, bias, counted, prompt, np.int64(stride), work,
                                   np.int64(work.shape[1]), out,
                                   logprobs, logprob_ids, next_tok, next_pos, np.int64(max_pos)), pdl=True)
