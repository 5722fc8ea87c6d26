"""A context's allocator: what admits each of its allocations (a base class of Context).

CUDA: the thread-local CuPy allocator inside the context (``_make_allocator``): a fast path straight to the
context's pool while the request fits the budget counting every cached block, else ``_malloc`` (the budget checked,
the context's own caches evicted, a fragmented pool allowed past its limit); the pool's base allocator
``_device_alloc`` admits new device memory against the device's ledger. CPU: ``_charge_numpy`` charges a NumPy
buffer when the allocation hook sees it wrapped, ``_precheck_numpy`` asks before a large buffer is allocated.
"""

import weakref

from . import _clock, _cuda
from ._hook import Charge
from ._ledger import log_cache_failure, oom, raise_oom
from ._parse import fmt_bytes
from ._state import COND, LOCK, WAITERS
from .errors import ContextDestroyedError

__all__ = ["ContextAllocator"]

_CUDA_ERROR_MEMORY_ALLOCATION = 2  # cudaErrorMemoryAllocation (CuPy does not export the constant to Python)


def _no_commit():
    pass


class ContextAllocator:
    """The allocation methods of :class:`~gpk_array.sched.Context` (a base class of it; its pool, budget and
    counters are set up by ``Context.__init__``)."""

    def _make_allocator(self, cupy_oom):
        """The thread-local CuPy allocator inside the context. Fast path: a request that fits the budget even
        counting every cached block goes straight to the pool (whose limit is the budget, and whose base
        allocator admits new device memory); anything else, and any refusal, takes ``_malloc``."""
        pool, slow = self._pool, self._malloc
        held = pool.total_bytes
        fast = pool.malloc

        def allocate(size):
            if not self._destroyed and held() + size + 512 <= self.max_vram:
                self._last_activity = _clock.monotonic()  # higher-tier activity is what paces lower tiers
                try:
                    return fast(size)
                except cupy_oom:
                    pass
            return slow(size)
        return allocate

    def _note_peak(self):
        """CUDA: record the pool's total as the peak if it is the highest yet (before freeing cached blocks)."""
        if self._pool is not None:
            held = self._pool.total_bytes()
            if held > self._peak:
                self._peak = held

    def _malloc(self, size):
        """The slow path of the context's allocator: budget check with eviction, then the context's pool."""
        if self._destroyed:
            raise ContextDestroyedError(f"scheduler context {self.name!r} was destroyed; cannot allocate")
        self._last_activity = _clock.monotonic()
        pool = self._pool
        budget = self.max_vram
        rsize = -(-size // 512) * 512
        cp = _cuda.cupy()
        with self._alloc_lock:  # check and allocate atomically for threads sharing this context
            # total >= used, so the O(live blocks) used_bytes() is only needed near the budget
            if pool.total_bytes() + rsize > budget and pool.used_bytes() + rsize > budget:
                self._fit_budget(rsize)
            try:
                ptr = pool.malloc(size)
            except cp.cuda.memory.OutOfMemoryError:
                # The pool's limit (the budget) counts cached blocks too, but the use fits (checked above):
                # drop the cached blocks and retry, then, if split blocks still hold the room, grow past it.
                self._note_peak()
                pool.free_all_blocks()
                try:
                    ptr = pool.malloc(size)
                except cp.cuda.memory.OutOfMemoryError:
                    ptr = self._malloc_fragmented(size, rsize)
        held = pool.total_bytes()
        if held > self._peak:
            self._peak = held
        return ptr

    def _malloc_fragmented(self, size, rsize):
        """The use fits the budget but cached split blocks keep the pool at its limit: allocate past the limit.

        The extra device memory goes through device-level admission like any other (see ``_device_alloc``), so
        the pool may hold more than the budget (in cached fragments) but never uses more.
        """
        cp = _cuda.cupy()
        pool = self._pool
        pool.set_limit(size=pool.total_bytes() + rsize)  # (called with _alloc_lock held)
        try:
            return pool.malloc(size)
        except cp.cuda.memory.OutOfMemoryError as e:
            with self._lock:
                self._refusals += 1
            raise oom(
                f"context {self.name!r} ({self.qos}) cannot allocate {fmt_bytes(size)}: the device is out of "
                f"memory: budget {fmt_bytes(self.max_vram)}, in use {fmt_bytes(pool.used_bytes())}, held by its pool "
                f"{fmt_bytes(pool.total_bytes())}, request {fmt_bytes(size)} ({e})") from e
        finally:
            pool.set_limit(size=self.max_vram)

    def _fit_budget(self, rsize):
        """CUDA: the request would exceed the budget in use; evict own registered caches or raise."""
        pool = self._pool
        tried = set()
        failures = []
        while pool.used_bytes() + rsize > self.max_vram:
            with LOCK:
                victim = self._sched._victims(self, "budget", tried)
            if victim is None:
                with self._lock:
                    self._refusals += 1
                raise_oom(
                    f"context {self.name!r} ({self.qos}) cannot allocate {fmt_bytes(rsize)}: exceeds its budget: "
                    f"budget {fmt_bytes(self.max_vram)}, in use {fmt_bytes(pool.used_bytes())}, "
                    f"request {fmt_bytes(rsize)}",
                    failures)
            self._sched._evict(victim, failures)
        for c_name, cache, err in failures:
            log_cache_failure(c_name, cache, err)

    def _device_alloc(self, nbytes):
        """The pool's base allocator: called when the pool needs new device memory (cudaMalloc)."""
        cp = _cuda.cupy()
        sched = self._sched
        # Within a reservation (guaranteed, or a partition's member) no check is needed; past it (a pool grown
        # beyond its budget by fragments, see _malloc_fragmented) the request is admitted like any other.
        reserved = (self.partition is not None or self.qos == "guaranteed") and (
            self._pool.total_bytes() <= self.max_vram)

        def commit():
            sched._in_flight += nbytes

        if reserved:  # no check, but count the bytes until cudaMalloc has returned
            with LOCK:
                commit()
        else:
            sched._admit(self, nbytes, nbytes, commit)
        try:
            try:
                return cp.cuda.MemoryPointer(cp.cuda.Memory(nbytes), 0)
            except cp.cuda.runtime.CUDARuntimeError as e:
                if getattr(e, "status", None) != _CUDA_ERROR_MEMORY_ALLOCATION:
                    raise
                # The driver is out of memory: free what lower tiers cache (and registered caches), retry.
                released = 0
                tried = set()
                while True:
                    with LOCK:
                        victim = sched._victims(self, "device", tried)
                    if victim is None:
                        break
                    released += sched._evict(victim)
                if not released:
                    raise
                return cp.cuda.MemoryPointer(cp.cuda.Memory(nbytes), 0)
        finally:
            with LOCK:
                sched._in_flight -= nbytes
                if WAITERS[0]:
                    COND.notify_all()

    def _charge_numpy(self, owner, nbytes):
        """CPU: charge a NumPy buffer (its owning array) to this context, or raise OutOfMemoryError."""
        rec = Charge(self, nbytes, id(owner))
        done = False
        if self._reserved:
            # Within a reservation only the budget can refuse: reservations are admitted against what is free
            # and nobody else may use them, so the device check would always pass.
            with LOCK:
                if not self._destroyed and self._cpu_used + nbytes <= self.max_vram:
                    rec.commit()
                    done = True
        if not done:
            self._sched._admit(self, nbytes, 0, rec.commit)
        if rec.active:
            rec.ref = weakref.ref(owner, rec.release)

    def _precheck_numpy(self, nbytes):
        """CPU: whether ``nbytes`` more would be admitted now (evicting caches or waiting as a request would), before
        NumPy allocates them; raises OutOfMemoryError otherwise. Nothing is reserved (the buffer is charged when it
        is wrapped)."""
        if self._reserved and self._cpu_used + nbytes <= self.max_vram:
            return  # (read without the lock: nothing is committed here, the charge checks again under it)
        self._sched._admit(self, nbytes, 0, _no_commit)
