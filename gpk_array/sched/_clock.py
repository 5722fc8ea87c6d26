"""The scheduler's clock and sleeps.

Every read of the time in the scheduler and every sleep it takes is a call through one of these three module
attributes, ``_clock.monotonic()``, ``_clock.sleep(s)``, ``_clock.async_sleep(s)`` (never a name imported from
here), so that tests run the whole scheduler on a simulated clock by rebinding them (tests/sched/conftest.py:
``fake_clock``; tests/sched/test_sched_pacing.py checks that no other module reads ``time`` or sleeps directly).
Nothing else rebinds them. The exceptions: a blocked best-effort allocation waits on the memory condition with a
timeout (its deadline read from ``monotonic``), and _aio's event poller keeps the real clock, which only sets how
often it polls. A call through a module attribute costs what the ``time.monotonic()`` it stands for costs (a
global and an attribute lookup).
"""

import asyncio
import time

__all__ = ["monotonic", "sleep", "async_sleep"]

monotonic = time.monotonic
sleep = time.sleep  # blocking pacing waits: pace(), launch()
async_sleep = asyncio.sleep  # waits on the event loop: pace_async(), run(), wait_for_memory()
