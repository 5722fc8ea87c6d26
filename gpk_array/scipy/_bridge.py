"""One SciPy module on gpk_array Arrays, on their device: what every module of gpk_array.scipy is made of.

``install(globals(), "special")`` gives a module of gpk_array.scipy a PEP 562 ``__getattr__``/``__dir__`` pair
serving SciPy's public names of ``scipy.special``, each the first time it is read: a function ``f`` becomes a
wrapper that

- with Arrays on the CPU device calls SciPy's ``f`` on their memory as NumPy arrays (zero-copy: SciPy's primary
  path, compiled code included); with no Arrays at all, SciPy's ``f`` as called;
- with Arrays on a CUDA device calls SciPy's ``f`` on their CuPy memory (zero-copy), which SciPy dispatches as it
  does for CuPy arrays (to ``cupyx.scipy`` or its array-API code: what CuPy's users get), else SciPy's ``f`` on the
  Arrays themselves (its array-API code through gpk_array's namespace), else CuPy's ``cupyx.scipy`` namesake
  directly, else gpk_array's own (``linalg.det``, ``linalg.inv``); where none runs (SciPy asks for host memory,
  which gpk_array and CuPy refuse), a ``HostOnlyError`` (a TypeError) names the function and the way out,
  ``x.to_device("cpu")`` (``on_device`` below).

Results come back as gpk_array's: CuPy arrays as Arrays on their device, NumPy arrays as Arrays on the CPU device (NumPy
scalars too, from calls on the CPU device), inside tuples, lists, dicts and SciPy's result objects (those are wrapped in
a proxy that converts what is read from them). A class (``interpolate.CubicSpline``, ``spatial.KDTree``) is served as a
factory whose objects' methods take and give Arrays the same way; constants and exceptions are SciPy's own objects;
submodules (``signal.windows``) are served as modules of the same kind.
"""
import importlib
import sys
import types

import numpy as _np

from .._array import Array
from .._device import CPU, Device
from .._errors import HostOnlyError

_SUPPORTED_KINDS = "biufc"


def install(namespace, sub):
    """Give the module whose globals() is ``namespace`` SciPy's ``scipy.<sub>`` names, served on first read."""
    modname = namespace["__name__"]

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(f"module {modname!r} has no attribute {name!r}")
        obj = _serve(modname, sub, name)
        namespace[name] = obj
        return obj

    def __dir__():
        return sorted(set(_public(sub)) | {k for k in namespace if not k.startswith("_")})

    namespace["__getattr__"] = __getattr__
    namespace["__dir__"] = __dir__


def _scipy(sub):
    return importlib.import_module(f"scipy.{sub}")


def _public(sub):
    mod = _scipy(sub)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return [n for n in names if not n.startswith("_")]


def _serve(modname, sub, name):
    mod = _scipy(sub)
    try:
        obj = getattr(mod, name)
    except AttributeError:
        raise AttributeError(f"module {modname!r} has no attribute {name!r} (scipy.{sub} has none)") from None
    if isinstance(obj, types.ModuleType):
        if not obj.__name__.startswith("scipy.") or "_sub_module_deprecation" in vars(obj):
            return obj   # not SciPy's, or one of SciPy's deprecated namespaces (scipy.stats.stats): as it is
        return module_for(obj.__name__[len("scipy."):])
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return obj
    if callable(obj):
        return _wrap(modname, sub, name, obj)
    return obj


def module_for(sub):
    """The gpk_array.scipy module of scipy.<sub>: the file of gpk_array/scipy where there is one, else one made
    here (entered in sys.modules, so that it is one object everywhere)."""
    full = f"gpk_array.scipy.{sub}"
    m = sys.modules.get(full)
    if m is not None:
        return m
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError:
        pass
    m = types.ModuleType(full, f"``scipy.{sub}`` on gpk_array Arrays, on their device (see gpk_array.scipy).")
    install(m.__dict__, sub)
    sys.modules[full] = m
    return m


def _wrap(modname, sub, name, scipy_obj):
    """The device-dispatching wrapper of scipy.<sub>.<name> (a function, a class, or a callable object)."""

    def call(*args, **kwargs):
        dev = _device_in(args, kwargs)
        if dev is None:
            return convert(scipy_obj(*args, **kwargs), CPU)
        if dev is CPU:
            # SciPy's NumPy path, its primary one, on the Arrays' memory (zero-copy)
            return convert(scipy_obj(*backing(args), **backing(kwargs)), CPU, unwrap=True)
        return on_device(sub, name, scipy_obj, args, kwargs, dev)

    call.__name__ = call.__qualname__ = name
    call.__module__ = modname
    what = "class" if isinstance(scipy_obj, type) else "function"
    call.__doc__ = (f"SciPy's {what} ``scipy.{sub}.{name}`` on gpk_array Arrays, on their device: SciPy's own "
                    f"(on the CPU device's memory as NumPy arrays; on a CUDA device on its CuPy memory or through "
                    f"the array API, else CuPy's ``cupyx.scipy.{sub}.{name}``); results as Arrays (see "
                    f"gpk_array.scipy).\n\n"
                    + _first_paragraph(scipy_obj))
    call.__wrapped_scipy__ = scipy_obj
    return call


# CuPy refuses host conversion with this TypeError (as gpk_array does with HostOnlyError)
_CUPY_REFUSAL = "Implicit conversion to a NumPy array is not allowed"


def _host_only(e):
    """Whether e says that a computation needed host memory (gpk_array's or CuPy's refusal to convert)."""
    return isinstance(e, HostOnlyError) or (isinstance(e, TypeError) and _CUPY_REFUSAL in str(e))


def on_device(sub, name, scipy_obj, args, kwargs, dev, via_arrays=True):
    """scipy.<sub>.<name> of arguments holding Arrays on the CUDA device dev, the first way that works:

    1. SciPy's function on the Arrays' CuPy memory (a real CuPy device): SciPy's own dispatch for CuPy arrays, to
       ``cupyx.scipy`` or its array-API code, exactly what CuPy's users get (with ``SCIPY_ARRAY_API=1``);
    2. SciPy's function on the Arrays themselves (``via_arrays``): its array-API code through gpk_array's namespace;
    3. CuPy's ``cupyx.scipy.<sub>.<name>`` on the CuPy memory (SciPy does not dispatch without SCIPY_ARRAY_API,
       and not every function CuPy has), but not those SciPy knows to differ from its own (ndimage's blocklist);
    4. gpk_array's own (linalg.det, linalg.inv);

    else the first error that is not a refusal to copy device memory to the host, or HostOnlyError."""
    failures = []
    if getattr(dev.xp, "__name__", "") == "cupy":
        try:
            return convert(scipy_obj(*backing(args), **backing(kwargs)), dev, unwrap=True)
        except Exception as e:
            failures.append(e)
    if via_arrays:
        try:
            return convert(scipy_obj(*args, **kwargs), dev)
        except Exception as e:
            failures.append(e)
    fn = None if name in _cupy_blocklist(sub) else _cupyx(sub, name)
    if fn is not None:
        try:
            return convert(fn(*backing(args), **backing(kwargs)), dev, unwrap=True)
        except Exception as e:
            failures.append(e)
    own = _OWN.get((sub, name))
    if own is not None:
        return own(*args, **kwargs)
    for e in failures:
        if not _host_only(e):
            raise e
    why = "" if fn is not None else f" and CuPy has no cupyx.scipy.{sub}.{name}"
    raise HostOnlyError(f"scipy.{sub}.{name} cannot run on arrays on {dev}: SciPy computes it on the host "
                        f"(NumPy){why}; compute it on the host explicitly with the arrays moved there: "
                        f"x.to_device(\"cpu\")") from (failures[-1] if failures else None)


def _cupy_blocklist(sub):
    """The functions of scipy.<sub> whose cupyx.scipy namesakes SciPy itself does not use (they differ)."""
    if sub != "ndimage":
        return ()
    try:
        from scipy.ndimage import _support_alternative_backends as sab
    except ImportError:
        return ()
    return getattr(sab, "CUPY_BLOCKLIST", ())


def _own_linalg(name):
    """scipy.linalg's det and inv, which neither SciPy nor CuPy computes on a CUDA device, by gpk_array.linalg's
    (``overwrite_a``/``check_finite`` change nothing there); det's result is double precision, as SciPy's."""
    def fn(a, overwrite_a=False, check_finite=True):
        import gpk_array
        r = getattr(gpk_array.linalg, name)(a)
        if name == "det" and r.dtype in (gpk_array.float32, gpk_array.complex64):
            r = gpk_array.astype(r, gpk_array.float64 if r.dtype == gpk_array.float32 else gpk_array.complex128)
        return r
    return fn


_OWN = {("linalg", "det"): _own_linalg("det"), ("linalg", "inv"): _own_linalg("inv")}


def _first_paragraph(obj):
    doc = getattr(obj, "__doc__", None) or ""
    lines = []
    for line in doc.strip().splitlines():
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line.strip())
    return " ".join(lines)


def _cupyx(sub, name):
    """CuPy's cupyx.scipy.<sub>.<name> (imported on first use), or None where CuPy has none."""
    try:
        mod = importlib.import_module(f"cupyx.scipy.{sub}")
    except Exception:   # not installed, no such module, or a CuPy that cannot load here
        return None
    return getattr(mod, name, None)


def _device_in(args, kwargs):
    """The device of the Arrays among the arguments (a CUDA one wins), or None when there are none."""
    found = None
    for obj in (args, kwargs):
        d = _scan(obj, 0)
        if d is not None:
            if d is not CPU:
                return d
            found = d
    return found


def _scan(obj, depth):
    if isinstance(obj, Array):
        return obj._device
    if depth > 3:
        return None
    if isinstance(obj, (tuple, list)):
        items = obj
    elif isinstance(obj, dict):
        items = obj.values()
    else:
        return None
    found = None
    for v in items:
        d = _scan(v, depth + 1)
        if d is not None:
            if d is not CPU:
                return d
            found = d
    return found


def backing(obj):
    """obj with every Array in it replaced by its backing array (CuPy's on CUDA, NumPy's on the CPU)."""
    if isinstance(obj, Array):
        return obj._data
    c = obj.__class__
    if c is tuple or c is list:
        return c(backing(v) for v in obj)
    if c is dict:
        return {k: backing(v) for k, v in obj.items()}
    return obj


def convert(r, dev, unwrap=False):
    """A result as gpk_array's (see the module's docstring); ``unwrap``: r came from a call on backing arrays
    (CuPy's or NumPy's), so its objects' methods are handed backing arrays too."""
    if r is None or r.__class__ is Array:
        return r
    if dev is not CPU and isinstance(r, dev.xp.ndarray):
        return Array._new(r, _device_of(r, dev))
    if isinstance(r, _np.ndarray):
        if r.dtype.kind in _SUPPORTED_KINDS or r.dtype.name == "bfloat16":
            return Array._new(r, CPU)
        return r
    if isinstance(r, _np.generic):   # before Python's scalars: numpy.float64 is a float
        # a host value: a 0-d Array of a CPU call; from a CUDA call (SciPy reduced to a host scalar) as it is,
        # rather than an Array on a device the call was not on
        return Array._new(_np.asarray(r), CPU) if dev is CPU and r.dtype.kind in _SUPPORTED_KINDS else r
    if isinstance(r, (Array, bool, int, float, complex, str, bytes)):
        return r
    mod = type(r).__module__.split(".")[0]
    if mod == "cupy" and hasattr(r, "__cuda_array_interface__"):   # a CuPy array of another device
        return Array._new(r, _device_of(r, dev))
    c = r.__class__
    if c is tuple or c is list:
        return c(convert(v, dev, unwrap) for v in r)
    if c is dict:
        return {k: convert(v, dev, unwrap) for k, v in r.items()}
    if isinstance(r, (types.ModuleType, type)):
        return r
    if isinstance(r, tuple):   # named tuples and SciPy's result tuples
        if not any(_foreign_array(v, dev) for v in r):
            return r
        if hasattr(c, "_make"):
            try:
                return c._make(convert(v, dev, unwrap) for v in r)
            except TypeError:
                pass
        return _Result(r, dev, unwrap)
    if type(r).__module__.split(".")[0] not in ("scipy", "cupyx", "cupy"):
        return r
    if callable(r):            # interpolators, distributions: their calls give arrays
        return _Result(r, dev, unwrap)
    attrs = getattr(r, "__dict__", None)
    if attrs is not None and any(_foreign_array(v, dev) for v in attrs.values()):
        return _Result(r, dev, unwrap)   # result objects holding NumPy/CuPy arrays
    return r


def _foreign_array(v, dev):
    """Whether v is an array or NumPy scalar that is not yet a gpk_array Array."""
    return isinstance(v, (_np.ndarray, _np.generic)) or (dev is not CPU and isinstance(v, dev.xp.ndarray))


def _device_of(r, dev):
    dev_id = getattr(getattr(r, "device", None), "id", None)
    if dev is not CPU and (dev_id is None or dev_id == dev.index):
        return dev
    return Device(f"cuda:{dev_id}")


class _Result:
    """A SciPy (or CuPy) object handed out by gpk_array.scipy: what is read from it (attributes, items, call
    results, method results) comes back converted as the wrapper's results do; its methods take Arrays."""

    __slots__ = ("_obj", "_dev", "_unwrap")

    def __init__(self, obj, dev, unwrap):
        self._obj = obj
        self._dev = dev
        self._unwrap = unwrap

    def _args(self, args, kwargs):
        if self._unwrap:
            return backing(args), backing(kwargs)
        return args, kwargs

    def __getattr__(self, name):
        v = getattr(self._obj, name)
        if callable(v) and not isinstance(v, type):
            def method(*args, **kwargs):
                a, k = self._args(args, kwargs)
                return convert(v(*a, **k), self._dev, self._unwrap)
            method.__name__ = name
            method.__doc__ = getattr(v, "__doc__", None)
            return method
        return convert(v, self._dev, self._unwrap)

    def __call__(self, *args, **kwargs):
        a, k = self._args(args, kwargs)
        return convert(self._obj(*a, **k), self._dev, self._unwrap)

    def __iter__(self):
        return (convert(v, self._dev, self._unwrap) for v in self._obj)

    def __len__(self):
        return len(self._obj)

    def __getitem__(self, key):
        return convert(self._obj[key], self._dev, self._unwrap)

    def __repr__(self):
        return repr(self._obj)

    def __dir__(self):
        return dir(self._obj)

    @property
    def unwrapped(self):
        """The SciPy (or CuPy) object itself."""
        return self._obj
