"""The ledger of each device: the Scheduler (budgets, admission, eviction, contention) and partitions.

Memory model (one ledger per device, all numbers in bytes):

* ``held(c)``: what a context occupies on the device: on CUDA the bytes its pool holds (in use + cached), on the
  CPU device the NumPy buffers charged to it through the allocation hook.
* A guaranteed context (and a partition) *reserves* its budget: ``headroom`` is the part of all reservations not
  held yet, and nobody else may eat into it.
* ``free``: CUDA: ``cudaMemGetInfo`` free bytes minus admitted requests whose cudaMalloc is still running, capped
  by ``total_vram_budget - sum(held)`` when a total is configured; CPU: ``total - sum(held)`` where the total is
  the configured ``total_vram_budget`` or the physical memory available at ``initialize``.
* ``avail = free - headroom``: what can be handed out without breaking a reservation.

Admission (at creation, deterministic for given numbers): guaranteed contexts and partitions iff their reservation
``<= avail``; burstable iff the sum of burstable budgets ``<= overcommit * (avail + held by burstable)``;
best-effort always. Contexts in a partition iff the budgets in the partition sum within its memory.

Requests: every request must fit the context's own budget (``OutOfMemoryError`` otherwise, after evicting the
context's registered caches). Burstable and best-effort requests must also fit ``avail``; before refusing, the
scheduler frees cached pool blocks (own, then lower tiers) and evicts registered caches (own and lower tiers, least
recently used first). Best-effort requests then wait (bounded by ``wait_timeout``) for memory to come free.
"""

import logging
import os
import threading

import numpy as np

from . import _aio, _clock, _cuda
from ._pacing import TokenBucket
from ._parse import check_seconds, device_key, fmt_bytes, parse_bytes, parse_device
from ._state import COND, LOCK, WAITERS
from .errors import AdmissionError, out_of_memory_error

__all__ = ["QOS_TIERS", "RANK", "GRAVEYARD", "Scheduler", "Partition", "reap_graveyard", "oom", "raise_oom",
           "log_cache_failure"]

QOS_TIERS = ("guaranteed", "burstable", "best_effort")
RANK = {"guaranteed": 0, "burstable": 1, "best_effort": 2}
_DEFAULT_CONTENTION = {"burstable": 0.5, "best_effort": 0.25}

GRAVEYARD = []  # pools of destroyed CUDA contexts with blocks still in use by live arrays


def oom(msg):
    """The OutOfMemoryError to raise for a refused request."""
    return out_of_memory_error()(msg)


_log = logging.getLogger("gpk_array.sched")


def log_cache_failure(ctx_name, cache, err):
    """Log that evicting ``cache`` of context ``ctx_name`` raised ``err`` (the cache is unregistered)."""
    _log.warning("evicting cache %r of context %r failed (the cache is unregistered): %s: %s", cache, ctx_name,
                 type(err).__name__, err, exc_info=err)


def raise_oom(msg, failures):
    """Raise OutOfMemoryError(msg); ``failures`` (``(context, cache, error)`` of the caches whose ``evict()`` raised
    during the request) are named in the message and the first error is its ``__cause__``."""
    if not failures:
        raise oom(msg)
    parts = ", ".join(f"{cache!r} of context {c!r} ({type(e).__name__}: {e})" for c, cache, e in failures)
    raise oom(f"{msg}; evicting cache{'s' if len(failures) > 1 else ''} {parts} failed (unregistered)") \
        from failures[0][2]


def _physical_available():
    """The CPU device's capacity when no total is configured: the physical memory available now."""
    try:
        import psutil  # noqa: PLC0415

        return int(psutil.virtual_memory().available)
    except Exception:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


# --- scheduler (one per device) ---------------------------------------------------------------------------------


class Scheduler:
    """The ledger and policy of one device. Create it with :func:`initialize`."""

    def __init__(
        self,
        device,
        total_vram_budget=None,
        *,
        overcommit=1.5,
        wait_timeout=10.0,
        contention_share=None,
        contention_sms=16,
        max_inflight=2,
        burst_s=0.02,
        activity_window_s=0.005,
        confine_hold_s=0.5,
        switch_interval=5e-6,
    ):
        parsed = parse_device(device)
        self.kind, self.device_id = parsed
        self.device = device_key(parsed)
        if isinstance(overcommit, bool) or not isinstance(overcommit, (int, float, np.integer, np.floating)):
            raise TypeError(f"overcommit must be a number >= 1.0, got {type(overcommit).__name__} {overcommit!r}")
        if not overcommit >= 1.0:
            raise ValueError(f"overcommit must be >= 1.0, got {overcommit!r}")
        wait_timeout = check_seconds(wait_timeout, "wait_timeout")
        if int(max_inflight) < 1:
            raise ValueError(f"max_inflight must be >= 1, got {max_inflight!r}")
        shares = dict(_DEFAULT_CONTENTION)
        if contention_share is not None:
            for tier, share in dict(contention_share).items():
                if tier not in ("burstable", "best_effort"):
                    raise ValueError(f"contention_share applies to 'burstable' and 'best_effort', not {tier!r}")
                if not 0.0 < float(share) <= 1.0:
                    raise ValueError(f"contention share must be in (0, 1], got {share!r} for {tier}")
                shares[tier] = float(share)
        self.overcommit = float(overcommit)
        self.wait_timeout = wait_timeout
        self.contention_share = shares
        if contention_sms is not None and int(contention_sms) < 0:
            raise ValueError(f"contention_sms must be >= 0 or None, got {contention_sms!r}")
        self.contention_sms = int(contention_sms or 0)
        self.max_inflight = int(max_inflight)
        self.burst_s = float(burst_s)
        self.activity_window_s = float(activity_window_s)
        if confine_hold_s is not None and not float(confine_hold_s) >= 0.0:
            raise ValueError(f"confine_hold_s must be >= 0 seconds or None, got {confine_hold_s!r}")
        self.confine_hold_s = max(float(confine_hold_s or 0.0), self.activity_window_s)
        self._confined_by = {}  # paced contexts on their confined stream now -> its SMs
        self._confined_sms = 0
        self._confined_until = 0.0
        self._paced_cuda = 0  # live paced CUDA contexts
        if switch_interval is not None and not float(switch_interval) >= 0.0:
            raise ValueError(f"switch_interval must be >= 0 seconds or None, got {switch_interval!r}")
        self.switch_interval = float(switch_interval or 0.0)
        self.total_vram_budget = None if total_vram_budget is None else parse_bytes(total_vram_budget,
                                                                                   "total_vram_budget")
        if self.kind == "cpu":
            self.capacity = self.total_vram_budget if self.total_vram_budget is not None else _physical_available()
        else:
            n = _cuda.device_count()
            if self.device_id >= n:
                raise ValueError(f"no CUDA device {self.device_id} (this machine has {n})")
            self.capacity = self.total_vram_budget
        self.contexts = {}  # name -> Context on this device
        self.partitions = {}  # name -> Partition on this device
        self._in_flight = 0  # CUDA: admitted requests whose cudaMalloc has not returned yet
        self._cpu_total = 0  # CPU: bytes charged to this device's live contexts

    def __repr__(self):
        return f"<gpk_array.sched.Scheduler {self.device} contexts={len(self.contexts)}>"

    # ledger (call with LOCK held) -------------------------------------------------------------------------

    def _held(self, ctx):
        return ctx._pool.total_bytes() if ctx._cuda else ctx._cpu_used

    def _sum_held(self):
        if self.kind == "cpu":
            return self._cpu_total
        total = sum(self._held(c) for c in self.contexts.values())
        return total + sum(p.total_bytes() for p, dev in GRAVEYARD if dev == self.device_id)

    def _headroom(self, exclude=None):
        """Reserved but not yet held bytes; ``exclude`` (a context) does not count its own reservation."""
        h = 0
        for c in self.contexts.values():
            if c.partition is None and c.qos == "guaranteed" and c is not exclude:
                h += max(0, c.max_vram - self._held(c))
        own_part = None if exclude is None else exclude.partition
        for p in self.partitions.values():
            if p is not own_part:
                h += max(0, p.memory - sum(self._held(c) for c in p.contexts.values()))
        return h

    def _free(self, counted=0):
        """Free bytes now; ``counted`` bytes of the current request are already in some pool's total."""
        if self.kind == "cpu":
            return self.capacity - self._sum_held()
        free = _cuda.device_free_bytes(self.device_id) - self._in_flight
        if self.capacity is not None:
            free = min(free, self.capacity - (self._sum_held() - counted))
        return free

    def _refusal(self, ctx, nbytes, counted=0):
        """None when ``nbytes`` more fit for ``ctx``; else (kind, message) with kind 'budget' or 'device'."""
        if not ctx._cuda:
            used = ctx._cpu_used
            if used + nbytes > ctx.max_vram:
                return ("budget", f"exceeds its budget: budget {fmt_bytes(ctx.max_vram)}, in use {fmt_bytes(used)}, "
                                  f"request {fmt_bytes(nbytes)}")
        headroom = self._headroom(exclude=ctx)
        free = self._free(counted)
        avail = free - headroom
        if nbytes <= avail:
            return None
        used = ctx._cpu_used if not ctx._cuda else ctx._pool.used_bytes()
        return ("device", f"device {self.device} has {fmt_bytes(max(avail, 0))} unreserved free "
                          f"(free {fmt_bytes(max(free, 0))}, reserved for guaranteed contexts/partitions "
                          f"{fmt_bytes(headroom)}); budget {fmt_bytes(ctx.max_vram)}, in use {fmt_bytes(used)}, "
                          f"request {fmt_bytes(nbytes)}")

    # eviction ------------------------------------------------------------------------------------------------

    def _victims(self, ctx, kind, tried):
        """Next thing to evict for ``ctx`` (call with LOCK held): ('pool', c) or ('cache', c, entry) or None.

        ``tried`` (one set per request) holds what this request already evicted: each context's pool and each
        registered cache (by context and name) at most once, so a cache whose ``evict()`` registers it again (or
        keeps failing to free anything) cannot keep a request evicting forever."""
        if kind == "budget":
            best = None
            for entry in ctx._caches.values():
                if (id(ctx), entry.name) not in tried and (best is None or entry.last_used < best.last_used):
                    best = entry
            if best is None:
                return None
            tried.add((id(ctx), best.name))
            return ("cache", ctx, best)
        rank = RANK[ctx.qos]
        reserved = ctx.qos == "guaranteed" or ctx.partition is not None
        if self.kind == "cuda":
            # Cached (unused) pool blocks: own first, then other contexts, lowest tier first. A reserved
            # requester (this only happens when the driver itself is out of memory) may free anyone's cache;
            # others only the caches of unreserved contexts of their tier or lower (freeing a reserved context's
            # cache would not make any memory available to them).
            others = [c for c in self.contexts.values() if c is not ctx and (
                reserved or (c.partition is None and c.qos != "guaranteed" and RANK[c.qos] >= rank))]
            others.sort(key=lambda c: -RANK[c.qos])
            for c in [ctx] + others:
                if id(c) not in tried:
                    tried.add(id(c))
                    return ("pool", c)
        best = None
        for c in self.contexts.values():
            if c is ctx or (RANK[c.qos] > rank and c.partition is None):
                for entry in c._caches.values():
                    if (id(c), entry.name) not in tried and (best is None or entry.last_used < best[2].last_used):
                        best = ("cache", c, entry)
        if best is not None:
            tried.add((id(best[1]), best[2].name))
        return best

    def _evict(self, victim, failures=None):
        """Evict outside the lock; returns an estimate of the bytes released. A cache whose ``evict()`` raises stays
        unregistered; its error is appended to ``failures`` as ``(context name, cache name, exception)`` (logged
        when no list is given) instead of escaping into the request that needed the memory."""
        if victim[0] == "pool":
            c = victim[1]
            before = c._pool.total_bytes()
            c._note_peak()
            c._pool.free_all_blocks()
            released = before - c._pool.total_bytes()
            if released > 0:
                with c._lock:
                    c._evictions += 1
                    c._evicted_bytes += released
            return released
        _, c, entry = victim
        with LOCK:
            if c._caches.get(entry.name) is not entry:
                return 0  # gone meanwhile
            del c._caches[entry.name]
        before = self._held(c)
        failed = None
        try:
            entry.evict()
        except Exception as e:  # noqa: BLE001 (reported: the request's OutOfMemoryError names it, or logged)
            failed = e
        finally:
            if c._cuda:
                c._note_peak()
                c._pool.free_all_blocks()
        released = max(0, before - self._held(c))
        if failed is not None:
            if failures is None:
                log_cache_failure(c.name, entry.name, failed)
            else:
                failures.append((c.name, entry.name, failed))
            return released
        with c._lock:
            c._evictions += 1
            c._evicted_bytes += released if released else entry.size()
        return released

    def _admit(self, ctx, nbytes, counted, commit):
        """Admit a request, evicting, waiting (best-effort) or raising; ``commit()`` runs under the lock."""
        tried = set()
        failures = []
        deadline = None
        waiting = False
        try:
            while True:
                with LOCK:
                    ctx._check_alive()
                    refusal = self._refusal(ctx, nbytes, counted)
                    if refusal is None:
                        commit()
                        break
                    victim = self._victims(ctx, refusal[0], tried)
                if victim is not None:
                    self._evict(victim, failures)
                    continue
                if refusal[0] == "device" and ctx.qos == "best_effort":
                    timeout = ctx.wait_timeout
                    if timeout and not _aio.in_event_loop():
                        now = _clock.monotonic()
                        if deadline is None:
                            deadline = now + timeout
                            waiting = True
                            with ctx._lock:
                                ctx._queued += 1
                        if now < deadline:
                            with LOCK:
                                WAITERS[0] += 1
                                try:
                                    COND.wait(min(deadline - now, 0.01))
                                finally:
                                    WAITERS[0] -= 1
                            tried.clear()
                            continue
                        hint = f"; waited {timeout:g} s"
                    elif timeout and _aio.in_event_loop():
                        hint = "; not waiting on the event-loop thread (use `await ctx.wait_for_memory(n)` first)"
                    else:
                        hint = ""
                else:
                    hint = ""
                with ctx._lock:
                    ctx._refusals += 1
                raise_oom(f"context {ctx.name!r} ({ctx.qos}) cannot allocate {fmt_bytes(nbytes)}: {refusal[1]}{hint}",
                           failures)
        finally:
            if waiting:
                with ctx._lock:
                    ctx._queued -= 1
        for c_name, cache, err in failures:  # admitted all the same: the failures are still worth knowing
            log_cache_failure(c_name, cache, err)

    # contention ------------------------------------------------------------------------------------------------

    def _note_confined(self, ctx):
        """Record whether ``ctx`` runs on its confined stream now (a destroyed context never does), at its step
        boundaries: ``_confined_sms`` is what the contexts outside plan their GEMMs around (every confined context
        of a scheduler shares one green context, so one set of SMs), until ``_confined_until`` (``confine_hold_s``
        after a confined context's last step: one that stops stepping stops counting)."""
        with LOCK:
            conf = ctx._confined
            sms = conf[1] if conf and ctx.stream is conf[0] and not ctx._destroyed else 0
            if sms:
                self._confined_until = _clock.monotonic() + self.confine_hold_s
            held = self._confined_by
            if held.get(ctx, 0) != sms:
                if sms:
                    held[ctx] = sms
                else:
                    held.pop(ctx, None)
                self._confined_sms = max(held.values(), default=0)

    def _higher_tier_busy(self, ctx, window=None):
        """Whether a context of a higher tier than ``ctx`` has work in flight or was active within ``window``
        seconds (default ``activity_window_s``)."""
        rank = RANK[ctx.qos]
        now = _clock.monotonic()
        if window is None:
            window = self.activity_window_s
        for c in tuple(self.contexts.values()):
            if RANK[c.qos] < rank and not c._destroyed:
                if now - c._last_activity < window:
                    return True
                ev = c._busy_event
                if ev is not None and not ev.done:
                    return True
        return False

    def _lower_tier_paced(self, ctx):
        """Whether a paced context of a lower tier than ``ctx`` lives that a green context was (or may still be)
        made for."""
        rank = RANK[ctx.qos]
        return any(c._paced and c._confined is not False and not c._destroyed and RANK[c.qos] > rank
                   for c in tuple(self.contexts.values()))  # False: no green context could be made for it

    # admission -------------------------------------------------------------------------------------------------

    def _admit_reservation(self, what, name, memory):
        headroom = self._headroom()
        free = self._free()
        avail = free - headroom
        if memory > avail:
            raise AdmissionError(
                f"cannot admit {what} {name!r} on {self.device}: its reservation {fmt_bytes(memory)} exceeds the "
                f"unreserved free memory {fmt_bytes(max(avail, 0))} (free {fmt_bytes(max(free, 0))}, already "
                f"reserved for guaranteed contexts/partitions {fmt_bytes(headroom)})")

    def _admit_context(self, name, budget, qos, partition):
        if partition is not None:
            committed = sum(c.max_vram for c in partition.contexts.values())
            if committed + budget > partition.memory:
                raise AdmissionError(
                    f"cannot admit context {name!r} in partition {partition.name!r}: budgets would sum to "
                    f"{fmt_bytes(committed + budget)} (existing {fmt_bytes(committed)} + {fmt_bytes(budget)}) over "
                    f"the partition's memory {fmt_bytes(partition.memory)}")
            return
        if qos == "guaranteed":
            self._admit_reservation("guaranteed context", name, budget)
        elif qos == "burstable":
            headroom = self._headroom()
            free = self._free()
            bursts = [c for c in self.contexts.values() if c.partition is None and c.qos == "burstable"]
            held_b = sum(self._held(c) for c in bursts)
            committed = sum(c.max_vram for c in bursts)
            base = free - headroom + held_b
            limit = self.overcommit * max(base, 0)
            if committed + budget > limit:
                raise AdmissionError(
                    f"cannot admit burstable context {name!r} on {self.device}: burstable budgets would sum to "
                    f"{fmt_bytes(committed + budget)} (existing {fmt_bytes(committed)} + {fmt_bytes(budget)}), over "
                    f"{self.overcommit:g} x {fmt_bytes(max(base, 0))} = {fmt_bytes(limit)} (free "
                    f"{fmt_bytes(max(free, 0))} minus {fmt_bytes(headroom)} reserved for guaranteed "
                    f"contexts/partitions, plus {fmt_bytes(held_b)} held by burstable contexts)")
        # best_effort: always admitted


# --- partitions ---------------------------------------------------------------------------------------------------


class Partition:
    """A group of contexts sharing reserved memory and a share of compute."""

    def __init__(self, sched, name, memory, compute_share):
        self.name = name
        self.memory = memory
        self.compute_share = compute_share
        self.device = sched.device
        self._sched = sched
        self.contexts = {}
        self._destroyed = False
        self._bucket = TokenBucket(sched.burst_s)
        self._bucket_lock = threading.Lock()

    def __repr__(self):
        return (f"<gpk_array.sched.Partition {self.name!r} {self.device} memory={self.memory} "
                f"compute_share={self.compute_share} contexts={sorted(self.contexts)}>")

    def stats(self):
        """A dict of this partition's numbers: name, device, memory, compute_share, the names of its contexts,
        ``committed`` (the sum of their budgets) and ``held`` (bytes they hold now)."""
        with LOCK:
            held = sum(self._sched._held(c) for c in self.contexts.values())
            return {
                "name": self.name,
                "device": self.device,
                "memory": self.memory,
                "compute_share": self.compute_share,
                "contexts": sorted(self.contexts),
                "committed": sum(c.max_vram for c in self.contexts.values()),
                "held": held,
            }


def reap_graveyard():
    """Free the pools of destroyed contexts whose last arrays are gone."""
    with LOCK:
        items = list(GRAVEYARD)
    for pool, dev in items:
        if pool.used_bytes() == 0:
            with _cuda.on_device(dev):
                pool.free_all_blocks()
            if pool.total_bytes() == 0:
                with LOCK:
                    try:
                        GRAVEYARD.remove((pool, dev))
                    except ValueError:
                        pass


