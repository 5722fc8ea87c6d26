"""Element-wise functions (standard section "Element-wise Functions").

Each function takes Arrays, array-likes or Python scalars (weak, as in the standard and NEP 50), checks devices,
applies the shared promotion (bfloat16 included), and lets the backend compute. ``out=`` is a NumPy extension.
"""
import numpy as np

from .. import _dtypes as _dt
from .. import _gpu, _hooks, _hostdata, _promotion
from . import _fperr
from .._array import _array_like, check_writeable
from .._dtypes import HOST_KINDS as _HOST_KINDS
from .._errors import DeviceError
from ._common import CPU, PY_SCALARS, Array, as_array, as_arrays, new, oom_guard, plain_scalar, raise_oom

_BF16 = _dt.BF16


def _out_data(out, dev):
    if out.__class__ is not Array:
        raise TypeError(f"out= must be a gpk_array Array, got {type(out).__name__}")
    if out._device is not dev:
        raise DeviceError(f"out= is on {out._device}, the operands on {dev}")
    if dev is not CPU:
        check_writeable(out)
    return out._data


def _mixed(a, b, dev):
    """Cast two backing arrays to their promoted dtype where the backend cannot (bfloat16 pairs)."""
    dt = _promotion.result_dtype(a.dtype, b.dtype)
    if a.dtype != dt:
        a = a.astype(dt)
    if b.dtype != dt:
        b = b.astype(dt)
    return a, b


def _scalar_bf16(a, s, xp):
    """A bfloat16 array and a Python scalar: ml_dtypes promotes the scalar strongly, so make it a 0-d array of
    the weakly promoted dtype."""
    dt = _promotion.scalar_result(a.dtype, s)
    return (a if dt == a.dtype else a.astype(dt)), xp.asarray(s, dtype=dt)


def binary_operands(x1, x2):
    """(backing1, backing2, device) for a binary function, with devices checked and bfloat16 promoted."""
    c1 = x1.__class__
    c2 = x2.__class__
    if c1 is Array:
        dev = x1._device
        a = x1._data
        if c2 is Array:
            if x2._device is not dev:
                if a.dtype.kind in _HOST_KINDS or x2._data.dtype.kind in _HOST_KINDS:
                    return _hostdata.marked(x1), _hostdata.marked(x2), CPU
                raise DeviceError(f"arrays are on different devices: {dev} and {x2._device}; "
                                  "move one with x.to_device()")
            b = x2._data
        elif c2 in PY_SCALARS:
            if a.dtype == _BF16:
                a, x2 = _scalar_bf16(a, x2, dev.xp)
            return a, x2, dev
        else:
            p = plain_scalar(x2)  # a subclass of a Python scalar (finfo's limits): a Python scalar
            if p is not None:
                return binary_operands(x1, p)
            try:
                b = as_array(x2, dev)._data
            except (TypeError, DeviceError):  # a string or a date with a host-only array (gpk_array/_hostdata.py)
                if a.dtype.kind not in _HOST_KINDS:
                    raise
                return _hostdata.marked(x1), _hostdata.host_value(x2), CPU
    elif c2 is Array:
        dev = x2._device
        b = x2._data
        if c1 in PY_SCALARS:
            if b.dtype == _BF16:
                b, x1 = _scalar_bf16(b, x1, dev.xp)
            return x1, b, dev
        p = plain_scalar(x1)
        if p is not None:
            return binary_operands(p, x2)
        try:
            a = as_array(x1, dev)._data
        except (TypeError, DeviceError):  # a string or a date with a host-only array (gpk_array/_hostdata.py)
            if b.dtype.kind not in _HOST_KINDS:
                raise
            return _hostdata.host_value(x1), _hostdata.marked(x2), CPU
    else:
        p1, p2 = plain_scalar(x1), plain_scalar(x2)
        if p1 is not None or p2 is not None:
            return binary_operands(x1 if p1 is None else p1, x2 if p2 is None else p2)
        if c1 in PY_SCALARS and c2 in PY_SCALARS:
            from .creation import asarray
            x1 = asarray(x1)
            return binary_operands(x1, x2)
        x1, x2 = as_arrays(x1, x2)
        return binary_operands(x1, x2)
    if a.dtype != b.dtype and (a.dtype == _BF16 or b.dtype == _BF16):
        a, b = _mixed(a, b, dev)
    return a, b, dev


def array_operands(x1, x2):
    """binary_operands for functions of two arrays (tensordot, vecdot, cross, outer, solve): a Python scalar
    operand becomes a 0-d array of its default dtype, as NumPy converts it there, so the shape checks apply."""
    if x1.__class__ in PY_SCALARS or x2.__class__ in PY_SCALARS:
        x1, x2 = as_arrays(x1, x2)
    return binary_operands(x1, x2)


def _no_loop(e, name, *operands):
    """CuPy compiles an elementwise kernel for the operands' types, and an operand type its function has no loop
    for (atan2 of a complex Python scalar) fails in the CUDA compiler: raise NumPy's TypeError for it instead."""
    if type(e).__name__ == "CompileException":
        types = ", ".join(str(getattr(o, "dtype", type(o).__name__)) for o in operands)
        raise TypeError(f"{name} does not support operands of types ({types})") from None


def _precheck(ufunc, *operands):
    """Ask the scheduler's pre-allocation hook (set only while a CPU context is entered) about the result of
    ``ufunc`` on NumPy operands before NumPy allocates it; operands it cannot resolve are left to the allocation."""
    try:
        shape = np.broadcast_shapes(*(getattr(o, "shape", ()) for o in operands))
        dt = ufunc.resolve_dtypes(tuple(o.dtype if hasattr(o, "dtype") else type(o) for o in operands)
                                  + (None,) * ufunc.nout)[-1]
    except (TypeError, ValueError, AttributeError):
        return
    _hooks.precheck(shape, dt.itemsize * ufunc.nout, CPU)


def _unary(name, bname=None, doc="", complex_fix=False):
    bname = bname or name

    def fn(x, /, *, out=None):
        if x.__class__ is not Array:
            x = as_array(x)
        dev = x._device
        try:
            if complex_fix and dev.kind == "cuda" and x._data.dtype.kind == "c":
                r = _complex_special(bname, x._data, getattr(dev.xp, bname)(x._data), dev.xp)
                _fperr.after(bname, r, dev.xp, x._data)
                return _finish(r, dev, out)
            if out is None:
                d = x._data
                if dev is CPU:
                    if _hooks.prealloc_hook is not None:
                        _precheck(getattr(np, bname), d)
                    return new(getattr(np, bname)(d), dev)
                r = _gpu.unary(bname, d) if d.size >= _gpu.OWN_KERNELS_MIN else None
                if r is None:
                    r = getattr(dev.xp, bname)(d)
                _fperr.after(bname, r, dev.xp, d)
                return new(r, dev)
            r = getattr(dev.xp, bname)(x._data, out=_out_data(out, dev))
            if dev is not CPU:
                _fperr.after(bname, r, dev.xp, x._data)
            return out
        except MemoryError as e:
            raise_oom(e)
        except Exception as e:
            _no_loop(e, name, x._data)
            raise
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Element-wise {name} (standard: elementwise_functions.{name})."
    return fn


def _binary(name, bname=None, doc="", device_check=None):
    """The standard's binary function ``name`` (NumPy's/CuPy's ``bname``) and its operator; ``device_check(a, b)``
    runs before the computation on a device other than the CPU (NumPy's own checks run there)."""
    bname = bname or name
    np_fn = getattr(np, bname)

    def fn(x1, x2, /, *, out=None):
        # fast path: two Arrays of one dtype on one device, no out=
        if x1.__class__ is Array and x2.__class__ is Array and out is None:
            a = x1._data
            b = x2._data
            dev = x1._device
            if x2._device is dev and a.dtype is b.dtype:
                try:
                    if dev is CPU:
                        if _hooks.prealloc_hook is not None:
                            _precheck(np_fn, a, b)
                        return new(np_fn(a, b), dev)
                    return new(_on_device(a, b, dev.xp), dev)
                except MemoryError as e:
                    raise_oom(e)
                except Exception as e:
                    _no_loop(e, name, a, b)
                    raise
        a, b, dev = binary_operands(x1, x2)
        try:
            if out is None:
                if _hooks.prealloc_hook is not None and dev is CPU:
                    _precheck(np_fn, a, b)
                return new(np_fn(a, b) if dev is CPU else _on_device(a, b, dev.xp), dev)
            if device_check is not None and dev is not CPU:
                device_check(a, b)
            r = getattr(dev.xp, bname)(a, b, out=_out_data(out, dev))
            if dev is not CPU:
                _fperr.after(bname, r, dev.xp, a, b)
            return out
        except MemoryError as e:
            raise_oom(e)
        except Exception as e:
            _no_loop(e, name, a, b)
            raise
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Element-wise {name} (standard: elementwise_functions.{name})."

    def _on_device(a, b, xp):
        """CuPy's function, or our kernel for large array operands of one dtype (gpk_array/_gpu.py)."""
        if device_check is not None:
            device_check(a, b)
        r = None
        if a.__class__ is b.__class__ and (a.size >= _gpu.OWN_KERNELS_MIN or b.size >= _gpu.OWN_KERNELS_MIN):
            r = _gpu.binary(bname, a, b)
        if r is None:
            r = getattr(xp, bname)(a, b)
        _fperr.after(bname, r, xp, a, b)
        return r

    def operator(self, other):
        """The forward operator (x.__add__ and friends): the same fast path without a second call; an operand
        that is no array or scalar gives NotImplemented, so Python tries the other operand's method."""
        c = other.__class__
        a = self._data
        dev = self._device
        if c is Array:
            if other._device is not dev or other._data.dtype is not a.dtype:
                return fn(self, other)
            b = other._data
        elif c in PY_SCALARS:
            if a.dtype == _BF16:
                return fn(self, other)
            b = other  # NumPy and CuPy promote Python scalars weakly themselves (NEP 50)
        elif _array_like(other) or a.dtype.kind in _HOST_KINDS:  # strings, dates: gpk_array/_hostdata.py
            return fn(self, other)
        else:
            return NotImplemented
        try:
            if dev is CPU:
                if _hooks.prealloc_hook is not None:
                    _precheck(np_fn, a, b)
                return new(np_fn(a, b), dev)
            return new(_on_device(a, b, dev.xp), dev)
        except MemoryError as e:
            raise_oom(e)
        except Exception as e:
            _no_loop(e, name, a, b)
            raise
    operator.__name__ = f"__{name}__"
    fn.operator = operator
    return fn


# --- unary ----------------------------------------------------------------------------------------
abs = _unary("abs", "absolute")
acos = _unary("acos", "arccos", complex_fix=True)
acosh = _unary("acosh", "arccosh", complex_fix=True)
asin = _unary("asin", "arcsin", complex_fix=True)
asinh = _unary("asinh", "arcsinh", complex_fix=True)
atan = _unary("atan", "arctan", complex_fix=True)
atanh = _unary("atanh", "arctanh", complex_fix=True)
bitwise_invert = _unary("bitwise_invert", "invert")
ceil = _unary("ceil")
conj = _unary("conj", "conjugate")
cos = _unary("cos", complex_fix=True)
cosh = _unary("cosh", complex_fix=True)
exp = _unary("exp", complex_fix=True)
_expm1 = _unary("expm1")
floor = _unary("floor")
isfinite = _unary("isfinite")
isinf = _unary("isinf")
isnan = _unary("isnan")
log = _unary("log", complex_fix=True)
log1p = _unary("log1p", complex_fix=True)
log2 = _unary("log2", complex_fix=True)
log10 = _unary("log10", complex_fix=True)
logical_not = _unary("logical_not")
negative = _unary("negative")
positive = _unary("positive")
sign = _unary("sign")
signbit = _unary("signbit")
sin = _unary("sin", complex_fix=True)
sinh = _unary("sinh", complex_fix=True)
square = _unary("square")
sqrt = _unary("sqrt", complex_fix=True)
tan = _unary("tan", complex_fix=True)
_tanh = _unary("tanh", complex_fix=True)
trunc = _unary("trunc")
real = _unary("real")
imag = _unary("imag")

# --- binary ---------------------------------------------------------------------------------------
add = _binary("add")
atan2 = _binary("atan2", "arctan2")
bitwise_and = _binary("bitwise_and")
bitwise_left_shift = _binary("bitwise_left_shift", "left_shift")
bitwise_or = _binary("bitwise_or")
bitwise_right_shift = _binary("bitwise_right_shift", "right_shift")
bitwise_xor = _binary("bitwise_xor")
copysign = _binary("copysign")
divide = _binary("divide", "true_divide")
equal = _binary("equal")
_floor_divide = _binary("floor_divide")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
hypot = _binary("hypot")
less = _binary("less")
less_equal = _binary("less_equal")
logaddexp = _binary("logaddexp")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")
maximum = _binary("maximum")
minimum = _binary("minimum")
multiply = _binary("multiply")
nextafter = _binary("nextafter")
not_equal = _binary("not_equal")


def _negative_int_power(a, b):
    """NumPy's ValueError for an integer base and a negative integer exponent (CuPy computes a value): a Python
    int is checked on the host, an exponent array with one reduction and one synchronization."""
    # (a Python int base, 2 ** x, is weak: the exponent array's dtype decides)
    if a.__class__ is not int and (a.__class__ in PY_SCALARS or a.dtype.kind not in "iu"):
        return
    if b.__class__ is int:
        bad = b < 0
    elif b.__class__ in PY_SCALARS or b.dtype.kind != "i" or b.size == 0:
        return
    else:
        bad = bool((b < 0).any())
    if bad:
        raise ValueError("Integers to negative integer powers are not allowed.")


pow = _binary("pow", "power", device_check=_negative_int_power)
_remainder = _binary("remainder")
subtract = _binary("subtract")


def reciprocal(x, /, *, out=None):
    """1 / x (standard: elementwise_functions.reciprocal); integer input gives floating output."""
    x = as_array(x)
    k = _dt.kind(x.dtype)
    if k in "biu":
        return divide(1.0, x, out=out)
    if k == "c":
        # 1 / x by division gives NaN for a finite nonzero x of subnormal modulus (its square underflows) where the
        # backend's reciprocal gives the overflowed quotient; zeros and non-finite x keep division's special cases
        dev = x._device
        xp = dev.xp
        d = x._data
        with np.errstate(all="ignore"):
            q = xp.true_divide(1, d)
            r = xp.where(xp.isnan(q) & xp.isfinite(d) & (d != 0), xp.reciprocal(d), q)
        if out is None:
            return new(r, dev)
        o = _out_data(out, dev)
        o[...] = r
        return out
    return divide(1, x, out=out)


def round(x, /, decimals=0, *, out=None):
    """Round half to even (standard: elementwise_functions.round); decimals= is a NumPy extension."""
    x = as_array(x)
    xp = x._device.xp
    if out is None:
        return new(xp.round(x._data, decimals), x._device)
    xp.round(x._data, decimals, out=_out_data(out, x._device))
    return out


def clip(x, /, min=None, max=None, *, out=None):
    """Clamp to [min, max] (standard: elementwise_functions.clip); the result keeps x's dtype where the
    bounds are of x's kind, and follows NumPy's promotion otherwise."""
    x = as_array(x)
    dev = x._device
    xp = dev.xp
    dt = x.dtype
    k = _dt.kind(dt)

    def bound(v):
        if v is None:
            return None
        if v.__class__ is Array:
            if v._device is not dev:
                raise DeviceError(f"clip bound is on {v._device}, x on {dev}")
            return v._data
        if v.__class__ in PY_SCALARS:
            return v
        p = plain_scalar(v)
        if p is not None:
            return p
        return as_array(v, dev)._data
    lo, hi = bound(min), bound(max)
    if lo is None and hi is None:
        r = x._data.copy()
    else:
        same_kind = all(b is None or _bound_fits(b, k) for b in (lo, hi))
        r = x._data
        if k in "iu" and same_kind:
            info = np.iinfo(dt)
            lo = _clamp_int_bound(lo, info) if lo is not None and lo.__class__ is int else lo
            hi = _clamp_int_bound(hi, info) if hi is not None and hi.__class__ is int else hi
        if lo is not None:
            r = xp.maximum(r, lo)
        if hi is not None:
            r = xp.minimum(r, hi)
        if same_kind and r.dtype != dt:
            r = r.astype(dt)
        if r is x._data:
            r = r.copy()
    if out is not None:
        o = _out_data(out, dev)
        o[...] = r
        return out
    return new(r, dev)


def _bound_fits(b, k):
    if b.__class__ in PY_SCALARS:
        bk = {bool: "b", int: "i", float: "f", complex: "c"}[b.__class__]
        return bk == k or (bk in "bi" and k in "iuf") or (bk == "f" and k == "f")
    return _dt.kind(b.dtype) == k or (_dt.kind(b.dtype) in "iu" and k in "iu")


def _clamp_int_bound(v, info):
    return info.min if v < info.min else info.max if v > info.max else v


@oom_guard
def expm1(x, /, *, out=None):
    """exp(x) - 1, accurate near zero (standard: elementwise_functions.expm1), with the standard's special
    cases for complex input."""
    x = as_array(x)
    if _dt.kind(x.dtype) != "c":
        return _expm1(x, out=out)
    xp = x._device.xp
    z = x._data
    re, im = z.real, z.imag
    with np.errstate(invalid="ignore", over="ignore"):
        h = xp.sin(im * 0.5)
        r = xp.expm1(re) * xp.cos(im) - 2 * h * h + 0.0  # + 0.0: expm1(-0 + 0j) is +0 + 0j
        i = xp.where(im == 0, im, xp.exp(re) * xp.sin(im))
    nonfinite_im = ~xp.isfinite(im)
    neg = (re == -np.inf) & nonfinite_im
    pos = (re == np.inf) & nonfinite_im
    r = xp.where(neg, -1.0, xp.where(pos, np.inf, r))
    i = xp.where(neg, 0.0, xp.where(pos, np.nan, i))
    res = xp.empty(z.shape, dtype=z.dtype)
    res.real = r
    res.imag = i
    return _finish(res, x._device, out)


@oom_guard
def floor_divide(x1, x2, /, *, out=None):
    """floor(x1 / x2) (standard: elementwise_functions.floor_divide), with the standard's results for
    infinite operands (NumPy gives NaN for inf // finite)."""
    a, b, dev = binary_operands(x1, x2)
    xp = dev.xp
    r = xp.floor_divide(a, b)
    if _dt.kind(r.dtype) == "f":
        inf_a = xp.isinf(a)
        inf_b = xp.isinf(b)
        if xp is not np or inf_a.any() or inf_b.any():  # no host sync on the GPU
            with np.errstate(invalid="ignore", divide="ignore"):
                r = xp.where(inf_a | inf_b, xp.floor(xp.true_divide(a, b)), r)
    return _finish(r, dev, out)


def _finish(r, dev, out):
    if out is None:
        return new(r, dev)
    _out_data(out, dev)[...] = r
    return out


def tanh(x, /, *, out=None):
    """Hyperbolic tangent (standard: elementwise_functions.tanh); for complex input with an infinite real part
    and a finite imaginary part the result is sign(re) + 0j with the zero's sign from the imaginary part (C99)."""
    x = as_array(x)
    if _dt.kind(x.dtype) != "c":
        return _tanh(x, out=out)
    xp = x._device.xp
    z = x._data
    r = _tanh(x)._data
    edge = xp.isinf(z.real) & xp.isfinite(z.imag)
    if xp is not np or edge.any():
        fixed = xp.empty_like(r)
        fixed.real = xp.sign(z.real)
        fixed.imag = xp.copysign(xp.zeros_like(z.imag), z.imag)
        r = xp.where(edge, fixed, r)
    return _finish(r, x._device, out)


def _complex_special(bname, z, r, xp):
    """CUDA's complex math (thrust) departs from C99 Annex G, which the standard follows, at zeros, infinities
    and NaNs. Recompute just those elements with NumPy's (C99) functions: a host round trip of the special
    elements alone, and only when there are any (one device sync). xp is the device's module (CuPy)."""
    re, im = z.real, z.imag
    special = ~xp.isfinite(re) | ~xp.isfinite(im) | (re == 0) | (im == 0)
    idx = xp.flatnonzero(special)
    if idx.size == 0:
        return r
    vals = z.reshape(-1)[idx].get()
    with np.errstate(all="ignore"):
        fixed = getattr(np, bname)(vals).astype(r.dtype)
    out = r.reshape(-1).copy()
    out[idx] = xp.asarray(fixed)
    return out.reshape(r.shape)


@oom_guard
def remainder(x1, x2, /, *, out=None):
    """x1 - floor(x1 / x2) * x2 with the sign of x2 (standard: elementwise_functions.remainder).
    On CUDA, floats are computed here from fmod (CuPy's remainder breaks the standard's cases with
    infinite divisors and signed zeros)."""
    a, b, dev = binary_operands(x1, x2)
    xp = dev.xp
    if xp is np:
        r = np.remainder(a, b)
        return _finish(r, dev, out)
    if _dt.kind(_promotion.result_dtype(a.dtype, b.dtype) if hasattr(b, "dtype") and hasattr(a, "dtype")
                else xp.result_type(a, b)) != "f":
        return _finish(xp.remainder(a, b), dev, out)
    r = xp.fmod(a, b)
    b_arr = xp.asarray(b, dtype=r.dtype)
    a_arr = xp.asarray(a, dtype=r.dtype)
    fix = (r != 0) & ((r < 0) != (b_arr < 0))
    r = xp.where(fix, r + b_arr, r)
    r = xp.where(r == 0, xp.copysign(xp.zeros_like(r), b_arr), r)
    # a finite, b infinite: a when their signs agree (or a is zero), else b
    inf_b = xp.isinf(b_arr) & xp.isfinite(a_arr)
    same = (xp.signbit(a_arr) == xp.signbit(b_arr)) | (a_arr == 0)
    r = xp.where(inf_b, xp.where(same, a_arr, b_arr), r)
    return _finish(r, dev, out)
