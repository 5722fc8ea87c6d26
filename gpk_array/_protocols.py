"""NumPy's protocols on gpk_array Arrays: NEP 13 (``__array_ufunc__``) and NEP 18 (``__array_function__``).

``numpy.exp(x)``, ``numpy.add.reduce(x)``, ``numpy.mean(x)``, ``numpy.concatenate([x, y])``, ``numpy.linalg.norm(x)``,
``numpy.fft.fft(x)`` on Arrays run gpk_array's own implementations, the NumPy layer's (``gpk_array._numpy``: the
functions ``import gpk_array as np`` binds), on the arrays' device, and return Arrays. Every NumPy ufunc maps to
the gpk_array ufunc object of its name, with ``out=``, ``where=``, ``dtype=`` and the methods reduce, accumulate,
reduceat, outer and at; a NumPy function to the gpk_array function at the same place (``numpy.linalg.norm`` to
``gpk_array.linalg.norm``), where that one takes the call's arguments.

What gpk_array does not have (a function, a ufunc such as ``numpy.isnat``, an argument a function of ours does not
take): on the CPU device NumPy computes it on the Arrays' memory (zero-copy) and the results come back as Arrays on
the CPU device; on a CUDA device it raises ``TypeError`` naming the function and the way out
(``x.to_device("cpu")``), never copying to the host behind the caller's back.

Operands, as CuPy's rules have them: Arrays, Python and NumPy scalars mix freely; NumPy arrays (and lists) are host
memory: on the CPU device they take part (zero-copy), with an Array on a CUDA device they raise ``TypeError`` (no
implicit host-to-device copy either); an operand of another type that overrides NumPy's protocols gives
``NotImplemented`` so that its own implementation can answer.

SciPy's special-function ufuncs (``scipy.special.erf``, ...) called on a CUDA Array run CuPy's
(``cupyx.scipy.special``, imported on first use), as they do on a ``cupy.ndarray``; on the CPU device SciPy's own.
"""
import builtins
import importlib
import sys
from _thread import get_ident as _get_ident

import numpy as _np

from ._array import Array
from ._device import CPU
from ._errors import HostOnlyError
from ._ops._common import PY_SCALARS as _PY_SCALARS
_INF = float("inf")
_FALLBACK = object()   # a ufunc or function gpk_array does not implement: NumPy on the CPU, TypeError on CUDA

# the ufunc object (NumPy's, SciPy's, ...) -> our ufunc object, or _FALLBACK
_UFUNCS = {}
# (NumPy function, thread) pairs whose gpk_array implementation is running
_ACTIVE = set()
# the NumPy function -> (our function or None, the most positional arguments it takes, the keyword names it takes
# (None: any), whether the call is NumPy's like= dispatch of a creation function (ours takes device= instead))
_FUNCS = {}

# creation functions that reach __array_function__ only through like=: ours create on like's device
_LIKE = frozenset({"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "require", "arange",
                   "empty", "zeros", "ones", "full", "eye", "identity", "tri", "frombuffer", "fromfile",
                   "fromfunction", "fromiter", "fromstring", "loadtxt", "genfromtxt"})


# --- __array_ufunc__ ----------------------------------------------------------------------------------------------
def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: a NumPy (or SciPy) ufunc, or one of its methods, applied to operands among which an Array is:
    gpk_array's ufunc of that name on the Arrays' device (see the module's docstring)."""
    ours = _UFUNCS.get(ufunc)
    if ours is None:
        ours = _UFUNCS[ufunc] = _resolve_ufunc(ufunc)
    out = kwargs.get("out")
    # the operands that are data (an index of at/reduceat is not), then out= and where=
    if method == "__call__" or method == "outer":
        data = inputs
    elif method == "at":
        data = inputs[:1] + inputs[2:]
    else:
        data = inputs[:1]
    dev, host = _operands(data)
    if dev is _FOREIGN:
        return NotImplemented
    if out is not None:
        d2, h2 = _operands(out)
        if d2 is _FOREIGN:
            return NotImplemented
        dev, host = dev or d2, host or h2
    where = kwargs.get("where")
    if where is not None and where is not True and where.__class__ is not Array:
        host = True
    if dev is None:
        dev = self._device
    if dev is not CPU and host:
        raise HostOnlyError(_host_operand_message(f"numpy.{ufunc.__name__}", dev))
    if ours is _FALLBACK:
        return _ufunc_fallback(ufunc, method, inputs, kwargs, dev)
    if host and out is not None:
        return _with_host_out(ours, method, inputs, kwargs, out)
    if out is not None and len(out) == 1:
        kwargs["out"] = out[0]
    if method == "__call__":
        return ours(*inputs, **kwargs)
    return getattr(ours, method)(*inputs, **kwargs)


_FOREIGN = object()


def _operands(items):
    """(the device of the Arrays among items, or None; whether host data is among them), or (_FOREIGN, False)
    when one of them is of a type that overrides NumPy's protocols itself."""
    dev = None
    host = False
    for x in items:
        c = x.__class__
        if c is Array:
            if dev is None or dev is CPU:
                dev = x._device
        elif c in _PY_SCALARS or x is None:
            continue
        elif isinstance(x, Array):
            if dev is None or dev is CPU:
                dev = x._device
        elif isinstance(x, _np.ndarray):
            if x.ndim:   # a 0-d one is a value (NumPy hands its scalars to comparisons as 0-d arrays)
                host = True
        elif c is list or c is tuple:
            host = True
        elif isinstance(x, (_np.generic, int, float, complex)):
            continue
        else:
            return _FOREIGN, False
    return dev, host


def _host_operand_message(name, dev):
    return (f"{name}: a NumPy array (host memory) cannot be mixed with gpk_array arrays on {dev}, as with CuPy: "
            f"nothing is copied implicitly; move it with gpk_array.asarray(a, device=\"{dev}\") or move the arrays "
            "to the host with x.to_device(\"cpu\")")


def _resolve_ufunc(ufunc):
    """Our ufunc object for a NumPy ufunc (by name: numpy.add -> gpk_array.add), else _FALLBACK."""
    name = ufunc.__name__
    if getattr(_np, name, None) is not ufunc:
        return _FALLBACK   # SciPy's special functions and other libraries' ufuncs
    from ._numpy import ufuncs as _uf
    ours = getattr(_uf, name, None)
    if isinstance(ours, _uf.ufunc):
        return ours
    call = _CALL_ONLY.get(name)
    if call is not None:
        import gpk_array
        return _CallOnly(name, getattr(gpk_array, call))
    return _FALLBACK


class _CallOnly:
    """A NumPy gufunc or ufunc that gpk_array has as a plain function (matmul, vecdot, matvec, vecmat,
    bitwise_count): calls work, the ufunc methods raise as NumPy's do for gufuncs."""

    __slots__ = ("__name__", "_fn")

    def __init__(self, name, fn):
        self.__name__ = name
        self._fn = fn

    def __call__(self, *args, **kwargs):
        for k in ("casting", "order", "subok", "signature"):
            kwargs.pop(k, None)
        out = kwargs.pop("out", None)
        if out is not None and out.__class__ is tuple:
            out = out[0] if len(out) == 1 else out
        if out is None:
            return self._fn(*args, **kwargs)
        if "out" in _params(self._fn)[1]:
            return self._fn(*args, out=out, **kwargs)
        r = self._fn(*args, **kwargs)
        out[...] = r
        return out

    def __getattr__(self, method):
        if method in ("reduce", "accumulate", "reduceat", "outer", "at"):
            raise ValueError(f"method {method} is not supported for numpy.{self.__name__} on gpk_array arrays")
        raise AttributeError(method)


_CALL_ONLY = {"matmul": "matmul", "vecdot": "vecdot", "matvec": "matvec", "vecmat": "vecmat",
              "bitwise_count": "bitwise_count"}


def _with_host_out(ours, method, inputs, kwargs, out):
    """A CPU-device call with NumPy arrays as out=: computed into Arrays viewing them, the NumPy arrays returned."""
    views = tuple(Array._new(o, CPU) if isinstance(o, _np.ndarray) else o for o in out)
    kwargs["out"] = views[0] if method == "__call__" and len(views) == 1 else views
    r = ours(*inputs, **kwargs) if method == "__call__" else getattr(ours, method)(*inputs, **kwargs)
    back = {id(v): o for v, o in zip(views, out)}
    if r.__class__ is tuple:
        return tuple(back.get(id(v), v) for v in r)
    return back.get(id(r), r)


def _ufunc_fallback(ufunc, method, inputs, kwargs, dev):
    """A ufunc gpk_array has no object for: SciPy's special functions through cupyx.scipy.special on CUDA; on the
    CPU device the ufunc itself on the Arrays' memory; anything else on CUDA raises TypeError."""
    name = ufunc.__name__
    if dev is not CPU:
        where = _scipy_special_module(ufunc)
        if where is not None:
            fn = _cupyx_special(name)
            if fn is not None and method != "__call__":
                fn = getattr(fn, method, None)
            if fn is not None:
                return _call_on_backing(fn, inputs, kwargs, dev)
            raise HostOnlyError(f"scipy.special.{name}{'' if method == '__call__' else '.' + method} has no CuPy "
                            f"implementation (cupyx.scipy.special) for arrays on {dev}; compute it on the host "
                            "explicitly: scipy.special."
                            f"{name}(x.to_device(\"cpu\"))")
        what = f"numpy.{name}" + ("" if method == "__call__" else f".{method}")
        raise HostOnlyError(f"{what} is not implemented by gpk_array for arrays on {dev}; compute it on the host "
                        f"explicitly: {what}(x.to_device(\"cpu\")) (NumPy does not copy device memory implicitly)")
    memo = {}
    args = _to_numpy(inputs, memo)
    kw = _to_numpy(kwargs, memo)
    return _from_numpy(getattr(ufunc, method)(*args, **kw), memo)


def _scipy_special_module(ufunc):
    """The scipy.special module that defines ufunc (SciPy's special functions are NumPy ufuncs), else None."""
    name = ufunc.__name__
    for mod in ("scipy.special", "scipy.special._ufuncs", "scipy.special._special_ufuncs",
                "scipy.special._gufuncs"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, name, None) is ufunc:
            return m
    return None


def _cupyx_special(name):
    """cupyx.scipy.special's function of that name (imported on first use), or None."""
    try:
        mod = importlib.import_module("cupyx.scipy.special")
    except Exception:   # not installed, or a CuPy that cannot load here
        return None
    return getattr(mod, name, None)


def _call_on_backing(fn, inputs, kwargs, dev):
    """fn (a CuPy function) on the backing arrays of the Arrays among inputs/kwargs; results wrapped on dev."""
    args = tuple(x._data if isinstance(x, Array) else x for x in inputs)
    out = kwargs.pop("out", None)
    if out is not None:
        kwargs["out"] = tuple(o._data if isinstance(o, Array) else o for o in out)
        if len(out) == 1:
            kwargs["out"] = kwargs["out"][0]
    for k in ("where",):
        v = kwargs.get(k)
        if isinstance(v, Array):
            kwargs[k] = v._data
    r = fn(*args, **kwargs)
    if out is not None:
        return out[0] if len(out) == 1 else tuple(out)
    return _wrap_backing(r, dev)


def _wrap_backing(r, dev):
    if isinstance(r, tuple):
        return tuple(_wrap_backing(v, dev) for v in r)
    if hasattr(r, "shape") and hasattr(r, "dtype"):
        return Array._new(dev.xp.asarray(r), dev)
    return r


# --- __array_function__ -------------------------------------------------------------------------------------------
def array_function(self, func, types, args, kwargs):
    """NEP 18: a NumPy function called with Arrays among its array arguments: gpk_array's function at the same
    place on the Arrays' device (see the module's docstring)."""
    entry = _FUNCS.get(func)
    if entry is None:
        entry = _FUNCS[func] = _resolve_function(func)
    host = False
    for t in types:
        if t is not Array and not issubclass(t, Array):
            if issubclass(t, _np.ndarray):
                host = True
            else:
                return NotImplemented
    impl, maxpos, names, like = entry
    if host or impl is None or len(args) > maxpos or (names is not None and not names.issuperset(kwargs)):
        return _function_slow(self, func, entry, args, kwargs, host)
    if like and kwargs.get("device") is None:   # NumPy's Python-level creation functions pass device=None
        kwargs["device"] = self._device
    key = (func, _get_ident())
    if key in _ACTIVE:
        # our implementation of func handed an Array back to NumPy's func (an argument it passes through, such as
        # isclose's atol=): NumPy's own implementation now, or this would recurse
        return _function_slow(self, func, (None, 0, frozenset(), False), args, kwargs, host)
    _ACTIVE.add(key)
    try:
        return impl(*args, **kwargs)
    except TypeError:
        # an argument our function refuses that NumPy's takes (None or strings as object arrays, as in
        # matplotlib's broadcast_arrays(x, height, width, None)): on the CPU device NumPy's own implementation
        r = _host_retry(func, args, kwargs)
        if r is _NO_RETRY:
            raise
        return r
    finally:
        _ACTIVE.discard(key)


_NO_RETRY = object()


def _host_retry(func, args, kwargs):
    """NumPy's implementation of func on the arguments' NumPy memory where every Array among them is on the CPU
    device and NumPy's computes a result; _NO_RETRY otherwise (the caller re-raises its own error)."""
    if _device_in((args, kwargs)) is not None:   # an Array on a CUDA device: no implicit copy to the host
        return _NO_RETRY
    memo = {}
    try:
        r = getattr(func, "_implementation", func)(*_to_numpy(args, memo), **_to_numpy(kwargs, memo))
    except Exception:  # noqa: BLE001  (NumPy refuses too: our error is the one to show)
        return _NO_RETRY
    return _from_numpy(r, memo)


def _function_slow(self, func, entry, args, kwargs, host):
    impl, maxpos, names, like = entry
    dev = _device_in((args, kwargs)) or self._device
    name = _func_name(func)
    if dev is not CPU and host:
        raise HostOnlyError(_host_operand_message(name, dev))
    fits = impl is not None and len(args) <= maxpos and (names is None or names.issuperset(kwargs))
    key = (func, _get_ident())
    if fits and key not in _ACTIVE:
        if like and kwargs.get("device") is None:
            kwargs["device"] = self._device
        _ACTIVE.add(key)
        try:
            return impl(*args, **kwargs)
        except TypeError:   # as in array_function
            r = _host_retry(func, args, kwargs)
            if r is _NO_RETRY:
                raise
            return r
        finally:
            _ACTIVE.discard(key)
    if fits:
        impl = None   # re-entered from our own implementation: NumPy's below
    if dev is not CPU:
        if impl is None:
            why = "is not implemented by gpk_array"
        else:
            extra = sorted(set(kwargs) - names) if names is not None else []
            why = (f"is implemented by gpk_array without the argument(s) {', '.join(extra)}" if extra else
                   f"is implemented by gpk_array with at most {maxpos} positional arguments")
        raise HostOnlyError(f"{name} {why} for arrays on {dev}; compute it on the host explicitly with the arrays "
                            "moved there: x.to_device(\"cpu\") (device memory is never copied implicitly)")
    memo = {}
    a = _to_numpy(args, memo)
    k = _to_numpy(kwargs, memo)
    base = getattr(func, "_implementation", func)
    return _from_numpy(base(*a, **k), memo)


def _func_name(func):
    mod = getattr(func, "__module__", None) or "numpy"
    return f"{mod}.{func.__name__}"


def _resolve_function(func):
    """(our function or None, its positional capacity, its keyword names or None, like=) for a NumPy function."""
    mod = getattr(func, "__module__", None) or "numpy"
    name = func.__name__
    impl = _ADAPTERS.get(f"{mod}.{name}")
    if impl is None and mod.split(".")[0] == "numpy":
        import gpk_array
        target = gpk_array
        for part in mod.split(".")[1:]:
            target = getattr(target, part, None)
            if target is None or not hasattr(target, "__name__"):
                target = None
                break
        impl = getattr(target, name, None) if target is not None else None
        if impl is not None and (impl is func or not callable(impl) or isinstance(impl, type) or
                                 not getattr(impl, "__module__", "gpk_array").startswith("gpk_array")):
            impl = None   # NumPy's own function re-exported (binary_repr, ...), a class, a constant
    if impl is None:
        return (None, 0, frozenset(), False)
    maxpos, names = _params(impl)
    like = name in _LIKE and mod == "numpy" and (names is None or "device" in names)
    return (impl, maxpos, names, like)


def _params(fn):
    """(the most positional arguments fn takes, the keyword names it takes or None for any) of fn."""
    import inspect   # here, not at import: `import gpk_array` does not pay for it
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _INF, None
    maxpos = 0
    names = set()
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            maxpos = _INF
        elif p.kind is p.VAR_KEYWORD:
            names = None
        else:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and maxpos is not _INF:
                maxpos += 1
            if p.kind is not p.POSITIONAL_ONLY and names is not None:
                names.add(p.name)
    return maxpos, (None if names is None else frozenset(names))


def _device_in(obj, depth=0):
    """A CUDA device of an Array inside obj (nested tuples, lists, dicts: three levels), else None."""
    if isinstance(obj, Array):
        return obj._device if obj._device is not CPU else None
    if depth < 3:
        if isinstance(obj, (tuple, list)):
            for v in obj:
                d = _device_in(v, depth + 1)
                if d is not None:
                    return d
        elif isinstance(obj, dict):
            for v in obj.values():
                d = _device_in(v, depth + 1)
                if d is not None:
                    return d
    return None


def _to_numpy(obj, memo):
    """obj with the (CPU) Arrays inside it replaced by their NumPy memory (zero-copy); memo maps id(ndarray) to
    the Array it came from, so results that are those ndarrays (out=) come back as the same Arrays."""
    if isinstance(obj, Array):
        d = obj._data
        memo[id(d)] = (d, obj)
        return d
    c = obj.__class__
    if c is tuple or c is list:
        return c(_to_numpy(v, memo) for v in obj)
    if c is dict:
        return {k: _to_numpy(v, memo) for k, v in obj.items()}
    return obj


def _from_numpy(r, memo):
    """A NumPy result as gpk_array's: ndarrays and NumPy scalars of our dtypes as Arrays on the CPU device (the
    inputs' own Arrays where r is their memory), tuples and lists element by element; anything else as it is."""
    if isinstance(r, _np.ndarray):
        hit = memo.get(id(r))
        if hit is not None and hit[0] is r:
            return hit[1]
        if r.dtype.kind in "biufc" or r.dtype.name == "bfloat16":
            return Array._new(_np.asarray(r), CPU)
        return r
    if isinstance(r, _np.generic) and r.dtype.kind in "biufc":
        return Array._new(_np.asarray(r), CPU)
    c = r.__class__
    if c is tuple or c is list:
        return c(_from_numpy(v, memo) for v in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):   # named tuples (linalg's results)
        return c(*(_from_numpy(v, memo) for v in r))
    return r


# --- NumPy's signatures where ours differ ----------------------------------------------------------------------------
def _fft_one(name):
    def fn(a, n=None, axis=-1, norm=None, out=None):
        import gpk_array
        r = getattr(gpk_array.fft, name)(a, n=n, axis=axis, norm="backward" if norm is None else norm)
        return r if out is None else _into(r, out)
    fn.__name__ = name
    fn.__doc__ = f"numpy.fft.{name}'s signature on gpk_array.fft.{name} (norm=None is \"backward\"; out=)."
    return fn


def _fft_many(name, target, default_axes=None):
    def fn(a, s=None, axes=default_axes, norm=None, out=None):
        import gpk_array
        r = getattr(gpk_array.fft, target)(a, s=s, axes=axes, norm="backward" if norm is None else norm)
        return r if out is None else _into(r, out)
    fn.__name__ = name
    fn.__doc__ = f"numpy.fft.{name}'s signature on gpk_array.fft.{target}."
    return fn


def _into(r, out):
    if out.__class__ is not Array:
        raise TypeError(f"out= must be a gpk_array Array, got {type(out).__name__}")
    out[...] = r
    return out


def _eigh(a, UPLO="L"):
    """numpy.linalg.eigh's UPLO=: "U" reads the upper triangle (the lower one of the conjugate transpose)."""
    import gpk_array
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return gpk_array.linalg.eigh(a if UPLO == "L" else gpk_array.conj(gpk_array.matrix_transpose(a)))


def _eigvalsh(a, UPLO="L"):
    """numpy.linalg.eigvalsh's UPLO=."""
    import gpk_array
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return gpk_array.linalg.eigvalsh(a if UPLO == "L" else gpk_array.conj(gpk_array.matrix_transpose(a)))


def _can_cast(from_, to, casting="safe"):
    """numpy.can_cast with casting=: "safe" is the standard's can_cast; other rules are NumPy's on the dtypes."""
    import gpk_array
    if casting == "safe":
        return gpk_array.can_cast(from_, to)
    f = from_.dtype if isinstance(from_, Array) else from_
    return builtins.bool(_np.can_cast(f, to, casting=casting))


_ADAPTERS = {f"numpy.fft.{n}": _fft_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")}
_ADAPTERS.update({f"numpy.fft.{n}": _fft_many(n, n) for n in ("fftn", "ifftn", "rfftn", "irfftn")})
_ADAPTERS.update({f"numpy.fft.{n}": _fft_many(n, n[:-1] + "n", (-2, -1))
                  for n in ("fft2", "ifft2", "rfft2", "irfft2")})
_ADAPTERS.update({"numpy.linalg.eigh": _eigh, "numpy.linalg.eigvalsh": _eigvalsh, "numpy.can_cast": _can_cast})


def install(cls):
    """Make cls (Array) take part in NumPy's protocols: the two functions above become its methods."""
    cls.__array_ufunc__ = array_ufunc
    cls.__array_function__ = array_function
