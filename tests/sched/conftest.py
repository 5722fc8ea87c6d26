"""Fixtures for gpk_array.sched tests.

CPU tests drive the allocation hook directly with NumPy arrays (``wrap``), the way the core does for every
backing array it wraps, so the scheduler's logic is covered whether or not the core namespace exists yet.

No test asserts on wall-clock time: pacing, waits and windows are checked on a simulated clock (``fake_clock``),
as values and counts computed from it, or as the order in which things happened. The wall clock only bounds how
long a test waits for a condition (a polling deadline, a join timeout).
"""

import asyncio
import gc
import threading

import numpy as np
import pytest

from gpk_array import _hooks, sched
from gpk_array.sched import _clock

_real_async_sleep = asyncio.sleep


class FakeClock:
    """Simulated time for the scheduler (the ``fake_clock`` fixture).

    ``now`` moves only when the test calls :meth:`advance` / :meth:`advance_to` (simulated work, a simulated GPU
    finishing) or when the scheduler sleeps: a blocking sleep (``_clock.sleep``: pace, launch) and a sleep on the
    event loop (``_clock.async_sleep``: pace_async, run, wait_for_memory) each advance the clock by the time asked
    for, at once, and are recorded in order in ``sleeps`` / ``async_sleeps``. An async sleep still gives the event
    loop one turn (``asyncio.sleep(0)``), so other tasks run where a real wait would let them. Nothing here reads
    the wall clock, so what a test computes from it is the same on an idle and on a loaded machine.
    """

    def __init__(self, start=1000.0):
        self.start = self.now = float(start)
        self.sleeps = []
        self.async_sleeps = []
        self._lock = threading.Lock()

    def monotonic(self):
        return self.now

    @property
    def elapsed(self):
        return self.now - self.start

    def advance(self, seconds):
        if seconds < 0:
            raise ValueError(f"the clock cannot go back ({seconds!r} s)")
        with self._lock:
            self.now += seconds

    def advance_to(self, t):
        with self._lock:
            self.now = max(self.now, t)

    def sleep(self, seconds):
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")  # as time.sleep
        self.sleeps.append(seconds)
        self.advance(seconds)

    async def async_sleep(self, seconds, result=None):
        self.async_sleeps.append(seconds)
        self.advance(max(0.0, seconds))  # asyncio.sleep returns at once for a negative delay
        await _real_async_sleep(0)
        return result


@pytest.fixture
def fake_clock(monkeypatch):
    """Run the scheduler on a :class:`FakeClock`: its clock (``_clock.monotonic``, which the token buckets read
    too) and its sleeps (``_clock.sleep``, ``_clock.async_sleep``) are rebound for the test. Create the scheduler
    and its contexts after this fixture, so their buckets start on the simulated clock."""
    clock = FakeClock()
    monkeypatch.setattr(_clock, "monotonic", clock.monotonic)
    monkeypatch.setattr(_clock, "sleep", clock.sleep)
    monkeypatch.setattr(_clock, "async_sleep", clock.async_sleep)
    return clock


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def _wrap(arr, device="cpu"):
    """What the core does when it wraps a backing array: call the hook (which may refuse it)."""
    hook = _hooks.alloc_hook
    if hook is not None:
        hook(arr, device)
    return arr


def _alloc(nbytes):
    """A fresh NumPy buffer of ``nbytes`` passed through the hook."""
    return _wrap(np.empty(nbytes, dtype=np.uint8))


@pytest.fixture
def wrap():
    return _wrap


@pytest.fixture
def alloc():
    return _alloc


@pytest.fixture
def cpu_sched():
    """A CPU scheduler with a 1,000,000-byte device; everything is torn down afterwards."""
    sched.shutdown()
    s = sched.initialize("cpu", total_vram_budget=1_000_000, wait_timeout=0.2)
    yield s
    sched.shutdown()
    gc.collect()
    assert _hooks.alloc_hook is not sched.alloc_hook


@pytest.fixture(autouse=True)
def _no_leftover_state():
    yield
    # A test that failed half-way must not leak contexts into the next one.
    if sched.list_contexts() or sched.list_partitions():
        sched.shutdown()
