"""GEMMs through cuBLASLt, called with ctypes, safe to record in a CUDA graph stream capture.

CuPy's cuBLAS wrappers call ``cublasSetStream`` on every call, which CuPy refuses while a stream captures.
Here one cuBLASLt handle per device, one workspace per (device, stream) (plain ``cudaMalloc``, outside any
memory pool) and, per problem key, the descriptors and the heuristic's algorithm are made once; a repeated call
sets the bias pointer and calls ``cublasLtMatmul`` on ``cupy.cuda.get_current_stream()``, nothing else.

- ``linear(x, w, bias=None, activation=None, out=None, *, tf32=None)``: ``x @ w.T + bias``, activation
  ``None | "relu" | "gelu_tanh"``, in one matmul with a cuBLASLt epilogue.
- ``matmul(a, b, out=None, *, tf32=None)``: ``a @ b`` for (..., M, K) @ (..., K, N), strided batched.
- ``available()``, ``BlasError``, ``TF32_DEFAULT``; ``gemm_plan`` is the pure layout logic.

Both return ``None`` for what they do not handle (dtype other than float16/bfloat16/float32/float64, layouts that
are neither C-contiguous nor transposes of it, empty problems, an epilogue cuBLASLt refuses) so the caller can
fall back; they raise ``ValueError`` for shape mismatches and ``BlasError`` when cuBLASLt fails.

Signatures and enum values checked against cublasLt.h and cublas_api.h of cuBLAS 13.10.0.20 (PyPI wheel
nvidia-cublas 13.10.0.20, CUBLAS_VERSION 131000) and library_types.h of CUDA 13.0.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections import namedtuple

import numpy as np

from .. import _config

TF32_DEFAULT = not _config.get("GPK_NO_TF32")
# Candidate algorithms timed on a problem's first call (outside captures); GPK_BLAS_AUTOTUNE=1: the heuristic's
# first choice, no timing.
AUTOTUNE_ALGOS = _config.get("GPK_BLAS_AUTOTUNE")
# ... only for problems of at least this many flops (2 M N K batch): below, a call's time is mostly host time and
# the timings pick noise (on the H200, tuned choices ran 0.8-0.9x the heuristic's in CUDA graphs at M <= 1024)
AUTOTUNE_MIN_FLOP = 1 << 33
_AUTOTUNE_REPS = 3
# ... and from this many flops up to AUTOTUNE_MIN_FLOP, timed as GPU time alone: each candidate's launches recorded
# in a CUDA graph and replayed (H200, graph-timed: the heuristic's first choice was 2-10% slower than the best of
# its 8 candidates at 512^3, 1024x768x3072 and f32 128x768x768,
# benchmarks/results/h200_2026-11-30_s6_diag_lt_cands_e819ed0.*)
AUTOTUNE_GRAPH_MIN_FLOP = 1 << 27
_GRAPH_REPS, _GRAPH_ROUNDS = 10, 3
# Graph-timed tuning costs a few ms per new problem (8 candidates recorded and replayed, the caller's queue drained
# first); a workload whose row count M varies (a server's prefill) would pay it for every new M. At most this many
# problems per (device, types, epilogue, N, K) are tuned; later ones keep the heuristic's choice.
GRAPH_TUNED_PER_WEIGHT = 16
_graph_tuned: dict = {}   # (device, types, epilogue, N, K) -> problems tuned so far
WORKSPACE_BYTES = 32 << 20
_MAX_CACHE = 4096
_INT32_MAX = 2**31 - 1

# library_types.h (cudaDataType_t)
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF = 0, 1, 2, 14
# cublas_api.h (cublasComputeType_t, cublasOperation_t)
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 70, 77
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_SUPPORTED = 0, 15
_STATUS = {0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
           7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
           13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
           15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}
# cublasLt.h: cublasLtMatmulDescAttributes_t (value types in the comments)
DESC_TRANSA, DESC_TRANSB = 3, 4             # int32_t
DESC_EPILOGUE = 7                           # uint32_t
DESC_BIAS_POINTER = 8                       # const void*
DESC_BIAS_DATA_TYPE = 26                    # int32_t (cudaDataType)
DESC_SM_COUNT_TARGET = 15                   # int32_t: plan for this many SMs (others run a concurrent stream)
# cublasLtMatrixLayoutAttribute_t
LAYOUT_BATCH_COUNT = 5                      # int32_t
LAYOUT_STRIDED_BATCH_OFFSET = 6             # int64_t
# cublasLtMatmulPreferenceAttributes_t
PREF_MAX_WORKSPACE_BYTES = 1                # uint64_t
PREF_MIN_ALIGNMENT_BYTES = (5, 6, 7, 8)     # uint32_t, for A, B, C, D
# cublasLtEpilogue_t
EPILOGUE_DEFAULT, EPILOGUE_RELU, EPILOGUE_BIAS, EPILOGUE_GELU = 1, 2, 4, 32
EPILOGUE_RELU_BIAS, EPILOGUE_GELU_BIAS = 6, 36
_EPILOGUES = {(None, False): EPILOGUE_DEFAULT, (None, True): EPILOGUE_BIAS,
              ("relu", False): EPILOGUE_RELU, ("relu", True): EPILOGUE_RELU_BIAS,
              ("gelu_tanh", False): EPILOGUE_GELU, ("gelu_tanh", True): EPILOGUE_GELU_BIAS}

# dtype name -> (cudaDataType of A/B/C/D and bias, compute type, scale type)
_TYPES = {"float16": (CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "bfloat16": (CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "float32": (CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "float64": (CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F)}


class BlasError(RuntimeError):
    """cuBLASLt could not be loaded, or one of its calls returned a status other than success."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


# --- pure layout logic (no GPU) -------------------------------------------------------------------------------

Plan = namedtuple("Plan", "out_shape M N K batch m n k opA rowsA colsA ldA strideA opB rowsB colsB ldB strideB "
                         "ldC strideC")
Plan.__doc__ = """A row-major ``out = a @ b`` as the column-major cuBLAS problem ``out^T (m x n) = op(A) op(B)``
with A the memory of ``b`` and B the memory of ``a`` (m = N, n = M, k = K), in elements; out is C-contiguous."""


def operand_layout(R, C, s0, s1):
    """A row-major (R, C) operand with element strides (s0, s1) as cuBLAS sees its transpose: ``(op, rows, cols,
    ld)`` of a column-major (rows x cols) matrix with ``op(matrix)`` == the operand transposed, or None."""
    if (C == 1 or s1 == 1) and (R == 1 or s0 >= C):   # rows contiguous: the memory is column-major (C x R)
        return CUBLAS_OP_N, C, R, (s0 if R > 1 else C)
    if (R == 1 or s0 == 1) and (C == 1 or s1 >= R):   # columns contiguous: column-major (R x C), transposed
        return CUBLAS_OP_T, R, C, (s1 if C > 1 else R)
    return None


def _batch_stride(bshape, strides):
    """One element stride s with strides[i] == s * prod(bshape[i+1:]) over the extents > 1, or None."""
    dims = [i for i, e in enumerate(bshape) if e > 1]
    if not dims:
        return 0
    s = strides[dims[-1]]
    if s < 0:
        return None
    for i in dims:
        if strides[i] != s * int(np.prod(bshape[i + 1:], dtype=np.int64)):
            return None
    return s


def gemm_plan(a_shape, a_strides, b_shape, b_strides):
    """The cuBLAS problem of ``a @ b`` (matmul semantics, ndim >= 2, batch dims broadcast) from shapes and element
    strides, or None when cuBLAS cannot read a layout without a copy (or the problem is empty or too large).
    Raises ValueError when the shapes do not match."""
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError("gemm_plan needs operands of at least 2 dimensions")
    M, K = a_shape[-2:]
    K2, N = b_shape[-2:]
    if K != K2:
        raise ValueError(f"matmul: shapes {tuple(a_shape)} and {tuple(b_shape)} do not match (K {K} != {K2})")
    nb = max(len(a_shape), len(b_shape)) - 2
    a_b = (1,) * (nb - len(a_shape) + 2) + tuple(a_shape[:-2])
    b_b = (1,) * (nb - len(b_shape) + 2) + tuple(b_shape[:-2])
    bshape = []
    for x, y in zip(a_b, b_b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"matmul: batch shapes {tuple(a_shape[:-2])} and {tuple(b_shape[:-2])} do not broadcast")
        bshape.append(max(x, y))
    bshape = tuple(bshape)
    out_shape = bshape + (M, N)
    batch = int(np.prod(bshape, dtype=np.int64))
    if min(M, N, K, batch) == 0 or max(M, N, K, batch) > _INT32_MAX:
        return None

    def padded(shape, strides, b):  # batch strides with broadcast dims at 0
        s = (0,) * (nb - len(shape) + 2) + tuple(strides[:-2])
        return [0 if e == 1 else st for e, st in zip(b, s)]

    sa = _batch_stride(bshape, padded(a_shape, a_strides, a_b))
    sb = _batch_stride(bshape, padded(b_shape, b_strides, b_b))
    la = operand_layout(K, N, b_strides[-2], b_strides[-1])   # cuBLAS A: b^T (N x K)
    lb = operand_layout(M, K, a_strides[-2], a_strides[-1])   # cuBLAS B: a^T (K x M)
    if sa is None or sb is None or la is None or lb is None:
        return None
    (opA, rowsA, colsA, ldA), (opB, rowsB, colsB, ldB) = la, lb
    n = M
    if batch > 1 and sb == 0 and opB == CUBLAS_OP_N and sa > 0 and (sa == M * ldB or (M == 1 and sa >= K)):
        # b is one matrix for the whole batch and the rows of a follow each other: one GEMM of batch*M rows
        if M == 1:
            ldB = sa
        n = colsB = batch * M
        batch, sa = 1, 0
    if n > _INT32_MAX:
        return None
    return Plan(out_shape, M, N, K, batch, N, n, K, opA, rowsA, colsA, ldA, sb, opB, rowsB, colsB, ldB, sa,
                N, M * N if batch > 1 else 0)


_plan_memo: dict = {}


def _memo(cache, key, fn):
    """cache[key], made by fn() on a miss (None is a value too); the cache is emptied when it reaches _MAX_CACHE."""
    hit = cache.get(key, cache)
    if hit is cache:
        hit = fn()
        if len(cache) >= _MAX_CACHE:
            cache.clear()
        cache[key] = hit
    return hit


def _plan(a_shape, a_strides, b_shape, b_strides):
    """gemm_plan, memoized: a GEMM of a model runs with the same shapes over and over."""
    return _memo(_plan_memo, (a_shape, a_strides, b_shape, b_strides),
                 lambda: gemm_plan(a_shape, a_strides, b_shape, b_strides))


def _align(ptr):
    """The largest power of two up to 256 that divides the address."""
    return 256 if ptr % 256 == 0 else ptr & -ptr


# --- the library ------------------------------------------------------------------------------------------------

_p = ctypes.c_void_p
_lib = None
_lib_error = None
_lock = threading.RLock()


class _HeuristicResult(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t: algo (uint64_t data[8]), workspaceSize, state, wavesCount, reserved[4]."""
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t), ("state", ctypes.c_int),
                ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


assert ctypes.sizeof(_HeuristicResult) == 96


def _bind(lib):
    """Declare the cuBLASLt functions used here on a loaded CDLL; returns it."""
    st, i32, u64, i64, sz, pp = ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_int64, ctypes.c_size_t, \
        ctypes.POINTER(_p)
    sigs = {
        "cublasLtCreate": [pp],
        "cublasLtMatmulDescCreate": [pp, i32, i32],
        "cublasLtMatmulDescDestroy": [_p],
        "cublasLtMatmulDescSetAttribute": [_p, i32, _p, sz],
        "cublasLtMatrixLayoutCreate": [pp, i32, u64, u64, i64],
        "cublasLtMatrixLayoutDestroy": [_p],
        "cublasLtMatrixLayoutSetAttribute": [_p, i32, _p, sz],
        "cublasLtMatmulPreferenceCreate": [pp],
        "cublasLtMatmulPreferenceDestroy": [_p],
        "cublasLtMatmulPreferenceSetAttribute": [_p, i32, _p, sz],
        "cublasLtMatmulAlgoGetHeuristic": [_p, _p, _p, _p, _p, _p, _p, i32, ctypes.POINTER(_HeuristicResult),
                                           ctypes.POINTER(ctypes.c_int)],
        "cublasLtMatmul": [_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, ctypes.POINTER(ctypes.c_uint64 * 8),
                           _p, sz, _p],
    }
    for name, args in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, st
    lib.cublasLtGetVersion.argtypes, lib.cublasLtGetVersion.restype = [], sz
    if hasattr(lib, "cublasLtGetStatusName"):
        lib.cublasLtGetStatusName.argtypes, lib.cublasLtGetStatusName.restype = [st], ctypes.c_char_p
    return lib


def _candidates():
    try:  # CuPy's cuBLAS module links libcublas, which loads libcublasLt: use that same instance
        import cupy_backends.cuda.libs.cublas  # noqa: F401
    except Exception:
        pass
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if os.path.basename(path).startswith("libcublasLt.so") and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    found = ctypes.util.find_library("cublasLt")
    return paths + ([found] if found else []) + ["libcublasLt.so.13", "libcublasLt.so.12"]


def _library():
    """The bound cuBLASLt CDLL; BlasError when it cannot be loaded."""
    global _lib, _lib_error
    if _lib is None:
        with _lock:
            if _lib is None and _lib_error is None:
                errors = []
                for path in _candidates():
                    try:
                        _lib = _bind(ctypes.CDLL(path))
                        break
                    except (OSError, AttributeError) as e:
                        errors.append(f"{path}: {e}")
                else:
                    _lib_error = "cuBLASLt not found (" + "; ".join(errors) + ")"
    if _lib is None:
        raise BlasError(_lib_error)
    return _lib


def available():
    """True when cuBLASLt loads and CuPy sees a CUDA device; never raises."""
    try:
        _library()
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def version():
    """cublasLtGetVersion() of the loaded library (e.g. 131000)."""
    return int(_library().cublasLtGetVersion())


def _check(status, what):
    if status != CUBLAS_STATUS_SUCCESS:
        name = _STATUS.get(status)
        fn = getattr(_lib, "cublasLtGetStatusName", None)
        if name is None and fn is not None:
            name = (fn(status) or b"").decode()
        raise BlasError(f"{what} failed: {name or 'status'} ({status})", status)


def _set(fn, obj, attr, value):
    _check(fn(obj, attr, ctypes.byref(value), ctypes.sizeof(value)), f"{fn.__name__}({attr})")


# --- per device state and the cache -------------------------------------------------------------------------------

_handles = {}      # device id -> cublasLtHandle_t
_workspaces = {}   # (device id, stream ptr) -> cupy.cuda.Memory
_plans = {}        # key -> _Entry, or None when cuBLASLt has no algorithm
_calls = {}        # (plan, pointers, epilogue, types, sm target, stream, device) -> (cublasLtMatmul's args, _Entry)
_checked = {}      # matmul/linear operand metadata -> what their checks concluded (see _matmul_prep, _linear_prep)


def _handle(lib, dev):
    h = _handles.get(dev)
    if h is None:
        h = _p()
        _check(lib.cublasLtCreate(ctypes.byref(h)), "cublasLtCreate")
        _handles[dev] = h
    return h


def _workspace(dev, stream_ptr):
    mem = _workspaces.get((dev, stream_ptr))
    if mem is None:
        import cupy
        mem = _workspaces[(dev, stream_ptr)] = cupy.cuda.Memory(WORKSPACE_BYTES)
    return mem


class _Entry:
    """Descriptors, algorithm and alpha/beta of one problem key, kept for the life of the process."""

    def __init__(self, lib):
        self.lib, self.desc, self.layouts, self.pref = lib, None, [], None
        self.bias_ptr = 0   # the descriptor's bias pointer attribute as last set

    def destroy(self):
        for lay in self.layouts:
            self.lib.cublasLtMatrixLayoutDestroy(lay)
        if self.desc:
            self.lib.cublasLtMatmulDescDestroy(self.desc)
        if self.pref:
            self.lib.cublasLtMatmulPreferenceDestroy(self.pref)
        self.layouts, self.desc, self.pref = [], None, None


def _layout(lib, entry, ctype, rows, cols, ld, batch, stride):
    lay = _p()
    _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), ctype, rows, cols, ld), "cublasLtMatrixLayoutCreate")
    entry.layouts.append(lay)
    if batch > 1:
        _set(lib.cublasLtMatrixLayoutSetAttribute, lay, LAYOUT_BATCH_COUNT, ctypes.c_int32(batch))
        _set(lib.cublasLtMatrixLayoutSetAttribute, lay, LAYOUT_STRIDED_BATCH_OFFSET, ctypes.c_int64(stride))
    return lay


def _build(lib, handle, plan, types, epilogue, bias_ptr, aligns, sm_target=0, n_algos=1):
    """Descriptors and the heuristic's best ``n_algos`` algorithms for a key (``e.candidates``, the first in
    ``e.result``); None when cuBLASLt has none. sm_target > 0: the heuristic plans for that many SMs (a scheduler
    context leaving the rest to higher tiers)."""
    ctype, compute, scale, otype = types
    e = _Entry(lib)
    try:
        e.desc = _p()
        _check(lib.cublasLtMatmulDescCreate(ctypes.byref(e.desc), compute, scale), "cublasLtMatmulDescCreate")
        sd = lib.cublasLtMatmulDescSetAttribute
        _set(sd, e.desc, DESC_TRANSA, ctypes.c_int32(plan.opA))
        _set(sd, e.desc, DESC_TRANSB, ctypes.c_int32(plan.opB))
        _set(sd, e.desc, DESC_EPILOGUE, ctypes.c_uint32(epilogue))
        if sm_target:
            _set(sd, e.desc, DESC_SM_COUNT_TARGET, ctypes.c_int32(sm_target))
        if bias_ptr:
            _set(sd, e.desc, DESC_BIAS_DATA_TYPE, ctypes.c_int32(ctype))
            _set(sd, e.desc, DESC_BIAS_POINTER, _p(bias_ptr))  # the heuristic reads its alignment
        e.a = _layout(lib, e, ctype, plan.rowsA, plan.colsA, plan.ldA, plan.batch, plan.strideA)
        e.b = _layout(lib, e, ctype, plan.rowsB, plan.colsB, plan.ldB, plan.batch, plan.strideB)
        e.c = _layout(lib, e, otype, plan.m, plan.n, plan.ldC, plan.batch, plan.strideC)
        e.pref = _p()
        _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(e.pref)), "cublasLtMatmulPreferenceCreate")
        sp = lib.cublasLtMatmulPreferenceSetAttribute
        _set(sp, e.pref, PREF_MAX_WORKSPACE_BYTES, ctypes.c_uint64(WORKSPACE_BYTES))
        for attr, al in zip(PREF_MIN_ALIGNMENT_BYTES, aligns):
            _set(sp, e.pref, attr, ctypes.c_uint32(al))
        results, count = (_HeuristicResult * n_algos)(), ctypes.c_int(0)
        status = lib.cublasLtMatmulAlgoGetHeuristic(handle, e.desc, e.a, e.b, e.c, e.c, e.pref, n_algos,
                                                    results, ctypes.byref(count))
        if status == CUBLAS_STATUS_NOT_SUPPORTED or (status == CUBLAS_STATUS_SUCCESS and count.value < 1):
            e.destroy()
            return None
        _check(status, "cublasLtMatmulAlgoGetHeuristic")
        e.candidates = [r for r in results[:count.value]
                        if r.state == CUBLAS_STATUS_SUCCESS and r.workspaceSize <= WORKSPACE_BYTES]
        if not e.candidates:
            raise BlasError(f"cublasLtMatmulAlgoGetHeuristic: no usable algorithm among {count.value}")
        e.result = e.candidates[0]
        num = ctypes.c_double if scale == CUDA_R_64F else ctypes.c_float
        e.alpha, e.beta = num(1.0), num(0.0)
        return e
    except BaseException:
        e.destroy()
        raise


_rt = None  # (cupy, getDevice, get_current_stream) of the cupy module in sys.modules (tests swap in a fake)


def _runtime():
    global _rt
    cp = sys.modules.get("cupy")
    if cp is None:
        import cupy as cp
    if _rt is None or _rt[0] is not cp:
        _rt = (cp, cp.cuda.runtime.getDevice, cp.cuda.get_current_stream)
    return _rt


def _run(plan, dtype_name, a, b, out, bias, epilogue, tf32, sm_target=0):
    """Launch a repeated call from ``_calls`` (one dict lookup, then cublasLtMatmul with its arguments prepared,
    the bias pointer set first where it changed), else ``_run_new``; False when cuBLASLt has no algorithm."""
    _, get_device, get_stream = _runtime()
    dev = get_device()
    stream = get_stream().ptr
    pbias = bias.data.ptr if bias is not None else 0
    use_tf32 = dtype_name == "float32" and (TF32_DEFAULT if tf32 is None else tf32)
    ck = (plan, a.data.ptr, b.data.ptr, out.data.ptr, pbias, epilogue, dtype_name, out.dtype, use_tf32, sm_target,
          stream, dev, AUTOTUNE_ALGOS)
    hit = _calls.get(ck)
    if hit is None:
        return _run_new(plan, dtype_name, a, b, out, bias, epilogue, tf32, sm_target, ck)
    args, e = hit
    # under the lock: the bias pointer is an attribute of the entry's descriptor, shared by its calls, and
    # clear_cache (another thread's) destroys the descriptors these arguments point to
    with _lock:
        if _calls.get(ck) is not hit:
            return _run_new(plan, dtype_name, a, b, out, bias, epilogue, tf32, sm_target, ck)
        if pbias and e.bias_ptr != pbias:
            _set(_lib.cublasLtMatmulDescSetAttribute, e.desc, DESC_BIAS_POINTER, _p(pbias))
            e.bias_ptr = pbias
        _check(_lib.cublasLtMatmul(*args), "cublasLtMatmul")
    return True


def _run_new(plan, dtype_name, a, b, out, bias, epilogue, tf32, sm_target, call_key):
    """Look up (or build) the key's entry and launch; remember the call's arguments under ``call_key``."""
    import cupy
    lib = _library()
    dev = cupy.cuda.runtime.getDevice()
    for arr in (a, b, out, bias):
        if arr is not None and arr.data.device_id != dev:
            raise ValueError(f"operand on device {arr.data.device_id}, current device is {dev}")
    types = _TYPES[dtype_name] + (_TYPES[out.dtype.name][0],)  # C/D may be float32 for 16-bit inputs
    if dtype_name == "float32" and (TF32_DEFAULT if tf32 is None else tf32):
        types = (types[0], CUBLAS_COMPUTE_32F_FAST_TF32, types[2], types[3])
    pa, pb, pc = a.data.ptr, b.data.ptr, out.data.ptr
    pbias = bias.data.ptr if bias is not None else 0
    aligns = (_align(pb), _align(pa), _align(pc), _align(pc))  # cuBLAS A is b, B is a
    key = (dev, types, plan[1:], epilogue, aligns, _align(pbias) if bias is not None else 0, sm_target,
           AUTOTUNE_ALGOS)
    stream = cupy.cuda.get_current_stream().ptr
    with _lock:
        handle = _handle(lib, dev)
        ws = _workspace(dev, stream)
        if key in _plans:
            e = _plans[key]
        else:
            if len(_plans) >= _MAX_CACHE:
                clear_cache()
            # Not for a plan made for a scheduler's SM share (sm_target): a paced context plans while a higher tier
            # runs, where timings are noise, and timing 8 candidates of a large GEMM on a few SMs would stall its
            # step (and this lock) for up to a second, as measured on the H200.
            flop = 2 * plan.m * plan.n * plan.k * plan.batch
            tune = (AUTOTUNE_ALGOS > 1 and not sm_target and flop >= AUTOTUNE_GRAPH_MIN_FLOP
                    and not cupy.cuda.runtime.streamIsCapturing(stream))
            if tune and flop < AUTOTUNE_MIN_FLOP:
                weight = (dev, types, epilogue, plan.N, plan.K)
                tune = _graph_tuned.get(weight, 0) < GRAPH_TUNED_PER_WEIGHT
                if tune:
                    _graph_tuned[weight] = _graph_tuned.get(weight, 0) + 1
            e = _build(lib, handle, plan, types, epilogue, pbias, aligns, sm_target, AUTOTUNE_ALGOS if tune else 1)
            if e is not None and len(e.candidates) > 1:
                _autotune(lib, handle, e, pa, pb, out, pbias, ws.ptr, stream, graph=flop < AUTOTUNE_MIN_FLOP)
            _plans[key] = e
        if e is None:
            return False
        if bias is not None:
            _set(lib.cublasLtMatmulDescSetAttribute, e.desc, DESC_BIAS_POINTER, _p(pbias))
            e.bias_ptr = pbias
        args = (handle, e.desc, ctypes.byref(e.alpha), pb, e.a, pa, e.b, ctypes.byref(e.beta), pc, e.c, pc, e.c,
                ctypes.byref(e.result.algo), ws.ptr, WORKSPACE_BYTES, stream)
        _check(lib.cublasLtMatmul(*args), "cublasLtMatmul")
        if len(_calls) >= _MAX_CACHE:
            _calls.clear()
        _calls[call_key] = (args, e)
    return True


def _autotune(lib, handle, e, pa, pb, out, pbias, ws, stream, graph=False):
    """Time each of the heuristic's candidate algorithms on this very problem (into a scratch output, so ``out``
    may alias an input) and keep the fastest in ``e.result``: the heuristic's first choice is not always the
    fastest, most visibly with a bias + GELU epilogue. Runs once per problem key, never during a capture.
    ``graph``: each candidate's launches are recorded in a CUDA graph and replayed (GPU time alone: a small
    problem's eager launches would time the host), on a side stream ordered after ``stream`` and synchronized
    before returning (the workspace is ``stream``'s). Tuning only chooses: any failure on the way (a capture
    another thread's work invalidates, ...) keeps the heuristic's first choice."""
    import cupy
    rt = cupy.cuda.runtime
    scratch = cupy.empty(out.shape, out.dtype)
    side = cupy.cuda.Stream(non_blocking=True) if graph else None
    sptr = side.ptr if graph else stream
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    best, best_t = e.candidates[0], None
    try:
        if graph:  # the side stream starts after the caller's queued work (inputs, earlier users of ws)
            ready = cupy.cuda.Event(disable_timing=True)
            rt.eventRecord(ready.ptr, stream)
            rt.streamWaitEvent(sptr, ready.ptr, 0)
        if pbias:
            _set(lib.cublasLtMatmulDescSetAttribute, e.desc, DESC_BIAS_POINTER, _p(pbias))
        for cand in e.candidates:
            def run(cand=cand):
                return lib.cublasLtMatmul(handle, e.desc, ctypes.byref(e.alpha), pb, e.a, pa, e.b,
                                          ctypes.byref(e.beta), scratch.data.ptr, e.c, scratch.data.ptr, e.c,
                                          ctypes.byref(cand.algo), ws, WORKSPACE_BYTES, sptr)
            if run() != CUBLAS_STATUS_SUCCESS:  # an algorithm that refuses this problem is simply not chosen
                continue
            t = _graph_ms(run, side, start, end) if graph else _eager_ms(run, sptr, start, end)
            if best_t is None or t < best_t * 0.98:  # ties keep the heuristic's order
                best, best_t = cand, t
    except Exception:
        best = e.candidates[0]
    finally:
        try:  # scratch and the workspace are in use until the timed launches are done
            rt.streamSynchronize(sptr)
        except Exception:
            pass
    e.result = best
    e.candidates = [best]


def _eager_ms(run, stream_ptr, start, end):
    import cupy
    rt = cupy.cuda.runtime
    rt.eventRecord(start.ptr, stream_ptr)
    for _ in range(_AUTOTUNE_REPS):
        run()
    rt.eventRecord(end.ptr, stream_ptr)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end)


def _graph_ms(run, stream, start, end):
    """Best over rounds of one replay of a graph of _GRAPH_REPS launches (``run`` launches on ``stream``)."""
    import cupy
    stream.begin_capture()
    try:
        for _ in range(_GRAPH_REPS):
            if run() != CUBLAS_STATUS_SUCCESS:
                raise BlasError("cublasLtMatmul failed during capture")
    finally:
        g = stream.end_capture()
    g.launch(stream)
    best = None
    for _ in range(_GRAPH_ROUNDS):
        start.record(stream)
        g.launch(stream)
        end.record(stream)
        end.synchronize()
        t = cupy.cuda.get_elapsed_time(start, end)
        best = t if best is None else min(best, t)
    return best


def clear_cache():
    """Destroy the cached descriptors (handles and workspaces stay)."""
    with _lock:
        _calls.clear()   # their arguments point into the entries destroyed here
        for e in _plans.values():
            if e is not None:
                e.destroy()
        _plans.clear()
        _graph_tuned.clear()


# --- the API --------------------------------------------------------------------------------------------------


def _dtype_name(dt):
    name = np.dtype(dt).name
    return name if name in _TYPES and np.dtype(dt).itemsize == {"float64": 8, "float32": 4}.get(name, 2) else None


def _elem_strides(arr):
    item = arr.dtype.itemsize
    if any(s % item for s in arr.strides):
        return None
    return tuple(s // item for s in arr.strides)


def _c_contiguous(shape, strides):
    expect = 1
    for e, s in zip(reversed(shape), reversed(strides)):
        if e != 1 and s != expect:
            return False
        expect *= e
    return True


def _output(out, shape, dtype):
    if out is None:
        return _runtime()[0].ndarray(shape, dtype)  # cupy.empty without its Python wrapper
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise ValueError(f"out has shape {tuple(out.shape)} and dtype {out.dtype}; expected {tuple(shape)} {dtype}")
    st = _elem_strides(out)
    return out if st is not None and _c_contiguous(out.shape, st) else None


def _matmul_prep(a, b, out_dtype):
    """(dtype name, plan, output dtype) of a matmul from its operands' metadata, or None (not for cuBLASLt)."""
    if a.ndim < 2 or b.ndim < 2:
        return None
    name = _dtype_name(a.dtype)
    if name is None or a.dtype != b.dtype:
        return None
    sa, sb = _elem_strides(a), _elem_strides(b)
    if sa is None or sb is None:
        return None
    plan = _plan(a.shape, sa, b.shape, sb)
    if plan is None:
        return None
    if out_dtype is not None and np.dtype(out_dtype) != a.dtype and not (
            np.dtype(out_dtype) == np.float32 and name in ("float16", "bfloat16")):
        return None
    return name, plan, a.dtype if out_dtype is None else np.dtype(out_dtype)


def matmul(a, b, out=None, *, tf32=None, sm_target=0, out_dtype=None):
    """``a @ b`` for CuPy arrays (..., M, K) and (..., K, N) of one float dtype, batch dims broadcast (a broadcast batch
    operand needs stride 0); out_dtype float32 for float16/bfloat16 operands keeps the float32 accumulator. Operands
    C-contiguous or transposes of C-contiguous (any leading dimension); anything else, other dtypes, empty problems:
    None. ``out``: C-contiguous (..., M, N), written and returned. A shape problem (K differs, batch dims that do not
    broadcast) raises ValueError."""
    key = ("mm", a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, out_dtype)
    prep = _checked.get(key, _checked)
    if prep is _checked:
        prep = _memo(_checked, key, lambda: _matmul_prep(a, b, out_dtype))
    if prep is None:
        return None
    name, plan, odt = prep
    out = _output(out, plan.out_shape, odt)
    if out is None or not _run(plan, name, a, b, out, None, EPILOGUE_DEFAULT, tf32, sm_target):
        return None
    return out


def _linear_prep(x, w, bias, activation):
    """(dtype name, plan, leading shape, K, N) of a linear from its operands' metadata, or None."""
    if activation not in (None, "relu", "gelu_tanh") or x.ndim < 1 or w.ndim != 2:
        return None
    name = _dtype_name(x.dtype)
    if name is None or w.dtype != x.dtype or (bias is not None and bias.dtype != x.dtype):
        return None
    N, K = w.shape
    if x.shape[-1] != K:
        raise ValueError(f"linear: x has {x.shape[-1]} features, w has shape {tuple(w.shape)}")
    if bias is not None and tuple(bias.shape) != (N,):
        raise ValueError(f"linear: bias has shape {tuple(bias.shape)}, expected ({N},)")
    sx, sw = _elem_strides(x), _elem_strides(w)
    if sx is None or sw is None or (bias is not None and bias.strides[0] != bias.itemsize and N > 1):
        return None
    lead = tuple(x.shape[:-1])
    if x.ndim != 2:
        if not _c_contiguous(x.shape, sx):
            return None
        sx = (K, 1)
    plan = _plan((int(np.prod(lead, dtype=np.int64)), K), sx, (K, N), (sw[1], sw[0]))
    if plan is None:
        return None
    return name, plan, lead, K, N


def linear(x, w, bias=None, activation=None, out=None, *, tf32=None, sm_target=0):
    """``activation(x @ w.T + bias)`` in one cuBLASLt matmul with an epilogue (torch.nn.functional.linear layout):
    x (..., K), w (N, K), bias (N,) or None, activation None | "relu" | "gelu_tanh". x with more than 2 dims must
    be C-contiguous. Returns (..., N), or None for what it cannot do in one call (the caller falls back)."""
    bmeta = None if bias is None else (bias.shape, bias.strides, bias.dtype)
    key = ("lin", x.shape, x.strides, x.dtype, w.shape, w.strides, w.dtype, bmeta, activation)
    prep = _checked.get(key, _checked)
    if prep is _checked:
        prep = _memo(_checked, key, lambda: _linear_prep(x, w, bias, activation))
    if prep is None:
        return None
    name, plan, lead, K, N = prep
    if x.ndim != 2:
        x = x.reshape(-1, K)
    res = _output(out, lead + (N,), x.dtype)
    if res is None:
        return None
    flat = res.reshape(plan.out_shape) if res.ndim != 2 else res
    if not _run(plan, name, x, w, flat, bias, _EPILOGUES[(activation, bias is not None)], tf32, sm_target):
        return None
    return res


if __name__ == "__main__":  # python -m gpk_array._kernels.blas
    from gpk_array._kernels.blas_selftest import main
    main()
