"""CuPy glue: lazy import, stream priorities, and switching a thread's CuPy state to a context.

Nothing here touches the device at import time; CuPy itself is imported on first use, so CPU-only programs never
pay for it.
"""

import contextlib
import threading

__all__ = [
    "cupy",
    "on_device",
    "priority_range",
    "activate",
    "active_context",
    "device_free_bytes",
    "device_count",
    "sm_count",
]

_cupy = None
_priority_cache = {}
_priority_lock = threading.Lock()


def cupy():
    """The ``cupy`` module, imported on first call (always import the package before its submodules)."""
    global _cupy
    if _cupy is None:
        import cupy as cp  # noqa: PLC0415

        _cupy = cp
    return _cupy


def capturing():
    """Whether CuPy's current stream is capturing a CUDA graph."""
    cp = cupy()
    try:
        return bool(cp.cuda.runtime.streamIsCapturing(cp.cuda.get_current_stream().ptr))
    except Exception:  # noqa: BLE001 - the legacy stream beside a capture, an invalidated capture: that ends it
        return False


def device_count():
    try:
        return int(cupy().cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def priority_range(device_id):
    """``(least, greatest)`` stream priorities of a device (numerically, greatest < least; e.g. (0, -5)).

    CuPy's runtime module does not wrap cudaDeviceGetStreamPriorityRange in every release; when it is missing,
    the range is probed: CUDA clamps a requested priority into the device's range, so a stream created with a
    very large and a very small priority reports the two ends.
    """
    with _priority_lock:
        cached = _priority_cache.get(device_id)
        if cached is not None:
            return cached
        cp = cupy()
        prev = cp.cuda.runtime.getDevice()
        cp.cuda.runtime.setDevice(device_id)
        try:
            query = getattr(cp.cuda.runtime, "deviceGetStreamPriorityRange", None)
            if query is not None:
                least, greatest = query()
            else:
                low = cp.cuda.Stream(non_blocking=True, priority=1000)
                high = cp.cuda.Stream(non_blocking=True, priority=-1000)
                least, greatest = int(low.priority), int(high.priority)
                del low, high
        finally:
            cp.cuda.runtime.setDevice(prev)
        _priority_cache[device_id] = (int(least), int(greatest))
        return _priority_cache[device_id]


_sm_counts = {}


def sm_count(device_id):
    """Streaming multiprocessors of a device."""
    n = _sm_counts.get(device_id)
    if n is None:
        n = _sm_counts[device_id] = int(cupy().cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])
    return n


@contextlib.contextmanager
def on_device(device_id):
    """``with on_device(i):`` makes device ``i`` CuPy's current device inside the block (and the previous one again
    after it)."""
    rt = cupy().cuda.runtime
    prev = rt.getDevice()
    if prev == device_id:
        yield
        return
    rt.setDevice(device_id)
    try:
        yield
    finally:
        rt.setDevice(prev)


def device_free_bytes(device_id):
    """Free bytes on a device, as the driver reports them (cudaMemGetInfo)."""
    cp = cupy()
    rt = cp.cuda.runtime
    prev = rt.getDevice()
    if prev == device_id:
        return int(rt.memGetInfo()[0])
    rt.setDevice(device_id)
    try:
        return int(rt.memGetInfo()[0])
    finally:
        rt.setDevice(prev)


# --- per-thread CuPy state -------------------------------------------------------------------------------------
#
# A thread's CuPy state (current device, current stream of that device, thread-local allocator) follows the
# scheduler context that is current in the running thread or asyncio task. ``activate(ctx)`` switches it; the
# previous state is saved when going from "no context" to a context and restored on the way back, with CuPy's
# own context-manager protocol (stream push/pop, ``using_allocator``) so that user code nesting
# ``with cupy.cuda.Stream():`` inside a scheduler context returns to the context's stream afterwards.

class _ThreadState(threading.local):
    active = None  # a class default: reading it where never set costs no AttributeError (getattr with a default
    # on a bare threading.local costs about 1 us, on every context entry and exit)


_tls = _ThreadState()


def active_context():
    """The CUDA context whose CuPy state is applied on this thread, or None."""
    st = _tls.active
    return None if st is None else st[0]


_api = None  # (getDevice, setDevice, get thread allocator, set thread allocator): CuPy's, looked up once
_api_of = None  # the module _api was taken from (tests swap in a fake CuPy)


def _cupy_api():
    global _api, _api_of
    cp = cupy()
    if _api is None or _api_of is not cp:
        rt, mem = cp.cuda.runtime, cp.cuda.memory
        _api = (rt.getDevice, rt.setDevice, mem._get_thread_local_allocator, mem._set_thread_local_allocator)
        _api_of = cp
    return _api


def activate(ctx):
    """Make ``ctx`` (a CUDA context or None) the one whose stream and pool this thread's CuPy calls use.

    The state saved on the way in is (previous device or None, the stream entered, the previous thread-local
    allocator); CuPy's own calls are used directly (no context-manager objects, CuPy's functions looked up once),
    since this runs on every ``with ctx:``.
    """
    st = _tls.active
    if ctx is not None and not ctx._cuda:
        ctx = None
    if st is None:
        if ctx is None:
            return
    elif st[0] is ctx and st[2] is ctx.stream:
        return
    if st is not None:
        _tls.active = None
        _restore(st)
    if ctx is None:
        return
    get_device, set_device, get_alloc, set_alloc = _api if _api_of is _cupy else _cupy_api()
    prev_dev = get_device()
    if prev_dev != ctx.device_id:
        set_device(ctx.device_id)
    else:
        prev_dev = None
    stream = ctx.stream
    entered = False
    try:
        stream.__enter__()
        entered = True
        prev_alloc = get_alloc()
        set_alloc(ctx._allocator)
    except BaseException:  # leave the thread as it was: stream popped, device back
        try:
            if entered:
                stream.__exit__(None, None, None)
        finally:
            if prev_dev is not None:
                set_device(prev_dev)
        raise
    _tls.active = (ctx, prev_dev, stream, prev_alloc)


def _restore(st):
    """Undo what ``activate`` did for the state ``st`` (allocator, stream, device: the reverse order)."""
    _, prev_dev, stream, prev_alloc = st
    _, set_device, _, set_alloc = _api if _api_of is _cupy else _cupy_api()
    set_alloc(prev_alloc)
    try:
        stream.__exit__(None, None, None)
    finally:
        if prev_dev is not None:
            set_device(prev_dev)

def swap_stream(ctx, old, new):
    """Point this thread's CuPy current stream from ``old`` to ``new`` for ``ctx`` (entered here, its stream on top
    of CuPy's stack); False, changing nothing, when the thread's state is not exactly that."""
    st = _tls.active
    if st is None or st[0] is not ctx or st[2] is not old or cupy().cuda.get_current_stream() != old:
        return False
    old.__exit__(None, None, None)
    new.__enter__()
    _tls.active = (ctx, st[1], new, st[3])
    return True


# --- green contexts: streams confined to a subset of the SMs ------------------------------------------------------
#
# A green context (CUDA 12.4+ driver) owns a partition of the device's SMs; kernels launched into one of its
# streams run only on those SMs, whoever launches them (CuPy, cuBLAS, gpk_array's kernels: all load their code in
# the primary context, which green-context streams share, as measured on the H200). The scheduler gives a paced
# context such a stream while a higher tier is busy, so its kernels cannot occupy the SMs the higher tier needs.

_CU_DEV_RESOURCE_TYPE_SM = 1
_CU_GREEN_CTX_DEFAULT_STREAM = 0x1
_CU_STREAM_NON_BLOCKING = 0x1
_green_lock = threading.Lock()
_green = {}  # (device_id, requested SMs) -> (green context handle, SMs it got)
_driver = None


class GreenContextError(RuntimeError):
    """The driver cannot make green contexts (too old, or the call failed)."""


def _cuda_driver():
    import ctypes  # noqa: PLC0415

    global _driver
    if _driver is None:
        class Resource(ctypes.Structure):  # CUdevResource (RESOURCE_ABI_VERSION 1): type, padding, SM union
            _fields_ = [("type", ctypes.c_int), ("_pad", ctypes.c_ubyte * 92), ("sm_count", ctypes.c_uint),
                        ("min_partition", ctypes.c_uint), ("coscheduled_alignment", ctypes.c_uint),
                        ("_rest", ctypes.c_ubyte * 36)]
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            for name in ("cuDeviceGet", "cuDeviceGetDevResource", "cuDevSmResourceSplitByCount",
                         "cuDevResourceGenerateDesc", "cuGreenCtxCreate", "cuGreenCtxStreamCreate",
                         "cuStreamDestroy_v2"):
                getattr(lib, name).restype = ctypes.c_int
        except (OSError, AttributeError) as e:
            raise GreenContextError(f"the CUDA driver has no green-context API: {e}") from None
        _driver = (lib, Resource, ctypes)
    return _driver


def _check(rc, what):
    if rc != 0:
        raise GreenContextError(f"{what} failed: CUresult {rc}")


def _green_context(device_id, n_sms):
    """The (cached) green context of ``n_sms`` SMs (rounded up by the driver to its partition granularity)."""
    key = (device_id, n_sms)
    with _green_lock:
        hit = _green.get(key)
        if hit is not None:
            return hit
        lib, Resource, ct = _cuda_driver()  # (the caller's CuPy stream already made the primary context)
        dev = ct.c_int()
        _check(lib.cuDeviceGet(ct.byref(dev), device_id), "cuDeviceGet")
        whole, group, rest = Resource(), Resource(), Resource()
        _check(lib.cuDeviceGetDevResource(dev, ct.byref(whole), _CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource")
        if n_sms >= whole.sm_count:
            raise GreenContextError(f"cannot confine to {n_sms} of the device's {whole.sm_count} SMs")
        groups = ct.c_uint(1)
        _check(lib.cuDevSmResourceSplitByCount(ct.byref(group), ct.byref(groups), ct.byref(whole), ct.byref(rest), 0,
                                               max(1, n_sms)), "cuDevSmResourceSplitByCount")
        desc = ct.c_void_p()
        _check(lib.cuDevResourceGenerateDesc(ct.byref(desc), ct.byref(group), 1), "cuDevResourceGenerateDesc")
        handle = ct.c_void_p()
        _check(lib.cuGreenCtxCreate(ct.byref(handle), desc, dev, _CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate")
        _green[key] = (handle.value, int(group.sm_count))
        return _green[key]


def green_stream(device_id, n_sms, priority):
    """A new non-blocking stream on ``n_sms`` SMs of the device: ``(cupy ExternalStream, SMs, raw handle)``.

    Raises GreenContextError when the driver cannot make one (the caller then keeps its ordinary stream)."""
    lib, _, ct = _cuda_driver()
    handle, sms = _green_context(device_id, n_sms)
    raw = ct.c_void_p()
    _check(lib.cuGreenCtxStreamCreate(ct.byref(raw), ct.c_void_p(handle), _CU_STREAM_NON_BLOCKING, int(priority)),
           "cuGreenCtxStreamCreate")
    return cupy().cuda.ExternalStream(raw.value, device_id), sms, raw.value


def destroy_stream(raw):
    """Destroy a stream made by :func:`green_stream` (after its work is done)."""
    lib, _, ct = _cuda_driver()
    lib.cuStreamDestroy_v2(ct.c_void_p(raw))


def stream_sm_count(stream_ptr):
    """SMs of the green context a stream belongs to, as the driver reports them; None for an ordinary stream."""
    lib, Resource, ct = _cuda_driver()
    green = ct.c_void_p()
    lib.cuStreamGetGreenCtx.restype = ct.c_int
    lib.cuGreenCtxGetDevResource.restype = ct.c_int
    _check(lib.cuStreamGetGreenCtx(ct.c_void_p(stream_ptr), ct.byref(green)), "cuStreamGetGreenCtx")
    if not green.value:
        return None
    res = Resource()
    _check(lib.cuGreenCtxGetDevResource(green, ct.byref(res), _CU_DEV_RESOURCE_TYPE_SM), "cuGreenCtxGetDevResource")
    return int(res.sm_count)
