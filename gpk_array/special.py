"""Special functions on both devices, where SciPy looks for them: ``xp.special``.

SciPy (1.17, with ``SCIPY_ARRAY_API=1``) computes ``scipy.special.erf(x)`` of an array library it has no native
namespace for with ``xp.special.erf`` when the library's namespace has one, else with a composition of other
special functions or on NumPy (which a CUDA Array refuses). This module is that ``xp.special`` for gpk_array: every
function of ``scipy.special``, running

- on the CPU device SciPy's own on the Arrays' memory as NumPy arrays (zero-copy), NumPy's results as Arrays;
- on a CUDA device SciPy's own on the Arrays' CuPy memory, which SciPy dispatches as for CuPy arrays (to
  ``cupyx.scipy.special`` or a composition of CuPy's), else CuPy's ``cupyx.scipy.special`` namesake; results as
  Arrays on the device, and ``HostOnlyError`` where CuPy has no way either.

``gpk_array.scipy.special`` is the user-facing namespace; this one is the hook SciPy calls (it never hands Arrays
back to SciPy's ``scipy.special``, which would come here again).
"""
from ._array import Array as _Array
from ._device import CPU as _CPU


def _scipy_special():
    import scipy.special
    return scipy.special


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    host = getattr(_scipy_special(), name, None)
    if host is None or not callable(host) or isinstance(host, type):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (scipy.special has no function "
                             f"{name!r})")
    f = _function(name, host)
    globals()[name] = f
    return f


def __dir__():
    sp = _scipy_special()
    return sorted(n for n in getattr(sp, "__all__", dir(sp)) if not n.startswith("_")
                  and callable(getattr(sp, n, None)) and not isinstance(getattr(sp, n), type))


def _function(name, host_fn):
    from .scipy._bridge import backing, convert, on_device

    def fn(*args, **kwargs):
        dev = None
        for a in args:
            if isinstance(a, _Array):
                dev = a._device
                if dev is not _CPU:
                    break
        if dev is not None and dev is not _CPU:
            return on_device("special", name, host_fn, args, kwargs, dev, via_arrays=False)
        return convert(host_fn(*backing(args), **backing(kwargs)), _CPU, unwrap=True)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = (f"``scipy.special.{name}`` on gpk_array Arrays: SciPy's on the CPU device's memory; on a CUDA "
                  f"device SciPy's on the CuPy memory or CuPy's ``cupyx.scipy.special.{name}``; Arrays on the "
                  f"inputs' device (the hook SciPy calls as ``xp.special.{name}``).")
    return fn
