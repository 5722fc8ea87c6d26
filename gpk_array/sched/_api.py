"""The module-level API of gpk_array.sched: schedulers per device, contexts and partitions by name, stats."""

import contextlib

from . import _aio, _hook, _switch
from ._context import Context
from ._ledger import GRAVEYARD, QOS_TIERS, RANK, Partition, Scheduler, reap_graveyard
from ._parse import check_fraction, check_seconds, device_key, parse_bytes, parse_device
from ._registry import Registry
from ._state import COND, LOCK

__all__ = [
    "initialize",
    "shutdown",
    "get_scheduler",
    "create_context",
    "get_context",
    "destroy_context",
    "list_contexts",
    "create_partition",
    "get_partition",
    "destroy_partition",
    "list_partitions",
    "stats",
    "context_session",
]

_schedulers = {}  # device key -> Scheduler
_default = None  # the Scheduler that create_context uses when neither device nor partition says otherwise
_contexts = Registry("context")  # the live contexts
_partitions = Registry("partition")  # the live partitions


def initialize(device=0, total_vram_budget=None, **config):
    """Set up the scheduler of a device and install the allocation hook; returns the :class:`Scheduler`.

    ``device``: 0, "cuda:N", "cpu". ``total_vram_budget``: bytes (or "40GiB") the scheduler may hand out on that
    device (default: CUDA: whatever the driver reports free at each decision; CPU: available physical memory).
    Keyword settings: ``overcommit`` (1.5), ``wait_timeout`` (10 s, best-effort memory waits), ``contention_share``
    (``{"burstable": 0.5, "best_effort": 0.25}``), ``contention_sms`` (16: CUDA SMs a paced context's kernels are
    confined to, through a green-context stream, while a higher tier is busy; 0 or None: no confinement),
    ``max_inflight`` (2), ``burst_s`` (0.02),
    ``activity_window_s`` (0.005: a higher tier active this recently, or with work in flight, is busy and lower
    tiers are paced to their contention share), ``confine_hold_s`` (0.5: how long after a higher tier's last
    activity a paced context stays on its confined stream, and how long after a confined context's last step the
    others plan their GEMMs around its SMs; at least ``activity_window_s``; None: that), ``switch_interval`` (5e-6 s:
    while a guaranteed context and a paced one live
    on CUDA devices, the interpreter's switch interval, ``sys.setswitchinterval``, is at most this, so a guaranteed
    context's thread waits at most that long for the interpreter held by a paced context's thread; the program's
    value comes back when no scheduler needs it, and one the program sets meanwhile is left as it is; 0 or None:
    left alone). Calling it again for the same device reconfigures it if it has no live
    contexts or partitions, and raises RuntimeError otherwise. The device becomes the default for
    :func:`create_context`.
    """
    global _default
    sched = Scheduler(device, total_vram_budget, **config)
    with LOCK:
        old = _schedulers.get(sched.device)
        if old is not None and (old.contexts or old.partitions):
            raise RuntimeError(
                f"scheduler for {sched.device} already has live contexts/partitions "
                f"({sorted(old.contexts) + sorted(old.partitions)}); destroy them or call shutdown() first")
        _schedulers[sched.device] = sched
        _default = sched
        _hook.install()
    if _aio.in_event_loop():
        _aio.install_task_factory()
    return sched


def get_scheduler(device=None):
    """The scheduler of ``device`` (default: the last initialized)."""
    with LOCK:
        if device is None:
            if _default is None:
                raise RuntimeError("gpk_array.sched is not initialized: call sched.initialize(device) first")
            return _default
        key = device_key(parse_device(device))
        sched = _schedulers.get(key)
        if sched is None:
            raise RuntimeError(f"gpk_array.sched is not initialized for {key}: call sched.initialize({key!r})")
        return sched


def shutdown():
    """Destroy every context and partition, forget all schedulers and uninstall the allocation hook."""
    global _default
    for ctx in _contexts.values():
        destroy_context(ctx)
    for part in _partitions.values():
        destroy_partition(part)
    with LOCK:
        _schedulers.clear()
        _default = None
        _hook.uninstall()
        _switch.update(_schedulers.values())
    reap_graveyard()


def create_partition(name, memory, compute_share=1.0, device=None):
    """Reserve ``memory`` on the device for a group of contexts that share ``compute_share`` of its time."""
    _partitions.check_name(name)
    memory = parse_bytes(memory, "memory")
    if memory <= 0:
        raise ValueError("partition memory must be > 0")
    share = check_fraction(compute_share, "compute_share")
    with LOCK:
        sched = get_scheduler(device)
        _partitions.check_new(name)
        sched._admit_reservation("partition", name, memory)
        part = Partition(sched, name, memory, share)
        sched.partitions[name] = part
        _partitions.add(part)
        return part


def get_partition(name):
    """The live partition named ``name`` (``KeyError`` if there is none)."""
    with LOCK:
        return _partitions.get(name)


def list_partitions():
    """The live partitions, in creation order."""
    with LOCK:
        return _partitions.values()


def destroy_partition(name_or_part):
    """Destroy a partition and every context in it."""
    with LOCK:
        part = _partitions.resolve(name_or_part)
        members = list(part.contexts.values())
    for ctx in members:
        destroy_context(ctx)
    with LOCK:
        if not part._destroyed:
            part._destroyed = True
            part._sched.partitions.pop(part.name, None)
            _partitions.discard(part)
            COND.notify_all()


def create_context(name, max_vram, qos="guaranteed", bandwidth=None, partition=None, *, device=None,
                   wait_timeout=None):
    """Admit a new context or raise :class:`AdmissionError`.

    ``max_vram``: the budget (bytes or "2GiB"). ``qos``: "guaranteed" (reserved, highest stream priority),
    "burstable" (overcommitted, middle priority), "best_effort" (always admitted, lowest priority, waits for
    memory). ``bandwidth``: share of device time (0 < b <= 1) the context may keep busy, enforced by
    :meth:`Context.pace` / :meth:`Context.launch` / :meth:`Context.run`. ``partition``: a :class:`Partition`
    or its name. ``device``: which initialized scheduler (default: the partition's, else the last initialized).
    """
    _contexts.check_name(name)
    if not isinstance(qos, str):
        raise TypeError(f"qos must be a string, one of {QOS_TIERS}, got {type(qos).__name__} {qos!r}")
    if qos not in RANK:
        raise ValueError(f"qos must be one of {QOS_TIERS}, got {qos!r}")
    budget = parse_bytes(max_vram, "max_vram")
    if budget <= 0:
        raise ValueError(f"max_vram must be > 0, got {max_vram!r}")
    if bandwidth is not None:
        bandwidth = check_fraction(bandwidth, "bandwidth")
    wait_timeout = check_seconds(wait_timeout, "wait_timeout")
    if partition is not None and not isinstance(partition, (str, Partition)):
        raise TypeError(f"partition must be a Partition, its name or None, got {type(partition).__name__}")
    with LOCK:
        if isinstance(partition, str):
            partition = get_partition(partition)
        if partition is not None:
            if partition._destroyed:
                raise ValueError(f"partition {partition.name!r} was destroyed")
            sched = partition._sched
            if device is not None and device_key(parse_device(device)) != sched.device:
                raise ValueError(f"partition {partition.name!r} is on {sched.device}, not {device!r}")
        else:
            sched = get_scheduler(device)
        _contexts.check_new(name)
        sched._admit_context(name, budget, qos, partition)
        ctx = Context(sched, name, budget, qos, bandwidth, partition, wait_timeout)
        sched._add(ctx)
        _contexts.add(ctx)
        _switch.update(_schedulers.values())
    reap_graveyard()
    return ctx


def get_context(name):
    """The live context named ``name`` (``KeyError`` if there is none)."""
    with LOCK:
        return _contexts.get(name)


def list_contexts():
    """The live contexts, in creation order."""
    with LOCK:
        return _contexts.values()


def destroy_context(name_or_ctx):
    """Destroy a context: drop its caches, synchronize its stream, free its pool's blocks.

    Destroying twice is a no-op; using the context afterwards raises :class:`ContextDestroyedError`. Arrays still
    alive keep their blocks (the pool stays alive until they are freed, then its memory goes back to the device).
    """
    with LOCK:
        ctx = _contexts.resolve(name_or_ctx)
        if ctx._destroyed:
            return
        ctx._destroyed = True
        _contexts.discard(ctx)
        caches = ctx._detach()
        _switch.update(_schedulers.values())
    ctx._release(caches)
    with LOCK:
        COND.notify_all()
    reap_graveyard()


def stats():
    """Per-context, per-partition and per-device numbers.

    ``{"contexts": {name: {budget, used, held, peak, evictions, evicted_bytes, refusals, launches, steps, queued,
    throttled_s, sessions, qos, device, partition, priority, bandwidth}}, "partitions": {...},
    "devices": {device: {capacity, free, reserved_headroom, contexts}}}``. ``peak`` is the most bytes the context
    ever held (CUDA: its pool's total, an upper bound of its peak use; CPU: exact).
    """
    reap_graveyard()
    with LOCK:
        ctxs = _contexts.values()
        parts = _partitions.values()
        scheds = list(_schedulers.values())
    out = {"contexts": {c.name: c.stats() for c in ctxs}, "partitions": {p.name: p.stats() for p in parts},
           "devices": {}}
    for s in scheds:
        with LOCK:
            try:
                free = s._free()
            except Exception:
                free = None
            out["devices"][s.device] = {
                "capacity": s.capacity,
                "free": free,
                "reserved_headroom": s._headroom(),
                "overcommit": s.overcommit,
                "contexts": sorted(s.contexts),
                "graveyard_pools": sum(1 for _, d in GRAVEYARD if s.kind == "cuda" and d == s.device_id),
            }
    return out


@contextlib.contextmanager
def context_session(ctx):
    """``with context_session(ctx_or_name) as ctx:`` is ``with ctx:``."""
    if isinstance(ctx, str):
        ctx = get_context(ctx)
    with ctx:
        yield ctx
