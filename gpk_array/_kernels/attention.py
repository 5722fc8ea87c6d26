"""Launcher of the fused attention kernel in cuda/attention.cu (FlashAttention-2 style), on CuPy arrays.

``attention(q, k, v, causal, scale)`` returns ``softmax(q k^T * scale [+ causal mask]) v`` as a new CuPy array, or
None where the kernel does not cover the case (then the caller runs its other path). Covered:

- float16 / bfloat16, q, k, v of one dtype; head dim D = q's = k's = v's last extent, 64 or 128;
- shapes (..., Lq, D) and (..., Lk, D) with equal leading dims (no broadcasting), which collapse to at most two
  axes (batch, heads) over all three operands; Lq, Lk >= 1, and Lq <= Lk when causal (causal: query i attends
  keys j <= i + Lk - Lq);
- any strides with the last axis contiguous, every other stride a multiple of 8 elements and every base pointer
  16-byte aligned: q, k, v may be strided views of one fused (B, T, 3, H, D) QKV projection, as GPT-2's are.

The result follows q's layout: where q is a (..., H, T, D) view of a (..., T, H, D) array (its head stride smaller
than its row stride), the output is allocated (..., T, H, D) and returned as the same kind of view, so the model's
transpose back to (..., T, H * D) is free; otherwise it is C-contiguous.

Nothing here synchronizes, copies to the host or allocates anything but the result, so a call can be recorded in
a CUDA graph; on SM90 in a capture it is a programmatic dependent launch (the kernel waits before it reads).
``plan()`` does the layout arithmetic without a GPU (tests use it).
"""

from __future__ import annotations

import math

import numpy as np

from . import loader
from ._common import dtype_code

ATTN_FILE = "attention.cu"
DTYPES = ("f16", "bf16")
HEAD_DIMS = (64, 128)
# queries per CTA (attention.cu's 64 * MT: MT 16-row m-tiles per warp) by head dim; the first is the default
BLOCK_M = {64: (64, 128), 128: (64,)}
BN = 64        # keys per tile
THREADS = 128
_ALIGN_ELEMS = 8   # 16 bytes of 2-byte elements
_MAX_GRID_Y = 65535
_LOG2E = 1.4426950408889634


def variants() -> list[tuple[str, tuple]]:
    """The (cu_file, options) modules this front end loads."""
    return [(ATTN_FILE, ())]


def kernel_name(dt: str, d: int, bm: int = 64) -> str:
    """The extern "C" name of the kernel for dtype code dt, head dim d and bm queries per CTA."""
    return f"gpk_attn_fwd_{dt}_d{d}" + ("" if bm == 64 else f"_m{bm}")


def expected_kernels() -> dict[str, set[str]]:
    """Every kernel name the launcher may request, by file."""
    return {ATTN_FILE: {kernel_name(dt, d, bm) for dt in DTYPES for d in HEAD_DIMS for bm in BLOCK_M[d]}}


def expected_by_module() -> dict[tuple[str, tuple], set[str]]:
    """expected_kernels() keyed by (cu_file, options) module."""
    return {(ATTN_FILE, ()): expected_kernels()[ATTN_FILE]}


def smem_bytes(d: int, bm: int = 64, itemsize: int = 2) -> int:
    """Dynamic shared memory of one CTA: the Q tile of bm rows and two buffers each of K and V."""
    return (bm + 4 * BN) * d * itemsize


def choose_block_m(d: int, bh: int, lq: int, sms: int) -> int:
    """Queries per CTA: 128 (two m-tiles per warp: half the shared-memory reads per flop) for D = 64 where that grid
    still has at least two CTAs per SM, else 64 (more CTAs for small batches)."""
    if 128 in BLOCK_M[d] and bh * -(-lq // 128) >= 2 * sms:
        return 128
    return 64


def _collapse(shape, stride_sets):
    """Leading axes of extent `shape` (strides in elements, one tuple per operand) merged where every operand is
    contiguous across them, extent-1 axes dropped; None when more than two axes remain. Returns (B, H, strides)
    with strides a list of (batch stride, head stride) per operand."""
    dims = [(int(s), [int(st[i]) for st in stride_sets]) for i, s in enumerate(shape) if s != 1]
    merged: list = []
    for s, sts in dims:
        if merged and all(pst == st * s for pst, st in zip(merged[-1][1], sts)):
            merged[-1] = (merged[-1][0] * s, sts)
        else:
            merged.append((s, sts))
    if len(merged) > 2:
        return None
    while len(merged) < 2:
        merged.insert(0, (1, [0] * len(stride_sets)))
    (B, sb), (H, sh) = merged
    return B, H, [(sb[i], sh[i]) for i in range(len(stride_sets))]


def _out_layout(q_shape, q_strides):
    """"bthd" where q is a (..., H, T, D) view of a (..., T, H, D) layout (its head stride below its row stride),
    else "c" (a C-contiguous result)."""
    if len(q_shape) >= 3 and q_shape[-3] > 1 and q_shape[-2] > 1 and 0 < q_strides[-3] < q_strides[-2]:
        return "bthd"
    return "c"


def plan(q_shape, k_shape, v_shape, strides, ptrs, itemsize, causal, bm=64):
    """The launch of the kernel for operands of these shapes, element strides (q, k, v, out: tuples of one
    stride per axis), data pointers (q, k, v, out) and item size, with bm queries per CTA, or None where it does
    not cover them: a dict with grid, block, d, B, H, Lq, Lk and the kernel's stride arguments in order (batch, head
    and row strides of q, k, v, out)."""
    if itemsize != 2 or len(q_shape) < 2 or not (len(q_shape) == len(k_shape) == len(v_shape)):
        return None
    lead = tuple(q_shape[:-2])
    if tuple(k_shape[:-2]) != lead or tuple(v_shape[:-2]) != lead:
        return None
    Lq, d = int(q_shape[-2]), int(q_shape[-1])
    Lk = int(k_shape[-2])
    if d not in HEAD_DIMS or bm not in BLOCK_M[d] or k_shape[-1] != d or v_shape[-1] != d or v_shape[-2] != Lk:
        return None
    if Lq < 1 or Lk < 1 or (causal and Lq > Lk):
        return None
    for st in strides:
        if st[-1] != 1:
            return None
    if any(p % 16 for p in ptrs):
        return None
    got = _collapse(lead, [st[:-2] for st in strides])
    if got is None:
        return None
    B, H, bh_strides = got
    rows = [st[-2] for st in strides]
    row_extent = (Lq, Lk, Lk, Lq)
    args = []
    for (sb, sh), sr, n in zip(bh_strides, rows, row_extent):
        sb = sb if B > 1 else 0   # a stride along an extent-1 axis is never used
        sh = sh if H > 1 else 0
        sr = sr if n > 1 else 0
        if sb % _ALIGN_ELEMS or sh % _ALIGN_ELEMS or sr % _ALIGN_ELEMS:
            return None
        args += [sb, sh, sr]
    nq = -(-Lq // bm)
    if B * H == 0 or B * H > 2**31 - 1 or nq > _MAX_GRID_Y or max(Lq, Lk) > 2**31 - 1 - BN:
        return None
    return {"grid": (B * H, nq), "block": THREADS, "d": d, "bm": bm, "B": B, "H": H, "Lq": Lq, "Lk": Lk,
            "strides": args}


_ready: dict = {}   # (kernel name, device) -> kernel with its shared-memory limit raised


def _kernel(dt, d, bm):
    dev = loader.current_device_id()
    key = (dt, d, bm, dev)
    fn = _ready.get(key)
    if fn is None:
        fn = loader.get_function(ATTN_FILE, kernel_name(dt, d, bm))
        smem = smem_bytes(d, bm)
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        _ready[key] = fn
    return fn


def attention(q, k, v, causal, scale, block_m=None, out=None):
    """softmax(q k^T * scale + causal mask) v through the fused kernel, or None where it does not cover the case
    (see the module docstring). block_m: queries per CTA (one of BLOCK_M[D]; None: choose_block_m's rule).
    out: an array of q's shape and dtype to write the result into (any layout the kernel takes), or None."""
    import cupy
    dt = dtype_code(q.dtype)
    if dt not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        return None
    if q.ndim < 2 or q.shape[-1] not in HEAD_DIMS or not math.isfinite(scale):
        return None
    isz = q.dtype.itemsize
    if out is not None:
        if out.shape != q.shape or out.dtype != q.dtype:
            return None
    elif _out_layout(q.shape, q.strides) == "bthd":
        H, T, D = q.shape[-3:]
        out = cupy.empty(q.shape[:-3] + (T, H, D), dtype=q.dtype).swapaxes(-2, -3)
    else:
        out = cupy.empty(q.shape, dtype=q.dtype)
    strides = []
    for a in (q, k, v, out):
        if any(s % isz for s in a.strides):
            return None
        strides.append(tuple(s // isz for s in a.strides))
    bm = block_m
    if bm is None:
        bh = q.size // max(1, q.shape[-1] * q.shape[-2])
        bm = choose_block_m(q.shape[-1], bh, q.shape[-2], loader.sm_count())
    p = plan(q.shape, k.shape, v.shape, strides, (q.data.ptr, k.data.ptr, v.data.ptr, out.data.ptr), isz,
             bool(causal), bm)
    if p is None:
        return None
    fn = _kernel(dt, p["d"], bm)
    args = (q, k, v, out, np.int32(p["H"]), np.int32(p["Lq"]), np.int32(p["Lk"]),
            *(np.int64(s) for s in p["strides"]), np.float32(scale * _LOG2E), np.int32(1 if causal else 0))
    loader.launch(fn, p["grid"], p["block"], args, shared_mem=smem_bytes(p["d"], bm), pdl=True)
    return out
