"""NumPy's floating-point error handling (``numpy.seterr``, ``numpy.errstate``, ``numpy.seterrcall``) for element-wise
results computed on a CUDA device.

On the CPU device NumPy computes and handles its own flags. A GPU sets no flags a program can read, so on a device
the categories are recovered from the values: "divide by zero" (an infinity from finite operands in a division-like
function: divide, floor_divide, remainder, log, reciprocal, power, ...), "overflow" (an infinity from finite
operands elsewhere), "invalid value" (a NaN from operands without one); underflow is not detected. The check costs one
reduction and one synchronization per call, so it runs only while some category's mode is "raise", "call", "print"
or "log" (NumPy's default, "warn" for divide/over/invalid, would otherwise put a synchronization in every call; with
the defaults a device computation warns of nothing). Each found category is then handled as NumPy handles it:
FloatingPointError, the ``seterrcall`` function called with (type, flags), a line on stderr, the log's ``write``, a
RuntimeWarning, in NumPy's order (divide, over, under, invalid).
"""
import math
import sys
import warnings

import numpy as np

try:  # NumPy's context variable holding the error state: one lookup tells whether the state changed
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE
except ImportError:  # pragma: no cover - a NumPy without it: read the state with geterr() every call
    _STATE = None

_ACTIVE = ("raise", "call", "print", "log")
_DIVIDING = frozenset({"divide", "true_divide", "floor_divide", "remainder", "fmod", "divmod", "log", "log2",
                       "log10", "log1p", "reciprocal", "arctanh", "power", "float_power"})
_CATEGORIES = (("divide", "divide by zero", 1), ("over", "overflow", 2), ("invalid", "invalid value", 8))
_last = [object(), None]  # [the last state object seen, its modes or None]


def modes():
    """The current error modes when some category asks for more than a warning, else None (nothing to check)."""
    if _STATE is not None:
        state = _STATE.get()
        if state is _last[0]:
            return _last[1]
    else:
        state = None
    m = np.geterr()
    m = m if any(v in _ACTIVE for v in m.values()) else None
    _last[0], _last[1] = state, m
    return m


def _finite_and_nan(o, xp):
    """(finite, has NaN) of one operand: device arrays elementwise, Python and NumPy scalars on the host."""
    if isinstance(o, (bool, int)):
        return True, False
    if isinstance(o, (float, complex, np.generic)):
        v = complex(o)
        return math.isfinite(v.real) and math.isfinite(v.imag), v != v
    if o.dtype.kind not in "fc":
        return True, False
    return xp.isfinite(o), xp.isnan(o)


def after(name, r, xp, *operands):
    """What every device element-wise path calls with its result: nothing while no mode asks for a check, else
    ``check``."""
    m = modes()
    if m is not None:
        check(name, r, xp, *operands, m=m)


def check(name, r, xp, *operands, m):
    """Handle the floating-point conditions of the device result ``r`` of NumPy's function ``name`` on
    ``operands`` under the error modes ``m``."""
    if r.__class__ is tuple:
        r = r[0]
    kind = r.dtype.kind
    if kind not in "fc":
        if kind in "iu" and name in ("floor_divide", "remainder", "divmod", "fmod") and len(operands) == 2:
            b = operands[1]
            zero = (b == 0) if isinstance(b, (int, np.generic)) else bool((b == 0).any())
            if zero:
                _handle(name, 1, m)
        return
    finite, nan_in = True, False
    for o in operands:
        f, n = _finite_and_nan(o, xp)
        finite = finite & f
        nan_in = nan_in | n
    no = xp.zeros((), dtype=bool)
    inf_new = no if finite is False else xp.isinf(r) & finite
    nan_new = no if nan_in is True else xp.isnan(r) if nan_in is False else xp.isnan(r) & ~nan_in
    found = xp.stack([xp.any(inf_new), xp.any(nan_new)])
    inf_any, nan_any = (bool(v) for v in (found.get() if hasattr(found, "get") else found))
    status = (1 if name in _DIVIDING else 2) * inf_any | 8 * nan_any
    if status:
        _handle(name, status, m)


def _handle(name, status, m):
    name = getattr(getattr(np, name, None), "__name__", name)  # NumPy's ufunc name: true_divide is "divide"
    for key, text, bit in _CATEGORIES:
        if not status & bit:
            continue
        mode = m[key]
        msg = f"{text} encountered in {name}"
        if mode == "raise":
            raise FloatingPointError(msg)
        if mode == "warn":
            warnings.warn(msg, RuntimeWarning, stacklevel=4)
        elif mode == "print":
            sys.stderr.write(f"Warning: {msg}\n")
        elif mode in ("call", "log"):
            handler = np.geterrcall()
            if handler is None:
                raise NameError(f"{'python callback' if mode == 'call' else 'log'} specified for {text} (in "
                                f"{name}) but no {'function' if mode == 'call' else 'object with write method'} "
                                "found.")
            if mode == "call":
                handler(text, status)
            else:
                handler.write(f"Warning: {msg}\n")
