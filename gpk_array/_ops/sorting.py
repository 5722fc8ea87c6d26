"""Sorting functions (standard section "Sorting Functions"); descending sorts are stable too."""
from .. import _dtypes as _dt
from ._common import as_array, new, normalize_axis, oom_guard


def _argsort(data, xp, axis, descending, stable):
    kind = "stable" if stable else None
    if not descending:
        return xp.argsort(data, axis=axis, kind=kind) if xp.__name__ == "numpy" else xp.argsort(data, axis=axis)
    # stable descending: sort the reversed array ascending, reverse the result and map indices back
    n = data.shape[axis]
    rev = xp.flip(data, axis=axis)
    idx = xp.argsort(rev, axis=axis, kind="stable") if xp.__name__ == "numpy" else xp.argsort(rev, axis=axis)
    return (n - 1) - xp.flip(idx, axis=axis)


@oom_guard
def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort x along axis (standard: sorting_functions.argsort)."""
    x = as_array(x)
    if x.ndim == 0:
        raise ValueError("argsort needs at least one dimension")
    axis = normalize_axis(axis, x.ndim)
    r = _argsort(x._data, x._device.xp, axis, descending, stable)
    return new(r.astype(_dt.I64, copy=False), x._device)


@oom_guard
def sort(x, /, *, axis=-1, descending=False, stable=True):
    """Sorted copy of x along axis (standard: sorting_functions.sort)."""
    x = as_array(x)
    if x.ndim == 0:
        raise ValueError("sort needs at least one dimension")
    axis = normalize_axis(axis, x.ndim)
    xp = x._device.xp
    if descending:
        idx = _argsort(x._data, xp, axis, True, stable)
        return new(xp.take_along_axis(x._data, idx, axis=axis), x._device)
    r = xp.sort(x._data, axis=axis, kind="stable" if stable else None) if xp.__name__ == "numpy" \
        else xp.sort(x._data, axis=axis)
    return new(r, x._device)
