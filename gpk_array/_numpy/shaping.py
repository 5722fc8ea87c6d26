"""Joining, splitting, reshaping and rearranging with NumPy's signatures (positional axis, ``order=``, ``out=``),
plus NumPy-only names (hstack, vstack, split, pad, rot90, insert, block, ...)."""
import builtins
import operator

import numpy as _np

from .. import _dtypes as _dt
from .. import _hostdata
from .._array import Array
from .._errors import DeviceError
from .._ops import manipulation as _mp
from .._device import CPU, default_device
from .._ops._common import raise_oom
from ._util import data, dev_of, finish, host, new, normalize_axis, oom_guard, shape_arg, std_fn, to_array

__all__ = ["concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack", "block",
           "split", "array_split", "hsplit", "vsplit", "dsplit", "reshape", "ravel", "transpose", "swapaxes",
           "rollaxis", "squeeze", "flip", "fliplr", "flipud", "rot90", "roll", "repeat", "pad", "atleast_1d",
           "atleast_2d", "atleast_3d", "append", "insert", "delete", "resize", "trim_zeros"]

_concat = std_fn("concat", _mp)
_stack = std_fn("stack", _mp)
_reshape = std_fn("reshape", _mp)
_squeeze = std_fn("squeeze", _mp)
_flip = std_fn("flip", _mp)
_roll = std_fn("roll", _mp)
_repeat = std_fn("repeat", _mp)


def _seq(arrays):
    if arrays.__class__ is Array:
        return [arrays[i] for i in range(arrays.shape[0])]
    if arrays.__class__ is list or arrays.__class__ is tuple:
        return arrays
    return list(arrays)


def _cast(r, dtype):
    if dtype is None:
        return r
    dt = _dt.to_dtype(dtype)
    return r if r._data.dtype == dt else new(r._data.astype(dt), r._device)


def concat(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """NumPy's ``concatenate``/``concat`` (and the standard's ``concat``): axis=None joins flattened arrays."""
    if out is None and dtype is None and axis.__class__ is int and (arrays.__class__ is list or
                                                                     arrays.__class__ is tuple) and arrays:
        # fast path: Arrays of one device, dtype and rank (no promotion, no checks beyond the backend's)
        first = arrays[0]
        if first.__class__ is Array:
            dev, dt, nd = first._device, first._data.dtype, first._data.ndim
            for a in arrays:
                if a.__class__ is not Array or a._device is not dev or a._data.dtype != dt or a._data.ndim != nd:
                    break
            else:
                if -nd <= axis < nd:
                    try:
                        return new(dev.xp.concatenate([a._data for a in arrays], axis=axis), dev)
                    except MemoryError as e:
                        raise_oom(e)
    try:
        r = _cast(_concat(_seq(arrays), axis=axis), dtype)
    except (TypeError, DeviceError) as e:  # strings, dates, records: NumPy's (gpk_array/_hostdata.py)
        if out is not None:
            raise
        return _hostdata.fallback(e, _np.concatenate, list(_seq(arrays)), axis=axis, dtype=dtype, casting=casting)
    return r if out is None else finish(r._data, r._device, out)


concatenate = concat


def stack(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """NumPy's ``stack`` (and the standard's)."""
    r = _cast(_stack(_seq(arrays), axis=axis), dtype)
    return r if out is None else finish(r._data, r._device, out)


def _atleast(x, n):
    d = x._data
    if d.ndim >= n:
        return x
    if n == 1:
        v = d.reshape(1)
    elif n == 2:
        v = d.reshape((1,) * (2 - d.ndim) + d.shape)
    elif d.ndim == 0:
        v = d.reshape(1, 1, 1)
    else:
        v = d[None, :, None] if d.ndim == 1 else d[:, :, None]
    r = new(v, x._device)
    r._base = x          # a view: NumPy's atleast_2d(x).base is x
    return r


def _arrays(seq):
    seq = _seq(seq)
    dev = dev_of(*seq)
    return [to_array(a, dev) for a in seq]


def atleast_1d(*arys):
    """Each input as an array of at least one dimension (a 0-d one becomes shape (1,)); one array for one input, a
    tuple for several (NumPy's ``atleast_1d``)."""
    r = tuple(_atleast(to_array(a, dev_of(a)), 1) for a in arys)
    return r[0] if len(r) == 1 else r


def atleast_2d(*arys):
    """Each input as an array of at least two dimensions (new axes in front); one array for one input, a tuple for
    several (NumPy's ``atleast_2d``)."""
    r = tuple(_atleast(to_array(a, dev_of(a)), 2) for a in arys)
    return r[0] if len(r) == 1 else r


def atleast_3d(*arys):
    """Each input as an array of at least three dimensions (NumPy's rule: (N,) becomes (1, N, 1), (M, N) becomes (M,
    N, 1)); one array for one input, a tuple for several."""
    r = tuple(_atleast(to_array(a, dev_of(a)), 3) for a in arys)
    return r[0] if len(r) == 1 else r


@oom_guard
def hstack(tup, *, dtype=None, casting="same_kind"):
    """Join horizontally: along axis 1, or axis 0 for one-dimensional arrays."""
    arrs = [_atleast(a, 1) for a in _arrays(tup)]
    return concat(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype)


@oom_guard
def vstack(tup, *, dtype=None, casting="same_kind"):
    """Join vertically (along axis 0), one-dimensional arrays as rows."""
    return concat([_atleast(a, 2) for a in _arrays(tup)], axis=0, dtype=dtype)


row_stack = vstack


@oom_guard
def dstack(tup):
    """Join along the third axis."""
    return concat([_atleast(a, 3) for a in _arrays(tup)], axis=2)


@oom_guard
def column_stack(tup):
    """Join one-dimensional arrays as columns of a 2-D array (2-D arrays are joined as they are)."""
    arrs = []
    for a in _arrays(tup):
        if a._data.ndim < 2:
            a = new(a._data.reshape(-1, 1), a._device)
        arrs.append(a)
    return concat(arrs, axis=1)


def _depth(x):
    if x.__class__ is list:
        return 1 + (_depth(x[0]) if x else 0)
    return 0


def _leaf_ndim(x):
    if x.__class__ is list:
        return builtins.max((_leaf_ndim(v) for v in x), default=0)
    return to_array(x, dev_of(x)).ndim if x.__class__ is not Array else x.ndim


@oom_guard
def block(arrays):
    """Assemble an array from nested lists of blocks (innermost lists join along the last axis)."""
    depth = _depth(arrays)
    if depth == 0:
        return to_array(arrays).__copy__()
    nd = builtins.max(_leaf_ndim(arrays), depth)
    dev = _first_device(arrays) or default_device()  # no Array among the blocks (np.block([1, 2, 3]))

    def build(x, level):
        if x.__class__ is list:
            parts = [build(v, level + 1) for v in x]
            return concat(parts, axis=-(depth - level))
        a = to_array(x, dev)
        return new(a._data.reshape((1,) * (nd - a.ndim) + a.shape), dev) if a.ndim < nd else a
    return build(arrays, 0)


def _first_device(x):
    if x.__class__ is list:
        for v in x:
            d = _first_device(v)
            if d is not None:
                return d
        return None if x else None
    return x._device if x.__class__ is Array else None


def _sections(ios):
    if ios.__class__ is Array:
        h = ios._data if ios._device is CPU else ios._data.get()
        return h.tolist() if h.ndim else int(h)
    if isinstance(ios, _np.ndarray):
        return ios.tolist() if ios.ndim else int(ios)
    if isinstance(ios, (list, tuple)):
        return [operator.index(i) for i in ios]
    return operator.index(ios)


@oom_guard
def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (ValueError if they are not equal) or at the given indices."""
    x = to_array(ary)
    ios = _sections(indices_or_sections)
    axis = normalize_axis(axis, x.ndim)
    if ios.__class__ is int and x.shape[axis] % ios:
        raise ValueError("array split does not result in an equal division")
    return [new(p, x._device) for p in x._device.xp.array_split(x._data, ios, axis=axis)]


@oom_guard
def array_split(ary, indices_or_sections, axis=0):
    """Split into sections of nearly equal size, or at the given indices."""
    x = to_array(ary)
    ios = _sections(indices_or_sections)
    axis = normalize_axis(axis, x.ndim)
    return [new(p, x._device) for p in x._device.xp.array_split(x._data, ios, axis=axis)]


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays) into a list of arrays, NumPy's ``hsplit``: ``indices_or_sections``
    is a number of equal parts or a list of split points."""
    x = to_array(ary)
    if x.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(x, indices_or_sections, axis=1 if x.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 into a list of arrays, NumPy's ``vsplit`` (arrays of 2 or more dimensions)."""
    x = to_array(ary)
    if x.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 into a list of arrays, NumPy's ``dsplit`` (arrays of 3 or more dimensions)."""
    x = to_array(ary)
    if x.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, axis=2)


# --- shape ----------------------------------------------------------------------------------------------------
def _shape_of(shape):
    if shape.__class__ is Array:
        return tuple(int(v) for v in (shape._data if shape._device is CPU else shape._data.get()).reshape(-1))
    return shape


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    """NumPy's ``reshape(a, shape, order='C', *, copy=None)`` (and the standard's)."""
    if shape.__class__ is tuple and a.__class__ is Array and order == "C" and copy is None and newshape is None \
            and (not shape or min(shape) >= -1) and shape.count(-1) <= 1:
        try:  # fast path: a tuple shape, no copy asked for (the backend checks the ints and the size)
            return new(a._data.reshape(shape), a._device)
        except MemoryError as e:
            raise_oom(e)
    if shape is None:
        if newshape is None:
            raise TypeError("reshape() missing the required argument 'shape'")
        shape = newshape
    shape = _shape_of(shape)
    if order == "C":
        return _reshape(a, shape, copy=copy)
    x = to_array(a)
    if order == "A":
        order = "F" if x._data.flags.f_contiguous and not x._data.flags.c_contiguous else "C"
    r = x._device.xp.reshape(x._data, shape, order=order)
    return new(r.copy(order=order) if copy else r, x._device)


@oom_guard
def ravel(a, order="C"):
    """The flattened array (a view where possible)."""
    x = to_array(a)
    return new(x._device.xp.ravel(x._data, order=order), x._device)


def transpose(a, axes=None):
    """Permute axes: reversed when axes is None (NumPy's ``transpose``)."""
    x = to_array(a)
    if axes is None:
        return new(x._data.transpose(), x._device)
    axes = tuple(normalize_axis(i, x.ndim) for i in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError("axes don't match array")
    return new(x._data.transpose(axes), x._device)


def swapaxes(a, axis1, axis2):
    """A view of ``a`` with ``axis1`` and ``axis2`` interchanged (NumPy's ``swapaxes``)."""
    x = to_array(a)
    return new(x._data.swapaxes(normalize_axis(axis1, x.ndim, "axis1"),
                                   normalize_axis(axis2, x.ndim, "axis2")), x._device)


def rollaxis(a, axis, start=0):
    """``axis`` moved to position ``start`` (NumPy's ``rollaxis``; ``moveaxis`` is the clearer spelling)."""
    x = to_array(a)
    return new(x._device.xp.rollaxis(x._data, axis, start), x._device)


def squeeze(a, /, axis=None):
    """Remove size-one axes: all of them when axis is None (NumPy's), else the standard's ``squeeze``."""
    if axis is None:
        x = to_array(a)
        return new(x._data.squeeze(), x._device)
    return _squeeze(a, axis)


def flip(m, /, axis=None):
    """Reverse the order of elements along axis (all axes when None)."""
    return _flip(m, axis=tuple(axis) if axis.__class__ is list else axis)


def fliplr(m):
    """Columns in reverse order: ``m[:, ::-1]`` (NumPy's ``fliplr``; 2 or more dimensions)."""
    x = to_array(m)
    if x.ndim < 2:
        raise ValueError("fliplr needs an array of at least 2 dimensions")
    return new(x._data[:, ::-1], x._device)


def flipud(m):
    """Rows in reverse order: ``m[::-1]`` (NumPy's ``flipud``; 1 or more dimensions)."""
    x = to_array(m)
    if x.ndim < 1:
        raise ValueError("flipud needs an array of at least 1 dimension")
    return new(x._data[::-1], x._device)


@oom_guard
def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees k times in the plane of axes."""
    x = to_array(m)
    return new(x._device.xp.rot90(x._data, k, axes=tuple(axes)), x._device)


def _int_or_tuple(v):
    if v.__class__ is Array:
        h = v._data if v._device is CPU else v._data.get()
        return h.tolist() if h.ndim else int(h)
    if isinstance(v, _np.ndarray):
        return tuple(v.tolist()) if v.ndim else int(v)
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, _np.integer):
        return int(v)
    return v


def roll(a, /, shift, axis=None):
    """NumPy's ``roll(a, shift, axis=None)`` (and the standard's)."""
    shift = _int_or_tuple(shift)
    if shift.__class__ is list:
        shift = tuple(shift)
    axis = _int_or_tuple(axis)
    if shift.__class__ is tuple and axis.__class__ is int:
        axis = (axis,) * len(shift)
    if axis is None and shift.__class__ is tuple:
        x = to_array(a)
        return new(x._device.xp.roll(x._data.reshape(-1), builtins.sum(shift)).reshape(x.shape), x._device)
    if axis.__class__ is tuple:
        if shift.__class__ is not tuple:
            shift = (shift,) * len(axis)
        elif len(shift) != len(axis):
            if len(shift) == 1:
                shift = shift * len(axis)
            elif len(axis) == 1:
                axis = axis * len(shift)
            else:
                raise ValueError("'shift' and 'axis' should be scalars or 1D sequences of the same length")
        x = to_array(a)
        total = {}
        for s, ax in zip(shift, axis):
            k = normalize_axis(ax, x.ndim)
            total[k] = total.get(k, 0) + s
        return _roll(x, tuple(total.values()), axis=tuple(total))
    return _roll(a, shift, axis=axis)


def repeat(a, repeats, /, axis=None):
    """NumPy's ``repeat(a, repeats, axis=None)`` (and the standard's)."""
    if isinstance(repeats, _np.ndarray):
        repeats = repeats.tolist() if repeats.ndim else int(repeats)
    elif isinstance(repeats, _np.integer):
        repeats = int(repeats)
    elif repeats.__class__ is tuple:
        repeats = list(repeats)
    return _repeat(a, repeats, axis=axis)


def _host_param(v):
    """Small parameter structures (pad widths, constant values) with Arrays turned into Python values."""
    if v.__class__ is Array:
        h = v._data if v._device is CPU else v._data.get()
        return h.tolist()
    if isinstance(v, _np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return type(v)(_host_param(i) for i in v)
    return v


@oom_guard
def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's modes: constant, edge, linear_ramp, maximum, mean, median, minimum, reflect,
    symmetric, wrap, empty)."""
    x = to_array(array)
    xp = x._device.xp
    if callable(mode) and xp is not _np:
        return _pad_callable(x, pad_width, mode, kwargs)
    kw = {k: _host_param(v) for k, v in kwargs.items()}
    if mode == "median" and xp is not _np:  # CuPy's pad has no median mode
        return _pad_median(x, _host_param(pad_width), kw)
    return new(xp.pad(x._data, _host_param(pad_width), mode=mode, **kw), x._device)


def _pad_median(x, pad_width, kwargs):
    """NumPy's pad(mode="median") on the device: axis after axis, each side filled with the median of the first
    (last) stat_length entries along the axis of the array padded so far, rounded for integer dtypes."""
    unknown = set(kwargs) - {"stat_length"}
    if unknown:
        raise ValueError(f"unsupported keyword arguments for mode 'median': {sorted(unknown)}")
    xp, d = x._device.xp, x._data
    pw = _np.broadcast_to(_np.asarray(pad_width), (d.ndim, 2)).astype(_np.intp)
    if (pw < 0).any():
        raise ValueError("index can't contain negative values")
    sl = kwargs.get("stat_length")
    if sl is not None:
        sl = _np.broadcast_to(_np.asarray(sl), (d.ndim, 2)).astype(_np.intp)
        if (sl < 0).any():
            raise ValueError("index can't contain negative values")
    for axis in range(d.ndim):
        parts = []
        for side, count in enumerate(pw[axis]):
            if count == 0:
                continue
            n = d.shape[axis]
            length = n if sl is None else min(int(sl[axis][side]), n)
            if length == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            window = [slice(None)] * d.ndim
            window[axis] = slice(0, length) if side == 0 else slice(n - length, n)
            m = xp.median(d[tuple(window)], axis=axis, keepdims=True)
            if d.dtype.kind in "biu":
                m = xp.around(m)
            shape = list(d.shape)
            shape[axis] = int(count)
            parts.append((side, xp.broadcast_to(m.astype(d.dtype), tuple(shape))))
        if parts:
            before = [p for side, p in parts if side == 0]
            after = [p for side, p in parts if side == 1]
            d = xp.concatenate(before + [d] + after, axis=axis)
    return new(xp.ascontiguousarray(d), x._device)


def _pad_callable(x, pad_width, function, kwargs):
    """NumPy's pad with a function as mode, on the device: zeros around x, then function(vector, pad_width[axis],
    axis, kwargs) on every 1-D view along each axis in turn (an Array writing into the padded result)."""
    dev, xp = x._device, x._device.xp
    pw = _np.broadcast_to(_np.asarray(_host_param(pad_width)), (x.ndim, 2)).astype(_np.intp)
    if (pw < 0).any():
        raise ValueError("index can't contain negative values")
    padded = xp.pad(x._data, tuple(map(tuple, pw.tolist())), mode="constant")
    for axis in range(padded.ndim):
        view = xp.moveaxis(padded, axis, -1)
        for ind in _np.ndindex(view.shape[:-1]):
            function(new(view[ind], dev), pw[axis], axis, kwargs)
    return new(padded, dev)


@oom_guard
def append(arr, values, axis=None):
    """Values appended to the end (flattened when axis is None); strings and dates on the host
    (gpk_array/_hostdata.py)."""
    try:
        x = to_array(arr)
        dev = x._device
        v = data(values, dev)
    except (TypeError, DeviceError) as e:
        return _hostdata.fallback(e, _np.append, arr, values, axis=axis)
    if axis is None:
        return new(dev.xp.concatenate([x._data.reshape(-1), v.reshape(-1)]), dev)
    return new(dev.xp.concatenate([x._data, v], axis=normalize_axis(axis, x.ndim)), dev)


@oom_guard
def delete(arr, obj, axis=None):
    """A copy without the entries obj (int, slice, sequence or boolean mask) along axis."""
    x = to_array(arr)
    dev = x._device
    xp = dev.xp
    if isinstance(obj, slice):
        o = obj
    elif obj.__class__ is Array:
        o = obj._data
    elif isinstance(obj, (list, tuple, _np.ndarray)):
        o = xp.asarray(obj)
    else:
        o = operator.index(obj)
    d = x._data
    if axis is None:
        d = d.reshape(-1)
        axis = 0
    return new(xp.delete(d, o, axis=axis), dev)


@oom_guard
def insert(arr, obj, values, axis=None):
    """Values inserted before the given indices along axis (NumPy's ``insert``)."""
    x = to_array(arr)
    dev = x._device
    xp = dev.xp
    if xp is _np:
        o = obj
        if obj.__class__ is Array:
            o = obj._data
        return new(_np.insert(x._data, o, data(values, dev), axis=axis), dev)
    d = x._data
    if axis is None:
        d = d.reshape(-1)
        axis = 0
    axis = normalize_axis(axis, d.ndim)
    n = d.shape[axis]
    if isinstance(obj, slice):
        idx = _np.arange(*obj.indices(n))
    elif obj.__class__ is Array:
        idx = obj._data.get()
    else:
        idx = _np.asarray(obj)
    if idx.dtype.kind == "b":
        raise TypeError("insert takes integer indices, not a boolean mask")
    vals = data(values, dev).astype(d.dtype, copy=False)
    if idx.ndim == 0:
        i = int(idx)
        if not -n <= i <= n:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
        i = i + n if i < 0 else i
        vals = vals.reshape((1,) * (d.ndim - vals.ndim) + vals.shape)
        vals = xp.moveaxis(vals, 0, axis)
        k = vals.shape[axis]
        shape = list(d.shape)
        shape[axis] = n + k
        out = xp.empty(tuple(shape), dtype=d.dtype)
        lead = (slice(None),) * axis
        out[lead + (slice(None, i),)] = d[lead + (slice(None, i),)]
        out[lead + (slice(i, i + k),)] = vals
        out[lead + (slice(i + k, None),)] = d[lead + (slice(i, None),)]
        return new(out, dev)
    idx = idx.astype(_np.int64).copy()
    if ((idx < -n) | (idx > n)).any():
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    idx[idx < 0] += n
    k = idx.shape[0]
    order = _np.argsort(idx, kind="stable")
    idx[order] += _np.arange(k)
    shape = list(d.shape)
    shape[axis] = n + k
    out = xp.empty(tuple(shape), dtype=d.dtype)
    keep = _np.ones(n + k, dtype=bool)
    keep[idx] = False
    lead = (slice(None),) * axis
    out[lead + (xp.asarray(idx),)] = vals.reshape((1,) * (d.ndim - vals.ndim) + vals.shape)
    out[lead + (xp.asarray(keep),)] = d
    return new(out, dev)


@oom_guard
def resize(a, new_shape):
    """A new array of new_shape holding a's values in C order, repeated as needed (NumPy's ``resize``: the layout
    of ``a``, C or Fortran, does not change the values; zeros where ``a`` or the new shape is empty)."""
    x = to_array(a)
    xp = x._device.xp
    shape = shape_arg(new_shape)
    if any(n < 0 for n in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = 1
    for n in shape:
        size *= n
    d = x._data
    flat = d.reshape(-1) if d.flags.c_contiguous else d.ravel()   # C order, whatever a's layout
    if flat.shape[0] == 0 or size == 0:
        return new(xp.zeros(shape, dtype=d.dtype), x._device)
    reps = -(-size // flat.shape[0])
    out = xp.tile(flat, reps)[:size] if reps > 1 else flat[:size].copy()
    return new(out.reshape(shape), x._device)


@oom_guard
def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading ("f") and/or trailing ("b") zeros along ``axis`` (an int, a tuple, or None for
    every axis: the bounding box of the nonzero entries), as NumPy's ``trim_zeros``; lists and tuples give a list
    or tuple, as NumPy's. On a CUDA device the box's 2 * ndim bounds are read back to the host (they give the
    result's shape)."""
    if filt.__class__ is list or filt.__class__ is tuple:
        return _np.trim_zeros(filt, trim, axis)
    x = to_array(filt)
    t = trim.lower()
    if t not in ("fb", "bf", "f", "b"):
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    d = x._data
    axes = tuple(range(d.ndim)) if axis is None else \
        _np.lib.array_utils.normalize_axis_tuple(axis, d.ndim, argname="axis")
    if not axes:
        return x
    xp = x._device.xp
    nz = xp.argwhere(d)
    if nz.shape[0] == 0:
        start = stop = [0] * d.ndim
    else:
        bounds = host(new(xp.stack([nz.min(axis=0), nz.max(axis=0) + 1]), x._device))
        start = [int(v) for v in bounds[0]] if "f" in t else [None] * d.ndim
        stop = [int(v) for v in bounds[1]] if "b" in t else [None] * d.ndim
    key = tuple(slice(start[a], stop[a]) if a in axes else slice(None) for a in range(d.ndim))
    return new(d[key], x._device)
