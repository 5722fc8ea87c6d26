"""Sorting, searching and set functions with NumPy's signatures: ``sort(a, axis, kind)`` with axis=None
flattening, argsort kinds, lexsort, partition, searchsorted with positional side, NumPy's ``unique`` and the
``*1d`` set functions.

Without ``kind``/``stable``, sorts are stable (the standard's default); NumPy's default quicksort orders equal
keys arbitrarily, so argsort results can differ from NumPy's only in the order of ties.
"""
import numpy as _np

from .. import _dtypes as _dt
from .. import _hostdata
from .._array import Array
from .._device import CPU
from .._errors import DeviceError
from .._ops import searching as _se
from .._ops import sets as _sets
from .._ops import sorting as _so
from ._util import data, dev_of, new, normalize_axis, oom_guard, std_fn, to_array

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "searchsorted", "unique", "isin",
           "intersect1d", "union1d", "setdiff1d", "setxor1d", "msort", "sort_complex"]

_sort = std_fn("sort", _so)
_argsort = std_fn("argsort", _so)
_searchsorted = std_fn("searchsorted", _se)
_isin = std_fn("isin", _sets)

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _flat_axis(a, axis):
    x = to_array(a)
    if axis is None:
        return new(x._data.reshape(-1), x._device), -1
    return x, axis


def _stability(kind, stable):
    if kind not in _KINDS:
        raise ValueError(f"sort kind must be one of {_KINDS[1:]}, got {kind!r}")
    if stable is not None:
        if kind is not None:
            raise ValueError("`kind` and `stable` parameters can't be provided at the same time")
        return bool(stable)
    return kind in (None, "mergesort", "stable")


def _host_sort(fn, a, axis, kind, order):
    """NumPy's sort/argsort by field names, for structured arrays (host-only, gpk_array/_hostdata.py): the sorted
    records on the CPU device, the indices on the default device."""
    h = _hostdata.host_value(a)
    if getattr(h, "dtype", None) is None or h.dtype.names is None:
        raise ValueError("order= (sorting by field names) needs an array with fields (a structured dtype)")
    return _hostdata.result(fn(h.view(_np.ndarray), axis=axis, kind=kind, order=order))


@oom_guard
def sort(a, /, axis=-1, kind=None, order=None, *, descending=False, stable=None):
    """Sorted copy (NumPy's ``sort(a, axis=-1, kind=None)``; the standard's ``descending``/``stable``);
    ``order=`` (field names) sorts structured arrays (on the CPU device, gpk_array/_hostdata.py)."""
    if order is not None:
        return _host_sort(_np.sort, a, axis, kind, order)
    x, axis = _flat_axis(a, axis)
    return _sort(x, axis=axis, descending=descending, stable=_stability(kind, stable))


@oom_guard
def argsort(a, /, axis=-1, kind=None, order=None, *, descending=False, stable=None):
    """Indices that sort a (NumPy's ``argsort``; the standard's ``descending``/``stable``). An explicit
    quicksort/heapsort kind on the CPU gives NumPy's own order of ties."""
    if order is not None:
        return _host_sort(_np.argsort, a, axis, kind, order)
    x, axis = _flat_axis(a, axis)
    st = _stability(kind, stable)
    if not st and not descending and x._device.xp is _np and x.ndim:
        r = _np.argsort(x._data, axis=normalize_axis(axis, x.ndim), kind=kind or "quicksort")
        return new(r.astype(_dt.I64, copy=False), x._device)
    return _argsort(x, axis=axis, descending=descending, stable=st)


@oom_guard
def msort(a):
    """A copy sorted along the first axis: ``sort(a, axis=0)`` (NumPy's removed ``msort``)."""
    return sort(a, axis=0)


@oom_guard
def sort_complex(a):
    """Sort by real part, then imaginary part; the result is complex (NumPy's ``sort_complex``)."""
    x = to_array(a)
    r = x._device.xp.sort(x._data, axis=-1)
    if r.dtype.kind != "c":
        r = r.astype(_np.complex64 if r.dtype.char in "bhBH" else _np.complex128)
    return new(r, x._device)


@oom_guard
def lexsort(keys, axis=-1):
    """Indirect stable sort by several keys; the last key is the primary one. Keys of strings or dates sort with
    NumPy's lexsort on the host (the indices go to the default device, gpk_array/_hostdata.py)."""
    try:
        return _lexsort(keys, axis)
    except TypeError as e:
        return _hostdata.fallback(e, _np.lexsort, list(keys) if keys.__class__ is tuple else keys, axis=axis)


def _lexsort(keys, axis):
    if keys.__class__ is list or keys.__class__ is tuple:
        dev = dev_of(*keys)
        ks = [data(k, dev) for k in keys]
    else:
        x = to_array(keys)
        dev = x._device
        ks = [x._data[i] for i in range(x._data.shape[0])] if x.ndim > 1 else [x._data]
    xp = dev.xp
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if xp is _np:
        return new(_np.lexsort(tuple(ks), axis=axis).astype(_dt.I64, copy=False), dev)
    ks = xp.broadcast_arrays(*ks)
    axis = normalize_axis(axis, ks[0].ndim)
    idx = xp.argsort(ks[0], axis=axis)
    for k in ks[1:]:
        j = xp.argsort(xp.take_along_axis(k, idx, axis=axis), axis=axis)
        idx = xp.take_along_axis(idx, j, axis=axis)
    return new(idx.astype(_dt.I64, copy=False), dev)


def _kth(kth):
    if hasattr(kth, "_data"):
        kth = kth._data if kth._device.xp is _np else kth._data.get()
    if isinstance(kth, _np.ndarray):
        kth = kth.tolist()
    return kth


@oom_guard
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """A copy with the kth element in its sorted place, smaller ones before it and larger after."""
    x, axis = _flat_axis(a, axis)
    return new(x._device.xp.partition(x._data, _kth(kth), axis=axis), x._device)


@oom_guard
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition a (see partition)."""
    x, axis = _flat_axis(a, axis)
    r = x._device.xp.argpartition(x._data, _kth(kth), axis=axis)
    return new(r.astype(_dt.I64, copy=False), x._device)


def searchsorted(a, v, /, side="left", sorter=None):
    """NumPy's ``searchsorted(a, v, side='left', sorter=None)`` (and the standard's); strings and dates on the host,
    the indices on the default device (gpk_array/_hostdata.py)."""
    if a.__class__ is Array and a._data.__class__ is _dt.HostData:
        return _hostdata.call(_np.searchsorted, a, v, side=side, sorter=sorter)
    return _searchsorted(a, v, side=side, sorter=sorter)


@oom_guard
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    """NumPy's ``unique``: sorted unique values and, on request, first indices, inverse indices and counts."""
    x = to_array(ar)
    dev = x._device
    xp = dev.xp
    if xp is _np:
        r = _np.unique(x._data, return_index=return_index, return_inverse=return_inverse,
                       return_counts=return_counts, axis=axis, equal_nan=equal_nan)
        if x._data.__class__ is _dt.HostData:  # the indices and counts of host-only data: by its rule
            return _hostdata.results(r)
    else:
        r = None if axis is None else _unique_rows(x._data, axis, xp, return_index, return_inverse, return_counts)
        if r is not None:
            return new(r[0], dev) if len(r) == 1 else tuple(new(v, dev) for v in r)
        r = xp.unique(x._data, return_index=return_index, return_inverse=return_inverse,
                      return_counts=return_counts, axis=axis, equal_nan=equal_nan)
        if return_inverse:
            r = list(r)
            k = 1 + int(return_index)
            inv = r[k]
            r[k] = inv.reshape(x.shape) if axis is None else inv.reshape(-1)
            r = tuple(r)
    if not isinstance(r, tuple):
        return new(r, dev)
    out = [new(r[0], dev)] + [new(v.astype(_dt.I64, copy=False), dev) for v in r[1:]]
    return tuple(out)


def _stable_argsort(xp, a):
    """A stable argsort of 1-D a: CuPy's is always stable and some versions take no ``kind``; NumPy-backed
    stand-ins need ``kind="stable"``."""
    try:
        return xp.argsort(a, kind="stable")
    except TypeError:
        return xp.argsort(a)


def _unique_rows(d, axis, xp, return_index, return_inverse, return_counts):
    """``unique(..., axis=axis)`` on a device by sorting, without a loop over rows in Python: the slices along
    ``axis`` become rows; integer and bool rows of at most 64 bits are packed into one order-preserving uint64 key
    (first element most significant, signed ints with the sign bit flipped) and sorted once; other real rows of
    up to 64 elements are ordered by one stable argsort per column (last column first, as ``lexsort``). Equal
    neighbours in that order form the groups (NaN never equal, as NumPy's row comparison). Returns a tuple of
    backing arrays (the unique slices, then index, inverse, counts as asked), or None where the backend's own
    ``unique`` is to run (complex, empty, float rows of more than 64 elements)."""
    axis = normalize_axis(axis, d.ndim)
    moved = xp.moveaxis(d, axis, 0)
    n = moved.shape[0]
    rest = moved.shape[1:]
    m = 1
    for k in rest:
        m *= k
    kind = d.dtype.kind
    if n == 0 or m == 0 or kind not in "biuf" or (kind == "f" and m > 64):
        return None
    rows = xp.ascontiguousarray(moved).reshape(n, m)
    bits = d.dtype.itemsize * 8
    if kind != "f" and m * bits <= 64:
        u = rows.view(_np.dtype(f"u{d.dtype.itemsize}")) if kind == "i" else rows
        if kind == "b":
            u = rows.view(_np.uint8)
        key = None
        for j in range(m):
            col = u[:, j].astype(_np.uint64)
            if kind == "i":
                col = col ^ _np.uint64(1 << (bits - 1))   # order-preserving: signed to unsigned
            shift = _np.uint64(bits * (m - 1 - j))
            col = col << shift if shift else col
            key = col if key is None else key | col
        order = _stable_argsort(xp, key)
        sk = key[order]
        neq = sk[1:] != sk[:-1]
    else:
        order = _stable_argsort(xp, rows[:, m - 1])
        for j in range(m - 2, -1, -1):
            order = order[_stable_argsort(xp, rows[order, j])]
        sr = rows[order]
        neq = (sr[1:] != sr[:-1]).any(axis=1)
    flag = xp.concatenate([xp.ones(1, dtype=bool), neq])
    first = xp.nonzero(flag)[0]
    index = order[first]
    uniq = xp.moveaxis(rows[index].reshape((first.shape[0],) + rest), 0, axis)
    out = [uniq]
    if return_index:
        out.append(index.astype(_dt.I64, copy=False))
    if return_inverse:
        inv = xp.empty(n, dtype=_dt.I64)
        inv[order] = xp.cumsum(flag, dtype=_dt.I64) - 1
        out.append(inv)
    if return_counts:
        out.append(xp.diff(xp.concatenate([first, xp.asarray([n], dtype=first.dtype)])).astype(_dt.I64,
                                                                                             copy=False))
    return tuple(out)


def isin(element, test_elements, /, assume_unique=False, invert=False, *, kind=None):
    """NumPy's ``isin`` (and the standard's); strings and dates on the host (gpk_array/_hostdata.py). A Python set
    as test_elements is one object to NumPy (never equal to an element: all False), as NumPy's docstring shows;
    pass ``list(s)`` to test its members."""
    if isinstance(test_elements, (set, frozenset)):
        x = to_array(element)
        return new(x._device.xp.full(x.shape, bool(invert)), x._device)
    if _is_host(element) or _is_host(test_elements) or (test_elements.__class__ is list and test_elements and
                                                          test_elements[0].__class__ in (str, bytes)):
        return _hostdata.call(_np.isin, element, test_elements, assume_unique=assume_unique, invert=invert)
    return _isin(element, test_elements, invert=invert)


def _is_host(x):
    return x.__class__ is Array and x._data.__class__ is _dt.HostData


def _two(ar1, ar2):
    dev = dev_of(ar1, ar2)
    try:
        return dev, data(ar1, dev), data(ar2, dev)
    except (TypeError, DeviceError):  # strings, dates: NumPy's on the host (gpk_array/_hostdata.py)
        if not _hostdata.any_host(ar1, ar2) and not _hostdata._has_text(ar1) and not _hostdata._has_text(ar2):
            raise
        return CPU, _np.asarray(_hostdata.host_value(ar1)).view(_dt.HostData), \
            _np.asarray(_hostdata.host_value(ar2)).view(_dt.HostData)


@oom_guard
def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """Sorted unique values in both arrays (and, on request, their first indices in each)."""
    dev, a, b = _two(ar1, ar2)
    r = dev.xp.intersect1d(a, b, assume_unique=assume_unique, return_indices=return_indices)
    if return_indices:
        return new(r[0], dev), new(r[1].astype(_dt.I64, copy=False), dev), new(r[2].astype(_dt.I64, copy=False),
                                                                               dev)
    return new(r, dev)


@oom_guard
def union1d(ar1, ar2):
    """The sorted unique values found in either input (flattened), NumPy's ``union1d``."""
    dev, a, b = _two(ar1, ar2)
    return new(dev.xp.union1d(a, b), dev)


@oom_guard
def setdiff1d(ar1, ar2, assume_unique=False):
    """The sorted unique values of ``ar1`` that are not in ``ar2``, NumPy's ``setdiff1d``."""
    dev, a, b = _two(ar1, ar2)
    return new(dev.xp.setdiff1d(a, b, assume_unique=assume_unique), dev)


@oom_guard
def setxor1d(ar1, ar2, assume_unique=False):
    """The sorted unique values found in exactly one of the inputs, NumPy's ``setxor1d``."""
    dev, a, b = _two(ar1, ar2)
    return new(dev.xp.setxor1d(a, b, assume_unique=assume_unique), dev)
