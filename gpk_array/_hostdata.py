"""Host-only dtypes: arrays of strings, bytes, datetime64/timedelta64, void and structured (record) dtypes.

CUDA has no such dtypes (neither has CuPy), so these arrays live on the CPU device, NumPy-backed, whatever the
default device is. The rule, in two parts:

1. An array whose dtype (asked for, or inferred from the data) is host-only is made on the CPU device by the
   NumPy-facing creation functions (``array``, ``asarray``, ``zeros``, ``full``, ``arange`` of dates, ``fromiter``,
   ``loadtxt``, ``genfromtxt``, ``astype``, ...); asking for another device raises TypeError. Operations on it
   compute with NumPy, and their results of host-only dtypes stay there.
2. A result of a standard dtype (bool, integers, floating, complex) computed from a host-only array goes to the
   default device: a numeric field ``x['age']``, ``x.astype(float)``, comparisons ``labels == 'a'``, datetime
   differences divided to floats, ``argsort`` indices, ``unique``'s counts. So NumPy code mixing records, labels
   and dates with numeric work runs on CUDA unchanged: the numbers are where the numeric arrays are. Arrays of
   another device used with a host-only array (as an operand, an index or a value to assign) are copied to the
   host for that operation, since the host-only array cannot go to them.

The mark is the backing array's class: the backing array of a host-only Array is a ``HostData`` (a
``numpy.ndarray`` subclass defined in gpk_array/_dtypes.py, so every NumPy function keeps it, and its results,
through ufuncs, views, ``astype`` and fields). ``Array._new`` sees the class on the CPU device's slow branch
(backing arrays that are not plain ndarrays), so the numeric hot paths pay nothing: the dtype is checked where the
data is created. The other call sites are the error paths of the NumPy-facing functions (a refused dtype, a
DeviceError, a string operand), which end here. This module is a lazy submodule (gpk_array/_lazy.py): ``import
gpk_array`` does not run it; the first host-only array does. Numeric fields moved to a CUDA device write back
through gpk_array/_hostfield.py.

The standard's functions (``gpk_array._ops``) keep refusing these dtypes with a TypeError, as array_api_strict
does; only the NumPy-facing names take them.
"""
from collections.abc import Mapping

import numpy as np

from . import _hooks
from ._dtypes import HOST_KINDS, HostData  # noqa: F401  (the mark lives with the dtypes; re-exported)

_KIND_NAMES = {"U": "string", "S": "bytes", "M": "datetime64", "m": "timedelta64", "V": "void"}


def is_host_dtype(dt):
    """Whether a numpy dtype is host-only (string, bytes, datetime64, timedelta64, void or structured)."""
    return dt.kind in HOST_KINDS


def host_dtype(dtype):
    """The numpy dtype for a dtype-like when it is host-only, else None (also for what NumPy cannot read)."""
    try:
        d = np.dtype(dtype)
    except Exception:
        return None
    if d.subdtype is not None:  # a subarray dtype, (float, 2): NumPy makes arrays of its base dtype
        return d if d.base.kind in HOST_KINDS else None
    return d if d.kind in HOST_KINDS else None


def kind_name(dt):
    return "structured" if dt.names is not None else _KIND_NAMES.get(dt.kind, str(dt))


def wrap(data):
    """The Array for a HostData result (called by ``Array._new`` on the CPU device): host-only dtypes stay on the
    CPU device; a standard dtype (a numeric field, a comparison, astype) is moved to the default device."""
    from ._array import Array
    from ._device import CPU, default_device
    if data.dtype.kind in HOST_KINDS:
        obj = object.__new__(Array)
        obj._data = data
        obj._device = CPU
        if _hooks.alloc_hook is not None:
            _hooks.alloc_hook(data, CPU)
        return obj
    plain = data.view(np.ndarray)
    dev = default_device()
    if dev is CPU:
        return Array._new(plain, CPU)
    if data.dtype.kind == "O":
        raise TypeError("cannot make an array of Python objects from this host-only array's values")
    from ._ops.creation import asarray
    # a field of records is strided: the device gets a compact copy (which the stand-in CUDA device of the tests
    # would otherwise alias, hiding what a real device does)
    return asarray(plain if plain.flags.c_contiguous else plain.copy(), device=dev)


def host_array(data, device=None):
    """An Array on the CPU device for NumPy data of a host-only dtype; TypeError for another device."""
    from ._array import Array
    from ._device import CPU, as_device
    if device is not None and as_device(device) is not CPU:
        raise TypeError(f"arrays of {kind_name(data.dtype)} dtypes (dtype {data.dtype}) live on the CPU device "
                        f"only: gpk_array has no such dtype on {as_device(device)}; leave device= out or use "
                        "'cpu'")
    return Array._new(np.asarray(data).view(HostData), CPU)


def result(r):
    """An Array for a NumPy result computed from host-only data, by the rule (host-only dtypes on the CPU device,
    standard dtypes on the default device)."""
    from ._array import Array
    from ._device import CPU
    return Array._new(np.asarray(r).view(HostData), CPU)


def host_value(v):
    """An operand for a NumPy computation with host-only data: Arrays of any device as NumPy arrays (a copy from a
    CUDA device), nested lists of them too; everything else unchanged."""
    from ._array import Array
    from ._device import CPU
    if isinstance(v, Array):
        return v._data if v._device is CPU else v._data.get()
    if v.__class__ is tuple:
        return tuple(host_value(p) for p in v)
    if v.__class__ is list:
        return [host_value(p) for p in v]
    return v


def marked(x):
    """The NumPy data of an Array (of any device: a CUDA one's is copied) as HostData, so that NumPy's result of
    an operation with host-only data is placed by the module's rule."""
    d = x._data if x._device.kind == "cpu" else x._data.get()
    return d if d.__class__ is HostData else d.view(HostData)


def is_host(x):
    """Whether x is an Array of a host-only dtype (its data marked, or a plain CPU array of such a dtype)."""
    from ._array import Array
    return isinstance(x, Array) and x._data.dtype.kind in HOST_KINDS


def any_host(*xs):
    """Whether any of xs (or of the Arrays in lists/tuples among them) is a host-only Array."""
    for x in xs:
        if x.__class__ is list or x.__class__ is tuple:
            if any_host(*x):
                return True
        elif is_host(x):
            return True
    return False


def results(r):
    """``result`` through the tuples and lists NumPy functions return; NumPy scalars become 0-d Arrays (as
    gpk_array's reductions give), Python objects are left as they are."""
    if isinstance(r, np.ndarray):
        return result(r)
    if r.__class__ is tuple or r.__class__ is list or (isinstance(r, tuple) and hasattr(r, "_fields")):
        vals = [results(v) for v in r]
        return type(r)(*vals) if hasattr(r, "_fields") else type(r)(vals)
    if isinstance(r, np.generic):
        return result(r)
    return r


def call(fn, *args, **kwargs):
    """NumPy's fn on the host values of the arguments, its results placed by the rule. Arrays of another device are
    copied to the host only beside host-only data (rule 3); alone (``np.is_busday(x)`` of a CUDA array) they raise
    ``HostOnlyError``, as any NumPy function computed on the host does for them."""
    if not any_host(*args, *kwargs.values()):
        dev = _other_device(args, kwargs.values())
        if dev is not None:
            from ._errors import HostOnlyError
            name = f"{getattr(fn, '__module__', None) or 'numpy'}.{getattr(fn, '__name__', 'function')}"
            raise HostOnlyError(f"{name} is computed on the host, and gpk_array does not copy an array on {dev} "
                                f"there implicitly: move it with x.to_device(\"cpu\") first")
    args = [host_value(a) for a in args]
    kwargs = {k: host_value(v) for k, v in kwargs.items()}
    return results(fn(*args, **kwargs))


def _other_device(*groups):
    """The device of the first Array of a CUDA device among the groups of arguments (one level of lists), or None."""
    from ._array import Array
    for group in groups:
        for v in group:
            for x in (v if v.__class__ is list or v.__class__ is tuple else (v,)):
                if isinstance(x, Array) and x._device.kind != "cpu":
                    return x._device
    return None


def fallback(error, fn, *args, **kwargs):
    """For a NumPy-facing function whose own path refused host-only data (error): NumPy's fn on the host values,
    when an argument is an array of a host-only dtype (or a list of them) or a string; else error is raised."""
    if not any_host(*args, *kwargs.values()) and not any(_has_text(a) for a in args):
        raise error
    return call(fn, *args, **kwargs)


def _has_text(v):
    if v.__class__ is str or v.__class__ is bytes:
        return True
    if v.__class__ is list or v.__class__ is tuple:
        return any(_has_text(p) for p in v[:2]) or any(_has_text(p) for p in v[-1:])
    return isinstance(v, (np.datetime64, np.timedelta64, np.str_, np.bytes_, np.void))


def numpy_namespace(np_name, namespace):
    """PEP 562 ``__getattr__``/``__dir__`` for gpk_array.char, .strings and .rec: NumPy's namesake module's functions
    (``numpy.<np_name>``), taking Arrays of any device and returning Arrays placed by the rule (wrappers made on
    first read and kept in ``namespace``); classes and constants are NumPy's own objects."""
    import importlib
    module = importlib.import_module(f"numpy.{np_name}")

    def __getattr__(name):
        if name.startswith("_"):
            raise AttributeError(f"module 'gpk_array.{np_name}' has no attribute {name!r}")
        obj = getattr(module, name)  # AttributeError: NumPy's module has no such name either
        if callable(obj) and not isinstance(obj, type):
            obj = _wrap(np_name, name, obj)
        namespace[name] = obj
        return obj

    def __dir__():
        return sorted(set(namespace) | {n for n in dir(module) if not n.startswith("_")})

    return __getattr__, __dir__


def _wrap(np_name, name, fn):
    def wrapper(*args, **kwargs):
        return call(fn, *args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = f"gpk_array.{np_name}"
    wrapper.__doc__ = (f"NumPy's ``{np_name}.{name}`` on the host values of its arguments (results of host-only "
                       "dtypes on the CPU device, of standard dtypes on the default device).")
    return wrapper


# --- the NumPy-facing creation functions' host-only paths (gpk_array/_numpy/creation.py calls them where its own
# path refused the data or the dtype) ------------------------------------------------------------------------------
def _std_asarray(obj, device):
    from ._ops.creation import asarray
    return asarray(obj, device=device)


def _as_device(device):
    from ._device import as_device
    return as_device(device)


def _shape_arg(shape):
    from ._numpy._util import shape_arg
    return shape_arg(shape)


def made(r, device):
    """A NumPy result r made from host-only data or with a host-only dtype, by the rule of gpk_array/_hostdata.py:
    host-only dtypes on the CPU device (TypeError for another device=), standard dtypes on device= or the
    default device."""
    if r.dtype.kind in HOST_KINDS:
        return host_array(r, device)
    return _std_asarray(r, _as_device(device))


def convert(obj, dtype, device, copy, error):
    """NumPy's conversion of obj for ``array``/``asarray`` when ours refused it (error): a host-only dtype, asked
    for or inferred, gives an array on the CPU device; anything else re-raises the refusal. A bare str, bytes or
    dict stays refused, in CuPy's words (peers' tests match them)."""
    if isinstance(obj, (str, bytes, Mapping)) and dtype is None:
        raise error
    hd = host_dtype(dtype) if dtype is not None else None
    if dtype is not None and hd is None and not any_host(obj):
        raise error
    try:
        r = np.array(host_value(obj), dtype=hd if hd is not None else dtype, copy=True if copy else None)
    except Exception:
        raise error from None
    if r.dtype.kind not in HOST_KINDS and not any_host(obj):
        raise error
    return made(r, device)


def full(shape, fill_value, dtype, device, error):
    """``full`` for a host-only dtype or fill value (a string, a date): NumPy's, on the CPU device."""
    hd = host_dtype(dtype) if dtype is not None else None
    if dtype is not None and hd is None:
        raise error
    try:
        r = np.full(_shape_arg(shape), host_value(fill_value), dtype=hd)
    except Exception:
        raise error from None
    if r.dtype.kind not in HOST_KINDS:
        raise error
    return host_array(r, device)


def like(fname, a, dtype, shape, device, *fill):
    """The ``*_like`` functions for a host-only array or dtype: NumPy's, placed by the rule of
    gpk_array/_hostdata.py (host-only dtypes on the CPU device, standard dtypes on device= or the default one). A
    host-only dtype for a prototype on another device, with no device= given, raises TypeError as CuPy does (the
    prototype's device cannot hold it; Dask's arg reductions rely on that error to choose their dict form)."""
    from ._array import Array
    if dtype is not None and device is None and isinstance(a, Array) and a._device.kind != "cpu" and \
            is_host_dtype(np.dtype(dtype)):
        raise TypeError(f"{fname}_like: a {kind_name(np.dtype(dtype))} dtype lives on the CPU device only, and the "
                        f"prototype is on {a._device}: pass device='cpu'")
    h = host_value(a)
    if not isinstance(h, np.ndarray):
        h = np.asarray(h)
    fill = tuple(host_value(f) for f in fill)
    return made(getattr(np, fname + "_like")(h.view(np.ndarray), *fill, dtype=dtype, shape=shape), device)


def arange(error, *args):
    """``arange`` of dates or timedeltas (datetime64 / timedelta64 endpoints, steps or dtype): NumPy's, on the
    CPU device; anything else re-raises error."""
    *parts, dtype, device = args
    parts = [host_value(p) for p in parts]
    hd = host_dtype(dtype) if dtype is not None else None
    if hd is None and not any(isinstance(p, (np.datetime64, np.timedelta64, np.ndarray)) and
                              np.asarray(p).dtype.kind in "Mm" for p in parts):
        raise error
    start, stop, step = parts
    if stop is None:
        start, stop = 0, start  # arange(stop): NumPy's timedelta64 ranges start at 0 too
    r = np.arange(start, stop, step, dtype=hd)
    return made(r, device)
