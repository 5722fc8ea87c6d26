"""Fixtures for gpk_array.sched tests.

CPU tests drive the allocation hook directly with NumPy arrays (``wrap``), the way the core does for every
backing array it wraps, so the scheduler's logic is covered whether or not the core namespace exists yet.
"""

import gc

import numpy as np
import pytest

from gpk_array import _hooks, sched


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
