"""A stand-in ``cupyx.scipy`` for the stand-in CUDA device (fakegpu.py): modules whose functions take only the
device's backing arrays (``FakeCudaArray``: never gpk_array Arrays, never host NumPy arrays) and compute with
SciPy's function of the same name on them, returning device arrays; each call is recorded.

``fake_cupyx({"special": ["erf", "gammaln"], "ndimage": ["gaussian_filter"]})`` installs ``cupyx``,
``cupyx.scipy`` and ``cupyx.scipy.<module>`` holding just those names (a real CuPy lacks names too), for the
duration; SciPy's cache of which special-function implementation serves an array namespace is cleared before and
after, and so are the names gpk_array.special has served.
"""
import contextlib
import importlib
import sys
import types

import numpy

import gpk_array

from .fakegpu import FakeCudaArray, _dev_result


class _Recorder(list):
    """The calls made: ("special", "erf"), ..."""


def _device_only(v, where):
    if isinstance(v, gpk_array.Array):
        raise TypeError(f"fake {where}: got a gpk_array Array (the bridge must pass backing arrays)")
    if isinstance(v, numpy.ndarray) and not isinstance(v, FakeCudaArray) and v.ndim:
        raise TypeError(f"fake {where}: got a host NumPy array (CuPy refuses those)")
    if isinstance(v, (list, tuple)):
        for u in v:
            _device_only(u, where)


def _fake_function(sub, name, calls):
    host = getattr(importlib.import_module(f"scipy.{sub}"), name)

    def fn(*args, **kwargs):
        for v in list(args) + list(kwargs.values()):
            _device_only(v, f"cupyx.scipy.{sub}.{name}")
        calls.append((sub, name))
        out = kwargs.pop("out", None)
        plain = [numpy.asarray(a) if isinstance(a, FakeCudaArray) else a for a in args]
        r = host(*plain, **kwargs)
        if out is not None:
            out[...] = r
            return out
        return _dev_result(r)
    fn.__name__ = name
    return fn


@contextlib.contextmanager
def fake_cupyx(names):
    """Install the stand-in cupyx.scipy with ``names`` ({module: [function, ...]}); yields the call recorder."""
    calls = _Recorder()
    saved = {k: v for k, v in sys.modules.items() if k == "cupyx" or k.startswith("cupyx.")}
    root = types.ModuleType("cupyx")
    sci = types.ModuleType("cupyx.scipy")
    root.scipy = sci
    mods = {"cupyx": root, "cupyx.scipy": sci}
    for sub, fnames in names.items():
        m = types.ModuleType(f"cupyx.scipy.{sub}")
        host = importlib.import_module(f"scipy.{sub}")
        for n in fnames:
            if hasattr(host, n):   # CuPy has a few names SciPy no longer has
                setattr(m, n, _fake_function(sub, n, calls))
        mods[f"cupyx.scipy.{sub}"] = m
        setattr(sci, sub, m)
    _clear_caches()
    for k in saved:
        del sys.modules[k]
    sys.modules.update(mods)
    try:
        yield calls
    finally:
        for k in mods:
            sys.modules.pop(k, None)
        sys.modules.update(saved)
        _clear_caches()


def _clear_caches():
    """SciPy's per-namespace choice of special-function implementation, and gpk_array.special's served names."""
    try:
        from scipy.special import _support_alternative_backends as sab
        sab._FuncInfo._wrapper_for.cache_clear()
    except (ImportError, AttributeError):
        pass
    ns = vars(gpk_array.special)
    for k in [k for k in ns if not k.startswith("_") and callable(ns[k]) and
              getattr(ns[k], "__module__", "") == "gpk_array.special"]:
        del ns[k]
