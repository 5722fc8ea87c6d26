"""SciPy on gpk_array Arrays, on their device: ``gpk_array.scipy`` mirrors SciPy's layout.

``gpk_array.scipy.special``, ``stats``, ``signal``, ``fft``, ``ndimage``, ``linalg``, ``cluster`` (``vq``,
``hierarchy``), ``integrate``, ``interpolate`` and ``spatial`` (``distance``) serve SciPy's public names of the module
of the same name (other SciPy modules, ``optimize`` say, are served the same way on first read). Each function takes
Arrays and gives Arrays on their device:

- on the CPU device it is SciPy's own function on the Arrays' memory as NumPy arrays (zero-copy: SciPy's primary,
  most tested path), results as Arrays on the CPU device (without Arrays among the arguments: SciPy's function as
  called);
- on a CUDA device it is SciPy's own function on the Arrays' CuPy memory (zero-copy), which SciPy dispatches as for
  CuPy arrays (to ``cupyx.scipy`` or its array-API code), else SciPy's function through gpk_array's namespace, else
  CuPy's ``cupyx.scipy`` namesake directly; where none can, a ``gpk_array.HostOnlyError`` (a TypeError) names the
  function and the way out, ``x.to_device("cpu")`` (``gpk_array.scipy._bridge.on_device``). Nothing is copied
  between the host and the device implicitly.

Set ``SCIPY_ARRAY_API=1`` before SciPy is imported for SciPy's array-API support (without it, SciPy converts
everything to NumPy: the CPU device still works, and on CUDA every call goes to ``cupyx.scipy``).

``scipy.special``'s ufuncs called directly on CUDA Arrays (``scipy.special.erf(x)``) reach ``cupyx.scipy.special``
through ``Array.__array_ufunc__`` as they do for CuPy arrays, and SciPy (1.17) looks for ``xp.special`` where it has
no native namespace for an array library: ``gpk_array.special`` serves scipy.special's functions there, on both
devices. docs/scipy.md lists what works where.
"""
import importlib

_MODULES = ("cluster", "fft", "integrate", "interpolate", "linalg", "ndimage", "signal", "spatial", "special",
            "stats")


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        pass
    try:
        importlib.import_module(f"scipy.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (SciPy has no scipy.{name})") from None
    from ._bridge import module_for
    mod = module_for(name)
    globals()[name] = mod
    return mod


def __dir__():
    return sorted(set(globals()) | set(_MODULES))
