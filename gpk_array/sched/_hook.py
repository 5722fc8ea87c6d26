"""The allocation hooks the core calls (gpk_array._hooks), and the NumPy buffers they charge to CPU contexts.

``alloc_hook`` (exported as ``gpk_array.sched.alloc_hook``, for tests and for callers that wrap arrays themselves)
runs for every backing array the core wraps; ``prealloc_hook`` runs before the creation functions allocate, while a
CPU context is entered somewhere. :func:`install` / :func:`uninstall` put them in place (``sched.initialize`` /
``sched.shutdown``); :func:`cpu_enter` / :func:`cpu_exit` run on every ``with ctx:`` of a CPU context.
"""

import sys

import numpy as np

from . import _clock, _nptag
from ._state import COND, CURRENT, LOCK, WAITERS
from .errors import ContextDestroyedError

__all__ = ["Charge", "charged", "alloc_hook", "prealloc_hook", "PREALLOC_MIN_BYTES", "cpu_enter", "cpu_exit",
           "install", "uninstall"]

charged = {}  # id(numpy owner) -> Charge, for NumPy buffers charged to a CPU context
_hook_state = {"installed": False, "previous": None}


class Charge:
    """A NumPy buffer charged to a CPU context; released by a weak-reference callback when the buffer dies."""

    __slots__ = ("ctx", "nbytes", "key", "active", "ref")

    def __init__(self, ctx, nbytes, key):
        self.ctx = ctx
        self.nbytes = nbytes
        self.key = key
        self.active = False
        self.ref = None

    def commit(self):
        """Record the charge (call with LOCK held)."""
        if self.key in charged:  # another thread charged the same buffer meanwhile
            return
        ctx = self.ctx
        charged[self.key] = self
        ctx._records.add(self)
        ctx._cpu_used += self.nbytes
        ctx._sched._cpu_total += self.nbytes
        if ctx._cpu_used > ctx._peak:
            ctx._peak = ctx._cpu_used
        self.active = True

    def release(self, _ref=None):
        with LOCK:
            if charged.get(self.key) is self:
                del charged[self.key]
            if self.active:
                self.active = False
                ctx = self.ctx
                ctx._cpu_used -= self.nbytes
                ctx._sched._cpu_total -= self.nbytes
                ctx._records.discard(self)
            self.ref = None
            if WAITERS[0]:
                COND.notify_all()


_tag_name = _nptag.handler_name if _nptag.available else None


def alloc_hook(data, device):
    """Called by the core for every backing array it wraps. Cheap when no context is current.

    CPU: charges the buffer that owns ``data``'s memory (``data`` itself or the NumPy array at the end of its
    ``base`` chain) to the current context, once, if NumPy allocated it while a CPU context was current (see
    _nptag: a view of memory that existed before, an array made outside any context or a user's NumPy array,
    allocates nothing and is charged nothing; a view of a fresh temporary charges the temporary). Buffers owned by
    foreign objects (bytes, mmap, pinned memory) are not NumPy's to count.
    """
    entry = CURRENT.get()
    if entry is None:
        return
    ctx = entry[0]
    if ctx._cuda:
        ctx._last_activity = _clock.monotonic()  # CuPy memory is charged by the context's pool allocator
        return
    if not isinstance(data, np.ndarray):
        return
    if ctx._destroyed:
        raise ContextDestroyedError(f"scheduler context {ctx.name!r} was destroyed; cannot allocate")
    owner = data
    base = owner.base
    while base is not None:
        if not isinstance(base, np.ndarray):
            return  # memory owned by a foreign object (bytes, mmap, pinned buffer): not NumPy's to count
        owner = base
        base = owner.base
    if id(owner) in charged or not owner.flags.owndata:
        return
    if _tag_name is not None and _tag_name(owner) != _nptag.NAME:
        return  # allocated outside every context: wrapping it (or a view of it) allocates nothing
    nbytes = owner.nbytes
    if nbytes:
        ctx._last_activity = _clock.monotonic()
        ctx._charge_numpy(owner, nbytes)

# Requests at least this large are checked against the budget before NumPy allocates them (gpk_array._hooks
# .prealloc_hook, called by the creation functions); smaller ones only when wrapped, as every allocation is: a
# refused small request costs at most this much memory for a moment, and skipping the check keeps small creations
# as cheap inside a context as the charge alone makes them.
PREALLOC_MIN_BYTES = 1 << 16


def prealloc_hook(nbytes, device):
    """Called by the core's creation functions with the size of a buffer before allocating it (installed only while
    a CPU context is entered somewhere, see cpu_enter): raises OutOfMemoryError, after evicting caches or
    waiting as a real request would, when the current CPU context could not take ``nbytes`` more. Nothing is
    reserved: the buffer is charged when it is wrapped, as any other."""
    if nbytes < PREALLOC_MIN_BYTES or (device is not _cpu_device and device != "cpu"):
        return
    entry = CURRENT.get()
    if entry is None:
        return
    ctx = entry[0]
    if ctx._cuda or nbytes > sys.maxsize:  # (NumPy refuses such sizes itself: "array is too big")
        return
    if ctx._destroyed:
        raise ContextDestroyedError(f"scheduler context {ctx.name!r} was destroyed; cannot allocate")
    ctx._precheck_numpy(int(nbytes))


_hooks_mod = None  # gpk_array._hooks, bound at install (lazily: the package imports this module late)
_cpu_device = None  # gpk_array's CPU device, bound at install

# CPU sessions entered anywhere in the process (one item each): the pre-allocation hook is installed while there
# is one, so that creations outside every context pay one global None check. No lock (the enter path stays cheap):
# list append/pop and the attribute stores are atomic, and a thread that leaves the last session checks again after
# removing the hook, putting it back if another thread entered meanwhile. So the hook is installed whenever a session
# is; the one gap is a thread switch between those two steps of the leaving thread, during which a creation in a
# session just entered elsewhere skips its pre-check (and is still charged, and refused if it does not fit, when
# wrapped, as every allocation is).
_cpu_sessions = []
_np_var, _np_default, _np_tag = _nptag._var, _nptag._default, _nptag._tag  # (_var None: no tagging)


def cpu_enter():
    """Entering a CPU context: install the pre-allocation hook, make NumPy allocate through our tagged handler here
    (_nptag.begin, its common case inline: this runs on every ``with ctx:``); returns what cpu_exit restores."""
    _cpu_sessions.append(None)
    if _hooks_mod is not None:
        _hooks_mod.prealloc_hook = prealloc_hook
    var = _np_var
    if var is None:
        return None
    prev = var.get()
    if prev is _np_default:
        var.set(_np_tag)
        return prev
    return _nptag.begin()


def cpu_exit(prev):
    """Leaving a CPU context: ``prev`` is what :func:`cpu_enter` returned."""
    if prev is not None:
        _np_var.set(prev)
    _cpu_sessions.pop()
    hooks = _hooks_mod
    if not _cpu_sessions and hooks is not None:
        hooks.prealloc_hook = None
        if _cpu_sessions:  # another thread entered meanwhile
            hooks.prealloc_hook = prealloc_hook


def install():
    """Put ``alloc_hook`` in gpk_array._hooks (remembering the hook it replaces), and ``prealloc_hook`` while a CPU
    session is entered."""
    global _hooks_mod, _cpu_device
    import gpk_array._hooks as hooks  # noqa: PLC0415 (lazy: avoid importing the package at module import)
    from gpk_array._device import CPU  # noqa: PLC0415

    _cpu_device = CPU
    _hooks_mod = hooks
    if _cpu_sessions:
        hooks.prealloc_hook = prealloc_hook
    if hooks.alloc_hook is alloc_hook:
        return
    _hook_state["previous"] = hooks.alloc_hook
    _hook_state["installed"] = True
    hooks.alloc_hook = alloc_hook


def uninstall():
    """Take the hooks out of gpk_array._hooks again (the hook ``install`` replaced comes back)."""
    global _hooks_mod
    import gpk_array._hooks as hooks  # noqa: PLC0415

    if hooks.alloc_hook is alloc_hook:
        hooks.alloc_hook = _hook_state["previous"]
    _hooks_mod = None
    if hooks.prealloc_hook is prealloc_hook:
        hooks.prealloc_hook = None
    _hook_state["installed"] = False
    _hook_state["previous"] = None
