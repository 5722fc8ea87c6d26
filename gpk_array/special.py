"""Special functions on both devices, where SciPy looks for them: ``xp.special``.

SciPy (1.17, with ``SCIPY_ARRAY_API=1``) computes ``scipy.special.erf(x)`` of an array library it has no native
namespace for with ``xp.special.erf`` when the library's namespace has one, else on NumPy (which a CUDA Array
refuses). This module is that ``xp.special`` for gpk_array: it serves the special functions CuPy has
(``cupyx.scipy.special``, where CuPy is installed), each running CuPy's on a CUDA Array's memory (zero-copy) and
SciPy's on the CPU device's (as NumPy arrays, zero-copy), results as Arrays on the inputs' device. Without CuPy it
serves nothing, and SciPy keeps its own paths.

``gpk_array.scipy.special`` is the user-facing namespace (every name of ``scipy.special``); this one is the hook.
"""
import importlib as _importlib

from ._array import Array as _Array
from ._device import CPU as _CPU


def _cupyx_special():
    try:
        return _importlib.import_module("cupyx.scipy.special")
    except Exception:   # not installed, or a CuPy that cannot load here: no special functions of CuPy's
        return None


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cx = _cupyx_special()
    fn = getattr(cx, name, None) if cx is not None else None
    if fn is None or not callable(fn):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (cupyx.scipy.special has none)")
    import scipy.special
    host = getattr(scipy.special, name, None)
    if host is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (scipy.special has none)")
    f = _function(name, fn, host)
    globals()[name] = f
    return f


def __dir__():
    cx = _cupyx_special()
    if cx is None:
        return []
    import scipy.special
    return sorted(n for n in dir(cx) if not n.startswith("_") and callable(getattr(cx, n, None))
                  and hasattr(scipy.special, n))


def _function(name, device_fn, host_fn):
    from .scipy._bridge import backing, convert

    def fn(*args, **kwargs):
        dev = None
        for a in args:
            if isinstance(a, _Array):
                dev = a._device
                if dev is not _CPU:
                    break
        if dev is not None and dev is not _CPU:
            return convert(device_fn(*backing(args), **backing(kwargs)), dev, unwrap=True)
        return convert(host_fn(*backing(args), **backing(kwargs)), _CPU, unwrap=True)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = (f"``scipy.special.{name}`` on gpk_array Arrays: CuPy's ``cupyx.scipy.special.{name}`` on a CUDA "
                  f"device, SciPy's on the CPU device; Arrays on the inputs' device (the hook SciPy calls as "
                  f"``xp.special.{name}``).")
    return fn
