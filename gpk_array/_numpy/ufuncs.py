"""NumPy's universal functions: callable objects with ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

A call ``add(x1, x2, out=None)`` goes straight to the standard's function (one extra Python call), so the standard's
semantics hold for every call form the standard defines. NumPy's extra call forms (positional ``out``, ``dtype=``,
``where=``) take a slower path here. The methods compute with the backend's own ufunc method (``numpy.add.reduce``
on the CPU, ``cupy.add.reduce`` on a CUDA device) where it has one; CuPy's ufuncs have reduce/accumulate only for
add and multiply, reduceat only for add and ``at`` only for a few (ufunc, dtype) pairs, so the rest is computed here
with the device's array operations (max/min/all/any, pairwise halving, log-step scans, one pass per repeat of an
index for ``at``).
"""
import math
import sys

import numpy as _np

from .. import _dtypes as _dt
from .._array import Array, check_writeable_any
from .._device import CPU
from .._ops import _fperr
from .._ops import elementwise as _ew
from .._ops._common import as_array
from . import ufunc_types as _ut
from .ufunc_device import (_DEV_ACCUMULATE, _DEV_AT, _DEV_REDUCE, _DEV_REDUCEAT, _dev_accumulate, _dev_at,
                           _dev_reduce, _dev_reduceat)
from ._util import (NoValue, PY_SCALARS, data, data_or_scalar, dev_of, finish, new, oom_guard, out_data, std_fn,
                    to_array)

__all__ = ["ufunc"]


class ufunc:
    """A NumPy-style universal function: call it like the function it wraps; reduce/accumulate/outer/at."""

    __slots__ = ("_fn", "_bname", "__name__", "nin", "nout", "identity")

    def __init__(self, name, fn, bname, nin, nout=1, identity=None):
        self._fn = fn
        self._bname = bname
        self.__name__ = name
        self.nin = nin
        self.nout = nout
        self.identity = identity

    @property
    def nargs(self):
        """The number of arguments: ``nin + nout``."""
        return self.nin + self.nout

    @property
    def types(self):
        """The loops, as NumPy's ``types`` of the ufunc of the same name over gpk_array's dtypes ("ff->f", ...;
        no object, long double, datetime or string loops)."""
        return _ut.types(self._bname)

    @property
    def ntypes(self):
        """The number of loops: ``len(types)``."""
        return len(_ut.types(self._bname))

    @property
    def signature(self):
        """None: every ufunc here is elementwise (NumPy's gufunc signature string for generalized ufuncs)."""
        return None

    def resolve_dtypes(self, dtypes, *, signature=None, casting=None, reduction=False):
        """The operand and result dtypes of a call with ``dtypes`` (a tuple, None for results to find), as
        NumPy's ``ufunc.resolve_dtypes`` for the ufunc of the same name resolves them."""
        return _ut.resolve_dtypes(self._bname, dtypes, signature, casting, reduction)

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def __reduce__(self):
        return (_lookup, (self.__name__,))

    # --- NumPy's extra call forms ---------------------------------------------------------------------------------
    def _slow(self, args, out, kwargs):
        dt = kwargs.pop("dtype", None)
        where = kwargs.pop("where", True)
        for k in ("casting", "order", "subok", "signature"):
            kwargs.pop(k, None)
        if kwargs:
            raise TypeError(f"{self.__name__}() got unexpected keyword arguments {sorted(kwargs)}")
        outs = out if out.__class__ is tuple else ((out,) if out is not None else ())
        if dt is not None:
            d = _dt.to_dtype(dt)
            dev = dev_of(*args)
            args = tuple(a if a.__class__ in PY_SCALARS else new(data(a, dev).astype(d, copy=False), dev)
                         for a in args)
        if where is True:
            if self.nout == 1:
                return self._fn(*args, out=outs[0] if outs else None)
            return self._fn(*args, out=outs or None)
        res = self._fn(*args)
        dev = dev_of(*args)
        mask = data(where, dev)
        xp = dev.xp
        single = self.nout == 1
        res = (res,) if single else res
        if not outs:
            outs = tuple(None for _ in res)
        done = []
        for r, o in zip(res, outs):
            if o is None:
                target = xp.zeros(_np.broadcast_shapes(r._data.shape, mask.shape), dtype=r._data.dtype)
                xp.copyto(target, r._data, where=mask)
                done.append(new(target, dev))
            else:
                xp.copyto(out_data(o, dev), r._data, casting="unsafe", where=mask)
                done.append(o)
        return done[0] if single else tuple(done)

    # --- methods ----------------------------------------------------------------------------------------------
    def _backend(self, dev):
        u = getattr(dev.xp, self._bname, None)
        if u is None or not hasattr(u, "reduce"):
            raise TypeError(f"{self.__name__} has no ufunc methods on {dev}")
        return u

    def _need_binary(self, what):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{what} only supported for binary functions")

    @oom_guard
    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=NoValue, where=True):
        """Reduce along axis (None: all axes) by repeated application, as NumPy's ``ufunc.reduce``."""
        self._need_binary("reduce")
        x = to_array(array)
        dev = x._device
        kw = {"axis": axis, "keepdims": keepdims}
        if dtype is not None:
            kw["dtype"] = _dt.to_dtype(dtype)
        u = self._backend(dev)
        if dev.xp is _np:
            if initial is not NoValue:
                kw["initial"] = initial
            if where is not True:
                kw["where"] = data(where, dev)
            return finish(_np.asarray(u.reduce(x._data, **kw)), dev, out)
        d = x._data
        if where is not True:
            fill = self.identity if initial is NoValue else initial
            if fill is None:
                raise ValueError(f"reduction operation '{self.__name__}' does not have an identity, so to use a "
                                 "where mask one has to specify 'initial'")
            d = dev.xp.where(data(where, dev), d, dev.xp.asarray(fill, dtype=d.dtype))
        if initial is not NoValue and d.size == 0:
            shape = _np.sum(_np.zeros(d.shape), axis=axis, keepdims=keepdims).shape
            return finish(dev.xp.full(shape, initial, dtype=kw.get("dtype", d.dtype)), dev, out)
        if self._bname in _DEV_REDUCE:
            r = u.reduce(d, **kw)
        else:
            r = _dev_reduce(self, u, dev.xp, d, axis, keepdims, kw.get("dtype"))
        if initial is not NoValue:
            r = u(r, dev.xp.asarray(initial, dtype=r.dtype))
        return finish(dev.xp.asarray(r), dev, out)

    @oom_guard
    def accumulate(self, array, axis=0, dtype=None, out=None):
        """Running reduction along axis, as NumPy's ``ufunc.accumulate``."""
        self._need_binary("accumulate")
        x = to_array(array)
        dev = x._device
        kw = {"axis": axis}
        if dtype is not None:
            kw["dtype"] = _dt.to_dtype(dtype)
        u = self._backend(dev)
        if dev.xp is _np or self._bname in _DEV_ACCUMULATE:
            return finish(u.accumulate(x._data, **kw), dev, out)
        return finish(_dev_accumulate(self, u, dev.xp, x._data, axis, kw.get("dtype")), dev, out)

    @oom_guard
    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        """Reductions over the slices ``indices[i]:indices[i+1]`` along axis, as NumPy's ``ufunc.reduceat``."""
        self._need_binary("reduceat")
        x = to_array(array)
        dev = x._device
        idx = data(indices, dev)
        kw = {"axis": axis}
        if dtype is not None:
            kw["dtype"] = _dt.to_dtype(dtype)
        u = self._backend(dev)
        if dev.xp is _np or self._bname in _DEV_REDUCEAT:
            return finish(u.reduceat(x._data, idx, **kw), dev, out)
        return finish(_dev_reduceat(self, u, dev.xp, x._data, idx, axis, kw.get("dtype")), dev, out)

    @oom_guard
    def outer(self, A, B, /, **kwargs):
        """``op(a[i, ...], b[j, ...])`` for all pairs: result shape ``A.shape + B.shape``."""
        self._need_binary("outer")
        dev = dev_of(A, B)
        a = data(A, dev)
        b = data(B, dev)
        out = kwargs.pop("out", None)
        a = a.reshape(a.shape + (1,) * b.ndim)
        return self.__call__(new(a, dev), new(b, dev), out=out, **kwargs)

    def at(self, a, indices, b=None, /):
        """Unbuffered in-place ``a[indices] = op(a[indices], b)``: repeated indices accumulate."""
        if a.__class__ is not Array:
            raise TypeError("ufunc.at needs a gpk_array Array to modify in place")
        check_writeable_any(a)   # on the CPU too: NumPy 2.4's ufunc.at writes into read-only arrays
        dev = a._device
        from .._ops.indexing import _key
        key = _key(indices, dev)
        u = self._backend(dev)
        xp = dev.xp
        if xp is _np:
            if self.nin == 1:
                u.at(a._data, key)
            else:
                u.at(a._data, key, data_or_scalar(b, dev))
            return
        if self.nin == 2 and a._data.dtype in _DEV_AT.get(self._bname, ()):
            v = data_or_scalar(b, dev)
            v = xp.asarray(v, dtype=a._data.dtype) if v.__class__ in PY_SCALARS else v.astype(a._data.dtype,
                                                                                                  copy=False)
            u.at(a._data, key, v)
            return
        _dev_at(u, xp, a._data, key, None if self.nin == 1 else data_or_scalar(b, dev))


def _ufunc_doc(u):
    """The docstring of one ufunc object: its call form, then what the function it wraps says."""
    args = ", ".join(f"x{i + 1}" for i in range(u.nin)) if u.nin > 1 else "x"
    outs = "out=None" if u.nout == 1 else "out=(None, None)"
    head = (f"NumPy's ufunc ``{u.__name__}({args}, /, {outs}, *, where=True, dtype=None)`` on gpk_array Arrays "
            f"({u.nin} input{'s' if u.nin > 1 else ''}, {u.nout} output{'s' if u.nout > 1 else ''}), computed on "
            "the operands' device.")
    if u.nin == 2 and u.nout == 1:
        head += " Methods: ``reduce``, ``accumulate``, ``reduceat``, ``outer``, ``at``."
    inner = getattr(u._fn, "__doc__", None)
    if inner:
        return head + "\n\n" + inner.strip()
    return head + f"\n\nComputed by the backend's ``{u._bname}`` (NumPy's on the CPU device, CuPy's on CUDA)."


class _Unary(ufunc):
    __slots__ = ()
    __doc__ = property(_ufunc_doc)

    def __call__(self, x, /, out=None, **kwargs):
        if kwargs or out.__class__ is tuple:
            return self._slow((x,), out, kwargs)
        return self._fn(x, out=out)


class _Binary(ufunc):
    __slots__ = ()
    __doc__ = property(_ufunc_doc)

    def __call__(self, x1, x2, /, out=None, **kwargs):
        if kwargs or out.__class__ is tuple:
            return self._slow((x1, x2), out, kwargs)
        return self._fn(x1, x2, out=out)


def _lookup(name):
    return getattr(sys.modules[__name__], name)


# --- functions for ufuncs the standard does not have -------------------------------------------------------------
def _np_unary(bname, float_only=False):
    def fn(x, /, *, out=None):
        if x.__class__ is not Array:
            x = as_array(x)
        dev = x._device
        f = getattr(dev.xp, bname)
        r = f(x._data) if out is None else f(x._data, out=out_data(out, dev))
        if dev is not CPU:
            _fperr.after(bname, r, dev.xp, x._data)
        return new(r, dev) if out is None else out
    fn.__name__ = bname
    return fn


def _np_binary(bname):
    def fn(x1, x2, /, *, out=None):
        a, b, dev = _ew.binary_operands(x1, x2)
        f = getattr(dev.xp, bname)
        r = f(a, b) if out is None else f(a, b, out=out_data(out, dev))
        if dev is not CPU:
            _fperr.after(bname, r, dev.xp, a, b)
        return new(r, dev) if out is None else out
    fn.__name__ = bname
    return fn


def _two_out(bname, nin):
    """Functions with two results (divmod, modf, frexp): ``out`` is None or a pair of Arrays."""
    def fn(*args, out=None):
        if nin == 2:
            a, b, dev = _ew.binary_operands(*args)
            ins = (a, b)
        else:
            x = args[0] if args[0].__class__ is Array else as_array(args[0])
            dev = x._device
            ins = (x._data,)
        r1, r2 = getattr(dev.xp, bname)(*ins)
        if out is None:
            return new(r1, dev), new(r2, dev)
        o1, o2 = out
        res = []
        for r, o in ((r1, o1), (r2, o2)):
            if o is None:
                res.append(new(r, dev))
            else:
                out_data(o, dev)[...] = r
                res.append(o)
        return tuple(res)
    fn.__name__ = bname
    return fn


class _TwoOut(ufunc):
    __slots__ = ()
    __doc__ = property(_ufunc_doc)

    def __call__(self, *args, out=None, **kwargs):
        if len(args) == self.nin + 2:
            args, out = args[:self.nin], args[self.nin:]
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments")
        if kwargs:
            return self._slow(args, out, kwargs)
        return self._fn(*args, out=out)


def _reciprocal(x, /, *, out=None):
    """NumPy's reciprocal: integer input stays integer (1 // x truncated, as NumPy); floats as the standard."""
    if x.__class__ is not Array:
        x = as_array(x)
    if _dt.kind(x._data.dtype) in "iu":
        dev = x._device
        if out is None:
            return new(dev.xp.reciprocal(x._data), dev)
        dev.xp.reciprocal(x._data, out=out_data(out, dev))
        return out
    return _std("reciprocal")(x, out=out)


def _spacing(x, /, *, out=None):
    """Distance to the next representable number away from zero (NumPy's spacing), on any device."""
    if x.__class__ is not Array:
        x = as_array(x)
    dev = x._device
    xp = dev.xp
    d = x._data
    if d.dtype.kind in "biu":
        d = d.astype(_np.float64)
    if xp is _np:
        r = _np.spacing(d)
    else:
        # below the smallest normal number the spacing is the smallest subnormal one; a GPU that flushes float32
        # subnormals to zero would make nextafter(0, inf) the smallest normal number, so that range is set apart
        a = xp.abs(d)
        fi = _np.finfo(d.dtype)
        s = xp.nextafter(a, xp.asarray(_np.inf, dtype=d.dtype)) - a
        s = xp.where(a < fi.smallest_normal, xp.asarray(fi.smallest_subnormal, dtype=d.dtype), s)
        r = xp.where(d < 0, -s, s)
    return finish(r, dev, out)


_INV_LN2 = 1.0 / math.log(2.0)


def _logaddexp2(x1, x2, /, *, out=None):
    """log2(2**a + 2**b); on a device as max + log1p(2**-|a - b|) / ln 2, since CuPy's logaddexp2 loses the small
    term (it rounds 1 + 2**-d first: 1e-4 relative error in float32 at a difference of 11.5)."""
    a, b, dev = _ew.binary_operands(x1, x2)
    xp = dev.xp
    if xp is _np or a.dtype.kind != "f" or b.dtype != a.dtype:
        r = xp.logaddexp2(a, b) if out is None else xp.logaddexp2(a, b, out=out_data(out, dev))
        return new(r, dev) if out is None else out
    r = xp.maximum(a, b) + (xp.log1p(xp.exp2(-xp.abs(a - b))) * _INV_LN2).astype(a.dtype, copy=False)
    r = xp.where(a == b, a + 1, r)  # equal arguments, infinities of one sign among them
    if out is None:
        return new(r, dev)
    out_data(out, dev)[...] = r
    return out


def _lcm(x1, x2, /, *, out=None):
    """NumPy's lcm, ``|a| // gcd(a, b) * |b|`` in the operands' dtype: an overflowing result wraps as NumPy's does
    (CuPy's own lcm returns the absolute value of the wrapped result)."""
    a, b, dev = _ew.binary_operands(x1, x2)
    xp = dev.xp
    if a.__class__ in PY_SCALARS and b.__class__ not in PY_SCALARS:
        a = xp.asarray(a, dtype=b.dtype if b.dtype.kind in "iu" and a.__class__ is int else None)
    if b.__class__ in PY_SCALARS and a.__class__ not in PY_SCALARS:
        b = xp.asarray(b, dtype=a.dtype if a.dtype.kind in "iu" and b.__class__ is int else None)
    if xp is _np or not hasattr(a, "dtype") or a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        r = xp.lcm(a, b)
    else:
        dt = _np.result_type(a.dtype, b.dtype)
        a = a.astype(dt, copy=False)
        b = b.astype(dt, copy=False)
        g = xp.gcd(a, b)
        zero = g == 0
        r = (xp.abs(a) // xp.where(zero, xp.ones((), dtype=dt), g)) * xp.abs(b)
        r = xp.where(zero, xp.zeros((), dtype=dt), r).astype(dt, copy=False)
    return finish(r, dev, out)


# binary ufuncs computed by our own function rather than the backend's of the same name
_OWN_BINARY = {"lcm": _lcm, "logaddexp2": _logaddexp2}


def _std(name):
    return std_fn(name, _ew)


# name: (function, backend ufunc name, nin, identity); aliases map extra names to the same object
_STD_UNARY = {
    "absolute": ("abs", "absolute"), "arccos": ("acos", "arccos"), "arccosh": ("acosh", "arccosh"),
    "arcsin": ("asin", "arcsin"), "arcsinh": ("asinh", "arcsinh"), "arctan": ("atan", "arctan"),
    "arctanh": ("atanh", "arctanh"), "invert": ("bitwise_invert", "invert"), "ceil": ("ceil", "ceil"),
    "conjugate": ("conj", "conjugate"), "cos": ("cos", "cos"), "cosh": ("cosh", "cosh"), "exp": ("exp", "exp"),
    "expm1": ("expm1", "expm1"), "floor": ("floor", "floor"), "isfinite": ("isfinite", "isfinite"),
    "isinf": ("isinf", "isinf"), "isnan": ("isnan", "isnan"), "log": ("log", "log"), "log1p": ("log1p", "log1p"),
    "log2": ("log2", "log2"), "log10": ("log10", "log10"), "logical_not": ("logical_not", "logical_not"),
    "negative": ("negative", "negative"), "positive": ("positive", "positive"), "sign": ("sign", "sign"),
    "signbit": ("signbit", "signbit"), "sin": ("sin", "sin"), "sinh": ("sinh", "sinh"),
    "square": ("square", "square"), "sqrt": ("sqrt", "sqrt"), "tan": ("tan", "tan"), "tanh": ("tanh", "tanh"),
    "trunc": ("trunc", "trunc"),
}
_STD_BINARY = {
    "add": ("add", "add", 0), "subtract": ("subtract", "subtract", None), "multiply": ("multiply", "multiply", 1),
    "divide": ("divide", "divide", None), "floor_divide": ("floor_divide", "floor_divide", None),
    "power": ("pow", "power", None), "remainder": ("remainder", "remainder", None),
    "arctan2": ("atan2", "arctan2", None), "hypot": ("hypot", "hypot", 0), "copysign": ("copysign", "copysign", None),
    "nextafter": ("nextafter", "nextafter", None), "logaddexp": ("logaddexp", "logaddexp", -_np.inf),
    "maximum": ("maximum", "maximum", None), "minimum": ("minimum", "minimum", None),
    "equal": ("equal", "equal", None), "not_equal": ("not_equal", "not_equal", None),
    "less": ("less", "less", None), "less_equal": ("less_equal", "less_equal", None),
    "greater": ("greater", "greater", None), "greater_equal": ("greater_equal", "greater_equal", None),
    "logical_and": ("logical_and", "logical_and", True), "logical_or": ("logical_or", "logical_or", False),
    "logical_xor": ("logical_xor", "logical_xor", False), "bitwise_and": ("bitwise_and", "bitwise_and", -1),
    "bitwise_or": ("bitwise_or", "bitwise_or", 0), "bitwise_xor": ("bitwise_xor", "bitwise_xor", 0),
    "left_shift": ("bitwise_left_shift", "left_shift", None),
    "right_shift": ("bitwise_right_shift", "right_shift", None),
}
_NP_UNARY = ["exp2", "cbrt", "rint", "deg2rad", "rad2deg", "degrees", "radians", "fabs"]
_NP_BINARY = {"fmod": None, "fmax": None, "fmin": None, "float_power": None, "heaviside": None, "gcd": 0,
              "lcm": None, "ldexp": None, "logaddexp2": -_np.inf}
_ALIASES = {
    "abs": "absolute", "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
    "atan": "arctan", "atanh": "arctanh", "bitwise_invert": "invert", "bitwise_not": "invert",
    "conj": "conjugate", "true_divide": "divide", "pow": "power", "mod": "remainder", "atan2": "arctan2",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
}

_mod = sys.modules[__name__]


def _build():
    names = []
    for name, (std, bname) in _STD_UNARY.items():
        setattr(_mod, name, _Unary(name, _std(std), bname, 1))
        names.append(name)
    for name, (std, bname, ident) in _STD_BINARY.items():
        setattr(_mod, name, _Binary(name, _std(std), bname, 2, identity=ident))
        names.append(name)
    for name in _NP_UNARY:
        setattr(_mod, name, _Unary(name, _np_unary(name), name, 1))
        names.append(name)
    setattr(_mod, "reciprocal", _Unary("reciprocal", _reciprocal, "reciprocal", 1))
    setattr(_mod, "spacing", _Unary("spacing", _spacing, "spacing", 1))
    names += ["reciprocal", "spacing"]
    for name, ident in _NP_BINARY.items():
        fn = _OWN_BINARY.get(name) or _np_binary(name)
        setattr(_mod, name, _Binary(name, fn, name, 2, identity=ident))
        names.append(name)
    setattr(_mod, "divmod", _TwoOut("divmod", _two_out("divmod", 2), "divmod", 2, 2))
    setattr(_mod, "modf", _TwoOut("modf", _two_out("modf", 1), "modf", 1, 2))
    setattr(_mod, "frexp", _TwoOut("frexp", _two_out("frexp", 1), "frexp", 1, 2))
    names += ["divmod", "modf", "frexp"]
    for alias, target in _ALIASES.items():
        setattr(_mod, alias, getattr(_mod, target))
        names.append(alias)
    return names


__all__ += _build()
