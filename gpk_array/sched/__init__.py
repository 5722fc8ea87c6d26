"""gpk_array.sched: QoS contexts over a GPU (or the CPU device).

A context owns a budget, and on CUDA a stream (its priority from the QoS tier) and a memory pool; code inside
``with ctx:`` / ``async with ctx:`` allocates from that pool and launches on that stream. Admission control runs
when contexts and partitions are created and at each request, against the device's real free memory and the
reservations already made. Awaiting GPU work polls CUDA events without blocking the event loop. While a higher
tier is busy, a paced (burstable / best-effort) context is slowed to its contention share of device time and, on
CUDA, its steps run on a stream of a green context: a partition of ``contention_sms`` SMs (default 16) that its
kernels, CuPy's and cuBLAS's included, cannot leave (``sched.initialize(..., contention_sms=0)`` turns that off),
until the higher tier has been quiet for ``confine_hold_s`` (0.5 s); meanwhile the other contexts' GEMMs plan for
the SMs outside that partition.

    from gpk_array import sched
    sched.initialize("cuda:0")
    serve = sched.create_context("serve", "8GiB", qos="guaranteed")
    batch = sched.create_context("batch", "40GiB", qos="best_effort", bandwidth=0.5)
    with serve:
        y = model(x)                  # serve's stream, serve's pool
    async with batch:                 # (start asyncio programs with sched.run(main()))
        for step in loop:
            train_step()
            await batch.pace_async()  # token bucket over device time
        await batch.synchronize()

Module-level functions: :func:`initialize`, :func:`shutdown`, :func:`create_context`, :func:`get_context`,
:func:`destroy_context`, :func:`list_contexts`, :func:`current_context`, :func:`create_partition`,
:func:`get_partition`, :func:`destroy_partition`, :func:`list_partitions`, :func:`stats`,
:func:`context_session`, :func:`install_task_factory`, :func:`run` (``asyncio.run`` with per-task contexts).
"""

from ._aio import install_task_factory, run
from ._context import Context
from ._core import (
    context_session,
    create_context,
    create_partition,
    current_context,
    destroy_context,
    destroy_partition,
    get_context,
    get_partition,
    get_scheduler,
    initialize,
    list_contexts,
    list_partitions,
    shutdown,
    stats,
)
from ._hook import alloc_hook
from ._ledger import QOS_TIERS, Partition, Scheduler
from ._parse import parse_bytes
from .errors import AdmissionError, ContextDestroyedError, out_of_memory_error

__all__ = [
    "QOS_TIERS",
    "AdmissionError",
    "Context",
    "ContextDestroyedError",
    "OutOfMemoryError",
    "Partition",
    "Scheduler",
    "alloc_hook",
    "context_session",
    "create_context",
    "create_partition",
    "current_context",
    "destroy_context",
    "destroy_partition",
    "get_context",
    "get_partition",
    "get_scheduler",
    "initialize",
    "install_task_factory",
    "list_contexts",
    "list_partitions",
    "out_of_memory_error",
    "parse_bytes",
    "run",
    "shutdown",
    "stats",
]


def __getattr__(name):
    # gpk_array.OutOfMemoryError lives in the core; resolve it when asked (the core may land after this module).
    if name == "OutOfMemoryError":
        return out_of_memory_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
