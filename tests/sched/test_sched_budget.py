"""Budgets enforced through the allocation hook (CPU device, NumPy buffers)."""

import gc
import threading
import time

import numpy as np
import pytest

import gpk_array
from gpk_array import sched


def oom():
    return sched.out_of_memory_error()


def test_oom_class_is_a_memory_error():
    assert issubclass(sched.OutOfMemoryError, MemoryError)
    assert sched.OutOfMemoryError is sched.out_of_memory_error()
    core = getattr(gpk_array, "OutOfMemoryError", None)
    if core is not None:
        assert sched.OutOfMemoryError is core


def test_no_context_means_no_accounting(cpu_sched, alloc):
    a = sched.create_context("a", 100)
    x = alloc(10_000)  # outside any context
    assert a.used_bytes() == 0
    del x


def test_budget_enforced_and_released(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    with a:
        x = alloc(600)
        assert a.used_bytes() == 600
        with pytest.raises(MemoryError) as ei:
            alloc(500)
        assert isinstance(ei.value, oom())
        msg = str(ei.value)
        assert "'a'" in msg and "budget 1000 B" in msg and "in use 600 B" in msg and "request 500 B" in msg
        y = alloc(400)
        assert a.used_bytes() == 1000
        del x
        assert a.used_bytes() == 400
        z = alloc(600)
    st = a.stats()
    assert st["used"] == 1000 and st["peak"] == 1000 and st["refusals"] == 1
    del y, z
    assert a.used_bytes() == 0


def test_views_count_their_owner_once(cpu_sched, wrap, alloc):
    a = sched.create_context("a", 10_000)
    with a:
        base = alloc(4000)
        v1 = wrap(base[100:200])
        v2 = wrap(base.reshape(40, 100)[::2].T)  # a view of a view
        assert a.used_bytes() == 4000
        del base, v1
        assert a.used_bytes() == 4000  # v2 keeps the buffer alive
        del v2
        assert a.used_bytes() == 0


def test_view_of_fresh_temporary_charges_the_temporary(cpu_sched, wrap):
    a = sched.create_context("a", 10_000)
    with a:
        v = wrap(np.ones(1000, dtype=np.uint8).reshape(10, 100))  # the owner is the (unwrapped) temporary
        assert v.base is not None
        assert a.used_bytes() == 1000
        del v
        assert a.used_bytes() == 0


def test_foreign_buffers_are_not_counted(cpu_sched, wrap):
    a = sched.create_context("a", 10)
    buf = bytearray(1000)
    with a:
        x = wrap(np.frombuffer(buf, dtype=np.uint8))
        assert a.used_bytes() == 0
    del x


def test_owner_charged_once_across_contexts(cpu_sched, wrap, alloc):
    a = sched.create_context("a", 1000)
    b = sched.create_context("b", 1000)
    with a:
        x = alloc(800)
    with b:
        y = wrap(x[:10])  # already charged to a
    assert (a.used_bytes(), b.used_bytes()) == (800, 0)
    del x, y
    assert a.used_bytes() == 0


def test_nested_contexts_charge_the_innermost(cpu_sched, alloc):
    outer = sched.create_context("outer", 1000)
    inner = sched.create_context("inner", 1000)
    with outer:
        x = alloc(100)
        with inner:
            assert sched.current_context() is inner
            y = alloc(200)
        assert sched.current_context() is outer
        z = alloc(300)
    assert sched.current_context() is None
    assert outer.used_bytes() == 400 and inner.used_bytes() == 200
    del x, y, z


def test_context_session(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    with sched.context_session("a") as c:
        assert c is a and sched.current_context() is a
        x = alloc(10)
    with sched.context_session(a):
        assert sched.current_context() is a
    assert a.used_bytes() == 10
    del x


def test_burstable_cannot_eat_guaranteed_headroom(cpu_sched, alloc):
    g = sched.create_context("g", 400_000)
    b = sched.create_context("b", 900_000, qos="burstable")
    with b:
        x = alloc(600_000)  # everything not reserved
        with pytest.raises(MemoryError, match="unreserved free"):
            alloc(1)
    with g:
        y = alloc(400_000)  # the reservation is there
    assert g.used_bytes() == 400_000 and b.used_bytes() == 600_000
    del x, y


def test_evictable_caches_lru(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    held = {}
    evicted = []

    def make(name, n):
        with a:
            held[name] = alloc(n)

        def evict():
            evicted.append(name)
            held.pop(name, None)

        a.register_cache(name, evict, nbytes=n)

    make("old", 300)
    make("mid", 300)
    make("new", 300)
    a.touch_cache("old")  # now "mid" is the least recently used
    with a:
        x = alloc(400)  # needs 300 more: evicts exactly one cache
    assert evicted == ["mid"]
    assert a.used_bytes() == 1000
    st = a.stats()
    assert st["evictions"] == 1 and st["evicted_bytes"] == 300
    with a:
        with pytest.raises(MemoryError):
            alloc(2000)  # over the budget even with every cache gone
    assert set(evicted) == {"mid", "old", "new"}
    assert a.used_bytes() == 400
    del x


def test_lower_tier_caches_evicted_for_device_memory(cpu_sched, alloc):
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000, wait_timeout=0.05)
    b = sched.create_context("b", 1000, qos="burstable")
    be = sched.create_context("be", 1000, qos="best_effort")
    store = {}
    with be:
        store["kv"] = alloc(700)
    be.register_cache("kv", lambda: store.clear(), nbytes=700)
    with b:
        x = alloc(600)  # only 300 free: the best-effort cache goes
    assert store == {} and be.used_bytes() == 0 and be.stats()["evictions"] == 1
    del x
    sched.shutdown()


def test_best_effort_waits_for_memory_then_succeeds(cpu_sched, alloc):
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000, wait_timeout=5.0)
    g = sched.create_context("g", 600)
    be = sched.create_context("be", 1000, qos="best_effort")
    b = sched.create_context("b", 400, qos="burstable")
    with b:
        hog = [alloc(400)]
    result = {}

    def worker():
        with be:
            try:
                result["x"] = alloc(300)
            except MemoryError as e:  # pragma: no cover - reported below
                result["err"] = e

    t = threading.Thread(target=worker)
    t.start()
    deadline = time.monotonic() + 2.0
    while be.stats()["queued"] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert be.stats()["queued"] == 1  # it is waiting, not failing
    hog.clear()  # frees 400 bytes
    t.join(timeout=5.0)
    assert not t.is_alive()
    assert "err" not in result, result.get("err")
    assert be.used_bytes() == 300 and be.stats()["queued"] == 0
    assert g.used_bytes() == 0
    sched.shutdown()


def test_best_effort_wait_times_out(cpu_sched, alloc, fake_clock, monkeypatch):
    """A best-effort request that never fits waits out its wait_timeout, then raises: on the simulated clock, its
    waits on the scheduler's condition (each at most 10 ms, so that it sees memory come free) add up to the
    timeout, and it raised only then."""
    from gpk_array.sched import _state
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000)
    sched.create_context("g", 1000)
    be = sched.create_context("be", 1000, qos="best_effort", wait_timeout=0.1)
    waits = []

    def wait(timeout=None):  # nobody frees memory here: each wait runs to its timeout
        waits.append(timeout)
        fake_clock.advance(timeout)
        return False

    monkeypatch.setattr(_state.COND, "wait", wait)
    with be, pytest.raises(MemoryError, match="waited 0.1 s"):
        alloc(1)
    assert fake_clock.elapsed == pytest.approx(0.1, abs=1e-9)  # not before its deadline, and not past it
    assert len(waits) >= 10 and all(0 < w <= 0.01 for w in waits), waits
    assert be.stats()["refusals"] == 1 and be.stats()["queued"] == 0
    sched.shutdown()


def test_destroy_releases_charges(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    with a:
        x = alloc(900)
    sched.destroy_context(a)
    b = sched.create_context("b", 1_000_000)  # a's bytes no longer count
    with b:
        y = wrap_again = alloc(10)
    del x
    gc.collect()
    assert b.used_bytes() == 10
    del y, wrap_again


def test_threads_each_enter_their_own(cpu_sched, alloc):
    ctxs = [sched.create_context(f"t{i}", 100_000) for i in range(4)]
    errors = []
    barrier = threading.Barrier(4)

    def worker(ctx, n):
        try:
            with ctx:
                barrier.wait(timeout=5)
                keep = [alloc(n) for _ in range(10)]
                barrier.wait(timeout=5)
                assert sched.current_context() is ctx
                assert ctx.used_bytes() == 10 * n
                del keep
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(c, 1000 * (i + 1))) for i, c in enumerate(ctxs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert [c.used_bytes() for c in ctxs] == [0, 0, 0, 0]


def _core_zeros():
    zeros = getattr(gpk_array, "zeros", None)
    if zeros is None or getattr(gpk_array, "uint8", None) is None:
        pytest.skip("the gpk_array core (zeros, uint8) is not available yet")
    return zeros


def test_budget_through_core_arrays(cpu_sched):
    zeros = _core_zeros()
    a = sched.create_context("core", 10_000)
    with a:
        x = zeros((6000,), dtype=gpk_array.uint8, device="cpu")
        assert a.used_bytes() >= 6000
        with pytest.raises(MemoryError):
            zeros((6000,), dtype=gpk_array.uint8, device="cpu")
        del x
        gc.collect()
        y = zeros((6000,), dtype=gpk_array.uint8, device="cpu")
    assert a.used_bytes() >= 6000
    del y
    gc.collect()
    assert a.used_bytes() == 0


def test_core_oom_is_the_core_error(cpu_sched):
    zeros = _core_zeros()
    if not hasattr(gpk_array, "OutOfMemoryError"):
        pytest.skip("gpk_array.OutOfMemoryError not exported yet")
    a = sched.create_context("core", 100)
    with a, pytest.raises(gpk_array.OutOfMemoryError):
        zeros((1000,), dtype=gpk_array.uint8, device="cpu")
