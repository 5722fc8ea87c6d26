"""Contexts: a budget, on CUDA a stream and a memory pool, pacing; entering and leaving, caches, synchronization.

A :class:`Context` is made by ``sched.create_context`` (which admits it). Its allocator (``_alloc
.ContextAllocator``) and its compute pacing (``_pacing.ContextPacing``) are base classes defined beside the rest of
their concept; its public API is all in the class body here.
"""

import collections
import threading

import numpy as np

from . import _aio, _clock, _cuda
from ._alloc import ContextAllocator
from ._hook import cpu_enter, cpu_exit
from ._ledger import oom
from ._pacing import ContextPacing, TokenBucket
from ._parse import check_seconds, fmt_bytes, parse_bytes
from ._state import COND, CURRENT, LOCK, current_context
from .errors import ContextDestroyedError

__all__ = ["Context"]


class _Cache:
    """A cache registered with :meth:`Context.register_cache`: its ``evict()``, its size and when it was last used."""

    __slots__ = ("name", "evict", "nbytes", "last_used")

    def __init__(self, name, evict, nbytes):
        self.name = name
        self.evict = evict
        self.nbytes = nbytes
        self.last_used = _clock.monotonic()

    def size(self):
        """Its size in bytes as registered (a number, or a callable that returns one); 0 when that fails."""
        n = self.nbytes
        try:
            return int(n() if callable(n) else (n or 0))
        except Exception:
            return 0


class Context(ContextAllocator, ContextPacing):
    """A QoS context: a budget, a stream and a memory pool (CUDA), pacing. Create with :func:`create_context`.

    ``with ctx:`` / ``async with ctx:`` make it current: allocations are charged to it (and, on CUDA, come from its
    pool) and CuPy launches go to its stream.
    """

    def __init__(self, sched, name, budget, qos, bandwidth, partition, wait_timeout):
        self.name = name
        self.device = sched.device
        self.device_id = sched.device_id
        self.qos = qos
        self.max_vram = budget
        self.bandwidth = bandwidth
        self.partition = partition
        self.wait_timeout = sched.wait_timeout if wait_timeout is None else wait_timeout
        self._sched = sched
        self._cuda = sched.kind == "cuda"
        self._destroyed = False
        self._lock = threading.Lock()
        self._alloc_lock = threading.RLock()
        self._entered = []  # one item per active ``with`` session (list append/pop: atomic, no lock)
        self._cpu_used = 0
        self._records = set()
        self._peak = 0
        self._evictions = 0
        self._evicted_bytes = 0
        self._refusals = 0
        self._launches = 0
        self._steps = 0
        self._queued = 0
        self._throttled_s = 0.0
        self._caches = collections.OrderedDict()
        self._bucket = TokenBucket(sched.burst_s)
        self._pending = collections.deque()  # CUDA: (start, end) events of steps not charged yet
        self._mark = None  # start of the current step: CUDA event, or monotonic seconds on the CPU
        self._busy_event = None  # CUDA: last event recorded after work (for "higher tier in flight")
        self._last_activity = 0.0
        self._reserved = qos == "guaranteed" or partition is not None
        self._paced = (bandwidth is not None and bandwidth < 1.0) or qos != "guaranteed" or (
            partition is not None and partition.compute_share < 1.0)
        self.stream = None
        self.priority = None
        self._pool = None
        self._full_stream = None  # CUDA: the context's own stream (every SM)
        self._confined = None  # CUDA, paced: (green-context stream, its SMs, raw handle), made on first need
        self._confined_steps = 0
        if self._cuda:
            cp = _cuda.cupy()
            least, greatest = _cuda.priority_range(self.device_id)
            self.priority = {"guaranteed": greatest, "best_effort": least}.get(
                qos, greatest + (least - greatest) // 2)
            rt = cp.cuda.runtime
            prev = rt.getDevice()
            rt.setDevice(self.device_id)
            try:
                self.stream = cp.cuda.Stream(non_blocking=True, priority=self.priority)
                self._full_stream = self.stream
                self._pool = cp.cuda.memory.SingleDeviceMemoryPool(self._device_alloc)
                self._pool.set_limit(size=budget)
            finally:
                rt.setDevice(prev)
            self._allocator = self._make_allocator(cp.cuda.memory.OutOfMemoryError)

    def __repr__(self):
        state = "destroyed" if self._destroyed else "live"
        return (f"<gpk_array.sched.Context {self.name!r} {self.device} {self.qos} budget={self.max_vram} "
                f"{state}>")

    @property
    def destroyed(self):
        """Whether the context has been destroyed (using it then raises ``ContextDestroyedError``)."""
        return self._destroyed

    @property
    def pool(self):
        """The CuPy memory pool (``cupy.cuda.memory.SingleDeviceMemoryPool``) on CUDA, None on the CPU."""
        return self._pool

    def _check_alive(self):
        if self._destroyed:
            raise ContextDestroyedError(f"scheduler context {self.name!r} was destroyed")

    # entering ------------------------------------------------------------------------------------------------

    def __enter__(self):
        # The hot path of every ``with ctx:`` (measured per call against a bare op: see benchmarks/sched_bench.py);
        # no lock: the session count is a list whose append/pop are atomic.
        if self._destroyed:
            raise ContextDestroyedError(f"scheduler context {self.name!r} was destroyed")
        entry = CURRENT.get()
        if entry is not None and entry[0].device != self.device:
            raise ValueError(
                f"cannot enter context {self.name!r} ({self.device}) inside context {entry[0].name!r} "
                f"({entry[0].device}): nested contexts must be on the same device")
        try:
            _cuda.activate(self)
        except BaseException:  # the enclosing context (if any) keeps its CuPy state
            _cuda.activate(None if entry is None else entry[0])
            raise
        if self._cuda:
            CURRENT.set((self, entry, None))
        else:
            # NumPy allocates through our tagged handler while a CPU context is current (see _nptag): what the hook
            # charges is what was allocated here, never memory that a view only looks at
            CURRENT.set((self, entry, cpu_enter()))
        self._entered.append(None)
        self._last_activity = _clock.monotonic()
        return self

    def __exit__(self, exc_type, exc, tb):
        entry = CURRENT.get()
        if entry is None or entry[0] is not self:
            raise RuntimeError(f"scheduler context {self.name!r} exited out of order (not the current context)")
        parent = entry[1]
        CURRENT.set(parent)
        self._entered.pop()
        if not self._cuda:
            cpu_exit(entry[2])
        _cuda.activate(None if parent is None else parent[0])
        return False

    async def __aenter__(self):
        _aio.install_task_factory()
        self.__enter__()
        if self._cuda:
            _aio.note_unwrapped_enter(self)
        return self

    async def __aexit__(self, exc_type, exc, tb):
        if self._cuda:
            _aio.note_unwrapped_exit(self)
        return self.__exit__(exc_type, exc, tb)

    # memory --------------------------------------------------------------------------------------------------

    def free_cache(self):
        """CUDA: return the pool's cached (unused) blocks to the device. Returns the bytes released."""
        if not self._cuda:
            return 0
        before = self._pool.total_bytes()
        self._note_peak()
        self._pool.free_all_blocks()
        with LOCK:
            COND.notify_all()
        return before - self._pool.total_bytes()

    def register_cache(self, name, evict, nbytes=None):
        """Register an evictable cache: ``evict()`` drops it (its memory must become free once it returns).

        Caches are evicted least recently used first (see :meth:`touch_cache`) when this context needs memory
        over its budget, or when a context of this or a higher tier needs device memory.
        """
        self._check_alive()
        if not callable(evict):
            raise TypeError("evict must be callable")
        with LOCK:
            self._caches[name] = _Cache(name, evict, nbytes)

    def touch_cache(self, name):
        """Mark a registered cache as just used (least recently used caches are evicted first)."""
        with LOCK:
            entry = self._caches.get(name)
            if entry is not None:
                entry.last_used = _clock.monotonic()
                self._caches.move_to_end(name)
        return entry is not None

    def unregister_cache(self, name):
        """Forget the cache registered as ``name`` (it is no longer evicted); whether one was registered."""
        with LOCK:
            return self._caches.pop(name, None) is not None

    def used_bytes(self):
        """Bytes of this context's allocations in use now (CUDA: its pool's used bytes; CPU: the NumPy buffers
        charged to it)."""
        return self._pool.used_bytes() if self._cuda else self._cpu_used

    def held_bytes(self):
        """Bytes this context holds on the device (CUDA: its pool's total, in use plus cached; CPU: the same as
        ``used_bytes``)."""
        return self._pool.total_bytes() if self._cuda else self._cpu_used

    async def wait_for_memory(self, nbytes, timeout=None):
        """Wait (without blocking the event loop) until ``nbytes`` more would be admitted for this context.

        Raises OutOfMemoryError at once if the request exceeds the context's budget, or after ``timeout``
        seconds (default: the context's ``wait_timeout``). Nothing is reserved: allocate right after.
        """
        nbytes = parse_bytes(nbytes, "nbytes")
        timeout = self.wait_timeout if timeout is None else check_seconds(timeout, "timeout")
        deadline = _clock.monotonic() + (timeout or 0.0)
        delay = 1e-3
        counted = False
        try:
            while True:
                self._check_alive()
                with LOCK:
                    used = self.used_bytes()
                    if used + nbytes > self.max_vram:
                        raise oom(f"context {self.name!r} ({self.qos}) cannot allocate {fmt_bytes(nbytes)}: exceeds "
                                   f"its budget: budget {fmt_bytes(self.max_vram)}, in use {fmt_bytes(used)}, request "
                                   f"{fmt_bytes(nbytes)}")
                    refusal = self._sched._refusal(self, nbytes, 0)
                if refusal is None:
                    return
                if self._cuda:
                    self.free_cache()
                    with LOCK:
                        refusal = self._sched._refusal(self, nbytes, 0)
                    if refusal is None:
                        return
                if _clock.monotonic() >= deadline:
                    raise oom(f"context {self.name!r} ({self.qos}) cannot allocate {fmt_bytes(nbytes)}: "
                               f"{refusal[1]}; waited {timeout:g} s")
                if not counted:
                    counted = True
                    with self._lock:
                        self._queued += 1
                await _clock.async_sleep(min(delay, max(0.0, deadline - _clock.monotonic())))
                delay = min(delay * 2.0, 0.05)
        finally:
            if counted:
                with self._lock:
                    self._queued -= 1

    # pacing --------------------------------------------------------------------------------------------------

    def pace(self):
        """Mark the end of one step of a loop and wait (blocking) as the context's pacing requires.

        Best-effort and burstable contexts are capped by ``bandwidth`` (share of device time), the partition's
        ``compute_share``, and the scheduler's contention share while a higher tier has work in flight; at most
        ``max_inflight`` paced steps are queued on the stream. For a guaranteed context this only records activity.
        """
        self._check_alive()
        self._step_boundary()
        self._throttle()
        if self._paced:
            self._place()
            self._open_step()

    async def pace_async(self):
        """:meth:`pace` for asyncio: waits with ``asyncio.sleep`` and event polling, never blocking the loop."""
        self._check_alive()
        self._step_boundary()
        await self._throttle_async()
        if self._paced:
            self._place()
            self._open_step()

    def launch(self, fn, *args, **kwargs):
        """Wait for pacing, then call ``fn(*args, **kwargs)`` inside the context; returns its result."""
        self._check_alive()
        self._throttle()
        self._place()
        return self._launch_now(fn, args, kwargs)

    async def run(self, fn, *args, **kwargs):
        """Await pacing, then call ``fn(*args, **kwargs)`` inside the context (its launches are asynchronous)."""
        self._check_alive()
        _aio.install_task_factory()
        await self._throttle_async()
        self._check_alive()
        self._place()
        return self._launch_now(fn, args, kwargs)

    # synchronization ----------------------------------------------------------------------------------------

    async def synchronize(self):
        """Wait until the work queued on the context's stream so far is done, without blocking the loop."""
        self._check_alive()
        if not self._cuda:
            return
        ev = self._record(timing=False)
        await _aio.await_event(ev, alive=self._check_alive)
        _cuda.activate(current_context())

    def wait_idle(self):
        """Block the calling thread until the context's stream is idle (no-op on the CPU)."""
        self._check_alive()
        if self._cuda:
            with _cuda.on_device(self.device_id):
                self.stream.synchronize()

    async def to_host(self, x):
        """Copy ``x`` (CuPy array, gpk_array array, anything with ``__cuda_array_interface__``) to a NumPy array.

        On CUDA the copy runs on the context's stream into pinned host memory and is awaited by polling an event.
        On the CPU device it returns a copy at once.
        """
        self._check_alive()
        if type(x).__module__.startswith("gpk_array") and hasattr(x, "_data"):
            x = x._data  # a gpk_array Array: its backing array
        if not self._cuda or isinstance(x, np.ndarray):
            return np.array(x, copy=True)
        cp = _cuda.cupy()
        import cupyx  # noqa: PLC0415

        if isinstance(x, cp.ndarray):
            arr = x
        elif hasattr(x, "__cuda_array_interface__"):
            arr = cp.asarray(x)
        else:
            raise TypeError(f"to_host needs a device array, got {type(x).__name__}")
        with self:
            src = arr if (arr.flags.c_contiguous or arr.flags.f_contiguous) else cp.ascontiguousarray(arr)
            order = "F" if (src.flags.f_contiguous and not src.flags.c_contiguous) else "C"
            out = cupyx.empty_pinned(src.shape, src.dtype, order=order)
            src.get(stream=self.stream, out=out, blocking=False)
            ev = self._record(timing=False)
        await _aio.await_event(ev, alive=self._check_alive)
        del src
        _cuda.activate(current_context())
        return out

    # stats ---------------------------------------------------------------------------------------------------

    def stats(self):
        """A dict of this context's numbers: budget, used, held, peak bytes, evictions, refusals, launches, steps,
        queued, throttled seconds, sessions, confinement counters, QoS tier, device, partition, priority,
        bandwidth (the per-context entries of ``sched.stats()``)."""
        with self._lock:
            counters = {
                "evictions": self._evictions,
                "evicted_bytes": self._evicted_bytes,
                "refusals": self._refusals,
                "launches": self._launches,
                "steps": self._steps,
                "queued": self._queued,
                "throttled_s": self._throttled_s,
                "sessions": len(self._entered),
                "confined_steps": self._confined_steps,
                "confined_sms": self._confined[1] if self._confined else 0,
            }
        if self._cuda:
            used = self._pool.used_bytes()
            held = self._pool.total_bytes()
        else:
            used = held = self._cpu_used
        return {
            "name": self.name,
            "device": self.device,
            "qos": self.qos,
            "partition": None if self.partition is None else self.partition.name,
            "budget": self.max_vram,
            "used": used,
            "held": held,
            "peak": max(self._peak, self._pool.total_bytes()) if self._pool is not None else self._peak,
            "bandwidth": self.bandwidth,
            "priority": self.priority,
            "destroyed": self._destroyed,
            **counters,
        }
