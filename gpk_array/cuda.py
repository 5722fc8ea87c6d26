"""Driver-level CUDA objects: devices, streams, events, modules, raw memory and graph capture.

Thin wrappers over CuPy's maintained bindings (``cupy.cuda``), so they interoperate with everything gpk_array does on
a GPU: gpk_array's operations and ``gpk_array.jit`` kernels run on the *current* stream, which ``with stream:``
sets; raw allocations come from CuPy's memory pool (the one gpk_array arrays and scheduler budgets use).

- ``Device(i)``: ``id``, ``name``, ``compute_capability`` ((9, 0)), ``arch`` ("90"), ``attributes``, ``mem_info``,
  ``synchronize()``, ``with Device(i):`` (current device); ``device_count()``.
- ``Stream(priority=0)``: ``with stream:`` makes it current; ``synchronize()``, ``query()``, ``wait(event)``,
  ``record()``; ``priority_range()``, ``current_stream()``.
- ``Event()``: ``record(stream=None)``, ``synchronize()``, ``query()``, ``elapsed_time(end)`` (milliseconds).
- ``Module(data_or_path)``: a cubin, PTX or fatbin (bytes or a file); ``get_function(name, signature=None)`` gives a
  launchable kernel like ``gpk_array.jit``'s (arguments checked against ``signature``, e.g. "float* x, int n").
- Raw memory: ``malloc(nbytes)`` -> ``DeviceMemory``; ``memcpy_htod``, ``memcpy_dtoh``, ``memcpy_dtod``;
  ``pinned(shape, dtype)`` page-locked host arrays; ``to_device(host_array)``.
- ``with graph() as g: ...`` captures the work queued inside (gpk_array ops, jit kernels, copies) into a CUDA graph;
  ``g.launch()`` replays it.

Importing this module needs no GPU (nor CuPy); using any object without one raises ``gpk_array.DeviceError``.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ._errors import DeviceError

__all__ = ["Device", "DeviceMemory", "Event", "Graph", "Module", "Stream", "current_stream", "device_count",
           "graph", "malloc", "memcpy_dtod", "memcpy_dtoh", "memcpy_htod", "pinned", "priority_range", "to_device"]

_cp = None


def _cupy():
    global _cp
    if _cp is None:
        try:
            import cupy
        except ImportError as e:
            raise DeviceError("gpk_array.cuda needs CuPy and a CUDA GPU (pip install 'gpk_array[cuda13]'); CuPy is "
                              "not installed") from e
        try:
            ok = cupy.cuda.is_available()
        except Exception:
            ok = False
        if not ok:
            raise DeviceError("gpk_array.cuda: no usable CUDA GPU on this machine (CuPy finds no device); jit "
                              "kernels and driver objects need one")
        _cp = cupy
    return _cp


def device_count() -> int:
    """The number of CUDA devices (0 without a GPU or without CuPy)."""
    try:
        return _cupy().cuda.runtime.getDeviceCount()
    except DeviceError:
        return 0


class Device:
    """A CUDA device by ordinal: ``id``, ``name``, ``compute_capability``, ``arch``, ``attributes`` (the driver's
    attribute dict), ``mem_info`` ((free, total) bytes), ``synchronize()``; ``with Device(1):`` makes it current."""

    def __init__(self, id: int = 0):
        cp = _cupy()
        n = cp.cuda.runtime.getDeviceCount()
        if isinstance(id, bool) or not isinstance(id, (int, np.integer)) or not 0 <= int(id) < n:
            raise DeviceError(f"gpk_array.cuda.Device: no CUDA device {id!r} ({n} found)")
        self.id = int(id)
        self._dev = cp.cuda.Device(self.id)
        self._props = None

    def __repr__(self):
        return f"<gpk_array.cuda.Device {self.id}: {self.name}, sm_{self.arch}>"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("gpk_array.cuda.Device", self.id))

    @property
    def properties(self) -> dict:
        """``cudaGetDeviceProperties`` as a dict."""
        if self._props is None:
            self._props = _cupy().cuda.runtime.getDeviceProperties(self.id)
        return self._props

    @property
    def name(self) -> str:
        """The device's name (e.g. "NVIDIA H200")."""
        n = self.properties["name"]
        return n.decode() if isinstance(n, bytes) else str(n)

    @property
    def compute_capability(self) -> tuple:
        """(major, minor), e.g. (9, 0)."""
        cc = self._dev.compute_capability
        return int(cc[:-1]), int(cc[-1])

    @property
    def arch(self) -> str:
        """The compute capability as the arch string kernels are compiled for, e.g. "90"."""
        return self._dev.compute_capability

    @property
    def attributes(self) -> dict:
        """Every device attribute the driver reports, by name (``MultiProcessorCount``, ...)."""
        return dict(self._dev.attributes)

    @property
    def mem_info(self) -> tuple:
        """(free, total) device memory in bytes."""
        with self._dev:
            return tuple(_cupy().cuda.runtime.memGetInfo())

    def synchronize(self) -> None:
        """Wait until all work on this device is done."""
        self._dev.synchronize()

    def __enter__(self):
        self._dev.__enter__()
        return self

    def __exit__(self, *exc):
        return self._dev.__exit__(*exc)


def priority_range() -> tuple:
    """(lowest, highest) stream priorities of the current device (numerically, highest is the smaller number)."""
    from .sched._cuda import priority_range as device_range   # the one binding of the query (CuPy 14 lacks it)
    return device_range(_cupy().cuda.runtime.getDevice())


class Stream:
    """A CUDA stream. ``with stream:`` makes it the current stream: gpk_array's operations, jit kernels and this
    module's copies inside the block run on it. ``priority``: lower numbers run first (``priority_range()``);
    ``non_blocking``: no implicit synchronization with the legacy default stream. ``Stream.wrap(cupy_stream)``
    wraps an existing CuPy stream."""

    def __init__(self, priority: int = 0, non_blocking: bool = True, *, _wrap=None):
        cp = _cupy()
        if _wrap is not None:
            self.cupy_stream = _wrap
            self._priority = None
        else:
            if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)):
                raise TypeError(f"gpk_array.cuda.Stream: priority must be an int, got {priority!r}")
            lo, hi = priority_range()
            # CUDA clamps a priority outside the range; keep what it will use
            self._priority = min(max(int(priority), min(lo, hi)), max(lo, hi))
            self.cupy_stream = cp.cuda.Stream(non_blocking=bool(non_blocking), priority=self._priority)

    @classmethod
    def wrap(cls, cupy_stream):
        """A ``Stream`` around an existing ``cupy.cuda.Stream``."""
        return cls(_wrap=cupy_stream)

    def __repr__(self):
        return f"<gpk_array.cuda.Stream {self.ptr:#x} priority={self.priority}>"

    @property
    def ptr(self) -> int:
        """The ``cudaStream_t`` handle."""
        return self.cupy_stream.ptr

    @property
    def priority(self) -> int:
        """The stream's priority (clamped into ``priority_range()``, as CUDA does)."""
        if self._priority is not None:
            return self._priority
        pr = getattr(self.cupy_stream, "priority", None)
        if isinstance(pr, int):
            return pr
        get = getattr(_cupy().cuda.runtime, "streamGetPriority", None)
        return int(get(self.ptr)) if get is not None and self.ptr else 0

    def synchronize(self) -> None:
        """Wait until all work queued on the stream is done."""
        self.cupy_stream.synchronize()

    def query(self) -> bool:
        """Whether all work queued on the stream is done."""
        return bool(self.cupy_stream.done)

    def record(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = event or Event()
        event.record(self)
        return event

    def wait(self, event: "Event") -> None:
        """Make later work on this stream wait for ``event``."""
        self.cupy_stream.wait_event(event.cupy_event)

    def __enter__(self):
        self.cupy_stream.__enter__()
        return self

    def __exit__(self, *exc):
        return self.cupy_stream.__exit__(*exc)


def current_stream() -> Stream:
    """The current stream (where gpk_array's operations run now)."""
    return Stream.wrap(_cupy().cuda.get_current_stream())


def _stream(stream):
    cp = _cupy()
    if stream is None:
        return cp.cuda.get_current_stream()
    return getattr(stream, "cupy_stream", stream)


class Event:
    """A CUDA event: ``record(stream=None)`` (the current stream), ``synchronize()``, ``query()``,
    ``elapsed_time(end)`` (milliseconds from this event to ``end``, both recorded and done). ``timing=False``
    makes a lighter event that cannot time; ``blocking=True`` makes ``synchronize`` sleep instead of spin."""

    def __init__(self, timing: bool = True, blocking: bool = False):
        self.cupy_event = _cupy().cuda.Event(block=bool(blocking), disable_timing=not timing)

    def record(self, stream=None) -> "Event":
        """Record the event on ``stream`` (a Stream, a CuPy stream, or None: the current stream); returns self."""
        self.cupy_event.record(_stream(stream))
        return self

    def synchronize(self) -> None:
        """Wait until the work before the recorded event is done."""
        self.cupy_event.synchronize()

    def query(self) -> bool:
        """Whether the work before the recorded event is done."""
        return bool(self.cupy_event.done)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds between this event and ``end`` (waits for ``end``)."""
        if not isinstance(end, Event):
            raise TypeError(f"gpk_array.cuda.Event.elapsed_time: end must be an Event, got {type(end).__name__}")
        end.synchronize()
        return float(_cupy().cuda.get_elapsed_time(self.cupy_event, end.cupy_event))


# ----------------------------------------------------------------------------------------------
# modules

class Module:
    """A loaded cubin, PTX or fatbin: ``Module(data)`` with bytes, or ``Module(path)`` with a file. The image is
    kept in the compile cache's directory under its content hash and loaded on each device on first use.
    ``get_function(name, signature=None)`` returns a kernel launchable as ``gpk_array.jit``'s; with ``signature``
    (a C parameter list such as ``"const float* x, float* y, int n"``) its arguments are checked and converted."""

    def __init__(self, data_or_path):
        from pathlib import Path
        if isinstance(data_or_path, (bytes, bytearray, memoryview)):
            data = bytes(data_or_path)
            if not data:
                raise ValueError("gpk_array.cuda.Module: empty image")
            import hashlib
            from ._kernels import loader
            kind = "cubin" if data[:4] == b"\x7fELF" else ("fatbin" if data[:4] == b"\x50\xed\x55\xba" else "ptx")
            path = loader.cache_root() / "modules" / f"{hashlib.sha256(data).hexdigest()}.{kind}"
            if not path.is_file():
                loader.write_atomic(path, data)
            self.path = str(path)
        else:
            p = Path(data_or_path).expanduser()
            if not p.is_file():
                raise FileNotFoundError(f"gpk_array.cuda.Module: no such file {data_or_path}")
            self.path = str(p.resolve())
        self._mods: dict = {}

    def __repr__(self):
        return f"<gpk_array.cuda.Module {self.path}>"

    def _raw(self, name: str):
        """The ``cupy.RawKernel`` of ``name`` on the current device (``cache.Module``'s interface)."""
        cp = _cupy()
        dev = cp.cuda.runtime.getDevice()
        mod = self._mods.get(dev)
        if mod is None:
            mod = self._mods[dev] = cp.RawModule(path=self.path)
        try:
            return mod.get_function(name)
        except Exception as e:
            if "NOT_FOUND" in str(e):
                raise ValueError(f"gpk_array.cuda.Module: no kernel {name!r} in {self.path}") from None
            raise

    def get_function(self, name: str, signature: str | None = None):
        """A launchable kernel for the symbol ``name`` (checked against ``signature`` when given)."""
        from ._jit.kernel import JitKernel
        from ._jit.signature import _params, _split_top, source_structs
        params = None
        if signature is not None:
            raw = _split_top(signature)
            params = _params([] if raw == ["void"] else raw, source_structs(""))
        return JitKernel(_RawAdapter(self), name, params)


class _RawAdapter:
    def __init__(self, module):
        self.module = module

    def get_function(self, name):
        return self.module._raw(name)

    def entry(self, arch=None):
        return None


# ----------------------------------------------------------------------------------------------
# memory

class DeviceMemory:
    """Raw device memory from ``malloc``: ``ptr``, ``nbytes``, ``device_id``; passes to kernels as a pointer.
    ``as_array(dtype, shape)`` views it as a gpk_array array (no copy). Freed (back to the pool) when the last
    reference goes, or by ``free()``."""

    __slots__ = ("_mem", "nbytes", "device_id")

    def __init__(self, mem, nbytes, device_id):
        self._mem, self.nbytes, self.device_id = mem, int(nbytes), int(device_id)

    @property
    def ptr(self) -> int:
        """The device address."""
        if self._mem is None:
            raise ValueError("gpk_array.cuda.DeviceMemory: used after free()")
        return int(self._mem.ptr)

    def __repr__(self):
        return f"<gpk_array.cuda.DeviceMemory {self.nbytes} bytes on cuda:{self.device_id}>"

    def free(self) -> None:
        """Give the memory back to the pool now (later uses raise ValueError)."""
        self._mem = None

    def as_array(self, dtype, shape=None):
        """A gpk_array array over this memory (``shape`` defaults to as many ``dtype`` items as fit)."""
        cp = _cupy()
        dt = np.dtype(getattr(dtype, "_np", dtype)) if not isinstance(dtype, np.dtype) else dtype
        if shape is None:
            shape = (self.nbytes // dt.itemsize,)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if int(np.prod(shape, dtype=np.int64)) * dt.itemsize > self.nbytes:
            raise ValueError(f"gpk_array.cuda.DeviceMemory.as_array: {shape} of {dt} is over {self.nbytes} bytes")
        from ._array import Array
        from ._device import Device as ArrayDevice
        with cp.cuda.Device(self.device_id):
            a = cp.ndarray(shape, dt, memptr=self._mem)
        return Array._new(a, ArrayDevice(f"cuda:{self.device_id}"))


def malloc(nbytes: int) -> DeviceMemory:
    """``nbytes`` of device memory on the current device (from CuPy's pool; ``OutOfMemoryError`` when it cannot
    be met)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise ValueError(f"gpk_array.cuda.malloc: nbytes must be a non-negative int, got {nbytes!r}")
    cp = _cupy()
    try:
        mem = cp.cuda.alloc(int(nbytes))
    except cp.cuda.memory.OutOfMemoryError as e:
        from ._errors import OutOfMemoryError
        raise OutOfMemoryError(f"gpk_array.cuda.malloc: cannot allocate {nbytes} bytes ({e})") from None
    return DeviceMemory(mem, nbytes, cp.cuda.runtime.getDevice())


def _dev_ptr(x, what: str) -> tuple:
    """(pointer, nbytes or None) of device memory ``x``."""
    if isinstance(x, DeviceMemory):
        return x.ptr, x.nbytes
    from ._array import Array
    if type(x) is Array:
        if x.device.kind != "cuda":
            raise TypeError(f"gpk_array.cuda: {what} is an array on the CPU device, not device memory")
        x = x._data
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        if cai.get("strides") is not None and not getattr(getattr(x, "flags", None), "c_contiguous", False):
            raise ValueError(f"gpk_array.cuda: {what} must be C-contiguous")
        n = int(np.prod(cai["shape"], dtype=np.int64)) * np.dtype(cai["typestr"]).itemsize
        return int(cai["data"][0]), n
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x), None
    raise TypeError(f"gpk_array.cuda: {what} must be device memory (DeviceMemory, a CUDA array or an int "
                    f"address), got {type(x).__name__}")


def _host_buf(x, what: str, writable: bool):
    if not isinstance(x, np.ndarray):
        if writable:
            raise TypeError(f"gpk_array.cuda: {what} must be a NumPy array (host memory), got {type(x).__name__}")
        x = np.asarray(x)
    if not x.flags.c_contiguous:
        raise ValueError(f"gpk_array.cuda: {what} must be C-contiguous")
    if writable and not x.flags.writeable:
        raise ValueError(f"gpk_array.cuda: {what} is read-only")
    return x


def _copy(dst, src, n, kind, stream):
    cp = _cupy()
    s = _stream(stream)
    cp.cuda.runtime.memcpyAsync(dst, src, n, kind, s.ptr)
    if stream is None:
        s.synchronize()


def _check_n(n, *sizes, what):
    for sz in sizes:
        if sz is not None and n > sz:
            raise ValueError(f"gpk_array.cuda.{what}: {n} bytes is more than the {sz} bytes there")


def memcpy_htod(dst, src, stream=None) -> None:
    """Copy host ``src`` (a NumPy array or buffer) into device memory ``dst``. With ``stream=None`` on the current
    stream and waits for it; with a stream, asynchronous (use ``pinned`` memory for a truly asynchronous copy)."""
    host = _host_buf(src, "src", writable=False)
    ptr, size = _dev_ptr(dst, "dst")
    _check_n(host.nbytes, size, what="memcpy_htod")
    _copy(ptr, host.ctypes.data, host.nbytes, _cupy().cuda.runtime.memcpyHostToDevice, stream)


def memcpy_dtoh(dst, src, stream=None) -> None:
    """Copy device memory ``src`` into the host NumPy array ``dst`` (``dst.nbytes`` bytes). Waits when ``stream``
    is None."""
    host = _host_buf(dst, "dst", writable=True)
    ptr, size = _dev_ptr(src, "src")
    _check_n(host.nbytes, size, what="memcpy_dtoh")
    _copy(host.ctypes.data, ptr, host.nbytes, _cupy().cuda.runtime.memcpyDeviceToHost, stream)


def memcpy_dtod(dst, src, nbytes: int | None = None, stream=None) -> None:
    """Copy ``nbytes`` (default: all of ``src``) from device memory ``src`` to ``dst``, on the current stream
    (``stream=None`` waits for it) or ``stream``."""
    dptr, dsize = _dev_ptr(dst, "dst")
    sptr, ssize = _dev_ptr(src, "src")
    n = ssize if nbytes is None else int(nbytes)
    if n is None:
        raise ValueError("gpk_array.cuda.memcpy_dtod: give nbytes when copying from a raw address")
    _check_n(n, dsize, ssize, what="memcpy_dtod")
    _copy(dptr, sptr, n, _cupy().cuda.runtime.memcpyDeviceToDevice, stream)


def pinned(shape, dtype=np.float32) -> np.ndarray:
    """An uninitialized page-locked (pinned) host NumPy array: copies to and from it can run asynchronously and at
    full PCIe/NVLink speed."""
    cp = _cupy()
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    mem = cp.cuda.alloc_pinned_memory(max(n, 1))
    return np.frombuffer(mem, dt, int(np.prod(shape, dtype=np.int64))).reshape(shape)


def to_device(host) -> DeviceMemory:
    """A ``DeviceMemory`` holding a copy of the host array ``host`` (e.g. an array of a ``.cu`` module's struct
    dtype, for a kernel that takes a pointer to it)."""
    h = np.ascontiguousarray(host)
    mem = malloc(h.nbytes)
    memcpy_htod(mem, h)
    return mem


# ----------------------------------------------------------------------------------------------
# graphs

class Graph:
    """A captured CUDA graph (from ``with graph() as g:``): ``launch(stream=None)`` replays the captured work on
    ``stream`` (the current stream when None); ``upload(stream=None)`` prepares it ahead of the first launch."""

    def __init__(self):
        self.cupy_graph = None

    def _check(self):
        if self.cupy_graph is None:
            raise RuntimeError("gpk_array.cuda.Graph: the capture has not finished (launch it after the with block)")

    def launch(self, stream=None) -> None:
        """Replay the graph."""
        self._check()
        self.cupy_graph.launch(_stream(stream))

    def upload(self, stream=None) -> None:
        """Upload the graph to the device ahead of its first launch."""
        self._check()
        self.cupy_graph.upload(_stream(stream))


@contextlib.contextmanager
def graph(stream=None):
    """Capture the work queued inside the block into a ``Graph``: the block runs with ``stream`` (a new
    non-blocking stream when None) as the current stream, which is captured, so gpk_array's operations, jit kernels
    and this module's asynchronous copies issued inside become the graph's nodes. Nothing runs during capture;
    ``g.launch()`` runs it. Operations that need the host (a synchronizing copy, printing a value) fail inside."""
    cp = _cupy()
    s = Stream(non_blocking=True) if stream is None else (stream if isinstance(stream, Stream)
                                                          else Stream.wrap(stream))
    g = Graph()
    with s:
        s.cupy_stream.begin_capture()
        try:
            yield g
        except BaseException:
            try:
                s.cupy_stream.end_capture()
            except Exception:
                pass
            raise
        g.cupy_graph = s.cupy_stream.end_capture()
    del cp
