"""Manipulation functions (standard section "Manipulation Functions")."""
import operator

from .. import _promotion, _version
from ._common import CPU, Array, as_array, as_arrays, new, normalize_axes, normalize_axis, oom_guard


def _common_dtype(arrays):
    dt = arrays[0]._data.dtype
    for a in arrays[1:]:
        dt = _promotion.result_dtype(dt, a._data.dtype)
    return [a._data if a._data.dtype == dt else a._data.astype(dt) for a in arrays]


def broadcast_shapes(*shapes):
    """The shape that shapes broadcast to (standard: manipulation_functions.broadcast_shapes)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            d = operator.index(d)
            if d < 0:
                raise ValueError(f"negative dimension {d} in shape {tuple(s)}: shapes cannot be broadcast")
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise ValueError(f"shapes {tuple(shapes)} cannot be broadcast together")
    return tuple(out)


@oom_guard
def broadcast_arrays(*arrays):
    """Broadcast arrays against each other (standard: manipulation_functions.broadcast_arrays). As NumPy's, an
    array that already has the broadcast shape comes back as itself (writable where it was); the others are
    read-only broadcast views (NumPy's warn on writing, and a write there would change several elements)."""
    arrays = as_arrays(*arrays)
    shape = broadcast_shapes(*(a.shape for a in arrays))
    out = [a if a.shape == shape else broadcast_to(a, shape) for a in arrays]
    return tuple(out) if _version.get() >= "2025.12" else out  # a list before 2025.12


@oom_guard
def broadcast_to(x, /, shape):
    """Broadcast x to shape (standard: manipulation_functions.broadcast_to)."""
    x = as_array(x)
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    if broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    return new(x._device.xp.broadcast_to(x._data, shape), x._device)


@oom_guard
def concat(arrays, /, *, axis=0):
    """Join arrays along an existing axis; axis=None flattens first (standard: manipulation_functions.concat)."""
    arrays = as_arrays(*arrays)
    if not arrays:
        raise ValueError("concat needs at least one array")
    dev = arrays[0]._device
    datas = _common_dtype(arrays)
    if axis is None:
        datas = [d.reshape(-1) for d in datas]
        axis = 0
    else:
        nd = arrays[0].ndim
        if nd == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated along an axis")
        for a in arrays:
            if a.ndim != nd:
                raise ValueError(f"concat needs arrays of equal rank, got {[a.ndim for a in arrays]}")
        axis = normalize_axis(axis, nd)
    return new(dev.xp.concatenate(datas, axis=axis), dev)


def expand_dims(x, /, axis=0):
    """Insert size-one axes (standard: manipulation_functions.expand_dims)."""
    x = as_array(x)
    n = x.ndim + (len(axis) if isinstance(axis, tuple) else 1)
    axes = normalize_axes(axis, n)
    return new(x._device.xp.expand_dims(x._data, axes), x._device)


def flip(x, /, *, axis=None):
    """Reverse the order of elements along axes (standard: manipulation_functions.flip)."""
    x = as_array(x)
    axes = normalize_axes(axis, x.ndim)
    return new(x._device.xp.flip(x._data, axis=axes), x._device)


def moveaxis(x, source, destination, /):
    """Move axes to new positions (standard: manipulation_functions.moveaxis)."""
    x = as_array(x)
    src = normalize_axes(source, x.ndim, "source")
    dst = normalize_axes(destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(f"source {source} and destination {destination} need the same number of axes")
    return new(x._device.xp.moveaxis(x._data, src, dst), x._device)


def permute_dims(x, /, axes):
    """Permute the axes (standard: manipulation_functions.permute_dims)."""
    x = as_array(x)
    axes = tuple(axes)
    if sorted(normalize_axes(axes, x.ndim)) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} are not a permutation of the {x.ndim} axes")
    return new(x._data.transpose(axes), x._device)


@oom_guard
def repeat(x, repeats, /, *, axis=None):
    """Repeat each element (standard: manipulation_functions.repeat)."""
    x = as_array(x)
    if repeats.__class__ is Array:
        if repeats._device is not x._device:
            raise ValueError(f"repeats is on {repeats._device}, x on {x._device}")
        r = repeats._data
        if r.ndim > 1:
            raise ValueError("repeats must be an int or a one-dimensional array")
        if x._device is not CPU:
            r = r.get()
        r = r.tolist() if r.ndim else int(r)
    else:
        r = repeats
    if (isinstance(r, int) and r < 0) or (isinstance(r, list) and any(v < 0 for v in r)):
        raise ValueError("repeats must be non-negative")
    if axis is None:
        data = x._data.reshape(-1)
        axis = 0
    else:
        axis = normalize_axis(axis, x.ndim)
        data = x._data
    return new(x._device.xp.repeat(data, r, axis=axis), x._device)


@oom_guard
def reshape(x, /, shape, *, copy=None):
    """Reshape x (standard: manipulation_functions.reshape); copy=False raises if a copy is needed."""
    x = as_array(x)
    shape = (shape,) if isinstance(shape, int) else tuple(operator.index(s) for s in shape)
    if sum(1 for s in shape if s == -1) > 1:
        raise ValueError(f"only one dimension can be -1, got shape {shape}")
    if any(s < -1 for s in shape):
        raise ValueError(f"invalid shape {shape}")
    data = x._data
    if copy:
        return new(data.reshape(shape).copy(), x._device)
    if copy is False:
        try:
            out = data.view()
            out.shape = shape
        except AttributeError:
            raise ValueError(f"reshaping {x.shape} to {shape} needs a copy, but copy=False") from None
        return new(out, x._device)
    return new(data.reshape(shape), x._device)


@oom_guard
def roll(x, /, shift, *, axis=None):
    """Roll elements along axes (standard: manipulation_functions.roll)."""
    x = as_array(x)
    if axis is not None:
        axis = normalize_axes(axis, x.ndim)
        if not isinstance(shift, tuple):
            shift = (shift,) * len(axis) if len(axis) > 1 else shift
        else:
            shift = tuple(shift)
        if len(axis) == 1 and not isinstance(shift, tuple):
            axis = axis[0]
    return new(x._device.xp.roll(x._data, shift, axis=axis), x._device)


def squeeze(x, /, axis):
    """Remove size-one axes (standard: manipulation_functions.squeeze); a non-singleton axis raises ValueError."""
    x = as_array(x)
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {x.shape[a]}")
    return new(x._data.squeeze(axis=axes), x._device)


@oom_guard
def stack(arrays, /, *, axis=0):
    """Join arrays along a new axis (standard: manipulation_functions.stack)."""
    arrays = as_arrays(*arrays)
    if not arrays:
        raise ValueError("stack needs at least one array")
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack needs arrays of one shape, got {sorted(shapes)}")
    axis = normalize_axis(axis, arrays[0].ndim + 1)
    dev = arrays[0]._device
    return new(dev.xp.stack(_common_dtype(arrays), axis=axis), dev)


@oom_guard
def tile(x, repetitions, /):
    """Tile x (standard: manipulation_functions.tile)."""
    x = as_array(x)
    reps = (repetitions,) if isinstance(repetitions, int) else tuple(repetitions)
    if any(r < 0 for r in reps):
        raise ValueError("repetitions must be non-negative")
    return new(x._device.xp.tile(x._data, reps), x._device)


def unstack(x, /, *, axis=0):
    """Split x into arrays along axis (standard: manipulation_functions.unstack)."""
    x = as_array(x)
    if x.ndim == 0:
        raise ValueError("cannot unstack a zero-dimensional array")
    axis = normalize_axis(axis, x.ndim)
    data = x._device.xp.moveaxis(x._data, axis, 0)
    return tuple(new(data[i], x._device) for i in range(data.shape[0]))
