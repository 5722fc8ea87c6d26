"""Printing as NumPy prints: ``repr`` and ``str`` are NumPy's on every device (as CuPy's are: a script prints the
same text on the GPU as with NumPy; ``x.device`` says where an array lives), and NumPy's print options apply
(``set_printoptions`` is NumPy's own). Formatting reads a host copy."""
import numpy as _np

from .._array import Array
from ._util import host

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "array2string", "array_repr", "array_str",
           "format_float_positional", "format_float_scientific"]

set_printoptions = _np.set_printoptions
get_printoptions = _np.get_printoptions
printoptions = _np.printoptions
format_float_positional = _np.format_float_positional
format_float_scientific = _np.format_float_scientific


def _h(a):
    return host(a) if isinstance(a, Array) else _np.asarray(a)


def array2string(a, *args, **kwargs):
    """NumPy's ``array2string`` of the array's values (GPU data is copied to the host to print)."""
    return _np.array2string(_h(a), *args, **kwargs)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's repr of the array's values, whatever the device."""
    return _np.array_repr(_h(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's ``str`` of the array's values, whatever the device (``array_str``)."""
    return _np.array_str(_h(a), max_line_width, precision, suppress_small)


def _repr(self):
    return array_repr(self)


def _str(self):
    return _np.array_str(host(self))
