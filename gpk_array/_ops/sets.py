"""Set functions (standard section "Set Functions"). NaNs are distinct from each other, as the standard says."""
import numpy as np
from collections import namedtuple

from .. import _dtypes as _dt
from .elementwise import binary_operands
from ._common import Array, as_array, new, oom_guard

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(x, indices, inverse, counts):
    x = as_array(x)
    xp = x._device.xp
    flat = x._data.reshape(-1)
    res = xp.unique(flat, return_index=indices, return_inverse=inverse, return_counts=counts,
                    equal_nan=False) if xp.__name__ == "numpy" else \
        xp.unique(flat, return_index=indices, return_inverse=inverse, return_counts=counts)
    if not isinstance(res, tuple):
        res = (res,)
    vals = res[0]
    out = [new(vals, x._device)]
    i = 1
    if indices:
        out.append(new(res[i].astype(_dt.I64, copy=False), x._device))
        i += 1
    if inverse:
        out.append(new(res[i].astype(_dt.I64, copy=False).reshape(x.shape), x._device))
        i += 1
    if counts:
        out.append(new(res[i].astype(_dt.I64, copy=False), x._device))
    return out


@oom_guard
def unique_all(x, /):
    """Unique values, first indices, inverse indices and counts (standard: set_functions.unique_all)."""
    return UniqueAllResult(*_unique(x, True, True, True))


@oom_guard
def unique_counts(x, /):
    """The unique values of ``x`` (flattened, sorted) and how often each occurs, a ``(values, counts)`` named
    tuple (standard: set functions, ``unique_counts``)."""
    return UniqueCountsResult(*_unique(x, False, False, True))


@oom_guard
def unique_inverse(x, /):
    """The unique values of ``x`` (flattened, sorted) and, for each element of ``x``, the index of its value
    among them (shape of ``x``), a ``(values, inverse_indices)`` named tuple (standard: set functions,
    ``unique_inverse``)."""
    return UniqueInverseResult(*_unique(x, False, True, False))


@oom_guard
def unique_values(x, /):
    """The unique values of ``x``, flattened and sorted (standard: set functions, ``unique_values``). NaNs are
    distinct from each other, as the standard specifies."""
    return _unique(x, False, False, False)[0]


@oom_guard
def isin(x1, x2, /, *, invert=False):
    """Whether each element of x1 is in x2 (standard 2025.12: set_functions.isin)."""
    scalar = x1.__class__ is not Array and isinstance(x1, (bool, int, float, complex))
    a, b, dev = binary_operands(x1, x2)
    xp = dev.xp
    a, b = xp.asarray(a), xp.asarray(b)
    if a.dtype != b.dtype:  # compare in a common dtype (CuPy's kernel for bool against complex does not compile)
        common = np.result_type(a.dtype, b.dtype)
        a, b = a.astype(common, copy=False), b.astype(common, copy=False)
    r = xp.isin(a, b, invert=invert)
    return new(r.reshape(()) if scalar else r, dev)
