"""Launchers of the fused transformer kernels in cuda/nn.cu, on CuPy arrays (the current CuPy stream).

Every function returns None when it does not cover the case (dtype, layout, size), so the caller can run its
plain code instead; none of them allocates anything but its result, synchronizes or copies to the host, so they
can be recorded in a CUDA graph.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from . import loader
from ._common import dtype_code

NN_FILE = "nn.cu"
DTYPES = ("f32", "f16", "bf16")
KERNELS = ("layer_norm", "embed", "decode_attn", "attn_softmax", "gemv", "ln_gemv", "argmax")
GEMV_MAX_ROWS = 8
ACTIVATION_CODES = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
_SMEM = 48 * 1024              # dynamic shared memory a launch gets without opting in to more
_MAX_LN_C = _SMEM // 4 - 32    # the row is staged in shared memory as float, plus 32 floats of reductions
_MAX_KV = 8192                 # decode attention keeps one float score per slot in shared memory


_CONSTANT_WEIGHTS = contextvars.ContextVar("gpk_constant_weights", default=False)


@contextlib.contextmanager
def constant_weights():
    """Within this block the caller vouches that the weights handed to the GEMV kernels are written by no kernel
    of the stream (a model's parameters): inside a CUDA graph a GEMV is then a programmatic dependent launch that
    reads its weights before it waits for the kernel in front of it, overlapping that kernel's tail. Elsewhere the
    GEMVs are ordinary launches (they start when the kernel before them has finished), since a weight might be
    that kernel's output. (The other kernels here wait before their first read, so they are always PDL-safe.)"""
    token = _CONSTANT_WEIGHTS.set(True)
    try:
        yield
    finally:
        _CONSTANT_WEIGHTS.reset(token)


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
                                      np.int32(C), np.float32(eps)), shared_mem=(C + 32) * 4, pdl=True)
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
        loader.launch(fn, blocks, 256, (tokens, positions, wte, wpe, x, np.int64(n), np.int32(C)), pdl=True)
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
    if y.size == 0:
        return y
    if B > 65535:  # the batch is grid dimension y
        return None
    threads = 256 if D <= 256 else -(-D // 32) * 32
    vpe = 16 // qkv.dtype.itemsize  # elements per 16-byte load
    vec = D % vpe == 0 and cache.data.ptr % 16 == 0 and threads % (D // vpe) == 0
    shared = (kv_len + D + 32 + threads * (vpe if vec else 1)) * 4
    if shared > _SMEM:
        return None
    fn = loader.get_function(NN_FILE, f"gpk_nn_decode_attn_{dt}")
    loader.launch(fn, (H, B), threads, (qkv, cache, positions, y, np.int32(Bc), np.int32(H), np.int32(L),
                                        np.int32(D), np.int32(kv_len), np.float32(scale), np.int32(vec)),
                  shared_mem=shared, pdl=True)
    return y


def argmax_last_axis(x):
    """argmax over the last axis of a C-contiguous float16/bfloat16/float32 array (NumPy's rule: first index of
    the largest, the first NaN wins): int64 of shape x.shape[:-1]. None when not covered."""
    import cupy
    dt = _code(x.dtype)
    if dt is None or x.ndim < 1 or not x.flags.c_contiguous or x.shape[-1] == 0 or x.shape[-1] > 2**31 - 8192:
        return None  # (the kernel's int index runs up to 4 blocks of 1024 past the row's end)
    rows = x.size // x.shape[-1]
    out = cupy.empty(x.shape[:-1], dtype=np.int64)
    if rows:
        fn = loader.get_function(NN_FILE, f"gpk_nn_argmax_{dt}")
        loader.launch(fn, rows, 1024, (x, out, np.int32(x.shape[-1])), pdl=True)
    return out


def attn_softmax(scores, dtype, causal, scale):
    """Probabilities (dtype, same shape) from float32 attention scores (..., Tq, Tk), C-contiguous: softmax over
    the last axis of scores * scale, keys after i + Tk - Tq masked for query i when causal (a query left with no
    key gets uniform weights). None when not covered."""
    import cupy
    dt = _code(dtype)
    if dt is None or scores.dtype != np.float32 or scores.ndim < 2 or not scores.flags.c_contiguous:
        return None
    Tq, Tk = scores.shape[-2:]
    if Tk == 0 or (Tk + 32) * 4 > _SMEM:
        return None
    p = cupy.empty(scores.shape, dtype=dtype)
    rows = scores.size // Tk
    if rows:
        fn = loader.get_function(NN_FILE, f"gpk_nn_attn_softmax_{dt}")
        threads = 256 if Tk >= 256 else 128
        loader.launch(fn, rows, threads, (scores, p, np.int32(Tq), np.int32(Tk), np.float32(scale),
                                          np.int32(1 if causal else 0)), shared_mem=(Tk + 32) * 4, pdl=True)
    return p


def gemv(x, w, bias=None, activation=None):
    """activation(x @ w.T + bias) for x (M, K) with M <= GEMV_MAX_ROWS (decode steps), w (N, K), bias (N,) or None,
    one kernel that streams w once with 16-byte loads. None when not covered (then a GEMM library runs)."""
    import cupy
    dt = _code(x.dtype)
    if (dt is None or x.ndim != 2 or w.ndim != 2 or w.dtype != x.dtype or activation not in ACTIVATION_CODES
            or not 1 <= x.shape[0] <= GEMV_MAX_ROWS or x.shape[1] != w.shape[1]):
        return None
    M, K = x.shape
    N = w.shape[0]
    vec = 16 // x.dtype.itemsize
    if K % vec or not (x.flags.c_contiguous and w.flags.c_contiguous) or (x.data.ptr | w.data.ptr) % 16:
        return None
    if bias is not None and (bias.dtype != x.dtype or bias.shape != (N,) or not bias.flags.c_contiguous):
        return None
    y = cupy.empty((M, N), dtype=x.dtype)
    if N:
        ks = _gemv_split(K, vec)
        fn = loader.get_function(NN_FILE, f"gpk_nn_gemv_{dt}")
        loader.launch(fn, -(-N // (4 // ks)), 128, (x, w, bias, y, np.int32(M), np.int32(N), np.int32(K),
                                                     np.int32(ACTIVATION_CODES[activation]), np.int32(ks)),
                      pdl=_CONSTANT_WEIGHTS.get())
    return y


_GEMV_PREFETCH = 4  # 16-byte loads of w each lane issues before the kernel waits for its inputs (U in nn.cu)


def _gemv_split(K, vec):
    """Warps per output row (1, 2 or 4) of the GEMV kernels: enough that each lane's share of a row of w is at
    most the loads it issues up front, so a long K (the MLP's down projection) still has all of w in flight."""
    loads = -(-K // vec) // 32
    ks = 1
    while ks < 4 and -(-loads // ks) > _GEMV_PREFETCH:
        ks *= 2
    return ks


def ln_gemv(x, residual, ln_weight, ln_bias, eps, w, bias=None, activation=None):
    """(s, y): s = x + residual (x itself when residual is None), y = activation(layer_norm(s) @ w.T + bias), for
    x (M, K) with M <= GEMV_MAX_ROWS, in one kernel. None when not covered."""
    import cupy
    dt = _code(x.dtype)
    if dt is None or x.ndim != 2 or not 1 <= x.shape[0] <= GEMV_MAX_ROWS or activation not in ACTIVATION_CODES:
        return None
    M, K = x.shape
    if w.ndim != 2 or w.shape[1] != K or (M * K + 32) * 4 > _SMEM:
        return None
    N = w.shape[0]
    vec = 16 // x.dtype.itemsize
    if K % vec or w.data.ptr % 16:
        return None
    for a, shape in ((x, (M, K)), (residual, (M, K)), (ln_weight, (K,)), (ln_bias, (K,)), (w, (N, K)),
                     (bias, (N,))):
        if a is not None and (a.dtype != x.dtype or a.shape != shape or not a.flags.c_contiguous):
            return None
    s = x if residual is None else cupy.empty_like(x)
    y = cupy.empty((M, N), dtype=x.dtype)
    ks = _gemv_split(K, vec)
    fn = loader.get_function(NN_FILE, f"gpk_nn_ln_gemv_{dt}")
    loader.launch(fn, max(1, -(-N // (4 // ks))), 128,
                  (x, residual, None if residual is None else s, ln_weight, ln_bias, np.float32(eps), w, bias, y,
                   np.int32(M), np.int32(N), np.int32(K), np.int32(ACTIVATION_CODES[activation]), np.int32(ks)),
                  shared_mem=(M * K + 32) * 4, pdl=_CONSTANT_WEIGHTS.get())
    return s, y
