"""TMA descriptors (CUtensorMap) from the CUDA driver's ``cuTensorMapEncodeTiled``, through ctypes.

``encode_tiled`` has the signature of ``params_sm90.Encoder``: it encodes one descriptor and writes its
128 bytes into a Params buffer at a given offset. The driver library is opened on the first call,
never at import, so importing this module needs no GPU and no driver.

Why ctypes on ``libcuda.so.1`` and not ``cuda.bindings``: the loader already reaches the driver this
way (``cuLaunchKernelEx`` for PDL launches), so no second binding layer and no version coupling
between cuda-bindings and the installed driver are added; the call writes into a buffer of ours
(``cuda.bindings`` returns a ``CUtensorMap`` object whose bytes would have to be copied out through a
pointer anyway); and a ctypes call with plain integer arrays costs a few microseconds.

``cuTensorMapEncodeTiled`` is pure host-side encoding: it needs an initialized driver (``cuInit``,
done here once) but no context and no device memory access, and it validates its arguments
(alignment, strides, box sizes), returning CUDA_ERROR_INVALID_VALUE when they are out of range.
"""

from __future__ import annotations

import ctypes
import threading

DESCRIPTOR_BYTES = 128       # sizeof(CUtensorMap)
DESCRIPTOR_ALIGN = 64        # alignof(CUtensorMap); the driver wants the output 64-byte aligned

_lock = threading.Lock()
_state: dict = {}


class TmaError(RuntimeError):
    """cuTensorMapEncodeTiled failed (or the driver is missing)."""


def _driver():
    fn = _state.get("fn")
    if fn is not None:
        return fn
    with _lock:
        fn = _state.get("fn")
        if fn is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise TmaError(f"gpk_array: the CUDA driver (libcuda.so.1 with cuTensorMapEncodeTiled, "
                               f"CUDA 12.0+) is not available: {e}") from e
            fn = _bind(lib)
    return fn


def _bind(lib):
    """Declare the prototypes on a driver library (or a test's stand-in), cuInit it, use it from now on."""
    try:
        fn = lib.cuTensorMapEncodeTiled
    except AttributeError as e:
        raise TmaError(f"gpk_array: this CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0+): {e}") from e
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p,
                   u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.cuInit.restype = ctypes.c_int
    lib.cuInit.argtypes = [ctypes.c_uint]
    lib.cuGetErrorName.restype = ctypes.c_int
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    replace = getattr(lib, "cuTensorMapReplaceAddress", None)
    if replace is not None:
        replace.restype = ctypes.c_int
        replace.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    rc = lib.cuInit(0)
    if rc:
        raise TmaError(f"gpk_array: cuInit failed ({_error_name(lib, rc)})")
    _state["lib"] = lib
    _state["replace"] = replace
    _state["fn"] = fn
    return fn


def _error_name(lib, rc: int) -> str:
    name = ctypes.c_char_p()
    try:
        lib.cuGetErrorName(rc, ctypes.byref(name))
    except Exception:
        pass
    return f"{(name.value or b'CUDA error').decode()} ({rc})"


_tls = threading.local()


def _scratch() -> int:
    """A 64-byte aligned 128-byte buffer of this thread's (the driver writes there; we copy it out)."""
    addr = getattr(_tls, "addr", None)
    if addr is None:
        raw = ctypes.create_string_buffer(DESCRIPTOR_BYTES + DESCRIPTOR_ALIGN)
        _tls.raw = raw
        addr = _tls.addr = (ctypes.addressof(raw) + DESCRIPTOR_ALIGN - 1) & ~(DESCRIPTOR_ALIGN - 1)
    return addr


def encode_tiled(out: bytearray, offset: int, data_type: int, rank: int, address: int, dims, strides,
                 box, elem_strides, interleave: int, swizzle: int, l2_promotion: int,
                 oob_fill: int) -> None:
    """cuTensorMapEncodeTiled(...) into out[offset:offset + 128].

    dims, box, elem_strides: ``rank`` values each (dim 0 contiguous); strides: the ``rank - 1`` byte
    strides of dims 1.. (dim 0's stride is the element size, implicit)."""
    fn = _driver()
    if len(dims) != rank or len(box) != rank or len(elem_strides) != rank or len(strides) != rank - 1:
        raise ValueError("dims, box and elem_strides need rank entries, strides rank - 1")
    dst = _scratch()
    c_dims = (ctypes.c_uint64 * rank)(*dims)
    c_strides = (ctypes.c_uint64 * max(1, rank - 1))(*strides)
    c_box = (ctypes.c_uint32 * rank)(*box)
    c_es = (ctypes.c_uint32 * rank)(*elem_strides)
    rc = fn(dst, data_type, rank, address, c_dims, c_strides, c_box, c_es, interleave, swizzle,
            l2_promotion, oob_fill)
    if rc:
        raise TmaError(f"gpk_array: cuTensorMapEncodeTiled failed: {_error_name(_state['lib'], rc)} "
                       f"(data_type {data_type}, rank {rank}, address {address:#x}, dims {list(dims)}, "
                       f"strides {list(strides)}, box {list(box)}, swizzle {swizzle})")
    out[offset:offset + DESCRIPTOR_BYTES] = ctypes.string_at(dst, DESCRIPTOR_BYTES)


def replace_address(descriptor: int, address: int) -> None:
    """cuTensorMapReplaceAddress: point the encoded descriptor at host address ``descriptor`` (64-byte aligned,
    inside a Params buffer) at a new global ``address``, which must meet the alignment of the original
    encode (16 bytes here). Everything else the descriptor holds (dims, strides, box, swizzle) stays."""
    _driver()
    replace = _state.get("replace")
    if replace is None:
        raise TmaError("gpk_array: this CUDA driver has no cuTensorMapReplaceAddress (CUDA 12.0+)")
    rc = replace(descriptor, address)
    if rc:
        raise TmaError(f"gpk_array: cuTensorMapReplaceAddress failed: {_error_name(_state['lib'], rc)} "
                       f"(address {address:#x})")
