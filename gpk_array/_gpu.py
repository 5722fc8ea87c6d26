"""Dispatch of hot paths on CUDA devices: one place where gpk_array's own kernels take over from CuPy.

Every function takes and returns CuPy arrays and runs on the current CuPy stream. Kernels from
gpk_array._kernels enter only with evidence from a GPU run (correct on a shape sweep, faster than CuPy in the same
benchmark), and gpk_array/_ops/nn.py looks here for fused ops by name (``linear``, ``layer_norm``, ...), falling
back to plain CuPy code when a name is absent or returns None.

- ``binary``, ``unary``, ``reduce``: the namespace's elementwise functions of arrays of at least OWN_KERNELS_MIN
  elements and its sum/prod/max/min/mean/var/std/argmax/argmin where REDUCE_ROUTE says, through
  gpk_array._kernels.elementwise / reduction.
- ``layer_norm``, ``add_layer_norm``: cuda/nn.cu (one block per row, fp32 statistics), for float32/float16/bfloat16.
- ``scaled_dot_product_attention`` (no boolean mask): float16/bfloat16 with head dim 64 or 128 (strided views of a
  fused QKV included; causal needs Lq <= Lk): the fused FlashAttention-2-style kernel of cuda/attention.cu
  (gpk_array._kernels.attention; ``GPK_FLASH_ATTENTION=0`` turns it off); the rest, float32 included: cuBLASLt
  GEMMs with float32 scores around a fused (causal) softmax kernel from cuda/nn.cu.
- ``argmax_last_axis`` (long rows: logits over a vocabulary): cuda/nn.cu, one block per row.
- ``kv_cache_attention``: cuda/nn.cu, the cache write and the attention of a decode step in one kernel.
- ``linear`` of up to 8 rows (a decode step): the GEMV of cuda/nn.cu with bias and activation fused;
  ``add_layer_norm_linear`` of up to 8 rows: the residual add and layer norm in front of that GEMV, same kernel.
- ``matmul``, ``tensordot`` (float16/bfloat16, as one matmul) and ``linear``: cuBLASLt through gpk_array._kernels.blas
  when that module loads (the kernels cuBLAS picks, autotuned for large problems; a repeated call's arguments prepared
  once, less host time than CuPy's call; recordable in CUDA graphs, CuPy's cuBLAS calls are not; ``linear`` fuses bias
  and relu / gelu_tanh as a cuBLASLt epilogue; ``GPK_GEMM_LT=0``: CuPy first for matmul), else cuBLAS through CuPy.
  float32 products use TF32 only after gpk_array.set_float32_matmul_precision ("high") or with GPK_TF32=1
  (gpk_array/_precision.py). Inside a paced gpk_array.sched context (best effort while a higher tier is busy, or a
  bandwidth cap) GEMMs plan for the context's share of the SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET), leaving the rest
  of the device to the higher tier.
- float16/bfloat16 ``matmul`` (2-D b; a 2-D or C-contiguous with its leading dims flattened; b row-major or a
  transposed row-major weight) and ``linear`` of more than 8 rows, on a CC 9.0 device: the CUTLASS SM90
  instances of gpk_array._kernels.gemm where its shape rules say they beat cuBLAS's kernels (GPU-only H200
  times): plain GEMMs (``sm90_family``), ``linear`` with a bias and/or activation as one fused-epilogue kernel
  (``select_sm90_fused``; gelu and silu always, cuBLASLt has no epilogue for them: fr96 or fr192 up to 1024 rows,
  ppt above; gelu_tanh on ppt from 2048 rows;
  the ppt/fr* instances are programmatic dependent launches, launch_sm90.pdl_for); float32 with TF32 allowed:
  the TF32 "tn" instances (``x @ w.T``-layout matmul, bias-free linear). Everything they do not cover
  (alignment, strides, K or N not a multiple of 8, batched b, a paced sched context) falls through to the paths
  above.
- ``GPK_GEMM`` (read once, at import): unset or ``auto`` as above; ``cublas``: no CUTLASS at all; ``cutlass``: a
  checking mode, every problem the CUTLASS instances cover goes to them (SM90 without the shape rule's cuBLAS
  cases; on devices other than CC 9.0 the SM80 instances, slower than cuBLAS on Hopper, for ``linear`` without an
  activation and ``x @ w.T``-layout matmuls).
"""

import numpy as np

from . import _config
from ._kernels import attention as _attn
from ._kernels import elementwise as _ew
from ._kernels import gemm as _gemm
from ._kernels._common import VersionedDict as _VersionedDict
from ._kernels._common import dtype_code as _dtype_code
from ._kernels import nn as _nn
from ._kernels import reduction as _red
from ._precision import tf32
from .workbench import registry as _registry
from .sched._cuda import active_context

# The routing thresholds are records of the kernel registry (gpk_array/_kernels/registry/routing.json, each with the
# benchmark results that justified it; gpk_array/workbench/registry.py): a file that fails validation is ignored with
# a warning, and then everything it covered goes to CuPy.
_ROUTING = _registry.compiled(_gemm._few_rows)
# Arrays of at least this many elements take our elementwise kernels (gpk_array/_kernels/elementwise.py): the
# registry's elementwise/*/cuda record, 2^22 (from there their GPU time, several times shorter than CuPy's for half
# precision and about 1.6x for float32 (benchmarks/kernels_bench.py), outweighs their larger host time per call: ours
# ~22 us, CuPy's ~13 us on the H200's host). Reductions follow REDUCE_ROUTE instead. GPK_OWN_KERNELS_MIN=0 routes every
# size and every op our kernels cover, elementwise and reductions, a checking mode (the GPU conformance run uses it to
# test them against the official suite).
OWN_KERNELS_MIN = _config.get("GPK_OWN_KERNELS_MIN")
if OWN_KERNELS_MIN is None:
    OWN_KERNELS_MIN = _ROUTING["elementwise_min"] if _ROUTING["elementwise_min"] is not None else 1 << 62
# GPK_OWN_REDUCTIONS=0: every reduction to CuPy (an off switch; the routes below do not depend on OWN_KERNELS_MIN, so
# a large GPK_OWN_KERNELS_MIN no longer is one). The checking mode (OWN_KERNELS_MIN = 0) overrides it.
OWN_REDUCTIONS = _config.get("GPK_OWN_REDUCTIONS")

# Which reductions our kernels take: (dtype class, op, axis kind) -> the least number of elements, or None: CuPy; one
# registry record (reduce/<class>/<op>/<kind>/cuda) per key.
# The first key present wins: (c, op, kind), (c, op, "*"), ("*", op, kind), ("*", op, "*"), (c, "*", kind),
# (c, "*", "*"); no key: CuPy. dtype classes: "f16", "bf16", "f32", "f64", "int" (integers and bool); axis kinds
# (reduce_axis_kind): "full" (all elements), "rows" (the reduced axes are the last ones of a C-contiguous array:
# contiguous rows), "cols" (any other: strided columns). ops: sum, prod, max, min, mean, var, std
# (gpk_array/_ops/statistical.py), argmax, argmin (_ops/searching.py).
# A key's size is the least at which our kernel, timed per call as a user's loop sees it (host included), is at
# least as fast as the namespace's CuPy path at that size and at every larger size measured; None where it never is.
# max/min and argmax/argmin share their entries: each the larger of the two ops' sizes (None where either is None).
# Each registry record cites its measurement; docs/measurements.md summarizes them.
REDUCE_ROUTE = _VersionedDict(_ROUTING["route"])
REDUCE_F32_FULL_MIN = REDUCE_ROUTE.get(("f32", "*", "full"))  # float32 sum over all elements (max/min: 2^24)
REDUCE_F32_AXIS_MIN = REDUCE_ROUTE.get(("f32", "*", "rows"))  # float32 sum/max/min over rows or columns
_FLOAT_CLASSES = frozenset(("f16", "bf16", "f32", "f64"))  # REDUCE_ROUTE's dtype classes but "int"
_AXIS_KINDS = ("full", "rows", "cols")


def _dtype_class(dtype):
    code = _dtype_code(dtype)
    return code if code in _FLOAT_CLASSES else "int"


def reduce_axis_kind(shape, axes, c_contiguous=True) -> str:
    """"full", "rows" or "cols" (see REDUCE_ROUTE) for a reduction of an array of ``shape`` over ``axes``
    (None: all); extent-1 axes do not count."""
    big = [i for i, s in enumerate(shape) if s != 1]
    red = big if axes is None else [i for i in big if i in axes or i - len(shape) in axes]
    if len(red) == len(big):
        return "full"
    return "rows" if c_contiguous and big[-len(red):] == red else "cols"


def _route(c, op, kind):
    for key in ((c, op, kind), (c, op, "*"), ("*", op, kind), ("*", op, "*"), (c, "*", kind), (c, "*", "*")):
        if key in REDUCE_ROUTE:
            return REDUCE_ROUTE[key]
    return None


def reduce_route(op, dtype, shape, axes, c_contiguous=True):
    """The least size at which REDUCE_ROUTE sends this reduction to our kernels, or None (CuPy)."""
    return _route(_dtype_class(dtype), op, reduce_axis_kind(shape, axes, c_contiguous))


def reduce_floor(op, dtype):
    """The least size at which any reduction ``op`` of ``dtype`` goes to our kernels (the smallest over the axis
    kinds; 0 in the checking mode; None: never): a test cheaper than reduce()'s for the namespace's small arrays."""
    hit = _floors.get((op, dtype))
    if hit is not None and hit[1] == OWN_KERNELS_MIN and hit[2] == REDUCE_ROUTE.version and hit[3] == OWN_REDUCTIONS:
        return hit[0]
    if not _red.supports(op, dtype):
        f = None
    elif not OWN_KERNELS_MIN:
        f = 0
    elif not OWN_REDUCTIONS:
        f = None
    else:
        c = _dtype_class(dtype)
        least = [t for t in (_route(c, op, kind) for kind in _AXIS_KINDS) if t is not None]
        f = min(least) if least else None
    if len(_floors) > 1024:
        _floors.clear()
    _floors[(op, dtype)] = (f, OWN_KERNELS_MIN, REDUCE_ROUTE.version, OWN_REDUCTIONS)
    return f


_gemm_mode = _config.gemm_mode   # GPK_GEMM's parser (gpk_array/_config.py)
GEMM_MODE = _config.get("GPK_GEMM")
# scaled_dot_product_attention through the fused kernel of cuda/attention.cu where it covers the call (read once, at
# import): GPK_FLASH_ATTENTION=0 sends every call to the GEMM + softmax + GEMM path instead
FLASH_ATTENTION = _config.get("GPK_FLASH_ATTENTION")
# matmul through cuBLASLt before CuPy's cuBLAS call (same kernels; less host time per call since blas.py's calls
# are prepared once per pointer set): GPK_GEMM_LT=0 turns it off
LT_FIRST = _config.get("GPK_GEMM_LT")
# GPK_GEMM=cutlass on devices other than CC 9.0: f16/bf16 GEMMs of the "x @ w.T" layout through the SM80 instances
GEMM_CUTLASS = GEMM_MODE == "cutlass"


def binary(bname, a, b):
    """CuPy's ``bname`` (add, true_divide, less, ...) of two CuPy arrays of one dtype through our kernel, or None
    when not covered (then CuPy computes it)."""
    if a.dtype != b.dtype or not _ew.supports_binary(bname, a.dtype):
        return None
    return _ew.binary(bname, a, b)


def unary(bname, x):
    """CuPy's ``bname`` (exp, negative, ...) of a CuPy array through our kernel, or None when not covered."""
    if not _ew.supports_unary(bname, x.dtype):
        return None
    return _ew.unary(bname, x)


def reduce(op, x, axes, keepdims, ddof=0):
    """sum, prod, max, min, mean, var, std, argmax, argmin of a CuPy array over axes (None: all; argmax/argmin: one
    axis) through our kernels (float16 and bfloat16 accumulate in float32, as the namespace's rule says), or None
    where CuPy serves (REDUCE_ROUTE; everything our kernels cover when OWN_KERNELS_MIN is 0)."""
    key = (op, x.dtype, x.shape, x.strides, axes, OWN_KERNELS_MIN, REDUCE_ROUTE.version, OWN_REDUCTIONS)
    least = _reduce_least.get(key, _MISSING)
    if least is _MISSING:
        least = reduce_floor(op, x.dtype)  # None: no kernel, switched off or no route; 0 in the checking mode
        if least is not None and OWN_KERNELS_MIN:
            least = reduce_route(op, x.dtype, x.shape, axes, bool(x.flags.c_contiguous))
        if len(_reduce_least) > 4096:
            _reduce_least.clear()
        _reduce_least[key] = least
    if least is None or x.size < least:
        return None
    return _red.reduce(op, x, axis=axes, keepdims=keepdims, ddof=ddof)


_MISSING = object()
_reduce_least: dict = {}  # (op, dtype, shape, strides, axes, the settings) -> reduce_route's answer
_floors: dict = {}  # (op, dtype) -> (reduce_floor's answer, the settings it holds for)

_blas = None


def _get_blas():
    global _blas
    if _blas is None:
        try:
            from ._kernels import blas
            _blas = blas if blas.available() else False
        except Exception:  # no cuBLASLt to load: CuPy's cuBLAS does everything
            _blas = False
    return _blas


def _sm_target():
    """SMs a GEMM may plan for: 0 (all) outside scheduler contexts and at full rate (gpk_array.sched)."""
    ctx = active_context()
    return 0 if ctx is None else ctx._sm_target()


def _capturing():
    import cupy
    return cupy.cuda.runtime.streamIsCapturing(cupy.cuda.get_current_stream().ptr)


def _cutlass_tn(x2d, w):
    """x2d @ w.T (x2d (M, K), w (N, K), float16 or bfloat16) through a CUTLASS instance, or None where
    gpk_array._kernels.gemm does not cover it (or its CUTLASS headers are missing: then never again)."""
    global GEMM_CUTLASS
    if x2d.dtype != w.dtype or x2d.dtype.itemsize != 2 or _sm_target():
        return None
    try:
        return _gemm.linear_tn(x2d, w)
    except Exception as e:  # a compile failure (e.g. no nvidia-cutlass headers): cuBLAS from now on
        from ._kernels.errors import KernelCompileError
        if not isinstance(e, KernelCompileError):
            raise
        import warnings
        warnings.warn(f"gpk_array: GPK_GEMM=cutlass disabled, the CUTLASS kernels do not compile: {e.message}",
                      stacklevel=3)
        GEMM_CUTLASS = False
        return None


_sm90_off = GEMM_MODE == "cublas"


def _sm90(x, w, layout):
    """x @ w ("nn") or x @ w.T ("tn") (x (..., K), leading dims flattened) through gpk_array._kernels.gemm's SM90
    instances as a 2-D (M, N) array, or None (not covered, cuBLAS faster, not a CC 9.0 device, inside a paced
    sched context, or the instances unavailable)."""
    return _sm90_call("gemm_sm90", x, w, layout, tf32=x.dtype.itemsize == 4 and tf32())


def _sm90_call(fn, x, *args, **kw):
    """gpk_array._kernels.gemm.<fn>(x, *args, forced=, **kw) for 16-bit (or, with TF32 allowed, 32-bit) x with
    contiguous rows, where the sched context (if any) plans for every SM (not a paced context below full rate or
    confined, nor a context beside a confined one: those take cuBLASLt with an SM count target); None otherwise or
    where it declines; the SM90 instances switched off for good (with a warning) where they cannot be loaded."""
    global _sm90_off
    isz = x.dtype.itemsize
    if _sm90_off or x.strides[-1] != isz or not (isz == 2 or kw.get("tf32")) or _sm_target():
        return None
    try:
        return getattr(_gemm, fn)(x, *args, forced=GEMM_MODE == "cutlass", **kw)
    except Exception as e:  # no cubin and nothing to build or load it with: cuBLAS from now on
        from ._kernels.cutlass.launch_sm90 import CutlassUnavailable
        from ._kernels.cutlass.tma import TmaError
        from ._kernels.errors import KernelCompileError
        if isinstance(e, TmaError):   # this problem's descriptors: decline this call only
            return None
        if not isinstance(e, (CutlassUnavailable, KernelCompileError)):
            raise
        import warnings
        warnings.warn(f"gpk_array: the CUTLASS SM90 GEMMs are unavailable, using cuBLAS: {e}", stacklevel=3)
        _sm90_off = True
        return None


def _sm90_matmul(a, b):
    """a @ b (a (..., M, K) with its leading dims flattened when C-contiguous, b (K, N)) through _sm90: b
    row-major takes the "nn" instances, a transposed row-major weight (b.T C-contiguous rows) the "tn" ones."""
    if a.ndim > 2 and not a.flags.c_contiguous:
        return None
    if b.shape[1] == 1 or b.strides[1] == b.itemsize:
        y = _sm90(a, b, "nn")
    elif b.shape[0] == 1 or b.strides[0] == b.itemsize:
        y = _sm90(a, b.T, "tn")
    else:
        return None
    return y if y is None or a.ndim == 2 else y.reshape(a.shape[:-1] + (b.shape[1],))


def _bits_contiguous(x):
    """x, C-contiguous: a copy of its 16-bit elements' bits where it is not (for dtypes CuPy cannot copy)."""
    if x.flags.c_contiguous:
        return x
    import cupy
    return cupy.ascontiguousarray(x.view(cupy.uint16)).view(x.dtype)


def matmul(a, b):
    """Matrix product of two CuPy arrays of one dtype (already promoted).

    float16/bfloat16 with a 2-D b on a CC 9.0 device: our CUTLASS SM90 instances where they cover the problem
    and beat cuBLAS. Then cuBLASLt (gpk_array._kernels.blas: the kernels cuBLAS picks, a repeated call prepared
    in one dict lookup, less host time than CuPy's cuBLAS call; LT_FIRST) for the float dtypes and layouts it
    takes, which also serves CUDA-graph captures, TF32 and a scheduler context's SM share; else CuPy."""
    import cupy
    if a.ndim >= 2 and b.ndim == 2 and not _sm90_off and (a.dtype.itemsize == 2 or a.dtype.char == "f"):
        k = a.shape[-1]
        if GEMM_MODE == "cutlass" or (k and _gemm.sm90_may_take(a.size // k, b.shape[1], a.dtype.itemsize)):
            y = _sm90_matmul(a, b)
            if y is not None:
                return y
    if GEMM_CUTLASS and a.ndim >= 2 and b.ndim == 2 and (a.ndim == 2 or a.flags.c_contiguous):
        y = _cutlass_tn(a.reshape(-1, a.shape[-1]), b.T)
        if y is not None:
            return y.reshape(a.shape[:-1] + (b.shape[1],))
    blas = _get_blas()
    if blas and a.ndim >= 2 and b.ndim >= 2:
        use_tf32 = a.dtype.char == "f" and tf32()
        sm = _sm_target()
        if LT_FIRST or use_tf32 or sm or _capturing():
            y = blas.matmul(a, b, tf32=use_tf32, sm_target=sm)
            if y is not None:
                return y
    if a.dtype.name == "bfloat16":   # CuPy's own copy kernels do not know bfloat16: copy its bits as uint16
        a, b = _bits_contiguous(a), _bits_contiguous(b)
    return cupy.matmul(a, b)


def tensordot(a, b, axes):
    """``tensordot(a, b, axes)`` of float16/bfloat16 CuPy arrays (axes: two lists of the contracted axes, validated
    by the caller) as one ``matmul`` of the operands moved and reshaped to (M, K) @ (K, N), so the GEMM dispatch
    (SM90 instances, cuBLASLt) serves it."""
    ka = [i % a.ndim for i in axes[0]]
    kb = [j % b.ndim for j in axes[1]]
    free_a = [i for i in range(a.ndim) if i not in ka]
    free_b = [j for j in range(b.ndim) if j not in kb]
    m = int(np.prod([a.shape[i] for i in free_a], dtype=np.int64))
    k = int(np.prod([a.shape[i] for i in ka], dtype=np.int64))
    n = int(np.prod([b.shape[j] for j in free_b], dtype=np.int64))
    a2, b2 = a.transpose(free_a + ka), b.transpose(kb + free_b)
    if a.dtype.name == "bfloat16":                   # CuPy cannot copy bfloat16: its reshape copies would fail
        a2, b2 = _bits_contiguous(a2), _bits_contiguous(b2)
    a2, b2 = a2.reshape(m, k), b2.reshape(k, n)
    return matmul(a2, b2).reshape([a.shape[i] for i in free_a] + [b.shape[j] for j in free_b])


def linear(x2d, w, bias, activation):
    """activation(x2d @ w.T + bias) in one kernel: our GEMV for a few rows (decode steps), the SM90 fused-epilogue
    instances, else one cuBLASLt call with the bias/activation epilogue (gelu, silu: with the bias epilogue, then
    our activation kernel); None when none covers it (then gpk_array/_ops/nn.py's plain code runs)."""
    if x2d.shape[0] <= 8 and x2d.dtype.itemsize <= 4:
        y = _nn.gemv(x2d, w, bias, activation)
        if y is not None:
            return y
    isz = x2d.dtype.itemsize
    if not _sm90_off and isz <= 4 and (GEMM_MODE == "cutlass" or
                                       _gemm.sm90_fused_may_take(x2d.shape[0], w.shape[0], isz, activation)):
        if bias is None and activation is None:
            y = _sm90(x2d, w, "tn")
        elif isz == 2:
            y = _sm90_call("linear_sm90", x2d, w, bias, activation)
        else:
            y = None
        if y is not None:
            return y
    if GEMM_CUTLASS and activation is None:
        y = _cutlass_tn(x2d, w)
        if y is not None:
            if bias is not None:
                y += bias
            return y
    blas = _get_blas()
    if not blas:
        return None
    # cuBLASLt's GELU epilogue is accurate to ~3e-10 in double: not float64's accuracy
    if activation in (None, "relu") or (activation == "gelu_tanh" and isz != 8):
        return blas.linear(x2d, w, bias, activation, tf32=tf32(), sm_target=_sm_target())
    # gelu (erf), silu (no cuBLASLt epilogue), gelu_tanh in float64: the GEMM with cuBLASLt's bias epilogue, then our
    # activation kernel in place (two kernels, where the plain code takes a widening copy, a bias pass and several
    # passes for the activation; GPU time of the plain code over this on the H200: float16 3.3-10x, float32 1.2-1.8x
    # at GPT-2 shapes, benchmarks/results/h200_2026-11-30_s7_diag_act_path_aba1d26.*)
    if not _ew.supports_unary(activation, x2d.dtype):
        return None
    y = blas.linear(x2d, w, bias, None, tf32=tf32(), sm_target=_sm_target())
    return None if y is None else _ew.unary(activation, y, out=y)


def gelu(x, activation):
    """``activation`` ("gelu": x Phi(x) with erf, or "gelu_tanh") of a CuPy array in one elementwise kernel, or
    None."""
    if not _ew.supports_unary(activation, x.dtype):
        return None
    return _ew.unary(activation, x)


def layer_norm(x, weight, bias, eps):
    return _nn.layer_norm(x, weight, bias, eps)


def add_layer_norm_linear(x2d, r2d, ln_w, ln_b, eps, w, bias, activation):
    if x2d.shape[0] > 8:
        return None
    return _nn.ln_gemv(x2d, r2d, ln_w, ln_b, eps, w, bias, activation)


def add_layer_norm(x, r, weight, bias, eps):
    import cupy
    s = cupy.empty_like(x)
    y = _nn.layer_norm(x, weight, bias, eps, residual=r, sum_out=s)
    return None if y is None else (s, y)


def scaled_dot_product_attention(q, k, v, mask, causal, scale):
    """softmax(q k^T * scale) v for float16/bfloat16/float32 without a boolean mask: float16/bfloat16 with a head dim
    of 64 or 128 in the fused attention kernel (gpk_array._kernels.attention: its result follows q's layout); else
    the scores in float32 from one cuBLASLt batched GEMM, the (causal) softmax in one kernel writing the input
    dtype, then the second GEMM."""
    if mask is not None or not (q.dtype == k.dtype == v.dtype) or q.dtype.itemsize > 4:
        return None
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2]:
        return None
    if FLASH_ATTENTION and q.dtype.itemsize == 2:
        y = _attn.attention(q, k, v, causal, scale)
        if y is not None:
            return y
    blas = _get_blas()
    if not blas:
        return None
    import cupy
    t = tf32()
    s = blas.matmul(q, k.swapaxes(-1, -2), out_dtype=cupy.float32, tf32=t)
    if s is None:  # batch strides cuBLAS cannot express (permuted views of a packed qkv): compact copies
        q, k, v = (cupy.ascontiguousarray(a) for a in (q, k, v))
        s = blas.matmul(q, k.swapaxes(-1, -2), out_dtype=cupy.float32, tf32=t)
        if s is None:
            return None
    p = _nn.attn_softmax(s, q.dtype, causal, scale)
    if p is None:
        return None
    y = blas.matmul(p, v, tf32=t)
    return y if y is not None else blas.matmul(p, cupy.ascontiguousarray(v), tf32=t)


def self_attention(qkv, num_heads, causal, scale):
    """Multi-head self-attention of a fused (..., T, 3 * H * D) projection: the heads as strided views of qkv into
    scaled_dot_product_attention (the fused kernel writes its result in (..., T, H, D) order, so the reshape back
    is free), or None where that declines."""
    lead, t = qkv.shape[:-2], qkv.shape[-2]
    d = qkv.shape[-1] // (3 * num_heads)
    heads = _bits_contiguous(qkv).reshape(lead + (t, 3, num_heads, d))  # (a view: the model's qkv is contiguous)
    q, k, v = (heads[..., i, :, :].swapaxes(-2, -3) for i in range(3))
    y = scaled_dot_product_attention(q, k, v, None, causal, scale)
    if y is None:
        return None
    y = y.swapaxes(-2, -3)
    if not y.flags.c_contiguous:
        y = _bits_contiguous(y)   # (the GEMM path's (..., H, T, D) result; CuPy cannot copy bfloat16 itself)
    return y.reshape(lead + (t, num_heads * d))


argmax_last_axis = _nn.argmax_last_axis
kv_cache_attention = _nn.decode_attention
