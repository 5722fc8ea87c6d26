"""``np.emath`` (numpy.lib.scimath): sqrt, log, power, arcsin, ... that return complex results where the real
functions leave the domain (``emath.sqrt(-1)`` is ``1j``), as NumPy's: inputs with values outside the real domain
are converted to complex first (deciding so reads one boolean back from the device)."""
import numpy as _np

from .. import _dtypes as _dt
from ._util import data, dev_of, new, oom_guard

__all__ = ["sqrt", "log", "log2", "log10", "logn", "power", "arccos", "arcsin", "arctanh"]


def _complex_where(x, bad):
    """x as an Array on its device, made complex (the dtype NumPy's scimath picks) when bad(x) holds anywhere."""
    dev = dev_of(x)
    d = data(x, dev)
    xp = dev.xp
    if d.dtype.kind != "c" and bool(xp.any(bad(xp, d))):
        d = d.astype(_dt.C64 if d.dtype in (_np.float16, _np.float32) else _dt.C128)
    elif d.dtype.kind in "biu":
        d = d.astype(_dt.F64)
    return dev, d


def _unary(fname, bad):
    def fn(x):
        dev, d = _complex_where(x, bad)
        return new(getattr(dev.xp, fname)(d), dev)
    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"NumPy's ``emath.{fname}``: complex results outside the real domain."
    return oom_guard(fn)


sqrt = _unary("sqrt", lambda xp, d: d < 0)
log = _unary("log", lambda xp, d: d < 0)
log2 = _unary("log2", lambda xp, d: d < 0)
log10 = _unary("log10", lambda xp, d: d < 0)
arccos = _unary("arccos", lambda xp, d: xp.abs(d) > 1)
arcsin = _unary("arcsin", lambda xp, d: xp.abs(d) > 1)
arctanh = _unary("arctanh", lambda xp, d: xp.abs(d) > 1)


@oom_guard
def logn(n, x):
    """The base-n logarithm of x (complex outside the real domain)."""
    return log(x) / log(n)


@oom_guard
def power(x, p):
    """x ** p, complex for negative x (NumPy's emath.power)."""
    dev, d = _complex_where(x, lambda xp, d: d < 0)
    q = p if isinstance(p, (int, float, complex)) else data(p, dev)
    return new(dev.xp.power(d, q), dev)
