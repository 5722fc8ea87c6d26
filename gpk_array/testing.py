"""``numpy.testing`` for gpk_array: the assertions take Arrays on any device, NumPy arrays and Python values.

Arrays are copied to the host (0-d Arrays become NumPy scalars, as the reductions of NumPy give), through lists,
tuples and dicts, and the check is numpy.testing's own, so the messages and exception types are NumPy's.
"""
import functools

import numpy as _np
import numpy.testing as _nt

from ._array import Array
from ._device import CPU

__all__ = ["assert_allclose", "assert_array_equal", "assert_equal", "assert_almost_equal",
           "assert_array_almost_equal", "assert_array_less", "assert_approx_equal", "assert_array_max_ulp",
           "assert_array_almost_equal_nulp", "assert_string_equal", "assert_array_compare", "assert_raises",
           "assert_raises_regex", "assert_", "assert_warns", "assert_no_warnings", "assert_no_gc_cycles",
           "suppress_warnings", "KnownFailureException", "SkipTest", "IS_PYPY", "HAS_REFCOUNT"]


def _host(x):
    """x with every Array replaced by its values on the host."""
    c = x.__class__
    if isinstance(x, Array):
        h = x._data if x._device is CPU else x._data.get()
        h = _np.asarray(h).view(_np.ndarray)
        return h[()] if h.ndim == 0 else h
    if c is list:
        return [_host(v) for v in x]
    if c is tuple:
        return tuple(_host(v) for v in x)
    if c is dict:
        return {k: _host(v) for k, v in x.items()}
    return x


def _on_host(fn, narrays):
    """fn with its first narrays arguments (positional or by NumPy's keyword names) moved to the host."""
    names = ("actual", "desired", "x", "y", "a", "b")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True  # pytest: report the caller's line
        args = tuple(_host(a) if i < narrays else a for i, a in enumerate(args))
        for k in names:
            if k in kwargs:
                kwargs[k] = _host(kwargs[k])
        return fn(*args, **kwargs)
    wrapper.__module__ = __name__
    return wrapper


assert_allclose = _on_host(_nt.assert_allclose, 2)
assert_array_equal = _on_host(_nt.assert_array_equal, 2)
assert_equal = _on_host(_nt.assert_equal, 2)
assert_almost_equal = _on_host(_nt.assert_almost_equal, 2)
assert_array_almost_equal = _on_host(_nt.assert_array_almost_equal, 2)
assert_array_less = _on_host(_nt.assert_array_less, 2)
assert_approx_equal = _on_host(_nt.assert_approx_equal, 2)
assert_array_max_ulp = _on_host(_nt.assert_array_max_ulp, 2)
assert_array_almost_equal_nulp = _on_host(_nt.assert_array_almost_equal_nulp, 2)
assert_string_equal = _nt.assert_string_equal
assert_array_compare = _nt.assert_array_compare
assert_raises = _nt.assert_raises
assert_raises_regex = _nt.assert_raises_regex
assert_warns = _nt.assert_warns
assert_no_warnings = _nt.assert_no_warnings
assert_no_gc_cycles = _nt.assert_no_gc_cycles
suppress_warnings = _nt.suppress_warnings
KnownFailureException = _nt.KnownFailureException
SkipTest = _nt.SkipTest
IS_PYPY = _nt.IS_PYPY
HAS_REFCOUNT = _nt.HAS_REFCOUNT


def assert_(val, msg=""):
    """Raise AssertionError(msg) unless val is true (a one-element Array is read as a Python bool)."""
    __tracebackhide__ = True
    _nt.assert_(bool(_host(val)) if isinstance(val, Array) else val, msg)
