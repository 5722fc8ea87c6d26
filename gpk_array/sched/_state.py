"""The state every part of the scheduler shares: one lock, the condition memory waiters sleep on, and the current
context of each thread / asyncio task.

These objects are made once and never rebound (modules import them by name); what changes is their content.
"""

import contextvars
import threading

__all__ = ["LOCK", "COND", "WAITERS", "CURRENT", "current_context"]

# One lock for all ledgers (schedulers, partitions, contexts, charges): "with LOCK held" in a docstring means this one.
LOCK = threading.RLock()
# Best-effort requests that wait for memory sleep on COND; whoever frees memory notifies it.
COND = threading.Condition(LOCK)
# Threads sleeping on COND, as a one-item list (memory frees only notify when someone waits).
WAITERS = [0]

# The current context of this thread / asyncio task: None or (ctx, parent_entry, what _nptag.end restores).
CURRENT = contextvars.ContextVar("gpk_array_sched_current", default=None)


def current_context():
    """The context entered in this thread / task, or None."""
    entry = CURRENT.get()
    return None if entry is None else entry[0]
