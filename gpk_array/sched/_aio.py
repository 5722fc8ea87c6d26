"""asyncio support: per-task CuPy state, and waiting for CUDA events without blocking the loop.

Why a task factory: CuPy's current stream and allocator are per *thread*, but several asyncio tasks on one thread
can each be inside a different ``async with ctx:``. The scheduler's own "current context" is a ContextVar, which
asyncio already keeps per task; the factory wraps each new task's coroutine so that every step first applies the
task's context to the thread (stream, allocator, device) and afterwards puts back what was there. Kernels launched
by a task therefore always land on its context's stream, whatever else ran in between.

The factory is installed on the running loop by :func:`run` (``sched.run(main())`` instead of
``asyncio.run(main())``), by :func:`install_task_factory`, by ``sched.initialize()`` called inside a running
loop, and by the first ``async with ctx:`` / ``await ctx.run(...)``. Tasks created before it (the main task,
or tasks that ``asyncio.gather`` created before the first ``async with``) are not wrapped: one such task per
thread is fine (wrapped tasks put its state back after each of their steps), but two unwrapped tasks inside CUDA
contexts on one thread can see each other's stream between awaits; a RuntimeWarning says so.
"""

import asyncio
import collections.abc
import threading
import time
import warnings
import weakref

from . import _cuda
from ._state import current_context

__all__ = ["install_task_factory", "run", "in_event_loop", "await_event", "note_unwrapped_enter",
           "note_unwrapped_exit"]


class _GuardedCoroutine(collections.abc.Coroutine):
    """Wraps a coroutine; each step runs with the task's scheduler context applied to the thread's CuPy state."""

    __slots__ = ("_coro", "__weakref__")

    def __init__(self, coro):
        self._coro = coro

    def _step(self, method, *args):
        prev = _cuda.active_context()
        _cuda.activate(current_context())
        try:
            return method(*args)
        finally:
            _cuda.activate(prev)

    def send(self, value):
        return self._step(self._coro.send, value)

    def throw(self, *args):
        return self._step(self._coro.throw, *args)

    def close(self):
        return self._coro.close()

    def __await__(self):
        return self._coro.__await__()

    # introspection used by asyncio's repr and debugging helpers
    @property
    def cr_frame(self):
        return getattr(self._coro, "cr_frame", None)

    @property
    def cr_running(self):
        return getattr(self._coro, "cr_running", False)

    @property
    def cr_await(self):
        return getattr(self._coro, "cr_await", None)

    @property
    def cr_code(self):
        return getattr(self._coro, "cr_code", None)

    @property
    def __name__(self):
        return getattr(self._coro, "__name__", type(self._coro).__name__)

    def __repr__(self):
        return f"<sched-guarded {self._coro!r}>"


_installed_loops = weakref.WeakSet()


def install_task_factory(loop=None):
    """Make tasks created on ``loop`` (default: the running loop) follow their scheduler context. Idempotent."""
    if loop is None:
        loop = asyncio.get_running_loop()
    try:
        if loop in _installed_loops:
            return
    except TypeError:  # loop type without weak references: do not install
        return
    previous = loop.get_task_factory()

    def factory(lp, coro, **kwargs):
        if asyncio.iscoroutine(coro) and not isinstance(coro, _GuardedCoroutine):
            coro = _GuardedCoroutine(coro)
        if previous is not None:
            return previous(lp, coro, **kwargs)
        return asyncio.Task(coro, loop=lp, **kwargs)

    loop.set_task_factory(factory)
    _installed_loops.add(loop)


def run(main, *, debug=None):
    """``asyncio.run(main)`` with the scheduler's task factory installed before ``main`` starts."""

    async def _main():
        install_task_factory()
        return await main

    return asyncio.run(_main(), debug=debug)


def in_event_loop():
    """Whether the calling thread runs an asyncio event loop now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_unwrapped = threading.local()
_warned = [False]


def _current_task_unwrapped():
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return None
    if task is None or isinstance(task.get_coro(), _GuardedCoroutine):
        return None
    return task


def note_unwrapped_enter(ctx):
    """Called by ``async with`` on a CUDA context: track unwrapped tasks that hold one (per thread)."""
    task = _current_task_unwrapped()
    if task is None:
        return
    holders = getattr(_unwrapped, "tasks", None)
    if holders is None:
        holders = _unwrapped.tasks = weakref.WeakKeyDictionary()
    holders[task] = holders.get(task, 0) + 1
    if len(holders) > 1 and not _warned[0]:
        _warned[0] = True
        warnings.warn(
            "several asyncio tasks created before gpk_array.sched's task factory was installed are inside CUDA "
            "scheduler contexts on one thread; their kernels may land on each other's streams between awaits. "
            "Start the program with gpk_array.sched.run(main()) or call sched.install_task_factory() before "
            "creating the tasks.", RuntimeWarning, stacklevel=3)


def note_unwrapped_exit(ctx):
    task = _current_task_unwrapped()
    holders = getattr(_unwrapped, "tasks", None)
    if task is None or holders is None or task not in holders:
        return
    holders[task] -= 1
    if holders[task] <= 0:
        del holders[task]


# --- awaiting CUDA events ----------------------------------------------------------------------------------------
#
# An event is polled with cudaEventQuery (``event.done``), never waited on with a blocking call. The first polls
# come back through ``call_soon`` (other ready tasks run in between) for up to ``spin_s``: the selector of the
# default loop rounds a timed wait up to a whole millisecond, so short waits would otherwise always cost 1 ms.
# After that, ``call_later`` with a delay doubling from 20 us up to 1 ms. No thread is used.

SPIN_S = 200e-6
FIRST_DELAY_S = 20e-6
MAX_DELAY_S = 1e-3


_CUDA_SUCCESS = 0
_CUDA_ERROR_NOT_READY = 600


def event_done(event):
    """True when ``event`` completed, False while pending; raises on a CUDA error (``Event.done`` hides those)."""
    ptr = getattr(event, "ptr", None)
    if not isinstance(ptr, int) or not ptr:
        return bool(event.done)  # not a CuPy event (tests use stand-ins)
    rt = _cuda.cupy().cuda.runtime
    status = rt.eventQuery(ptr)
    if status == _CUDA_SUCCESS:
        return True
    if status == _CUDA_ERROR_NOT_READY:
        return False
    raise rt.CUDARuntimeError(status)


async def await_event(event, alive=None):
    """Wait until the CUDA ``event`` has completed. ``alive()`` (optional) raises if the owner went away."""
    if event_done(event):
        return
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    start = time.monotonic()
    delay = FIRST_DELAY_S

    def poll():
        nonlocal delay
        if fut.done():  # cancelled
            return
        try:
            if alive is not None:
                alive()
            if event_done(event):
                fut.set_result(None)
                return
        except BaseException as e:  # noqa: BLE001 (propagate anything to the awaiting task)
            fut.set_exception(e)
            return
        if time.monotonic() - start < SPIN_S:
            loop.call_soon(poll)
        else:
            loop.call_later(delay, poll)
            delay = min(delay * 2.0, MAX_DELAY_S)

    loop.call_soon(poll)
    await fut
