"""repr and str of arrays, in NumPy's style with the device shown for GPU arrays."""
import numpy as np

from .._device import CPU


def _host(x):
    return x._data if x._device is CPU else x._data.get()


def array_repr(x):
    body = np.array2string(_host(x), separator=", ", prefix="Array(")
    extra = ""
    if x._data.dtype not in (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)) or x.size == 0:
        extra += f", dtype={x._data.dtype}"
    if x._device is not CPU:
        extra += f", device='{x._device}'"
    return f"Array({body}{extra})"


def array_str(x):
    return np.array2string(_host(x)) if x.ndim else str(_host(x).item())
