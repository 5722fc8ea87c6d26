"""Host-side priority: the interpreter's switch interval.

Threads of one process share one interpreter. A guaranteed context's thread whose synchronize has returned waits
for the interpreter while a paced context's thread runs Python (its launches, its pacing), up to the switch interval
(CPython's default 5 ms). So while a guaranteed context and a paced one live on CUDA devices, :func:`update` keeps
the interval at most the schedulers' ``switch_interval`` (5 us by default), and gives the program its own value back
when that is no longer so (docs/scheduler.md, "Design", has the measurement behind the default).
"""

import sys

__all__ = ["update"]

_switch_saved = None  # the program's interval before the scheduler shortened it (None: not shortened)
_switch_set = None    # the interval the scheduler set (as sys.getswitchinterval reports it)
_SWITCH_KINDS = ("cuda",)  # device kinds whose contexts count (GPU work is what waits for the interpreter)


def update(schedulers):
    """(with LOCK held) The interval at most the ``switch_interval`` of ``schedulers`` (every live one) while a
    guaranteed context and a paced one live (on any devices: one interpreter), else the program's interval back.
    An interval the program set meanwhile is the program's: never lengthened, and not overwritten on the way back."""
    global _switch_saved, _switch_set
    want, guaranteed, paced = None, False, False
    for sc in schedulers:
        if sc.kind in _SWITCH_KINDS and sc.switch_interval > 0.0 and sc.contexts:
            for c in sc.contexts.values():
                if c._paced:
                    paced = True
                else:
                    guaranteed = True
            want = sc.switch_interval if want is None else min(want, sc.switch_interval)
    cur = sys.getswitchinterval()
    if want is not None and guaranteed and paced:
        if _switch_set is None or cur != _switch_set:  # not ours (yet, or any more): the program's value
            _switch_saved = cur
        if min(want, _switch_saved) != cur:
            sys.setswitchinterval(min(want, _switch_saved))
        _switch_set = sys.getswitchinterval()
    elif _switch_set is not None:
        if cur == _switch_set:
            sys.setswitchinterval(_switch_saved)
        _switch_saved = _switch_set = None
