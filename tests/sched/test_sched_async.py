"""asyncio: per-task contexts, gather, pacing, memory waits, synchronize, destroy while awaiting (CPU device).

No pytest-asyncio: each test drives its own loop with asyncio.run / sched.run and bounds it with wait_for.
"""

import asyncio
import threading

import numpy as np
import pytest

from gpk_array import sched
from gpk_array.sched import ContextDestroyedError, _aio, _cuda

TIMEOUT = 10.0


def run(coro):
    return sched.run(asyncio.wait_for(coro, TIMEOUT))


def test_gather_tasks_keep_their_own_context(cpu_sched, alloc):
    a = sched.create_context("a", 100_000)
    b = sched.create_context("b", 100_000)
    seen = []

    async def worker(ctx, n):
        async with ctx:
            keep = []
            for i in range(20):
                assert sched.current_context() is ctx
                keep.append(alloc(n))
                seen.append(ctx.name)
                await asyncio.sleep(0)  # interleave with the other task
            assert ctx.used_bytes() == 20 * n
        assert sched.current_context() is None
        return len(keep)

    async def main():
        return await asyncio.gather(worker(a, 100), worker(b, 300))

    assert run(main()) == [20, 20]
    # they really interleaved
    assert seen[:4] != ["a"] * 4 and "ab" in "".join(s[0] for s in seen)
    assert a.used_bytes() == 0 and b.used_bytes() == 0


def test_plain_asyncio_run_with_initialize_inside_the_loop(alloc):
    sched.shutdown()

    async def main():
        sched.initialize("cpu", total_vram_budget=1_000_000)
        a = sched.create_context("a", 1000)
        b = sched.create_context("b", 1000)

        async def worker(ctx):
            async with ctx:
                await asyncio.sleep(0)
                assert sched.current_context() is ctx
                return isinstance(asyncio.current_task().get_coro(), _aio._GuardedCoroutine)

        return await asyncio.gather(worker(a), worker(b))

    try:
        assert asyncio.run(asyncio.wait_for(main(), TIMEOUT)) == [True, True]
    finally:
        sched.shutdown()


def test_steps_apply_the_task_context_to_the_thread(cpu_sched, monkeypatch):
    """The task factory applies each task's context before every step and restores the thread afterwards.

    CuPy's per-thread state is replaced by a recorder so that the mechanism is checked without a GPU.
    """
    state = threading.local()

    def fake_activate(ctx):
        state.ctx = ctx

    def fake_active():
        return getattr(state, "ctx", None)

    monkeypatch.setattr(_cuda, "activate", fake_activate)
    monkeypatch.setattr(_cuda, "active_context", fake_active)
    a = sched.create_context("a", 1000)
    b = sched.create_context("b", 1000)
    errors = []

    async def worker(ctx):
        async with ctx:
            for _ in range(50):
                if fake_active() is not ctx:
                    errors.append((ctx.name, fake_active()))
                await asyncio.sleep(0)
        if fake_active() is not None:
            errors.append((ctx.name, "after exit", fake_active()))

    async def main():
        await asyncio.gather(worker(a), worker(b), worker(a))
        return fake_active()

    assert run(main()) is None
    assert errors == []


def test_run_and_launch_count(cpu_sched):
    a = sched.create_context("a", 1000)

    async def main():
        r1 = await a.run(lambda x, y=0: x + y, 1, y=2)
        r2 = await a.run(sched.current_context)
        return r1, r2

    assert run(main()) == (3, a)
    assert a.launch(lambda: sched.current_context()) is a
    assert a.stats()["launches"] == 3


def test_synchronize_and_to_host_on_cpu(cpu_sched):
    a = sched.create_context("a", 10_000)

    async def main():
        await a.synchronize()
        x = np.arange(10)
        y = await a.to_host(x)
        assert y is not x and np.array_equal(x, y)
        return True

    assert run(main())


def test_gather_runs_paced_contexts_concurrently(fake_clock):
    """Two best-effort contexts paced to 10 % each under gather: each waits out its pacing on the event loop, so
    while one waits the other runs its steps (their waits overlap) and the loop keeps running other tasks.

    On the simulated clock (each step advances it by its 2 ms; a pacing wait by what it asks for, then gives the
    loop one turn), checked by what happened in which order, not by how long it took."""
    clock = fake_clock
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1_000_000, burst_s=0.001)
    a = sched.create_context("a", 1000, qos="best_effort", bandwidth=0.1)
    b = sched.create_context("b", 1000, qos="best_effort", bandwidth=0.1)
    step_s = 0.002
    steps = 10
    log = []  # (worker, step) in the order the steps ran
    ticks = [0]  # turns of the ticker task
    waits = []  # (worker, ticks while its pace_async waited, steps of the other worker meanwhile)

    async def ticker(stop):
        while not stop.is_set():
            ticks[0] += 1
            await asyncio.sleep(0)

    async def worker(ctx):
        async with ctx:
            for i in range(steps):
                log.append((ctx.name, i))
                clock.advance(step_s)  # the step's "device work"
                slept, t, before = len(clock.async_sleeps), ticks[0], len(log)
                await ctx.pace_async()
                if len(clock.async_sleeps) > slept:  # this pace waited
                    others = sum(1 for name, _ in log[before:] if name != ctx.name)
                    waits.append((ctx.name, ticks[0] - t, others))
        return ctx.stats()

    async def main():
        stop = asyncio.Event()
        tick = asyncio.ensure_future(ticker(stop))
        stats = await asyncio.gather(worker(a), worker(b))
        stop.set()
        await tick
        return stats

    try:
        stats = run(main())
    finally:
        sched.shutdown()
    assert [st["steps"] for st in stats] == [steps, steps]
    # both were held back, only ever by waits on the loop (never a blocking sleep), and within their 10 %
    # (the simulated clock runs the two workers' waits one after the other, so each is also refilled while the
    # other waits: what each waited is not what it would alone, but the cap holds for each)
    assert all(st["throttled_s"] > 0 for st in stats), stats
    assert all(c._bucket.charged_s <= c._bucket.burst + 0.1 * clock.elapsed + 1e-9 for c in (a, b))
    assert clock.sleeps == []
    assert sum(clock.async_sleeps) == pytest.approx(sum(st["throttled_s"] for st in stats), abs=1e-9)
    # overlapped, not one after the other: b started before a finished, and the steps interleaved
    assert log.index(("b", 0)) < log.index(("a", steps - 1))
    assert len(set(log)) == len(log) == 2 * steps
    assert sum(1 for x, y in zip(log, log[1:]) if x[0] != y[0]) >= steps
    # every wait let the loop run: the ticker turned, and the other worker stepped while it still had steps
    assert {name for name, _, _ in waits} == {"a", "b"}
    assert all(t > 0 for _, t, _ in waits), waits
    assert sum(others for _, _, others in waits) >= steps


def test_wait_for_memory_until_freed(cpu_sched, alloc):
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000)
    g = sched.create_context("g", 500)
    be = sched.create_context("be", 1000, qos="best_effort")
    holder = {}
    with be:
        holder["x"] = alloc(500)

    async def consumer():
        await be.wait_for_memory(400, timeout=5)
        with be:
            return alloc(400)

    async def producer():
        while be.stats()["queued"] == 0:  # until the consumer waits (bounded by run()'s timeout)
            await asyncio.sleep(0)
        assert be.stats()["queued"] == 1
        holder.clear()

    async def main():
        got, _ = await asyncio.gather(consumer(), producer())
        return got.nbytes

    try:
        assert run(main()) == 400
        assert be.stats()["queued"] == 0 and g.used_bytes() == 0
    finally:
        sched.shutdown()


def test_wait_for_memory_timeout_and_budget(fake_clock):
    """An unmet wait gives up at its timeout, on the simulated clock: it polled with growing waits on the loop
    that end exactly at the deadline, then raised; a request over the budget raises without waiting."""
    clock = fake_clock
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000)
    sched.create_context("g", 1000)
    be = sched.create_context("be", 500, qos="best_effort")

    async def main():
        t0 = clock.now
        with pytest.raises(MemoryError, match="waited 0.05 s"):
            await be.wait_for_memory(10, timeout=0.05)
        waited = clock.now - t0
        n = len(clock.async_sleeps)
        with pytest.raises(MemoryError, match="budget"):
            await be.wait_for_memory(501, timeout=5)  # over the budget: no point waiting
        return waited, n

    try:
        waited, n = run(main())
        assert be.stats()["queued"] == 0
    finally:
        sched.shutdown()
    sleeps = clock.async_sleeps
    assert waited == pytest.approx(0.05, abs=1e-9)  # not before the deadline, and not past it
    assert n == len(sleeps) >= 3 and sum(sleeps) == pytest.approx(0.05, abs=1e-9)
    assert sleeps[0] == pytest.approx(1e-3) and all(x == 2 * w for w, x in zip(sleeps, sleeps[1:-1]))
    assert 0 < sleeps[-1] <= 2 * sleeps[-2]  # the last wait is cut at the deadline


def test_best_effort_does_not_block_the_event_loop(cpu_sched, alloc, monkeypatch):
    """On the event-loop thread a best-effort allocation that does not fit is refused at once (with a hint to
    await wait_for_memory) instead of waiting out its 5 s wait_timeout on the scheduler's condition."""
    from gpk_array.sched import _state
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000, wait_timeout=5.0)
    sched.create_context("g", 1000)
    be = sched.create_context("be", 1000, qos="best_effort")
    waited = []

    def wait(timeout=None):  # the only place a refused allocation blocks
        waited.append(timeout)
        raise AssertionError("a best-effort allocation blocked the event-loop thread")

    monkeypatch.setattr(_state.COND, "wait", wait)

    async def main():
        with be, pytest.raises(MemoryError, match="event-loop thread"):
            alloc(10)
        return be.stats()

    try:
        st = run(main())
    finally:
        sched.shutdown()
    assert waited == [] and st["refusals"] == 1 and st["queued"] == 0


def test_awaiting_after_destroy_raises(cpu_sched):
    a = sched.create_context("a", 1000, qos="best_effort", bandwidth=0.5)

    async def main():
        sched.destroy_context(a)
        for make in (a.synchronize, lambda: a.run(len, []), a.pace_async, lambda: a.to_host(np.ones(2)),
                     lambda: a.wait_for_memory(1)):
            with pytest.raises(ContextDestroyedError):
                await make()
        with pytest.raises(ContextDestroyedError):
            async with a:
                pass
        return True

    assert run(main())


def test_destroy_while_waiting_for_memory(cpu_sched):
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000)
    sched.create_context("g", 1000)
    be = sched.create_context("be", 1000, qos="best_effort")

    async def main():
        waiter = asyncio.ensure_future(be.wait_for_memory(10, timeout=5))
        while be.stats()["queued"] == 0:  # until it waits (bounded by run()'s timeout)
            await asyncio.sleep(0)
        sched.destroy_context(be)
        with pytest.raises(ContextDestroyedError):
            await waiter
        return True

    try:
        assert run(main())
    finally:
        sched.shutdown()


def test_await_event_polls_without_blocking():
    """The event poller (used for CUDA events) with a fake event that completes after the poller has come back
    through ten timed waits: it returns at the first poll that finds the event done, lets the loop run other tasks
    between polls, and its timed waits double from FIRST_DELAY_S up to MAX_DELAY_S (which bounds how late it sees
    the event)."""

    class FakeEvent:
        def __init__(self, timed, after):
            self.timed, self.after = timed, after
            self.polls = self.done_polls = 0

        @property
        def done(self):
            self.polls += 1
            # (10_000 polls: a bound, so that a poller that never waits on a timer still ends)
            done = len(self.timed) >= self.after or self.polls >= 10_000
            self.done_polls += done
            return done

    ticks = [0]

    async def ticker(stop):
        while not stop.is_set():
            ticks[0] += 1
            await asyncio.sleep(0)

    async def main():
        loop = asyncio.get_running_loop()
        timed = []  # the delays of the poller's timed waits, in order
        call_later = loop.call_later

        def recording_call_later(delay, callback, *args, **kwargs):
            if getattr(callback, "__name__", "") == "poll":
                timed.append(delay)
            return call_later(delay, callback, *args, **kwargs)

        loop.call_later = recording_call_later
        ev = FakeEvent(timed, 10)
        stop = asyncio.Event()
        tick = asyncio.ensure_future(ticker(stop))
        await asyncio.sleep(0)
        t = ticks[0]
        await _aio.await_event(ev)
        during = ticks[0] - t
        stop.set()
        await tick
        return timed, during, ev

    timed, during, ev = asyncio.run(asyncio.wait_for(main(), TIMEOUT))
    assert ev.done_polls == 1  # returned at the first poll that found it done, polled no more
    assert timed == [min(_aio.FIRST_DELAY_S * 2**i, _aio.MAX_DELAY_S) for i in range(10)], timed
    assert ev.polls > len(timed)  # the first polls come back at once (call_soon), then on the timer
    assert during > len(timed)  # the loop kept running other tasks while we waited

    async def failing():
        ev = FakeEvent([], 1)  # never done

        def alive():
            raise ContextDestroyedError("gone")

        await _aio.await_event(ev, alive=alive)

    with pytest.raises(ContextDestroyedError):
        asyncio.run(asyncio.wait_for(failing(), TIMEOUT))
