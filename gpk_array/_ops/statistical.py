"""Statistical functions (standard section "Statistical Functions") and the utility reductions all, any, diff."""
import builtins

from .. import _dtypes as _dt
from .. import _gpu
from ._common import CPU, Array, as_array, new, normalize_axes, normalize_axis, oom_guard, raise_oom


def _own(op, x, data, axes, keepdims, ddof=0):
    """Our reduction kernel's result as an Array where gpk_array/_gpu.py routes this CUDA reduction, else None."""
    if x._device is CPU:
        return None
    floor = _gpu.reduce_floor(op, data.dtype)
    if floor is None or data.size < floor:
        return None
    r = _gpu.reduce(op, data, axes, keepdims, ddof)
    return None if r is None else new(r, x._device)


def _sum_dtype(dt, dtype):
    """The standard's accumulator dtype: integers narrower than the default integer widen to it."""
    if dtype is not None:
        return _dt.to_dtype(dtype)
    k = _dt._KIND.get(dt, "")  # "": timedelta64 of the NumPy-facing names (gpk_array/_hostdata.py), its own sum
    if k == "b" or (k == "i" and dt.itemsize < 8):
        return _dt.I64
    if k == "u" and dt.itemsize < 8:
        return _dt.D("uint64")
    return dt


def _sum_plan(dt, dtype):
    """(accumulator dtype, whether our kernels' default-accumulator result serves, how the backend is called: 0 the
    method without a dtype, 1 with the accumulator dtype, 2 through float32 (half precision))."""
    acc = _sum_dtype(dt, dtype)
    own = dtype is None or acc == _sum_dtype(dt, None)
    if acc == _dt.BF16 or dt == _dt.BF16 or acc == _dt.F16:
        how = 2
    elif acc == dt and (acc.itemsize == 8 or _dt.kind(acc) in "fc"):
        # the backend's default accumulator is the input's own (floats, 64-bit integers): no dtype, a little less
        # host time in CuPy's call; narrower integers always name it (the default would widen sum(uint8,
        # dtype=uint8) to uint64)
        how = 0
    else:
        how = 1
    return acc, own, how


def _accumulating(name):
    """sum and prod: integers narrower than the default integer accumulate in it; half precision in float32."""
    plans = {}  # (input dtype, dtype argument) -> _sum_plan

    def fn(x, /, *, axis=None, dtype=None, keepdims=False):
        try:
            if x.__class__ is not Array:
                x = as_array(x)
            data = x._data
            try:
                acc, own, how = plans[(data.dtype, dtype)]
            except KeyError:
                acc, own, how = plans[(data.dtype, dtype)] = _sum_plan(data.dtype, dtype)
            except TypeError:  # an unhashable dtype argument: _sum_plan says what is wrong with it
                acc, own, how = _sum_plan(data.dtype, dtype)
            axes = None if axis is None else normalize_axes(axis, data.ndim)
            dev = x._device
            if own:
                r = _own(name, x, data, axes, keepdims)  # our kernels give the default accumulator's result
                if r is not None:
                    return r
            if how == 0:  # the method: less Python than xp.sum
                r = getattr(data, name)(axis=axes, keepdims=keepdims)
            elif how == 1:
                r = getattr(data, name)(axis=axes, dtype=acc, keepdims=keepdims)
            else:
                r = getattr(data.astype(_dt.F32), name)(axis=axes, keepdims=keepdims).astype(acc)
            return new(r, dev)
        except MemoryError as e:
            raise_oom(e)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"(standard: statistical_functions.{name})"
    return fn


def _extremum(name):
    """max and min: undefined (ValueError) over an empty axis."""
    def fn(x, /, *, axis=None, keepdims=False):
        try:
            if x.__class__ is not Array:
                x = as_array(x)
            data = x._data
            axes = None if axis is None else normalize_axes(axis, data.ndim)
            if data.size == 0 and (axes is None or builtins.any(data.shape[a] == 0 for a in axes)):
                raise ValueError(f"{name} of an empty array (or along an axis of size zero) is undefined")
            r = _own(name, x, data, axes, keepdims)
            if r is not None:
                return r
            return new(getattr(data, name)(axis=axes, keepdims=keepdims), x._device)
        except MemoryError as e:
            raise_oom(e)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"(standard: statistical_functions.{name})"
    return fn


sum = _accumulating("sum")
prod = _accumulating("prod")
max = _extremum("max")
min = _extremum("min")


@oom_guard
def mean(x, /, *, axis=None, keepdims=False):
    """Arithmetic mean (standard: statistical_functions.mean)."""
    x = as_array(x)
    axes = None if axis is None else normalize_axes(axis, x.ndim)
    data = x._data
    r = _own("mean", x, data, axes, keepdims)
    if r is not None:
        return r
    if data.dtype in (_dt.F16, _dt.BF16):
        return new(data.astype(_dt.F32).mean(axis=axes, keepdims=keepdims).astype(data.dtype), x._device)
    return new(data.mean(axis=axes, keepdims=keepdims), x._device)


def _moment(bname):
    @oom_guard
    def fn(x, /, *, axis=None, correction=0.0, keepdims=False):
        x = as_array(x)
        axes = None if axis is None else normalize_axes(axis, x.ndim)
        data = x._data
        r = _own(bname, x, data, axes, keepdims, correction)
        if r is not None:
            return r
        low = data.dtype in (_dt.F16, _dt.BF16)
        r = getattr(data.astype(_dt.F32) if low else data, bname)(axis=axes, ddof=correction, keepdims=keepdims)
        return new(r.astype(data.dtype) if low else r, x._device)
    fn.__name__ = bname
    fn.__doc__ = f"(standard: statistical_functions.{bname})"
    return fn


var = _moment("var")
std = _moment("std")


def _cumulative(name, bname, initial):
    @oom_guard
    def fn(x, /, *, axis=None, dtype=None, include_initial=False):
        x = as_array(x)
        xp = x._device.xp
        data = x._data
        if axis is None:
            if data.ndim > 1:
                raise ValueError(f"{name} of a {data.ndim}-dimensional array needs an axis")
            if data.ndim == 0:
                data = data.reshape(1)
            axis = 0
        else:
            axis = normalize_axis(axis, data.ndim)
        dt = _sum_dtype(data.dtype, dtype)
        if include_initial:
            # accumulate from the initial value itself, so that e.g. 0 + (-0) gives +0 as the sum does
            shape = list(data.shape)
            shape[axis] = 1
            data = xp.concatenate([xp.full(shape, initial, dtype=dt), data.astype(dt, copy=False)], axis=axis)
        return new(getattr(xp, bname)(data, axis=axis, dtype=dt), x._device)
    fn.__name__ = fn.__qualname__ = name
    fn.__wrapped__.__qualname__ = name  # oom_guard's inner function: what introspection unwraps to
    fn.__doc__ = (f"Cumulative {'sum' if bname == 'cumsum' else 'product'} along ``axis`` (needed for more than "
                  f"one dimension); ``include_initial`` puts {initial} first (standard: statistical functions, "
                  f"``{name}``).")
    return fn


cumulative_sum = _cumulative("cumulative_sum", "cumsum", 0)
cumulative_prod = _cumulative("cumulative_prod", "cumprod", 1)


def _logical(name):
    @oom_guard
    def fn(x, /, *, axis=None, keepdims=False):
        x = as_array(x)
        axes = None if axis is None else normalize_axes(axis, x.ndim)
        return new(getattr(x._data, name)(axis=axes, keepdims=keepdims), x._device)
    fn.__name__ = name
    fn.__doc__ = f"(standard: utility_functions.{name})"
    return fn


all = _logical("all")
any = _logical("any")


@oom_guard
def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """n-th discrete difference along axis (standard: utility_functions.diff)."""
    x = as_array(x)
    if x.ndim == 0:
        raise ValueError("diff needs at least one dimension")
    axis = normalize_axis(axis, x.ndim)
    if n < 0:
        raise ValueError(f"diff order n must be non-negative, got {n}")
    kw = {}
    if prepend is not None:
        kw["prepend"] = as_array(prepend, x._device)._data
    if append is not None:
        kw["append"] = as_array(append, x._device)._data
    length = x.shape[axis]
    for v in kw.values():
        length += v.shape[axis] if v.ndim else 1
    if n >= length > 0:  # every element differenced away: one step's result, emptied along axis (O(length))
        r = x._device.xp.diff(x._data, n=1, axis=axis, **kw)
        return new(r[(slice(None),) * axis + (slice(0, 0),)], x._device)
    return new(x._device.xp.diff(x._data, n=n, axis=axis, **kw), x._device)
