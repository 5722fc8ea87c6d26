"""Pacing: token bucket over busy time, bandwidth caps, contention with higher tiers (CPU device).

Every test here runs on the simulated clock (conftest's ``fake_clock``): a step of work advances it by the step's
length, and the scheduler's throttle sleeps advance it by what they asked for. So what the token bucket grants is
checked exactly: a context paced to share ``r`` with burst ``b`` that ran ``T`` simulated seconds is charged at most
``b + r * T`` at every step, its waits end when its balance is back at zero (so it is charged exactly that, less
the refill a full bucket could not take), and the waits it reports are the sleeps it took.
"""
import ast
import math
import pathlib
import time

import pytest

from gpk_array import sched
from gpk_array.sched import _clock
from gpk_array.sched._pacing import TokenBucket

EPS = 1e-9  # float rounding of sums of simulated seconds around a clock reading of 1000 s


def test_token_bucket_math():
    b = TokenBucket(burst=0.01)
    now = b._last
    assert b.delay(0.5, now) == 0.0
    b.charge(0.03)  # 0.01 - 0.03 = -0.02
    assert b.delay(0.5, now) == pytest.approx(0.04)
    # now is time.monotonic() (the host's uptime): a difference of such times is exact to a few of its ulps
    assert b.delay(0.5, now + 0.04) == pytest.approx(0.0, abs=64 * math.ulp(now))
    # refill is capped at the burst
    assert b.delay(1.0, now + 100) == 0.0 and b.tokens == pytest.approx(0.01)
    with pytest.raises(ValueError):
        TokenBucket(burst=0)


def test_scheduler_reads_time_only_through_its_clock_globals():
    """The fake clock sees all of the scheduler's time: every module of gpk_array.sched reads the clock and sleeps
    only through the attributes of _clock that the ``fake_clock`` fixture rebinds, as ``_clock.<name>`` (a direct
    time.* / asyncio.sleep call, or a name imported from _clock, would run on the wall clock in the tests that
    claim to simulate it). _aio's event poller is the one reader of the real clock (it only sets how often it
    polls)."""
    pkg = pathlib.Path(sched.__file__).parent
    modules = sorted(p.stem for p in pkg.glob("*.py"))
    assert {"_clock", "_pacing", "_aio"} <= set(modules)
    found = []
    for name in modules:
        tree = ast.parse((pkg / f"{name}.py").read_text())
        bound = set()
        if name == "_clock":  # its module-level bindings: monotonic = time.monotonic, ...
            for node in tree.body:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
                    assert node.targets[0].id in _CLOCK_NAMES, ast.unparse(node)
                    bound.add(node.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module in ("time", "_clock") or (
                    node.module == "asyncio" and any(a.name == "sleep" for a in node.names))):
                found.append((name, node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                pair = (node.value.id, node.attr)
                if (pair[0] == "time" or pair == ("asyncio", "sleep")) and node not in bound and not (
                        name == "_aio" and pair == ("time", "monotonic")):
                    found.append((name, node.lineno, ast.unparse(node)))
                elif pair[0] == "_clock" and pair[1] not in _CLOCK_NAMES:
                    found.append((name, node.lineno, ast.unparse(node)))
    assert found == [], found
    assert _clock.monotonic is time.monotonic and _clock.sleep is time.sleep  # (outside fake_clock)


_CLOCK_NAMES = {"monotonic", "sleep", "async_sleep"}


def paced_loop(ctx, clock, step_s=0.002, sim_s=1.0, before_pace=None, after_pace=None):
    """Steps of ``step_s`` simulated work, each closed by ``ctx.pace()`` (with ``before_pace()`` before it and
    ``after_pace()`` after it, if given), until ``sim_s`` simulated seconds have passed. Returns (steps, simulated
    seconds, the sleeps the scheduler took meanwhile)."""
    n, t0, s0 = 0, clock.now, len(clock.sleeps)
    with ctx:
        while clock.now - t0 < sim_s - EPS:
            clock.advance(step_s)
            if before_pace is not None:
                before_pace()
            ctx.pace()
            if after_pace is not None:
                after_pace()
            n += 1
    return n, clock.now - t0, clock.sleeps[s0:]


def bucket_cap(bucket, rate, clock, since):
    """What a bucket of ``rate`` made at simulated time ``since`` can have granted by now: burst + rate x time."""
    return bucket.burst + rate * (clock.now - since)


def check_paced(bucket, rate, clock, since, run, step_s, stats):
    """The exact account of a paced CPU loop ``run`` (paced_loop's result: the context's only loop) on the simulated
    clock, of a bucket made at ``since`` (see the module docstring)."""
    n, sim, sleeps = run
    charged = bucket.charged_s
    # The first step of a pacing run is not measured (a step runs from the mark the previous pace() opened), and
    # the bucket, full then, could not take the refill for it: every later step is charged.
    assert charged == pytest.approx((n - 1) * step_s, abs=EPS)
    # The cap, and not a stall: the last wait ended when the balance was back at zero, so the context was charged
    # exactly what the bucket granted (less the refill the full bucket lost on the first step).
    assert charged == pytest.approx(bucket_cap(bucket, rate, clock, since) - rate * step_s, abs=EPS)
    # Simulated time passed only in steps and in throttle waits: the waits it reports are the sleeps it took.
    waits = sim - n * step_s
    assert waits > 0 and sum(sleeps) == pytest.approx(waits, abs=EPS)
    assert stats["throttled_s"] == pytest.approx(waits, abs=EPS)
    assert stats["queued"] == 0 and stats["steps"] == n


def test_bandwidth_caps_busy_share(fake_clock):
    """A best-effort context capped at 25 % of device time, 2 ms steps over a simulated second: after every step
    charged at most 0.25 x the time so far + its burst, exactly that at the end, and its waits are the rest of the
    time. An uncapped one (nothing of a higher tier is busy) never waits."""
    clock = fake_clock
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1_000_000, burst_s=0.005)
    try:
        free = sched.create_context("free", 1000, qos="best_effort")
        n_free, _, slept = paced_loop(free, clock, sim_s=0.1)
        assert n_free == 50 and free.stats()["throttled_s"] == 0 and slept == []
        capped = sched.create_context("capped", 1000, qos="best_effort", bandwidth=0.25)
        since = clock.now
        over = []
        run = paced_loop(capped, clock, after_pace=lambda: over.append(
            capped._bucket.charged_s - bucket_cap(capped._bucket, 0.25, clock, since)))
        assert max(over) <= EPS  # the cap holds after every step, not only on average
        n, sim, sleeps = run
        # 1 s simulated: 0.25 s + 5 ms of burst granted, less the 0.5 ms the full bucket lost on the first step; the
        # burst (5 ms, refilled 0.5 ms per step) covers the unmeasured first step and three more, each later one waits
        assert n == 1 + round((0.25 * sim + 0.005 - 0.0005) / 0.002) and len(sleeps) == n - 4
        check_paced(capped._bucket, 0.25, clock, since, run, 0.002, capped.stats())
    finally:
        sched.shutdown()


def test_guaranteed_is_not_paced(cpu_sched, fake_clock):
    g = sched.create_context("g", 1000)
    n, _, sleeps = paced_loop(g, fake_clock, sim_s=0.1)
    st = g.stats()
    assert st["throttled_s"] == 0 and st["steps"] == n == 50 and sleeps == []


def test_partition_compute_share(fake_clock):
    """A guaranteed context in a partition with a quarter of the device: the partition's bucket paces it."""
    clock = fake_clock
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1_000_000, burst_s=0.005)
    try:
        p = sched.create_partition("p", 10_000, compute_share=0.25)
        c = sched.create_context("c", 1000, partition=p)  # guaranteed, but its partition gets a quarter
        since = clock.now
        check_paced(p._bucket, 0.25, clock, since, paced_loop(c, clock), 0.002, c.stats())
        assert c._bucket.charged_s == p._bucket.charged_s  # the context's own bucket (rate 1) never held it back
        assert c.stats()["throttled_s"] > 0.7
    finally:
        sched.shutdown()


def test_lower_tier_yields_while_higher_tier_is_active(fake_clock):
    """A best-effort context runs at full rate alone, at its contention share (20 %) while a guaranteed context is
    active within the activity window, and at full rate again once that context has been quiet for longer."""
    clock = fake_clock
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1_000_000, contention_share={"best_effort": 0.2})
    try:
        g = sched.create_context("g", 1000)
        be = sched.create_context("be", 1000, qos="best_effort")
        assert paced_loop(be, clock, sim_s=0.1)[2] == [] and be.stats()["throttled_s"] == 0  # alone: never waits
        assert be._bucket.tokens == pytest.approx(be._bucket.burst, abs=EPS)

        def guaranteed_step():  # the guaranteed context works too, between the best-effort steps
            with g:
                g.pace()

        t1, charged1 = clock.now, be._bucket.charged_s
        n, sim, sleeps = paced_loop(be, clock, sim_s=0.5, before_pace=guaranteed_step)
        charged = be._bucket.charged_s - charged1
        waits = be.stats()["throttled_s"]
        assert charged == pytest.approx(n * 0.002, abs=EPS)  # the loop before left a step open: all are charged
        assert waits == pytest.approx(sum(sleeps), abs=EPS) and waits == pytest.approx(sim - n * 0.002, abs=EPS)
        # every step at 20 %: the last wait brought the balance (the full burst when the contention began) to zero
        # (so the waits are four times the work, less what the burst paid for)
        assert charged == pytest.approx(be._bucket.burst + 0.2 * (clock.now - t1), abs=EPS)
        assert g.stats()["throttled_s"] == 0  # the guaranteed context is never paced

        clock.advance(0.2)  # the guaranteed context went quiet (well past activity_window_s): full rate again
        assert paced_loop(be, clock, sim_s=0.1)[2] == []
    finally:
        sched.shutdown()


def test_launch_is_paced(cpu_sched, fake_clock):
    """20 launches of 4 ms of work at a 20 % share: the pacing waits before each launch let the bucket grant 80 ms
    of work in 0.284 simulated seconds, not less ((80 - 4 - 20 ms burst) / 20 % + 4 ms: the last launch's
    work is charged after its wait)."""
    clock = fake_clock
    be = sched.create_context("be", 1000, qos="best_effort", bandwidth=0.2)
    since = clock.now
    seen = []
    for _ in range(20):
        be.launch(clock.advance, 0.004)  # the launched work: 4 ms of simulated device time
        seen.append(be._bucket.charged_s - bucket_cap(be._bucket, 0.2, clock, since))
    st = be.stats()
    assert st["launches"] == 20 and be._bucket.charged_s == pytest.approx(0.08, abs=EPS)
    assert max(seen) <= 0.004 + EPS  # over the cap by at most the launch that ran since its wait
    assert clock.elapsed == pytest.approx((0.08 - 0.004 - 0.02) / 0.2 + 0.004, abs=EPS)
    assert st["throttled_s"] == pytest.approx(sum(clock.sleeps), abs=EPS)
    assert st["throttled_s"] == pytest.approx(clock.elapsed - 0.08, abs=EPS)


def test_switch_interval_while_guaranteed_and_paced_coexist(monkeypatch):
    """The interpreter's switch interval is shortened while a guaranteed and a paced context live (CUDA devices; the
    CPU device here, through _SWITCH_KINDS), and restored (the program's own value) when either side is gone, on
    shutdown; never lengthened; a value the program sets meanwhile is kept."""
    import sys
    from gpk_array.sched import _switch
    sched.shutdown()
    before = sys.getswitchinterval()
    sched.initialize("cpu", total_vram_budget=1_000_000)
    sched.create_context("g", 1000)
    sched.create_context("b", 1000, qos="best_effort")
    assert sys.getswitchinterval() == pytest.approx(before)             # CPU devices: not by default
    sched.shutdown()
    monkeypatch.setattr(_switch, "_SWITCH_KINDS", ("cuda", "cpu"))
    try:
        sys.setswitchinterval(0.004)
        sched.initialize("cpu", total_vram_budget=1_000_000)
        g = sched.create_context("g", 1000, qos="guaranteed")
        assert sys.getswitchinterval() == pytest.approx(0.004)          # no paced context yet
        b = sched.create_context("b", 1000, qos="best_effort")
        assert sys.getswitchinterval() == pytest.approx(5e-6)
        sched.destroy_context(b)
        assert sys.getswitchinterval() == pytest.approx(0.004)
        capped = sched.create_context("capped", 1000, qos="guaranteed", bandwidth=0.5)   # paced by its cap
        assert sys.getswitchinterval() == pytest.approx(5e-6)
        sched.destroy_context(g)
        assert sys.getswitchinterval() == pytest.approx(0.004)          # only paced contexts left
        del capped
        sched.shutdown()
        sys.setswitchinterval(1e-6)                                     # shorter than the scheduler's: kept
        sched.initialize("cpu", total_vram_budget=1_000_000)
        sched.create_context("g", 1000)
        sched.create_context("b", 1000, qos="best_effort")
        assert sys.getswitchinterval() == pytest.approx(1e-6)
        sched.shutdown()
        assert sys.getswitchinterval() == pytest.approx(1e-6)
        sys.setswitchinterval(0.004)
        sched.initialize("cpu", total_vram_budget=1_000_000, switch_interval=None)   # off
        sched.create_context("g", 1000)
        sched.create_context("b", 1000, qos="best_effort")
        assert sys.getswitchinterval() == pytest.approx(0.004)
        sched.shutdown()
        sched.initialize("cpu", total_vram_budget=1_000_000, switch_interval=2e-5)
        sched.create_context("g", 1000)
        sched.create_context("b", 1000, qos="burstable")
        assert sys.getswitchinterval() == pytest.approx(2e-5)
        sched.shutdown()
        assert sys.getswitchinterval() == pytest.approx(0.004)
        sched.initialize("cpu", total_vram_budget=1_000_000)
        sched.create_context("g", 1000)
        sched.create_context("b", 1000, qos="best_effort")
        assert sys.getswitchinterval() == pytest.approx(5e-6)
        sys.setswitchinterval(2e-6)                                     # the program's, while the scheduler's holds
        sched.create_context("b2", 1000, qos="best_effort")
        assert sys.getswitchinterval() == pytest.approx(2e-6)          # not lengthened
        sys.setswitchinterval(0.003)
        sched.shutdown()
        assert sys.getswitchinterval() == pytest.approx(0.003)         # not overwritten on the way back
        with pytest.raises(ValueError):
            sched.initialize("cpu", switch_interval=-1)
    finally:
        sched.shutdown()
        sys.setswitchinterval(before)
