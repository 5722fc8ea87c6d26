"""Indexing (standard sections "Indexing" and "Indexing Functions"): basic, integer-array and boolean-mask
indexing for ``__getitem__`` / ``__setitem__``, plus ``take`` and ``take_along_axis``."""
import operator

import numpy as np

from .. import _config
from .. import _dtypes as _dt
from .. import _hostdata
from .._array import check_writeable
from .._dtypes import HOST_KINDS as _HOST_KINDS
from .._errors import DeviceError, OutOfMemoryError
from ._common import CPU, Array, as_array, new, normalize_axis, oom_guard, raise_oom
from .creation import _negative_zero, _to_gpu


def _key_part(k, dev):
    c = k.__class__
    if c is int or c is slice or k is None or k is Ellipsis:
        return k
    if c is Array:
        if k._device is not dev:
            raise DeviceError(f"index array is on {k._device}, the indexed array on {dev}")
        if _dt.kind(k._data.dtype) not in "biu":
            raise IndexError(f"arrays used as indices must be of integer or boolean dtype, got {k._data.dtype}")
        return k._data
    if c is bool:
        return k
    if isinstance(k, (list,)) or type(k).__module__ in ("numpy", "cupy"):
        return as_array(k, dev)._data
    if isinstance(k, float):
        raise IndexError(f"float index {k} is not allowed: only integers, slices, ellipsis, None and "
                         "integer or boolean arrays are valid indices")
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError(f"invalid index {k!r} of type {type(k).__name__}") from None


def _key(key, dev):
    if key.__class__ is tuple:
        return tuple(_key_part(k, dev) for k in key)
    return _key_part(key, dev)


def _check_ints(x, key):
    """Out-of-bounds integer indices raise IndexError naming the axis (the backend's message is terser)."""
    parts = key if key.__class__ is tuple else (key,)
    if any(p.__class__ is not int and p is not None and p is not Ellipsis and p.__class__ is not slice
           for p in parts):
        return
    if sum(p is Ellipsis for p in parts) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    shape = x._data.shape
    n_idx = sum(p is not None and p is not Ellipsis for p in parts)
    if n_idx > len(shape):
        raise IndexError(f"too many indices: array is {len(shape)}-dimensional, but {n_idx} were indexed")
    axis = 0
    for j, p in enumerate(parts):
        if p is Ellipsis:
            axis = len(shape) - sum(q is not None and q is not Ellipsis for q in parts[j + 1:])
            continue
        if p is None:
            continue
        if p.__class__ is int and not -shape[axis] <= p < shape[axis]:
            raise IndexError(f"index {p} is out of bounds for axis {axis} with size {shape[axis]}")
        axis += 1


# CuPy gathers with out-of-range integer indices wrapped (no error); NumPy raises IndexError. On CUDA every integer
# index array is checked on the device (one fused reduction per array, one host sync per call) unless
# GPK_INDEX_CHECK=0 turns the check off for speed (out-of-range indices then wrap, as in CuPy).
INDEX_CHECK = _config.get("GPK_INDEX_CHECK")
_oob_kernels = {}


def _out_of_range(xp, kind):
    """A fused reduction: whether any index of an integer array (kind 'i' or 'u') is outside [-n, n)."""
    k = _oob_kernels.get(kind)
    if k is None and not hasattr(xp, "ReductionKernel"):  # a backend without CuPy's kernels (the tests' fake GPU)
        return lambda i, n: xp.any((i >= n) if kind == "u" else (i < -n) | (i >= n))
    if k is None:
        test = "((long long)i < -n) || ((long long)i >= n)" if kind == "i" else \
            "(unsigned long long)i >= (unsigned long long)n"
        k = _oob_kernels[kind] = xp.ReductionKernel("T i, int64 n", "bool y", test, "a || b", "y = a", "false",
                                                    f"gpk_index_out_of_range_{kind}")
    return k


def _consumed(p):
    """How many axes of the indexed array a (normalized) key part takes."""
    if p is None or p is Ellipsis or p.__class__ is bool:  # a Python bool adds an axis, as None does
        return 0
    if hasattr(p, "dtype") and p.dtype.kind == "b":
        return p.ndim
    return 1


def check_index_arrays(x, key):
    """On a CUDA device: IndexError for an integer index array holding an index out of range for its axis."""
    if not INDEX_CHECK or x._device is CPU:
        return
    cuda = getattr(x._device.xp, "cuda", None)
    if cuda is not None and cuda.get_current_stream().is_capturing():
        return  # inside CUDA graph capture no host sync is allowed (the graph replays indices checked before)
    parts = key if key.__class__ is tuple else (key,)
    shape = x._data.shape
    found = []
    axis = 0
    for j, p in enumerate(parts):
        if p is Ellipsis:
            axis = len(shape) - sum(_consumed(q) for q in parts[j + 1:])
            continue
        if hasattr(p, "dtype") and p.dtype.kind in "iu" and p.size and axis < len(shape):
            found.append((axis, p, _out_of_range(x._device.xp, p.dtype.kind)(p, shape[axis])))
        axis += _consumed(p)
    if not found:
        return
    flag = found[0][2]
    for _, _, f in found[1:]:
        flag = flag | f
    if flag.item():  # the one host sync
        for ax, p, f in found:
            if f.item():
                n = shape[ax]
                bad = int(p[(p >= n) if p.dtype.kind == "u" else (p < -n) | (p >= n)].ravel()[0])
                raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")


def getitem(x, key):
    dev = x._device
    c = key.__class__
    try:
        if c is slice:
            r = new(x._data[key], dev)
            r._base = x
            return r
        if c is int:
            shape = x._data.shape
            if not shape or not -shape[0] <= key < shape[0]:
                _check_ints(x, key)
            r = new(x._data[key], dev)
            r._base = x
            return r
        if c is Array:
            k = _key_part(key, dev)
            if dev is not CPU:
                check_index_arrays(x, k)
            return new(x._data[k], dev)
        if c is tuple:
            if dev is CPU:
                # fast path: ints and slices on the CPU device, where NumPy's own checks raise what _check_ints
                # would (IndexError, with the axis and size named)
                for k in key:
                    if k.__class__ is not int and k.__class__ is not slice:
                        break
                else:
                    r = new(x._data[key], dev)
                    r._base = x
                    return r
            else:
                # fast path: one in-bounds int per axis (a single element)
                shape = x._data.shape
                if len(key) == len(shape):
                    for k, n in zip(key, shape):
                        if k.__class__ is not int or not -n <= k < n:
                            break
                    else:
                        r = new(x._data[key], dev)
                        r._base = x
                        return r
        k = _key(key, dev)
        _check_ints(x, k)
        if dev is not CPU:
            check_index_arrays(x, k)
        r = new(x._data[k], dev)
        r._base = x
        return r
    except MemoryError as e:
        if isinstance(e, OutOfMemoryError):
            raise
        raise OutOfMemoryError(str(e)) from e
    except (IndexError, DeviceError, TypeError):
        # field names (x['age'], x[['a', 'b']]) and index arrays of another device: for arrays of a host-only dtype
        if x._data.dtype.kind not in _HOST_KINDS:
            raise
        return _host_getitem(x, key)


def _host_getitem(x, key):
    """``x[key]`` for an array of a host-only dtype (gpk_array/_hostdata.py): NumPy's indexing, field names
    included, with index arrays of any device; a field or element of a standard dtype goes to the default device
    (on the CPU device it is a view, as in NumPy)."""
    r = _hostdata.result(x._data[_hostdata.host_value(key)])
    if r._device is CPU:
        r._base = x
    elif key.__class__ is str:  # a numeric field copied to the default device: writes through it reach x
        from .._hostfield import field
        r = field(r._data, r._device, x, key)
    return r


def setitem(x, key, value):
    """``x[key] = value`` (standard: array method ``__setitem__``), installed as ``Array.__setitem__``."""
    try:
        dev = x._device
        if dev is CPU:
            # fast path: an int or a slice key and a real Python scalar or an Array of the CPU device; NumPy's
            # own checks raise what the general path would (IndexError naming axis and size, ValueError for a
            # read-only destination or a shape mismatch)
            c = key.__class__
            if c is int or c is slice:
                v = value.__class__
                if v is float or v is int or v is bool:
                    x._data[key] = value
                    return
                if v is Array and value._device is CPU:
                    x._data[key] = value._data
                    return
        _setitem(x, key, value)
    except MemoryError as e:
        raise_oom(e)
    except (IndexError, TypeError, ValueError):  # DeviceError is a ValueError
        # field names, strings, dates and records (tuples) as values, index arrays and values of another device:
        # for arrays of a host-only dtype, NumPy's assignment (gpk_array/_hostdata.py)
        if x._data.dtype.kind not in _HOST_KINDS:
            raise
        x._data[_hostdata.host_value(key)] = _hostdata.host_value(value)


def _setitem(x, key, value):
    dev = x._device
    k = _key(key, dev)
    _check_ints(x, k)
    if dev is not CPU:
        check_writeable(x)
        d = x._data
        if 0 in d.strides and any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape)):
            # a broadcast view (NumPy's are read-only; CuPy would write one element through several indices)
            raise ValueError("assignment destination is read-only (a broadcast view)")
        check_index_arrays(x, k)
    if value.__class__ is Array:
        if value._device is not dev:
            raise DeviceError(f"value is on {value._device}, the array on {dev}")
        value = value._data
        if dev is not CPU and _overlaps(value, x._data):
            # NumPy copies a source that overlaps the destination before writing (``Y = Z.view(int32); Y[:] = Z``,
            # ``x[1:] = x[:-1]``): do the same, rather than rely on the order a CUDA kernel reads and writes in
            value = value.copy()
    elif not isinstance(value, (bool, int, float, complex)):
        value = as_array(value, dev)._data
    elif isinstance(value, complex) and _dt.kind(x._data.dtype) != "c":
        raise TypeError(f"cannot assign a complex value to an array of dtype {x._data.dtype}")
    elif dev is not CPU and isinstance(value, (float, complex)) and _negative_zero(value):
        # CuPy's scalar fill would drop the sign of -0: assign from a device array holding the value
        value = _to_gpu(dev, np.asarray(value, dtype=x._data.dtype), None)
    x._data[k] = value


def _extent(d):
    """[lo, hi) byte addresses a device array's elements lie in (its pointer, shape and strides; no device access)."""
    mem = getattr(d, "data", None)
    ptr = getattr(mem, "ptr", None)
    if ptr is None:  # an ndarray standing for a device array (the test suite's stand-in CUDA device)
        ptr = d.__array_interface__["data"][0]
    lo = hi = ptr
    for n, st in zip(d.shape, d.strides):
        if n == 0:
            return ptr, ptr
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + d.itemsize


def _overlaps(a, b):
    """Whether device arrays a and b may share memory (their byte extents intersect)."""
    if a.size == 0 or b.size == 0:
        return False
    alo, ahi = _extent(a)
    blo, bhi = _extent(b)
    return alo < bhi and blo < ahi


@oom_guard
def take(x, indices, /, *, axis=None):
    """Elements of x at indices along axis (standard: indexing_functions.take)."""
    x = as_array(x)
    if indices.__class__ is not Array:
        indices = as_array(indices, x._device)
    elif indices._device is not x._device:
        raise DeviceError(f"indices are on {indices._device}, x on {x._device}")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"take on a {x.ndim}-dimensional array needs an axis")
        axis = 0
    else:
        axis = normalize_axis(axis, x.ndim)
    if x._device is not CPU:
        check_index_arrays(x, (slice(None),) * axis + (indices._data,))
    return new(x._device.xp.take(x._data, indices._data, axis=axis), x._device)


def take_unchecked(x, indices, axis):
    """``take`` for indices gpk_array computed itself and knows to be in range (positions, cache rows): no CUDA
    bounds check, so no host sync. x and indices are Arrays on one device; axis is non-negative."""
    return new(x._device.xp.take(x._data, indices._data, axis=axis), x._device)


@oom_guard
def take_along_axis(x, indices, /, *, axis=-1):
    """Values of x at indices along axis (standard: indexing_functions.take_along_axis)."""
    x = as_array(x)
    indices = as_array(indices, x._device)
    if indices._device is not x._device:
        raise DeviceError(f"indices are on {indices._device}, x on {x._device}")
    if indices.ndim != x.ndim:
        raise ValueError(f"indices must have as many dimensions as x ({x.ndim}), got {indices.ndim}")
    axis = normalize_axis(axis, x.ndim)
    if x._device is not CPU:
        check_index_arrays(x, (slice(None),) * axis + (indices._data,))
    return new(x._device.xp.take_along_axis(x._data, indices._data, axis=axis), x._device)
