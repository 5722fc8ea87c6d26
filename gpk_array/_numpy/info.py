"""Help and build information: ``info`` (NumPy's: an array's layout, a function's signature and docstring) and
``show_config``/``show_runtime`` (gpk_array's version and devices, then the backends' own reports)."""
import sys

import numpy as _np

from .._array import Array
from ._util import host

__all__ = ["info", "show_config", "show_runtime"]


def info(object=None, maxwidth=76, output=None, toplevel="gpk_array"):
    """Print help on object as NumPy's ``info`` does: for an Array, its class, shape, strides, ... (of a host copy:
    the data pointer is the copy's), then its device; for functions and ufuncs their signature and docstring."""
    out = sys.stdout if output is None else output
    if isinstance(object, Array):
        _np.info(host(object), maxwidth, out, "numpy")
        print(f"device:  {object._device}", file=out)
        return
    from .ufuncs import ufunc
    if isinstance(object, ufunc) and isinstance(getattr(_np, object.__name__, None), _np.ufunc):
        object = getattr(_np, object.__name__)  # the same function: NumPy's signature and documentation
    _np.info(object, maxwidth, out, toplevel)


def show_config(mode="stdout"):
    """gpk_array's version and devices, then NumPy's build configuration (the CPU device's backend)."""
    import gpk_array
    devs = ", ".join(str(d) for d in gpk_array.__array_namespace_info__().devices())
    text = f"gpk_array {gpk_array.__version__}\ndevices: {devs}\nCPU backend: NumPy {_np.__version__}\n"
    if mode == "dicts":
        return {"gpk_array": {"version": gpk_array.__version__, "devices": devs},
                "numpy": _np.show_config(mode="dicts")}
    print(text, end="")
    try:
        import cupy
        print(f"CUDA backend: CuPy {cupy.__version__}")
    except ImportError:
        pass
    _np.show_config()


def show_runtime():
    """gpk_array's devices, then NumPy's runtime report."""
    import gpk_array
    print("gpk_array devices:", ", ".join(str(d) for d in gpk_array.__array_namespace_info__().devices()))
    _np.show_runtime()
