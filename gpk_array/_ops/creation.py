"""Creation functions (standard section "Creation Functions"), device transfer and DLPack."""
import builtins
import operator

import numpy as np

from .. import _dtypes as _dt
from .. import _hooks
from .. import _hostdata
from .. import _version
from .. import _device as _devices
from .._device import CPU, Device, as_device
from .._errors import DeviceError
from ._common import PY_SCALARS, Array, new, on_device, oom_guard, raise_oom

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


def _dtype_or_none(dtype):
    return None if dtype is None else _dt.to_dtype(dtype)


def _check_result(data):
    if data.dtype not in _dt.SUPPORTED:
        k = data.dtype.kind
        what = {"U": "strings", "S": "byte strings", "O": "Python objects", "V": "structured or void data",
                "M": "datetimes", "m": "timedeltas"}.get(k, f"dtype {data.dtype}")
        if k == "O":
            raise TypeError("cannot make an array of Python objects (ragged nested sequences, or integers "
                            "too large for int64/uint64, are not supported)")
        raise TypeError(f"the standard's functions take no arrays of {what} (dtype {data.dtype}): gpk_array's "
                        "NumPy-facing functions (np.array, np.asarray, np.zeros, ...) make them on the CPU device")
    return data


def _transfer(x, dev, copy=None, stream=None):
    """x moved (copied) to device dev; x itself when it is already there (a copy if copy=True)."""
    src = x._device
    if src is dev:
        if not copy:
            return x
        if _hooks.prealloc_hook is not None:
            _hooks.prealloc_hook(x._data.nbytes, dev)
        return new(x._data.copy(), dev)
    if copy is False:
        raise ValueError(f"moving an array from {src} to {dev} needs a copy, but copy=False")
    if dev is not CPU and x._data.dtype.kind in _dt.HOST_KINDS:
        raise TypeError(f"an array of dtype {x._data.dtype} cannot move to {dev}: strings, dates and records live "
                        "on the CPU device only (CUDA has no such dtypes)")
    if dev is CPU:
        if _hooks.prealloc_hook is not None:
            _hooks.prealloc_hook(x._data.nbytes, dev)
        if stream is not None and not isinstance(stream, int):
            data = x._data.get(stream=stream)
        else:
            data = x._data.get()
        return new(data, dev)
    with on_device(dev):
        return new(dev.xp.asarray(x._data), dev)


def _host_tree(obj):
    """Replace Arrays inside nested sequences by host NumPy arrays (for asarray of lists of arrays)."""
    if obj.__class__ is Array:
        return obj._data if obj._device is CPU else obj._data.get()
    if isinstance(obj, (list, tuple)):
        return [_host_tree(o) for o in obj]
    return obj


def _backend_module(obj):
    """The top-level module that defines obj's type ("numpy", "cupy", ...)."""
    return type(obj).__module__.split(".")[0]


@oom_guard
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """Convert obj to an array (standard: creation_functions.asarray), with its copy= semantics."""
    dt = _dtype_or_none(dtype)
    if obj.__class__ is Array:
        dev = obj._device if device is None else as_device(device)
        copied = False
        if dev is not obj._device:
            obj = _transfer(obj, dev, copy)
            copied = True
        data = obj._data
        if dt is not None and data.dtype != dt:
            if copy is False:
                raise ValueError(f"casting {data.dtype} to {_dt.name_of(dt)} needs a copy, but copy=False")
            if _hooks.prealloc_hook is not None:
                _hooks.precheck(data.shape, dt, dev)
            return new(data.astype(dt), dev)
        if copy and not copied:
            if _hooks.prealloc_hook is not None:
                _hooks.prealloc_hook(data.nbytes, dev)
            return new(data.copy(order="K"), dev)   # the layout kept, as NumPy's asarray(x, copy=True)
        return obj
    if isinstance(obj, Array):  # an instance of a subclass (x.view(Sub)): its data, as a plain Array
        return asarray(new(obj._data, obj._device), dtype=dtype, device=device, copy=copy)
    dev = as_device(device)
    if copy is not None and copy is not True and copy is not False:
        raise ValueError(f"copy must be True, False or None, got {copy!r}")
    c = obj.__class__
    if c not in PY_SCALARS and isinstance(obj, (int, float, complex)) and not isinstance(obj, np.generic):
        # a subclass of a Python scalar (finfo's limits, IntEnum members): its plain value
        from ._common import plain_scalar
        obj = plain_scalar(obj)
        c = obj.__class__
    if c in PY_SCALARS or c is list or c is tuple or c is range:  # range: a Sequence, as NumPy takes it
        if copy is False:
            raise ValueError("converting a Python scalar or sequence always copies, but copy=False")
        if c is int and dt is None and not -2**63 <= obj < 2**63:
            raise OverflowError(f"Python int {obj} is out of bounds for the default integer dtype int64")
        try:
            src = np.asarray(obj, dtype=dt)
        except TypeError:  # GPU Arrays inside the sequence refuse __array__: gather them to the host
            src = np.asarray(_host_tree(obj), dtype=dt)
        except ValueError as e:
            if "inhomogeneous" in str(e):
                raise ValueError(f"nested sequence has an inhomogeneous shape: {e}") from None
            raise
        _check_result(src)
        if dev is CPU:
            return new(src, dev)
        with on_device(dev):
            return new(_to_gpu(dev, src, None), dev)
    mod = _backend_module(obj)
    if mod == "cupy":
        return _from_cupy(obj, dt, device, copy)
    if mod == "numpy" or isinstance(obj, np.ndarray):
        src = obj
    elif hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        x = from_dlpack(obj, device=device, copy=copy)
        return asarray(x, dtype=dt, copy=False if copy is False else None)
    elif hasattr(obj, "__cuda_array_interface__"):
        import cupy
        return _from_cupy(cupy.asarray(obj), dt, device, copy)
    elif c is bytes or c is str or isinstance(obj, dict):
        # CuPy's first word ("Unsupported dtype <U6"), which peers' tests match for GPU libraries
        raise TypeError(f"Unsupported input type {c.__name__}: gpk_array has no string, bytes or object dtype")
    else:
        from .._numpy.poly import poly1d
        if isinstance(obj, poly1d):   # its coefficients, on their device (NumPy's __array__ of a poly1d)
            return asarray(obj.coeffs, dtype=dt, device=device, copy=copy)
        try:
            src = np.asarray(memoryview(obj)) if not hasattr(obj, "__array__") and not hasattr(
                obj, "__array_interface__") else np.asarray(obj)
        except TypeError:
            raise TypeError(f"cannot convert {type(obj).__name__} to an array") from None
    # src is a NumPy array or scalar
    if dev is CPU:
        if _hooks.prealloc_hook is not None and (copy or (dt is not None and getattr(src, "dtype", dt) != dt)):
            _hooks.precheck(np.shape(src), dt if dt is not None else src.dtype, dev)
        if copy:
            data = np.array(src, dtype=dt, copy=True)
        else:
            data = np.asarray(src, dtype=dt)
            if copy is False and not np.shares_memory(data, src) and data.size:
                raise ValueError("the conversion needs a copy (a dtype change), but copy=False")
        return new(_check_result(data), dev)
    if copy is False:
        raise ValueError(f"moving host data to {dev} needs a copy, but copy=False")
    src = np.asarray(src)
    _check_result(src)
    with on_device(dev):
        return new(_to_gpu(dev, src, dt), dev)


def _to_gpu(dev, src, dt):
    """Host NumPy data onto a CUDA device. CuPy turns a 0-d host array into a scalar fill, which loses the sign
    of -0; a one-element copy keeps every bit."""
    if src.ndim == 0:
        return dev.xp.asarray(src.reshape(1), dtype=dt).reshape(())
    return dev.xp.asarray(src, dtype=dt)


def _from_cupy(obj, dt, device, copy):
    idx = obj.device.id
    src_dev = Device(f"cuda:{idx}")
    x = new(obj, src_dev)
    if device is None:
        device = src_dev
    return asarray(x, dtype=dt, device=device, copy=copy)


def _shape(shape):
    if shape.__class__ is int:
        if shape < 0:
            raise ValueError(f"negative dimensions are not allowed: shape ({shape},)")
        return (shape,)
    if shape.__class__ is tuple:  # fast path: a tuple of non-negative ints is its own answer
        for s in shape:
            if s.__class__ is not int or s < 0:
                break
        else:
            return shape
    if isinstance(shape, (tuple, list)):
        out = tuple(operator.index(s) for s in shape)
    else:
        out = (operator.index(shape),)
    for s in out:
        if s < 0:
            raise ValueError(f"negative dimensions are not allowed: shape {out}")
    return out


def _default_for(value):
    c = value.__class__
    if c is float:
        return _dt.F64
    if c is int:
        return _dt.I64
    if c is builtins.bool or isinstance(value, np.bool_):
        return _dt.BOOL
    if isinstance(value, (int, np.integer)):
        return _dt.I64
    if isinstance(value, (float, np.floating)):
        return _dt.F64
    if isinstance(value, (complex, np.complexfloating)):
        return _dt.C128
    raise TypeError(f"fill_value must be a bool, int, float or complex, got {type(value).__name__}")


_NP_MAKERS = {"empty": np.empty, "zeros": np.zeros, "ones": np.ones}


def _make(fname, shape, dtype, device):
    """empty/zeros/ones (fname) on device; a backend's out-of-memory error raises OutOfMemoryError (as oom_guard
    does: the creation functions here and gpk_array._numpy's call this without another guard)."""
    dev = _devices._default if device is None else device
    if dev.__class__ is not Device:
        dev = as_device(device)
    dt = _dt.F64 if dtype is None else _dt.to_dtype(dtype)
    shape = _shape(shape)
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(_hooks.nbytes(shape, dt.itemsize), dev)
    try:
        if dev is CPU:
            return new(_NP_MAKERS[fname](shape, dtype=dt), dev)
        with on_device(dev):
            return new(getattr(dev.xp, fname)(shape, dtype=dt), dev)
    except MemoryError as e:
        raise_oom(e)


def empty(shape, *, dtype=None, device=None):
    """Uninitialized array (standard: creation_functions.empty)."""
    return _make("empty", shape, dtype, device)


def zeros(shape, *, dtype=None, device=None):
    """Array of zeros (standard: creation_functions.zeros)."""
    return _make("zeros", shape, dtype, device)


def ones(shape, *, dtype=None, device=None):
    """Array of ones (standard: creation_functions.ones)."""
    return _make("ones", shape, dtype, device)


@oom_guard
def full(shape, fill_value, *, dtype=None, device=None):
    """Array filled with fill_value (standard: creation_functions.full)."""
    if fill_value.__class__ is Array:
        fill_value = fill_value._data.item() if fill_value._device is CPU else fill_value._data.get().item()
    dt = _default_for(fill_value) if dtype is None else _dt.to_dtype(dtype)
    if dt == _dt.I64 and dtype is None and not -2**63 <= int(fill_value) < 2**63:
        raise OverflowError(f"fill_value {fill_value} is out of bounds for int64")
    dev = as_device(device)
    shape = _shape(shape)
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(_hooks.nbytes(shape, dt.itemsize), dev)
    if dev is CPU:
        return new(np.full(shape, fill_value, dtype=dt), dev)
    with on_device(dev):
        return new(_full(dev, shape, fill_value, dt), dev)


def _negative_zero(v):
    """Whether a fill value holds a negative zero (CuPy fills zeros with memset, which loses the sign)."""
    if isinstance(v, (complex, np.complexfloating)):
        return (v.real == 0 and np.signbit(v.real)) or (v.imag == 0 and np.signbit(v.imag))
    return isinstance(v, (float, np.floating)) and v == 0 and np.signbit(v)


def _full(dev, shape, value, dt):
    xp = dev.xp
    if dev is not CPU and _negative_zero(value):
        return xp.broadcast_to(_to_gpu(dev, np.asarray(value, dtype=dt), None), shape).copy()
    return xp.full(shape, value, dtype=dt)


def _like(x, dtype, device):
    if x.__class__ is not Array:
        x = asarray(x)
    dev = x._device if device is None else as_device(device)
    dt = x._data.dtype if dtype is None else _dt.to_dtype(dtype)
    return x._data.shape, dt, dev


def _make_like(fname):
    @oom_guard
    def fn(x, /, *, dtype=None, device=None):
        shape, dt, dev = _like(x, dtype, device)
        if _hooks.prealloc_hook is not None:
            _hooks.prealloc_hook(_hooks.nbytes(shape, dt.itemsize), dev)
        with on_device(dev):
            return new(getattr(dev.xp, fname)(shape, dtype=dt), dev)
    fn.__name__ = fn.__qualname__ = f"{fname}_like"
    fn.__doc__ = f"Array of x's shape (standard: creation_functions.{fname}_like)."
    return fn


empty_like = _make_like("empty")
zeros_like = _make_like("zeros")
ones_like = _make_like("ones")


@oom_guard
def full_like(x, /, fill_value, *, dtype=None, device=None):
    """(standard: creation_functions.full_like)"""
    shape, dt, dev = _like(x, dtype, device)
    if fill_value.__class__ is Array:
        fill_value = fill_value._data.item() if fill_value._device is CPU else fill_value._data.get().item()
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(_hooks.nbytes(shape, dt.itemsize), dev)
    with on_device(dev):
        return new(_full(dev, shape, fill_value, dt), dev)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in [start, stop) (standard: creation_functions.arange)."""
    try:
        if dtype is None and start.__class__ is int and step.__class__ is int and step and \
                (stop is None or stop.__class__ is int):
            # fast path: Python ints make int64 values, as in _arange
            if stop is None:
                start, stop = 0, start
            dev = as_device(device)
            if _hooks.prealloc_hook is not None:
                _arange_precheck(start, stop, step, None, _dt.I64, dev)
            if dev is CPU:
                return new(np.arange(start, stop, step, dtype=_dt.I64), dev)
            with on_device(dev):
                return new(dev.xp.arange(start, stop, step, dtype=_dt.I64), dev)
        return _arange(start, stop, step, dtype, device)
    except MemoryError as e:
        raise_oom(e)


def _arange(start, stop, step, dtype, device):
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if isinstance(v, (complex, np.complexfloating)):
            raise TypeError("arange does not take complex arguments")
    if step == 0:
        raise ValueError("arange step must not be zero")
    if dtype is None:
        dt = _dt.I64 if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                             for v in (start, stop, step)) else _dt.F64
    else:
        dt = _dt.to_dtype(dtype)
    dev = as_device(device)
    n = max(0, int(np.ceil((stop - start) / step))) if dt.kind in "fc" else None
    if _hooks.prealloc_hook is not None:
        _arange_precheck(start, stop, step, n, dt, dev)
    with on_device(dev):
        if n is not None:
            # the standard's length ceil((stop - start) / step), values start + i * step
            data = dev.xp.arange(n, dtype=np.float64) * step + start
            return new(data.astype(dt, copy=False), dev)
        if dev is not CPU and dt.kind in "iu" and not all(isinstance(v, (int, np.integer))
                                                          for v in (start, stop, step)):
            # NumPy's rule for an integer dtype and a float bound or step (CuPy's differs): ceil((stop - start) /
            # step) values first + i * (dtype(start + step) - dtype(start)), the cast truncating
            count = max(0, int(np.ceil((stop - start) / step)))
            first = int(np.array(start).astype(dt))
            delta = int(np.array(start + step).astype(dt)) - first
            return new(dev.xp.arange(count, dtype=dt) * dt.type(delta) + dt.type(first), dev)
        return new(dev.xp.arange(start, stop, step, dtype=dt), dev)


def _arange_precheck(start, stop, step, n, dt, dev):
    if n is None:  # integers: the length of the range (other values are left to the backend to measure)
        try:
            n = len(range(operator.index(start), operator.index(stop), operator.index(step)))
        except (TypeError, ValueError, OverflowError):
            return
    _hooks.prealloc_hook(n * dt.itemsize, dev)


@oom_guard
def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """num evenly spaced samples over [start, stop] (standard: creation_functions.linspace)."""
    return _linspace(start, stop, num, dtype, device, endpoint)


def _exact_real(v):
    """Whether v is a Python float that is finite or a Python int that float64 holds exactly."""
    c = v.__class__
    return (c is float and -_F64_MAX <= v <= _F64_MAX) or (c is int and -2**53 <= v <= 2**53)


_F64_MAX = float(np.finfo(np.float64).max)


def _overflow(op):
    """NumPy's floating-point overflow report for a computation done here in Python: by np.seterr's 'over'."""
    mode = np.geterr()["over"]
    if mode == "raise":
        raise FloatingPointError(f"overflow encountered in {op}")
    if mode in ("warn", "print", "log"):
        import warnings
        warnings.warn(f"overflow encountered in {op}", RuntimeWarning, stacklevel=4)


def _device_real(v):
    """Whether v is a Python float (infinities and NaN too) or a Python int of int64's range: NumPy converts such
    endpoints to float64 first, as _linspace_f64 does (on the host the general path handles the non-finite ones,
    for NumPy's warnings)."""
    c = v.__class__
    return c is float or (c is int and -2**63 <= v < 2**63)


def _linspace_f64(start, stop, num, endpoint, xp=np):
    """float64 samples for Python real endpoints with the arithmetic NumPy uses, so values match bit for bit (on a
    GPU too: each step is one correctly rounded IEEE operation): sample i is i * step + start with
    step = (stop - start) / intervals (or i / intervals * (stop - start) when that step underflows to zero; with no
    interval, i * (stop - start)), and the last sample is stop itself when the endpoint is included. On the host
    None when stop - start is not finite (the general path then warns as NumPy does)."""
    lo, hi = float(start), float(stop)
    span = hi - lo
    if not -_F64_MAX <= span <= _F64_MAX:
        if xp is np:
            return None
        if -_F64_MAX <= lo <= _F64_MAX and -_F64_MAX <= hi <= _F64_MAX:
            _overflow("subtract")  # as NumPy's stop - start reports it
    intervals = num - 1 if endpoint else num
    out = xp.arange(num, dtype=np.float64).reshape(-1)  # a view, so .base is set as on NumPy's result
    if intervals <= 0:
        out = out * span
    elif span / intervals != 0:
        out *= span / intervals
    else:
        out /= intervals
        out *= span
    out += lo
    if endpoint and num > 1:
        out[-1] = hi
    return out


def _linspace(start, stop, num, dtype, device, endpoint):
    """linspace without the out-of-memory translation (its callers translate)."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace num must be non-negative, got {num}")
    if dtype is None:
        dt = _dt.C128 if isinstance(start, complex) or isinstance(stop, complex) else _dt.F64
    else:
        dt = _dt.to_dtype(dtype)
    dev = as_device(device)
    if _hooks.prealloc_hook is not None:
        _hooks.prealloc_hook(num * dt.itemsize, dev)
    if dt.kind != "c" and ((_exact_real(start) and _exact_real(stop)) or (
            dev is not CPU and _device_real(start) and _device_real(stop))):
        with on_device(dev):
            data = _linspace_f64(start, stop, num, endpoint, dev.xp)
            if data is not None:
                return new(data if dt is _dt.F64 else data.astype(dt, copy=False), dev)
    with on_device(dev):
        data = dev.xp.linspace(start, stop, num, endpoint=endpoint, dtype=np.complex128 if dt.kind == "c"
                               else np.float64)
        if endpoint and num > 1:
            data[-1] = stop
        return new(data.astype(dt, copy=False), dev)


@oom_guard
def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Identity-like matrix with ones on diagonal k (standard: creation_functions.eye)."""
    dev = as_device(device)
    dt = _dt.F64 if dtype is None else _dt.to_dtype(dtype)
    if _hooks.prealloc_hook is not None:
        _hooks.precheck((n_rows, n_rows if n_cols is None else n_cols), dt, dev)
    with on_device(dev):
        return new(dev.xp.eye(n_rows, n_cols, k=k, dtype=dt), dev)


def meshgrid(*arrays, indexing="xy"):
    """Coordinate matrices from coordinate vectors (standard: creation_functions.meshgrid)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    from ._common import as_arrays
    arrays = as_arrays(*arrays)
    if not arrays:
        return () if _version.get() >= "2025.12" else []
    dev = arrays[0]._device
    for a in arrays:
        if a.ndim != 1:
            raise ValueError(f"meshgrid takes one-dimensional arrays, got shape {a.shape}")
    dts = {a.dtype for a in arrays}
    if len(dts) > 1:
        from .._promotion import result_type
        dt = result_type(*arrays)
        arrays = [astype_data(a, dt) for a in arrays]
    outs = [new(o, dev) for o in dev.xp.meshgrid(*[a._data for a in arrays], indexing=indexing)]
    return tuple(outs) if _version.get() >= "2025.12" else outs  # a list before 2025.12


def astype_data(a, dt):
    if a._data.dtype == dt:
        return a
    if _hooks.prealloc_hook is not None:
        _hooks.precheck(a._data.shape, dt, a._device)
    return new(a._data.astype(dt), a._device)


@oom_guard
def tril(x, /, *, k=0):
    """Lower triangle (standard: creation_functions.tril)."""
    if x.__class__ is not Array:
        x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"tril requires at least 2 dimensions, got {x.ndim}")
    return new(x._device.xp.tril(x._data, k=k), x._device)


@oom_guard
def triu(x, /, *, k=0):
    """Upper triangle (standard: creation_functions.triu)."""
    if x.__class__ is not Array:
        x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"triu requires at least 2 dimensions, got {x.ndim}")
    return new(x._device.xp.triu(x._data, k=k), x._device)


# --- DLPack ---------------------------------------------------------------------------------------
def from_dlpack(x, /, *, device=None, copy=None):
    """Array from any DLPack producer, zero-copy where possible (standard: creation_functions.from_dlpack)."""
    if x.__class__ is Array:
        return asarray(x, device=device, copy=copy)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} does not support the DLPack protocol (no __dlpack__)")
    dl_type, dl_id = x.__dlpack_device__()
    dl_type = int(dl_type)
    target = None if device is None else as_device(device)
    if dl_type in (_DL_CPU, _DL_CUDA_HOST):
        kw = {} if copy is None else {"copy": copy}
        data = np.from_dlpack(x, **kw)
        arr = new(_check_result(data), CPU)
        return arr if target is None or target is CPU else _transfer(arr, target, copy)
    if dl_type in (_DL_CUDA, _DL_CUDA_MANAGED):
        import cupy
        if target is CPU:
            if copy is False:
                raise ValueError("moving CUDA data to the CPU needs a copy, but copy=False")
            data = cupy.from_dlpack(x)
            return new(data.get(), CPU)
        data = cupy.from_dlpack(x)
        if copy:
            data = data.copy()
        arr = new(_check_result(data), Device(f"cuda:{data.device.id}"))
        return arr if target is None or target is arr._device else _transfer(arr, target, copy)
    raise DeviceError(f"DLPack device type {dl_type} is not supported (only CPU and CUDA)")


def _dlpack_export(x, *, stream=None, max_version=None, dl_device=None, copy=None):
    data = x._data
    if dl_device is not None:
        dl_type = int(dl_device[0])
        mine = int(data.__dlpack_device__()[0])
        if dl_type != mine:
            if dl_type == _DL_CPU and x._device is not CPU:
                if copy is False:
                    raise BufferError("exporting CUDA data to the CPU needs a copy, but copy=False")
                data = data.get()
                return data.__dlpack__(max_version=max_version) if max_version else data.__dlpack__()
            raise BufferError(f"cannot export an array on {x._device} to DLPack device {dl_device}")
    # same device from here: copy= and dl_device= are handled here, so that every backend version works
    if copy:
        data = data.copy()
    kw = {}
    if stream is not None:
        kw["stream"] = stream
    if max_version is not None:
        kw["max_version"] = max_version
    return data.__dlpack__(**kw)


def _rebuild(host, device):
    if host.dtype.kind in _dt.HOST_KINDS:  # a pickled array of a host-only dtype (gpk_array/_hostdata.py)
        return _hostdata.host_array(host, device)
    return asarray(host, device=device)
