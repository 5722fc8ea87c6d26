"""Launchers of the fused transformer kernels in cuda/nn.cu, on CuPy arrays (the current CuPy stream).

Every function returns None when it does not cover the case (dtype, layout, size), so the caller can run its
plain code instead; none of them allocates anything but its result, synchronizes or copies to the host, so they
can be recorded in a CUDA graph.
"""

from __future__ import annotations

import numpy as np

from . import loader
from ._common import dtype_code

NN_FILE = "nn.cu"
DTYPES = ("f32", "f16", "bf16")
KERNELS = ("layer_norm", "embed", "decode_attn")
_MAX_LN_C = 12 * 1024          # the row is staged in shared memory as float (48 KiB)
_MAX_KV = 8192                 # decode attention keeps one float score per slot in shared memory


def variants() -> list[tuple[str, tuple]]:
    return [(NN_FILE, ())]


def expected_kernels() -> dict[str, set[str]]:
    return {NN_FILE: {f"gpk_nn_{k}_{dt}" for k in KERNELS for dt in DTYPES}}


def expected_by_module() -> dict[tuple[str, tuple], set[str]]:
    return {(NN_FILE, ()): expected_kernels()[NN_FILE]}


def _code(dtype):
    dt = dtype_code(dtype)
    return dt if dt in DTYPES else None


def _ptr(a):
    return 0 if a is None else a.data.ptr


def layer_norm(x, weight, bias, eps, residual=None, sum_out=None):
    """layer_norm(x + residual) over the last axis (weight, bias: (C,) or None). With ``residual``, the sum is
    written into ``sum_out`` (may be x itself) when given. Returns y, or None when not covered."""
    import cupy
    dt = _code(x.dtype)
    C = x.shape[-1] if x.ndim else 0
    if dt is None or x.ndim == 0 or C == 0 or C > _MAX_LN_C or not x.flags.c_contiguous:
        return None
    for a in (weight, bias, residual, sum_out):
        if a is not None and (a.dtype != x.dtype or not a.flags.c_contiguous):
            return None
    if residual is not None and residual.shape != x.shape or sum_out is not None and sum_out.shape != x.shape:
        return None
    if any(a is not None and a.shape != (C,) for a in (weight, bias)):
        return None
    rows = x.size // C
    y = cupy.empty_like(x)
    if rows == 0:
        return y
    fn = loader.get_function(NN_FILE, f"gpk_nn_layer_norm_{dt}")
    threads = 128 if C <= 1024 else 256
    loader.launch(fn, rows, threads, (x, residual, sum_out if residual is not None else None, weight, bias, y,
                                      np.int32(C), np.float32(eps)), shared_mem=(C + 32) * 4)
    return y


def embed(tokens, positions, wte, wpe):
    """wte[tokens] + wpe[positions] for int64 tokens/positions of one shape: (*shape, C). None if not covered."""
    import cupy
    dt = _code(wte.dtype)
    if (dt is None or wpe.dtype != wte.dtype or tokens.dtype != np.int64 or positions.dtype != np.int64
            or tokens.shape != positions.shape or not all(a.flags.c_contiguous for a in (tokens, positions, wte, wpe))
            or wte.ndim != 2 or wpe.ndim != 2 or wte.shape[1] != wpe.shape[1]):
        return None
    C = wte.shape[1]
    n = tokens.size
    x = cupy.empty(tokens.shape + (C,), dtype=wte.dtype)
    if n:
        fn = loader.get_function(NN_FILE, f"gpk_nn_embed_{dt}")
        blocks = min(-(-n * C // 256), 65535)
        loader.launch(fn, blocks, 256, (tokens, positions, wte, wpe, x, np.int64(n), np.int32(C)))
    return x


def decode_attention(qkv, cache, positions, kv_len, scale):
    """One new token per sequence attending its KV cache.

    qkv: (B, 3, H, D) contiguous, the new tokens' queries, keys and values; cache: (2, Bc, H, L, D) contiguous
    with Bc >= B (sequence b uses cache row b); positions: (B,) int64, the slot of each new token. The keys and
    values are written into the cache at their slots, then each query attends slots [0, min(pos, kv_len - 1)].
    Returns y (B, H, D), or None when not covered.
    """
    import cupy
    dt = _code(qkv.dtype)
    if dt is None or qkv.ndim != 4 or cache.ndim != 5 or qkv.shape[1] != 3 or cache.dtype != qkv.dtype:
        return None
    B, _, H, D = qkv.shape
    _, Bc, Hc, L, Dc = cache.shape
    if (Hc, Dc) != (H, D) or Bc < B or not 0 < kv_len <= min(L, _MAX_KV) or D > 1024:
        return None
    if positions.dtype != np.int64 or positions.shape != (B,):
        return None
    if not (qkv.flags.c_contiguous and cache.flags.c_contiguous and positions.flags.c_contiguous):
        return None
    y = cupy.empty((B, H, D), dtype=qkv.dtype)
    if B == 0:
        return y
    threads = max(D, min(256, D * 4)) if D >= 32 else 128
    threads = -(-threads // 32) * 32
    fn = loader.get_function(NN_FILE, f"gpk_nn_decode_attn_{dt}")
    shared = (kv_len + D + 32 + threads) * 4
    loader.launch(fn, (H, B), threads, (qkv, cache, positions, y, np.int32(Bc), np.int32(H), np.int32(L),
                                        np.int32(D), np.int32(kv_len), np.float32(scale)), shared_mem=shared)
    return y
