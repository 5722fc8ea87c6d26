"""The CUDA code paths of gpk_array.sched against a fake of the CuPy surface they use (runs without a GPU).

The fake mirrors CuPy's semantics where the scheduler depends on them: a per-thread stack of current streams,
a thread-local allocator (``using_allocator``), priorities clamped into the device's range, events, and a
single-device pool whose limit counts *held* bytes (cached included), whose cached blocks are reused and split,
and whose ``free_all_blocks`` frees only blocks with no part in use. The device has a fixed amount of memory and
``memGetInfo``. The real thing is covered by test_sched_gpu.py on a GPU.

The fake device keeps time with the wall clock, or, for the tests that take the ``clocked`` fixture, with the
scheduler's simulated clock (conftest's ``fake_clock``): then a stream's work finishes at simulated times, and
waiting for it (``synchronize``) advances that clock instead of sleeping.
"""

import asyncio
import contextlib
import gc
import itertools
import threading
import time
import types

import pytest

from gpk_array import sched
from gpk_array.sched import ContextDestroyedError, _cuda

MiB = 2**20
_ptrs = itertools.count(0x1000, 0x1000)


class CUDARuntimeError(RuntimeError):
    def __init__(self, status):
        super().__init__(f"cuda error {status}")
        self.status = status


class FakeOOM(MemoryError):
    pass


class Device:
    def __init__(self, total):
        self.total = total
        self.used = 0
        self.lock = threading.Lock()

    def malloc(self, n):
        with self.lock:
            if self.used + n > self.total:
                raise CUDARuntimeError(2)
            self.used += n

    def free(self, n):
        with self.lock:
            self.used -= n


class FakeCupy:
    """Build a fresh fake ``cupy`` module object with one device of ``total`` bytes."""

    def __init__(self, total=1024 * MiB, priority_range=(0, -5)):
        self.device = Device(total)
        self.least, self.greatest = priority_range
        self.tls = threading.local()
        self.capturing = set()  # stream pointers capturing a CUDA graph (streamIsCapturing)
        self.events = {}
        self.now = time.monotonic  # the device's clock; use_clock() puts it on a simulated one
        self.wait_until = self._sleep_until
        fake = self

        class Stream:
            def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
                self.ptr = 0 if null else next(_ptrs)
                self.device_id = -1 if null else fake._dev()
                p = 0 if priority is None else priority
                self.priority = min(max(p, fake.greatest), fake.least)
                self.is_non_blocking = non_blocking
                self.busy_until = 0.0

            def __eq__(self, other):
                return isinstance(other, Stream) and other.ptr == self.ptr

            __hash__ = object.__hash__

            def __enter__(self):
                if self.device_id not in (-1, fake._dev()):
                    raise RuntimeError("stream device mismatch")
                fake._stack().append(self)
                return self

            def __exit__(self, *a):
                fake._stack().pop()

            def synchronize(self):
                fake.wait_until(self.busy_until)

            def wait_event(self, event):
                self.waited = getattr(self, "waited", []) + [event]
                self.busy_until = max(self.busy_until, event.t or 0.0)

        self.null = Stream(null=True)

        class Event:
            def __init__(self, block=False, disable_timing=False, interprocess=False):
                self.ptr = next(_ptrs)
                self.t = None
                self.timing = not disable_timing
                fake.events[self.ptr] = self

            def record(self, stream=None):
                stream = stream or fake.get_current_stream()
                self.t = max(fake.now(), stream.busy_until)

            @property
            def done(self):
                return self.t is not None and fake.now() >= self.t

            def synchronize(self):
                fake.wait_until(self.t)

        class Memory:
            def __init__(self, n):
                self.size = 0
                fake.device.malloc(n)
                self.size = n
                self.ptr = next(_ptrs)

            def __del__(self):
                if self.size:
                    fake.device.free(self.size)

        class MemoryPointer:
            def __init__(self, mem, offset):
                self.mem = mem
                self.ptr = mem.ptr + offset

        class Pooled:
            """What the pool hands out; giving it back to the pool on deletion, like CuPy's PooledMemory."""

            def __init__(self, pool, seg, n):
                self.pool, self.seg, self.size = pool, seg, n
                self.ptr = next(_ptrs)

            def __del__(self):
                self.pool._free(self.seg, self.size)

        class SingleDeviceMemoryPool:
            def __init__(self, allocator=None):
                self.allocator = allocator or (lambda n: MemoryPointer(Memory(n), 0))
                self.segments = []  # [mem, size, in_use_bytes, parts]
                self.limit = 0
                self.lock = threading.RLock()

            def _free(self, seg, n):
                with self.lock:
                    seg[2] -= n
                    seg[3] -= 1

            def malloc(self, size):
                n = -(-size // 512) * 512
                with self.lock:
                    for seg in sorted(self.segments, key=lambda s: s[1] - s[2]):
                        if seg[1] - seg[2] >= n:  # reuse (and split) a cached block
                            seg[2] += n
                            seg[3] += 1
                            return Pooled(self, seg, n)
                    if self.limit and self.total_bytes() + n > self.limit:
                        raise FakeOOM(f"limit: total {self.total_bytes()} + {n} > {self.limit}")
                    reserve = [None, n, 0, 0]
                    self.segments.append(reserve)  # counted in total while the allocator runs, as CuPy does
                try:
                    try:
                        mem = self.allocator(n).mem
                    except CUDARuntimeError as e:
                        if e.status != 2:
                            raise
                        self.free_all_blocks()
                        try:
                            mem = self.allocator(n).mem
                        except CUDARuntimeError:
                            raise FakeOOM("device out of memory") from None
                except BaseException:
                    with self.lock:
                        self.segments.remove(reserve)
                    raise
                with self.lock:
                    reserve[0] = mem
                    reserve[2] = n
                    reserve[3] = 1
                    return Pooled(self, reserve, n)

            def used_bytes(self):
                with self.lock:
                    return sum(s[2] for s in self.segments)

            def total_bytes(self):
                with self.lock:
                    return sum(s[1] for s in self.segments)

            def free_all_blocks(self, stream=None):
                with self.lock:
                    self.segments = [s for s in self.segments if s[3] > 0 or s[0] is None]

            def set_limit(self, size=None, fraction=None):
                self.limit = size or 0

        @contextlib.contextmanager
        def using_allocator(allocator=None):
            prev = getattr(fake.tls, "allocator", None)
            fake.tls.allocator = allocator
            try:
                yield
            finally:
                fake.tls.allocator = prev

        def get_allocator():
            return getattr(fake.tls, "allocator", None) or (lambda n: MemoryPointer(Memory(n), 0))

        def event_query(ptr):
            return 0 if fake.events[ptr].done else 600

        runtime = types.SimpleNamespace(
            getDevice=fake._dev,
            setDevice=fake._set_dev,
            getDeviceCount=lambda: 1,
            memGetInfo=lambda: (fake.device.total - fake.device.used, fake.device.total),
            eventQuery=event_query,
            streamIsCapturing=lambda ptr: int(ptr in fake.capturing),
            getDeviceProperties=lambda dev: {"multiProcessorCount": 132},
            CUDARuntimeError=CUDARuntimeError,
        )
        def set_thread_local_allocator(allocator):
            fake.tls.allocator = allocator

        memory = types.SimpleNamespace(SingleDeviceMemoryPool=SingleDeviceMemoryPool, OutOfMemoryError=FakeOOM,
                                       _get_thread_local_allocator=lambda: getattr(fake.tls, "allocator", None),
                                       _set_thread_local_allocator=set_thread_local_allocator)
        self.cuda = types.SimpleNamespace(
            runtime=runtime,
            memory=memory,
            Stream=Stream,
            Event=Event,
            Memory=Memory,
            MemoryPointer=MemoryPointer,
            using_allocator=using_allocator,
            get_allocator=get_allocator,
            get_current_stream=self.get_current_stream,
            get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
        )
        self.ndarray = type("ndarray", (), {})

    @staticmethod
    def _sleep_until(t):
        time.sleep(max(0.0, t - time.monotonic()))

    def use_clock(self, clock):
        """Keep the device's time on ``clock`` (a conftest FakeClock): waiting for work advances it."""
        self.now = clock.monotonic
        self.wait_until = clock.advance_to

    def _dev(self):
        return getattr(self.tls, "dev", 0)

    def _set_dev(self, d):
        if d != 0:
            raise CUDARuntimeError(101)
        self.tls.dev = d

    def _stack(self):
        st = getattr(self.tls, "stack", None)
        if st is None:
            st = self.tls.stack = []
        return st

    def get_current_stream(self):
        st = self._stack()
        return st[-1] if st else self.null


@pytest.fixture
def fake(monkeypatch):
    sched.shutdown()
    cp = FakeCupy()
    monkeypatch.setattr(_cuda, "_cupy", cp)
    monkeypatch.setattr(_cuda, "_priority_cache", {})
    monkeypatch.setattr(_cuda, "_sm_counts", {})
    yield cp
    sched.shutdown()
    gc.collect()


@pytest.fixture
def clocked(fake, fake_clock):
    """The fake device and the scheduler on one simulated clock; returns the clock."""
    fake.use_clock(fake_clock)
    return fake_clock


def malloc(cp, n):
    return cp.cuda.get_allocator()(n)


def test_contexts_get_streams_with_tier_priorities_and_pools(fake):
    sched.initialize(0)
    g = sched.create_context("g", 256 * MiB)
    b = sched.create_context("b", 256 * MiB, qos="burstable")
    be = sched.create_context("be", 256 * MiB, qos="best_effort")
    assert (g.stream.priority, b.stream.priority, be.stream.priority) == (-5, -3, 0)
    assert g.stream.is_non_blocking
    assert g.pool.limit == 256 * MiB
    assert g.device == "cuda:0"


def test_enter_switches_stream_and_allocator_and_restores(fake):
    sched.initialize(0)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    before = fake.get_current_stream()
    with g:
        assert fake.get_current_stream() == g.stream
        p = malloc(fake, MiB)
        assert g.pool.used_bytes() == MiB
        with be:
            assert fake.get_current_stream() == be.stream
            q = malloc(fake, 2 * MiB)
            with fake.cuda.Stream(non_blocking=True):  # user code nesting a stream
                pass
            assert fake.get_current_stream() == be.stream
        assert fake.get_current_stream() == g.stream
    assert fake.get_current_stream() == before
    assert getattr(fake.tls, "allocator", None) is None
    assert (g.used_bytes(), be.used_bytes()) == (MiB, 2 * MiB)
    del p, q
    assert g.used_bytes() == be.used_bytes() == 0


def test_a_failed_enter_leaves_the_enclosing_context_in_force(fake):
    sched.initialize(0)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    memory = fake.cuda.memory
    get = memory._get_thread_local_allocator

    calls = []

    def broken():  # fails once: be's activation, not g's re-activation after it
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("allocator switch failed")
        return get()
    with g:
        memory._get_thread_local_allocator = broken
        _cuda._api_of = None  # activate() looks CuPy's functions up once: make it see the broken one
        try:
            with pytest.raises(RuntimeError, match="allocator switch failed"):
                with be:
                    pass
        finally:
            memory._get_thread_local_allocator = get
            _cuda._api_of = None
        assert fake.get_current_stream() == g.stream  # g's stream and pool, not be's half-applied state
        p = malloc(fake, MiB)
        assert g.pool.used_bytes() == MiB and be.used_bytes() == 0
        del p
    assert getattr(fake.tls, "allocator", None) is None


def test_budget_oom_and_recovery(fake):
    sched.initialize(0)
    c = sched.create_context("small", 64 * MiB, qos="burstable")
    with c:
        a = malloc(fake, 48 * MiB)
        with pytest.raises(sched.OutOfMemoryError, match=r"'small'.*budget .*in use .*request"):
            malloc(fake, 32 * MiB)
        del a
        b = malloc(fake, 32 * MiB)  # reuses (splits) the cached 48 MiB block
        b2 = malloc(fake, 32 * MiB)  # the split block keeps the pool at its limit: grows past it
    assert c.used_bytes() == 64 * MiB and c.held_bytes() == 80 * MiB
    assert c.pool.limit == 64 * MiB  # the limit is back
    assert c.stats()["refusals"] == 1
    del b, b2
    c.free_cache()
    assert c.held_bytes() == 0 and fake.device.used == 0


def test_registered_cache_evicted_for_budget(fake):
    sched.initialize(0)
    c = sched.create_context("kv", 64 * MiB, qos="burstable")
    store = {}
    with c:
        store["kv"] = malloc(fake, 40 * MiB)
    c.register_cache("kv", store.clear, nbytes=40 * MiB)
    with c:
        x = malloc(fake, 40 * MiB)
    assert store == {} and c.stats()["evictions"] == 1 and c.used_bytes() == 40 * MiB
    del x


def test_cache_registering_itself_again_is_evicted_once_per_request(fake):
    """An evict() that frees nothing and registers its cache again must not keep the budget path evicting (after 50
    calls it raises, so that a scheduler that would evict it forever fails instead of hanging)."""
    sched.initialize(0)
    c = sched.create_context("kv", 64 * MiB, qos="burstable")
    calls = []

    def evict():
        calls.append(1)
        if len(calls) > 50:
            raise RuntimeError("evicted forever")
        c.register_cache("kv", evict, nbytes=MiB)

    c.register_cache("kv", evict, nbytes=MiB)
    with c:
        p = malloc(fake, 48 * MiB)
        try:
            with pytest.raises(sched.OutOfMemoryError, match="exceeds its budget"):
                malloc(fake, 32 * MiB)
        finally:
            del p
    assert len(calls) == 1


def test_failing_cache_eviction_is_the_cause_of_the_cuda_out_of_memory(fake):
    sched.initialize(0)
    c = sched.create_context("kv", 64 * MiB, qos="burstable")

    def broken():
        raise OSError("cache backend gone")

    c.register_cache("broken", broken, nbytes=MiB)
    with c:
        p = malloc(fake, 48 * MiB)
        try:
            with pytest.raises(sched.OutOfMemoryError, match="'broken'") as ei:
                malloc(fake, 32 * MiB)
        finally:
            del p
    assert isinstance(ei.value.__cause__, OSError)
    assert c.unregister_cache("broken") is False


def test_device_level_admission_and_requests(fake):
    sched.initialize(0, total_vram_budget=1024 * MiB)
    g = sched.create_context("g", 512 * MiB)
    b = sched.create_context("b", 700 * MiB, qos="burstable")
    be = sched.create_context("be", 1024 * MiB, qos="best_effort", wait_timeout=0.05)
    with pytest.raises(sched.AdmissionError):
        sched.create_context("g2", 600 * MiB)
    with pytest.raises(sched.AdmissionError):
        sched.create_context("b2", 100 * MiB, qos="burstable")  # 800 MiB > 1.5 x 512 MiB
    with b:
        x = malloc(fake, 400 * MiB)
        with pytest.raises(sched.OutOfMemoryError, match="unreserved"):
            malloc(fake, 200 * MiB)
        y = malloc(fake, 100 * MiB)
    with be, pytest.raises(sched.OutOfMemoryError, match="waited"):
        malloc(fake, 200 * MiB)
    with g:
        z = malloc(fake, 500 * MiB)
    assert fake.device.used == 1000 * MiB
    assert sched.get_scheduler()._in_flight == 0
    del x, y, z


def test_real_free_memory_limits_admission(fake):
    fake.device.total = 1000 * MiB
    fake.device.used = 600 * MiB  # another process
    sched.initialize(0)
    with pytest.raises(sched.AdmissionError, match=r"unreserved free memory 419430400 B \(400.00 MiB\)"):
        sched.create_context("g", 500 * MiB)
    g = sched.create_context("g", 300 * MiB)
    be = sched.create_context("be", 1000 * MiB, qos="best_effort", wait_timeout=0)
    with be, pytest.raises(sched.OutOfMemoryError):
        malloc(fake, 200 * MiB)  # 100 MiB free outside g's reservation
    with be:
        keep = malloc(fake, 100 * MiB)
    with g:
        gx = malloc(fake, 300 * MiB)
    del keep, gx


def test_lower_tier_pool_cache_is_freed_for_a_burstable_request(fake):
    fake.device.total = 1000 * MiB
    sched.initialize(0)
    b = sched.create_context("b", 800 * MiB, qos="burstable")
    be = sched.create_context("be", 800 * MiB, qos="best_effort")
    with be:
        t = malloc(fake, 700 * MiB)
    del t  # cached in be's pool, still held on the device
    assert be.held_bytes() == 700 * MiB and fake.device.used == 700 * MiB
    with b:
        x = malloc(fake, 600 * MiB)
    assert be.held_bytes() == 0 and be.stats()["evictions"] == 1
    del x


def test_guaranteed_evicts_lower_tiers_when_the_driver_is_out_of_memory(fake):
    fake.device.total = 1000 * MiB
    sched.initialize(0)
    g = sched.create_context("g", 500 * MiB)
    be = sched.create_context("be", 1000 * MiB, qos="best_effort")
    with be:
        t = malloc(fake, 500 * MiB)
    del t
    fake.device.used += 400 * MiB  # someone else grabbed memory meanwhile
    with g:
        x = malloc(fake, 400 * MiB)  # only fits once be's cache is gone
    assert be.held_bytes() == 0
    del x


def test_best_effort_waits_for_device_memory(fake):
    fake.device.total = 1000 * MiB
    sched.initialize(0, wait_timeout=5.0)
    b = sched.create_context("b", 1000 * MiB, qos="burstable")
    be = sched.create_context("be", 1000 * MiB, qos="best_effort")
    with b:
        hog = [malloc(fake, 900 * MiB)]
    out = {}

    def worker():
        with be:
            try:
                out["p"] = malloc(fake, 300 * MiB)
            except Exception as e:  # pragma: no cover
                out["err"] = e

    t = threading.Thread(target=worker)
    t.start()
    deadline = time.monotonic() + 2
    while be.stats()["queued"] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert be.stats()["queued"] == 1
    hog.clear()
    b.free_cache()
    t.join(timeout=5)
    assert not t.is_alive() and "err" not in out
    assert be.used_bytes() == 300 * MiB
    out.clear()


def test_destroy_frees_blocks_and_keeps_pools_of_live_arrays(fake):
    sched.initialize(0)
    c = sched.create_context("c", 256 * MiB)
    with c:
        a = malloc(fake, 64 * MiB)
        b = malloc(fake, 32 * MiB)
    del b
    assert fake.device.used == 96 * MiB
    sched.destroy_context(c)
    assert fake.device.used == 64 * MiB  # the cached block is gone, the live one stays valid
    with pytest.raises(ContextDestroyedError):
        with c:
            pass
    del a
    sched.stats()  # reaps the pool
    assert fake.device.used == 0
    assert sched.stats()["devices"]["cuda:0"]["graveyard_pools"] == 0


def test_allocating_in_a_destroyed_context_raises(fake):
    sched.initialize(0)
    c = sched.create_context("c", 64 * MiB)
    with c:
        sched.destroy_context(c)
        with pytest.raises(ContextDestroyedError):
            malloc(fake, 1024)
    assert fake.get_current_stream() == fake.null


def test_threads_use_their_own_context(fake):
    sched.initialize(0)
    ctxs = [sched.create_context(f"t{i}", 64 * MiB, qos="burstable") for i in range(3)]
    errors = []

    def worker(ctx):
        try:
            keep = []
            with ctx:
                for _ in range(50):
                    assert fake.get_current_stream() == ctx.stream
                    keep.append(malloc(fake, MiB))
                    time.sleep(0)
            assert ctx.used_bytes() == 50 * MiB
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(c,)) for c in ctxs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not errors, errors


def test_async_tasks_keep_their_stream_across_awaits(fake):
    sched.initialize(0)
    a = sched.create_context("a", 64 * MiB)
    b = sched.create_context("b", 64 * MiB, qos="best_effort")
    errors = []

    async def worker(ctx):
        async with ctx:
            for _ in range(30):
                if fake.get_current_stream() != ctx.stream:
                    errors.append(ctx.name)
                p = malloc(fake, MiB)
                del p
                ctx.stream.busy_until = time.monotonic() + 0.0005  # "work" queued on the stream
                await ctx.pace_async()
                await ctx.synchronize()
        return fake.get_current_stream()

    async def main():
        return await asyncio.gather(worker(a), worker(b), worker(a))

    out = sched.run(asyncio.wait_for(main(), 20))
    assert errors == []
    assert all(s == fake.null for s in out)
    assert fake.get_current_stream() == fake.null
    assert a.stats()["steps"] == 60 and b.stats()["steps"] == 30


def test_bandwidth_paces_by_device_time(fake, clocked):
    """A best-effort context capped at 25 %, queueing 2 ms kernels for a simulated second: it is charged the
    kernels' device time (events around each step), at most 0.25 x the time so far + its burst after every step,
    and within one step of that at the end (its waits are no longer than the cap needs)."""
    clock = clocked
    sched.initialize(0, burst_s=0.005)
    be = sched.create_context("be", 64 * MiB, qos="best_effort", bandwidth=0.25)
    bucket = be._bucket
    since = clock.now
    n, over = 0, []
    with be:
        while clock.now - since < 1.0:
            be.stream.busy_until = max(clock.now, be.stream.busy_until) + 0.002  # a 2 ms kernel
            be.pace()
            n += 1
            over.append(bucket.charged_s - (bucket.burst + 0.25 * (clock.now - since)))
        assert max(over) <= 1e-9  # the cap, after every step
        assert -0.002 - 1e-9 <= over[-1]  # not a stall
        assert len(be._pending) <= sched.get_scheduler().max_inflight  # steps in flight, not charged yet
        be.wait_idle()  # the device finishes what is queued (the simulated clock moves to its end)
        be._harvest()
    assert bucket.charged_s == pytest.approx((n - 1) * 0.002, abs=1e-9)  # the first step opens the measurement
    st = be.stats()
    assert st["throttled_s"] == pytest.approx(sum(clock.sleeps), abs=1e-9) and st["throttled_s"] > 0.7
    assert st["steps"] == n and st["queued"] == 0


def test_launch_records_events_and_counts(fake):
    sched.initialize(0)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    got = be.launch(lambda: fake.get_current_stream())
    assert got == be.stream and be.stats()["launches"] == 1
    assert be._busy_event is not None and len(be._pending) == 1


def test_higher_tier_activity_paces_best_effort(fake, clocked):
    clock = clocked
    sched.initialize(0, contention_share={"best_effort": 0.2})  # activity_window_s: 5 ms
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    assert be._rate() == 1.0
    with g:
        malloc(fake, 1024)  # allocation marks activity
        assert be._rate() == 0.2
        clock.advance(0.004)
        assert be._rate() == 0.2  # within the activity window
        g.stream.busy_until = clock.now + 1.0
        g.pace()  # in-flight work recorded as an event
    clock.advance(0.01)  # past the activity window
    assert be._rate() == 0.2  # g's event has not completed
    clock.advance(1.0)
    assert be._rate() == 1.0  # it has: g is idle
    with g:
        malloc(fake, 1024)
        assert be._rate() == 0.2
    clock.advance(0.006)
    assert be._rate() == 1.0  # activity counts only within the window


def test_threads_sharing_one_context_never_exceed_its_budget(fake):
    sched.initialize(0)
    c = sched.create_context("shared", 32 * MiB, qos="burstable")
    stop = time.monotonic() + 0.3
    over = []
    errors = []

    def worker(seed):
        rng = __import__("random").Random(seed)
        keep = []
        try:
            with c:
                while time.monotonic() < stop:
                    try:
                        keep.append(malloc(fake, rng.choice([MiB, 2 * MiB, 4 * MiB])))
                    except sched.OutOfMemoryError:
                        pass
                    if c.used_bytes() > 32 * MiB:
                        over.append(c.used_bytes())
                    if keep and rng.random() < 0.5:
                        keep.pop(rng.randrange(len(keep)))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert over == []


@pytest.fixture
def green(fake, monkeypatch):
    """Green-context streams faked: ordinary fake streams, recorded; their destruction recorded."""
    made, destroyed = [], []

    def green_stream(device_id, n_sms, priority):
        st = fake.cuda.Stream(non_blocking=True, priority=priority)
        made.append((st, n_sms, priority))
        return st, n_sms, 1000 + len(made)

    monkeypatch.setattr(_cuda, "green_stream", green_stream)
    monkeypatch.setattr(_cuda, "destroy_stream", destroyed.append)
    return made, destroyed


def test_paced_context_runs_confined_while_a_higher_tier_is_busy(fake, green, clocked):
    made, destroyed = green
    sched.initialize(0, contention_sms=24, activity_window_s=0.002, confine_hold_s=0.002)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    own = be.stream
    with be:
        be.pace()  # nothing above it is busy: its own stream
        assert be.stream is own and fake.get_current_stream() is own and not made
        with g:  # a guaranteed step in flight (another thread's, in a real program)
            pass
        be.pace()
        confined, sms, prio = made[0]
        assert (sms, prio) == (24, be.priority)
        assert be.stream is confined and fake.get_current_stream() is confined  # CuPy launches go there now
        assert len(confined.waited) == 1  # ordered after what the own stream had queued
        assert be._sm_target() == 24  # its GEMMs plan for the SMs it has
        # the others plan for the SMs outside its green context (whose CTAs would otherwise wait for those)
        assert g._sm_target() == _cuda.sm_count(0) - 24
        assert be.stats()["confined_sms"] == 24 and be.stats()["confined_steps"] == 1
        clocked.advance(0.01)  # the guaranteed context went quiet
        be.pace()
        assert be.stream is own and fake.get_current_stream() is own
        assert g._sm_target() == 0 and be._sm_target() == 0
        assert len(made) == 1  # the confined stream is kept for the next busy period
    assert fake.get_current_stream() is fake.null
    g2 = sched.create_context("g2", 64 * MiB)
    with g2:
        be.launch(lambda: None)  # launch() places too
    assert be.stream is made[0][0]
    assert g2._sm_target() == _cuda.sm_count(0) - 24
    sched.destroy_context(be)
    assert destroyed == [1001]
    assert g2._sm_target() == 0  # nothing confined any more


def test_confinement_outlasts_the_pacing_window(fake, green, clocked):
    """A paced context stays confined for confine_hold_s after the higher tier's last activity (work it queued on
    every SM would otherwise delay that tier's next steps), while its pacing returns to full rate after the shorter
    activity window; after the hold it goes back to its own stream."""
    made, _ = green
    sched.initialize(0, contention_sms=16, activity_window_s=0.002, confine_hold_s=0.1)
    assert sched.get_scheduler().confine_hold_s == 0.1
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    own = be.stream
    with be:
        with g:
            pass
        be.pace()
        assert be.stream is made[0][0] and be._rate() < 1.0
        clocked.advance(0.02)  # past the pacing window, within the hold
        be.pace()
        assert be.stream is made[0][0] and be._rate() == 1.0
        clocked.advance(0.079)  # 99 ms after the guaranteed context's activity: within the hold
        be.pace()
        assert be.stream is made[0][0]
        clocked.advance(0.002)  # 101 ms: past the hold (the best-effort context's own steps do not extend it)
        be.pace()
        assert be.stream is own
    sched.shutdown()
    sched.initialize(0, activity_window_s=0.3, confine_hold_s=0.1)
    assert sched.get_scheduler().confine_hold_s == 0.3  # never shorter than the pacing window
    with pytest.raises(ValueError, match="confine_hold_s"):
        sched.initialize(0, confine_hold_s=-1)
    sched.initialize(0, activity_window_s=0.01, confine_hold_s=None)
    assert sched.get_scheduler().confine_hold_s == 0.01


def test_planning_around_confined_sms_expires_and_skips_destroyed_contexts(fake, green, clocked):
    """The others plan around a confined context's SMs only while it steps (within confine_hold_s of its last
    step), a context destroyed while its pacing waited takes no new green stream and leaves no entry behind, and
    the target never drops below one SM."""
    made, destroyed = green
    sched.initialize(0, contention_sms=16, activity_window_s=0.002, confine_hold_s=0.05,
                     contention_share={"best_effort": 1.0})  # no pacing delay between the steps here
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    with g:
        pass
    be.pace()
    assert be.stream is made[0][0] and g._sm_target() == 132 - 16
    clocked.advance(0.049)
    assert g._sm_target() == 132 - 16  # within the hold of its last step
    clocked.advance(0.031)  # the best-effort context stopped stepping (still on its confined stream)
    assert be.stream is made[0][0] and g._sm_target() == 0
    with g:
        pass
    be.pace()
    assert g._sm_target() == 132 - 16
    sched.destroy_context(be)
    assert g._sm_target() == 0 and not sched.get_scheduler()._confined_by
    with pytest.raises(sched.ContextDestroyedError):  # as when destroy ran while pace() waited in _throttle
        be._place()
    assert len(made) == 1 and not sched.get_scheduler()._confined_by
    s = sched.get_scheduler()
    s._confined_sms, s._confined_until = 200, clocked.now + 10  # a partition as large as the device
    assert g._sm_target() == 1


def test_graph_captures_plan_around_the_confinement_sms(fake, green):
    """A graph captured in an unpaced context while a lower-tier paced context lives plans its GEMMs for the SMs
    outside the green context, confined or not at that moment (the graph is replayed later, under whatever
    contention then); outside a capture, and with no paced context below it, the whole device."""
    made, _ = green
    sched.initialize(0, contention_sms=16, activity_window_s=0.002, confine_hold_s=0.05)
    g = sched.create_context("g", 64 * MiB)
    _g2 = sched.create_context("g2", 64 * MiB)  # a second unpaced context, kept alive
    with g:
        fake.capturing.add(fake.get_current_stream().ptr)
        assert g._sm_target() == 0      # no paced CUDA context yet
        be = sched.create_context("be", 64 * MiB, qos="best_effort")
        assert not made and g._sm_target() == 132 - 16
        b = sched.create_context("b", 64 * MiB, qos="burstable")
        fake.capturing.clear()
        assert g._sm_target() == 0      # not capturing, nothing confined
    sched.destroy_context(be)
    with g:
        fake.capturing.add(fake.get_current_stream().ptr)
        assert g._sm_target() == 132 - 16   # the burstable context is paced too
        sched.destroy_context(b)
        assert g._sm_target() == 0      # none left below it (g2 is guaranteed, unpaced)
        fake.capturing.clear()
    assert sched.get_scheduler()._paced_cuda == 0  # the per-GEMM capture query stops with the last one


def test_graph_captured_after_the_hold_expired_still_plans_around_the_confinement(fake, green, clocked):
    """A best-effort context confined, then quiet past confine_hold_s (still on its confined stream): outside a
    capture the guaranteed context plans for the whole device again, a capture for the SMs outside."""
    made, _ = green
    sched.initialize(0, contention_sms=16, activity_window_s=0.002, confine_hold_s=0.05,
                     contention_share={"best_effort": 1.0})
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    with g:
        pass
    be.pace()
    assert be.stream is made[0][0] and g._sm_target() == 132 - 16
    clocked.advance(0.08)
    assert g._sm_target() == 0
    fake.capturing.add(fake.get_current_stream().ptr)
    try:
        assert g._sm_target() == 132 - 16
    finally:
        fake.capturing.clear()


def test_no_green_context_no_capture_planning(fake, clocked, monkeypatch):
    """Where no green context can be made (the paced context's _confined is False), nothing is ever confined:
    captures plan for the whole device."""
    def refuse(*a, **k):
        raise _cuda.GreenContextError("no green contexts here")
    monkeypatch.setattr(_cuda, "green_stream", refuse)
    sched.initialize(0, contention_sms=16, activity_window_s=0.002)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    with g:
        pass
    be.pace()
    assert be._confined is False
    fake.capturing.add(fake.get_current_stream().ptr)
    try:
        assert g._sm_target() == 0
    finally:
        fake.capturing.clear()


def test_confinement_keeps_one_stream_order_for_shared_sessions(fake, green):
    made, _ = green
    sched.initialize(0, contention_sms=16, activity_window_s=1.0)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    own = be.stream
    with g:
        with be:
            with be:  # entered twice (two sessions share its stream): no move
                be.pace()
                assert be.stream is own
            with fake.cuda.Stream(non_blocking=True) as mine:  # the user's own stream inside the context
                be.pace()
                assert be.stream is own and fake.get_current_stream() is mine
            be.pace()
            assert be.stream is made[-1][0]


def test_no_confinement_when_disabled_or_unsupported(fake, monkeypatch):
    sched.initialize(0, contention_sms=0)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    with g:
        be.pace()
    assert be.stream is be._full_stream
    sched.shutdown()

    def unsupported(*a):
        raise _cuda.GreenContextError("no green contexts here")

    monkeypatch.setattr(_cuda, "green_stream", unsupported)
    sched.initialize(0)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    with g:
        be.pace()
        be.pace()
    assert be.stream is be._full_stream and be._confined is False
    with pytest.raises(ValueError):
        sched.initialize(0, contention_sms=-1)


def test_destroying_a_context_entered_on_its_confined_stream_keeps_that_stream(fake, green):
    made, destroyed = green
    sched.initialize(0, activity_window_s=1.0)
    g = sched.create_context("g", 64 * MiB)
    be = sched.create_context("be", 64 * MiB, qos="best_effort")
    with g:
        pass
    be.__enter__()
    be.pace()
    confined = made[0][0]
    assert fake.get_current_stream() is confined
    sched.destroy_context(be)
    assert destroyed == []  # still CuPy's current stream in the session: not destroyed under it
    be.__exit__(None, None, None)
    assert fake.get_current_stream() is fake.null
