"""Universal functions against NumPy: every ufunc name on hypothesis-drawn arrays, NumPy's promotion for mixed
dtypes and Python scalars, NumPy's call forms (positional out, dtype=, where=) and the ufunc methods."""
import numpy
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match, to_gpk, to_numpy

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
FLOATS = [numpy.float32, numpy.float64]
INTS = [numpy.int8, numpy.int16, numpy.int32, numpy.int64, numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64]
COMPLEX = [numpy.complex64, numpy.complex128]


def arrays(dtypes, min_value=-50, max_value=50, shape=None, min_dims=0):
    shapes = hnp.array_shapes(min_dims=min_dims, max_dims=3, max_side=4) if shape is None else st.just(shape)

    def elems(dt):
        dt = numpy.dtype(dt)
        if dt.kind in "fc":
            real = numpy.dtype(dt.char.lower()) if dt.kind == "c" else dt
            lo, hi = _inward(real.type, min_value, max_value)
            sub = {} if real.itemsize == 8 else {"allow_subnormal": False}  # CuPy flushes float32 subnormals (CUDA)
            part = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=real.itemsize * 8, **sub)
            return part if dt.kind == "f" else st.builds(complex, part, part)
        if dt.kind == "b":
            return st.booleans()
        info = numpy.iinfo(dt)
        return st.integers(max(info.min, int(min_value)), min(info.max, int(max_value)))
    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(dt, shapes, elements=elems(dt)))


def _inward(t, lo, hi):
    """Bounds exactly representable in the float type t, inside [lo, hi]."""
    a, b = t(lo), t(hi)
    if a < lo:
        a = numpy.nextafter(a, t(numpy.inf))
    if b > hi:
        b = numpy.nextafter(b, t(-numpy.inf))
    return float(a), float(b)


UNARY = {
    # name: (dtypes, min, max)
    "absolute": (FLOATS + INTS + COMPLEX, -50, 50), "abs": (FLOATS + INTS, -50, 50),
    "arccos": (FLOATS, -1, 1), "acos": (FLOATS, -1, 1), "arccosh": (FLOATS, 1, 50), "arcsin": (FLOATS, -1, 1),
    "arcsinh": (FLOATS + COMPLEX, -50, 50), "arctan": (FLOATS, -50, 50), "arctanh": (FLOATS, -0.99, 0.99),
    "asin": (FLOATS, -1, 1), "atan": (FLOATS, -50, 50), "invert": (INTS + [numpy.bool_], -50, 50),
    "bitwise_not": (INTS, -50, 50), "ceil": (FLOATS + INTS, -50, 50), "floor": (FLOATS + INTS, -50, 50),
    "trunc": (FLOATS, -50, 50), "rint": (FLOATS, -50, 50), "conjugate": (COMPLEX + FLOATS, -5, 5),
    "conj": (COMPLEX, -5, 5), "cos": (FLOATS + COMPLEX, -5, 5), "cosh": (FLOATS, -5, 5),
    "exp": (FLOATS + COMPLEX, -5, 5), "exp2": (FLOATS + INTS, -5, 5), "expm1": (FLOATS, -5, 5),
    "isfinite": (FLOATS + INTS, -5, 5), "isinf": (FLOATS, -5, 5), "isnan": (FLOATS + COMPLEX, -5, 5),
    "log": (FLOATS, 0.01, 50), "log1p": (FLOATS, -0.5, 50), "log2": (FLOATS, 0.01, 50),
    "log10": (FLOATS, 0.01, 50), "logical_not": (FLOATS + INTS + [numpy.bool_], -5, 5),
    "negative": (FLOATS + INTS[:4] + COMPLEX, -50, 50), "positive": (FLOATS + INTS, -50, 50),
    "sign": (FLOATS + INTS[:4], -50, 50), "signbit": (FLOATS, -50, 50), "sin": (FLOATS + COMPLEX, -5, 5),
    "sinh": (FLOATS, -5, 5), "square": (FLOATS + INTS + COMPLEX, -50, 50), "sqrt": (FLOATS, 0, 50),
    "cbrt": (FLOATS, -50, 50), "tan": (FLOATS, -1.5, 1.5), "tanh": (FLOATS, -5, 5),
    "deg2rad": (FLOATS, -360, 360), "rad2deg": (FLOATS, -7, 7), "degrees": (FLOATS, -7, 7),
    "radians": (FLOATS, -360, 360), "fabs": (FLOATS, -50, 50), "reciprocal": (FLOATS + [numpy.int32], 1, 50),
    "spacing": (FLOATS, -50, 50),
}

BINARY = {
    "add": (FLOATS + INTS + COMPLEX, -50, 50), "subtract": (FLOATS + INTS[:4] + COMPLEX, -50, 50),
    "multiply": (FLOATS + INTS + COMPLEX, -20, 20), "divide": (FLOATS + INTS[:4], 1, 50),
    "true_divide": (FLOATS, 1, 50), "floor_divide": (FLOATS + INTS, 1, 50), "power": (FLOATS, 0.5, 3),
    "pow": (FLOATS, 0.5, 3), "remainder": (FLOATS + INTS, 1, 50), "mod": (FLOATS + INTS, 1, 50),
    "fmod": (FLOATS + INTS[:4], 1, 50), "arctan2": (FLOATS, -5, 5), "atan2": (FLOATS, -5, 5),
    "hypot": (FLOATS, -50, 50), "copysign": (FLOATS, -5, 5), "nextafter": (FLOATS, -5, 5),
    "logaddexp": (FLOATS, -20, 20), "logaddexp2": (FLOATS, -20, 20), "maximum": (FLOATS + INTS, -50, 50),
    "minimum": (FLOATS + INTS, -50, 50), "fmax": (FLOATS, -50, 50), "fmin": (FLOATS, -50, 50),
    "equal": (FLOATS + INTS + COMPLEX, -3, 3), "not_equal": (FLOATS + INTS, -3, 3), "less": (FLOATS + INTS, -3, 3),
    "less_equal": (FLOATS + INTS, -3, 3), "greater": (FLOATS + INTS, -3, 3),
    "greater_equal": (FLOATS + INTS, -3, 3), "logical_and": (FLOATS + INTS + [numpy.bool_], -2, 2),
    "logical_or": (FLOATS + INTS + [numpy.bool_], -2, 2), "logical_xor": (INTS + [numpy.bool_], -2, 2),
    "bitwise_and": (INTS + [numpy.bool_], 0, 100), "bitwise_or": (INTS + [numpy.bool_], 0, 100),
    "bitwise_xor": (INTS + [numpy.bool_], 0, 100), "left_shift": (INTS[:4], 0, 5),
    "right_shift": (INTS, 0, 5), "float_power": (FLOATS, 0.5, 3), "heaviside": (FLOATS, -2, 2),
    "gcd": (INTS[:4], 0, 100), "lcm": (INTS[:4], 0, 30),
}


def _subnormal32(v):
    """Whether v (arrays, or a tuple of them) holds float32/complex64 subnormal numbers."""
    if isinstance(v, tuple):
        return any(_subnormal32(w) for w in v)
    v = numpy.asarray(v)
    if v.dtype not in (numpy.float32, numpy.complex64):
        return False
    parts = (v.real, v.imag) if v.dtype.kind == "c" else (v,)
    tiny = numpy.finfo(numpy.float32).smallest_normal
    return any(bool(numpy.any((p != 0) & (numpy.abs(p) < tiny))) for p in parts)


def _compare_ufunc(name, args, device):
    with numpy.errstate(all="ignore"):
        want = getattr(numpy, name)(*args)
        # a GPU flushes float32 subnormals to zero (in operands and results: negative(1e-42) is -0, greater(1e-41,
        # 0) is False, nextafter(0, 1) is the smallest normal number); NumPy keeps them. Such cases are not compared
        # on a CUDA device.
        if str(device) != "cpu" and (_subnormal32(tuple(args)) or _subnormal32(want)):
            reject()
        got = getattr(gp, name)(*to_gpk(list(args), device))
    assert_match(got, want, device, what=name)


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary(name, data, device):
    dtypes, lo, hi = UNARY[name]
    x = data.draw(arrays(dtypes, lo, hi), label="x")
    if x.dtype.kind == "c" and getattr(device.xp, "__name__", "") == "fakecupy":
        return  # the core's CUDA path for complex special values calls CuPy itself
    _compare_ufunc(name, (x,), device)


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary(name, data, device):
    dtypes, lo, hi = BINARY[name]
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4), label="shapes")
    dt = data.draw(st.sampled_from(dtypes), label="dtype")
    x1 = data.draw(arrays([dt], lo, hi, shape=shapes.input_shapes[0]), label="x1")
    x2 = data.draw(arrays([dt], lo, hi, shape=shapes.input_shapes[1]), label="x2")
    _compare_ufunc(name, (x1, x2), device)


@pytest.mark.parametrize("name", ["ldexp"])
def test_ldexp(name, device):
    _compare_ufunc(name, (numpy.array([0.5, 1.5, -3.0]), numpy.array([1, 2, 3])), device)


@pytest.mark.parametrize("name", ["divmod", "modf", "frexp"])
def test_two_outputs(name, device):
    a = numpy.array([7.5, -3.25, 10.0, 0.5])
    b = numpy.array([2.0, 1.5, -3.0, 0.25])
    args = (a, b) if name == "divmod" else (a,)
    _compare_ufunc(name, args, device)
    ia = numpy.array([7, -3, 10, 11])
    if name == "divmod":
        _compare_ufunc(name, (ia, numpy.array([2, 5, -3, 4])), device)


# --- NumPy's promotion where the standard leaves it unspecified ----------------------------------------------------
MIXED = [(numpy.int32, numpy.float32), (numpy.uint8, numpy.int8), (numpy.int64, numpy.float32),
         (numpy.uint64, numpy.int64), (numpy.int16, numpy.float16), (numpy.bool_, numpy.float32),
         (numpy.uint32, numpy.int32), (numpy.float32, numpy.complex128), (numpy.int8, numpy.complex64)]


@pytest.mark.parametrize("dts", MIXED, ids=lambda d: f"{numpy.dtype(d[0])}-{numpy.dtype(d[1])}")
@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "maximum", "equal", "divide"])
def test_mixed_dtypes(dts, name, device):
    if name == "subtract" and numpy.dtype(dts[0]) == numpy.bool_:
        return
    a = numpy.arange(1, 7).astype(dts[0]).reshape(2, 3)
    b = numpy.arange(3, 0, -1).astype(dts[1])
    _compare_ufunc(name, (a, b), device)
    _compare_ufunc(name, (b, a), device)


@pytest.mark.parametrize("scalar", [2, -3, 2.5, True, 1 + 2j, 300])
@pytest.mark.parametrize("dt", [numpy.int8, numpy.uint8, numpy.int32, numpy.float32, numpy.float64, numpy.bool_])
def test_python_scalars(scalar, dt, device):
    a = numpy.arange(4).astype(dt)
    for name in ("add", "multiply", "maximum", "less"):
        if name in ("maximum", "less") and isinstance(scalar, complex):
            continue
        try:
            with numpy.errstate(all="ignore"):
                want = getattr(numpy, name)(a, scalar)
        except (OverflowError, TypeError) as e:
            with pytest.raises(type(e)):
                getattr(gp, name)(gp.asarray(a, device=device), scalar)
            continue
        got = getattr(gp, name)(gp.asarray(a, device=device), scalar)
        assert_match(got, want, device, what=f"{name}({a.dtype}, {scalar!r})")


def test_numpy_scalar_operands(device):
    a = gp.asarray(numpy.arange(3, dtype=numpy.float32), device=device)
    assert_match(gp.add(a, numpy.float64(1.5)), numpy.add(numpy.arange(3, dtype=numpy.float32), numpy.float64(1.5)))
    assert_match(a * numpy.float32(2), numpy.arange(3, dtype=numpy.float32) * numpy.float32(2))
    assert_match(numpy.int64(2) + a, numpy.int64(2) + numpy.arange(3, dtype=numpy.float32))


def test_lists_and_scalars(device):
    gp.set_default_device(device)
    try:
        assert_match(gp.add([1, 2, 3], [4, 5, 6]), numpy.add([1, 2, 3], [4, 5, 6]))
        assert_match(gp.sqrt([1.0, 4.0]), numpy.sqrt([1.0, 4.0]))
        assert_match(gp.exp(1.0), numpy.asarray(numpy.exp(1.0)))
        assert_match(gp.power(2, 10), numpy.asarray(numpy.power(2, 10)))
        assert_match(gp.arctan2([1.0], 2.0), numpy.arctan2([1.0], 2.0))
    finally:
        gp.set_default_device(None)


# --- NumPy's call forms ---------------------------------------------------------------------------------------------
def test_out_positional_and_keyword(device):
    a = numpy.arange(6.0).reshape(2, 3)
    b = numpy.ones(3)
    ga, gb = to_gpk([a, b], device)
    out = gp.zeros((2, 3), device=device)
    r = gp.add(ga, gb, out)
    assert r is out
    assert_match(out, a + b)
    r = gp.multiply(ga, gb, out=(out,))
    assert r is out
    assert_match(out, a * b)
    o1 = gp.empty((2, 3), device=device)
    gp.sqrt(ga, o1)
    assert_match(o1, numpy.sqrt(a))
    gp.negative(ga, out=o1)
    assert_match(o1, -a)


def test_dtype_and_where(device):
    a = numpy.arange(6).reshape(2, 3)
    ga = gp.asarray(a, device=device)
    assert_match(gp.add(ga, 1, dtype=numpy.float32), numpy.add(a, 1, dtype=numpy.float32))
    assert_match(gp.sqrt(ga, dtype="float32"), numpy.sqrt(a, dtype="float32"))
    mask = numpy.array([True, False, True])
    out = numpy.full((2, 3), -1.0)
    gout = gp.asarray(out, device=device)
    numpy.multiply(a, 2.0, out=out, where=mask)
    gp.multiply(ga, 2.0, out=gout, where=gp.asarray(mask, device=device))
    assert_match(gout, out)


def test_ufunc_attributes():
    assert isinstance(gp.add, gp.ufunc)
    assert gp.add.nin == 2 and gp.add.nout == 1 and gp.add.nargs == 3
    assert gp.sin.nin == 1
    assert gp.add.identity == 0 and gp.multiply.identity == 1
    assert gp.add.__name__ == "add" and gp.pow is gp.power and gp.acos is gp.arccos and gp.abs is gp.absolute
    assert gp.mod is gp.remainder and gp.true_divide is gp.divide and gp.conj is gp.conjugate
    assert repr(gp.add) == "<ufunc 'add'>"
    assert gp.divmod.nout == 2


# --- ufunc methods -------------------------------------------------------------------------------------------------
REDUCE = ["add", "multiply", "maximum", "minimum", "logical_and", "logical_or", "bitwise_or", "subtract"]


@pytest.mark.parametrize("name", REDUCE)
@SETTINGS
@given(data=st.data())
def test_reduce_accumulate(name, data, device):
    dts = [numpy.bool_] if name.startswith("logical") else ([numpy.int32, numpy.int64, numpy.uint8]
                                                            if name.startswith("bitwise") else
                                                            [numpy.int32, numpy.float64, numpy.float32])
    x = data.draw(arrays(dts, 0, 5, min_dims=1), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    gx = gp.asarray(x, device=device)
    u, g = getattr(numpy, name), getattr(gp, name)
    atol = 0.0
    if x.dtype.kind == "f" and x.size and str(device) != "cpu":
        # off the CPU, add/subtract reductions may associate differently from NumPy's loop: allow the
        # rounding of a reassociated sum, n * eps * max|x|
        atol = x.shape[axis] * numpy.finfo(x.dtype).eps * float(numpy.max(numpy.abs(x)))
    assert_match(g.reduce(gx, axis=axis), u.reduce(x, axis=axis), device, atol=atol, what="reduce")
    assert_match(g.reduce(gx, axis, keepdims=True), u.reduce(x, axis, keepdims=True), device, atol=atol,
                 what="reduce kd")
    assert_match(g.accumulate(gx, axis=axis), u.accumulate(x, axis=axis), device, atol=atol, what="accumulate")
    if name in ("add", "multiply", "maximum", "minimum") and x.size:
        assert_match(g.reduce(gx, axis=None), u.reduce(x, axis=None), device, what="reduce None")


def test_reduce_options(device):
    x = numpy.arange(12.0).reshape(3, 4)
    gx = gp.asarray(x, device=device)
    assert_match(gp.add.reduce(gx), numpy.add.reduce(x))
    assert_match(gp.add.reduce(gx, axis=(0, 1)), numpy.add.reduce(x, axis=(0, 1)))
    assert_match(gp.add.reduce(gx, 1, dtype=numpy.float32), numpy.add.reduce(x, 1, dtype=numpy.float32))
    assert_match(gp.add.reduce(gx, initial=10.0), numpy.add.reduce(x, initial=10.0))
    assert_match(gp.maximum.reduce(gx, axis=1, initial=7.0), numpy.maximum.reduce(x, axis=1, initial=7.0))
    w = numpy.array([True, False, True, True])
    assert_match(gp.add.reduce(gx, 1, where=gp.asarray(w, device=device)), numpy.add.reduce(x, 1, where=w))
    assert_match(gp.maximum.reduce(gx, 1, where=gp.asarray(w, device=device), initial=-1.0),
                 numpy.maximum.reduce(x, 1, where=w, initial=-1.0))
    assert_match(gp.multiply.reduce(gp.asarray(numpy.zeros((0, 2)), device=device), 0, initial=2.0),
                 numpy.multiply.reduce(numpy.zeros((0, 2)), 0, initial=2.0))
    out = gp.zeros(4, device=device)
    gp.add.reduce(gx, 0, out=out)
    assert_match(out, numpy.add.reduce(x, 0))
    assert_match(gp.add.accumulate([1, 2, 3]), numpy.add.accumulate([1, 2, 3]))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "power", "equal", "less"])
def test_outer(name, device):
    a = numpy.arange(1, 4.0)
    b = numpy.arange(1, 5.0).reshape(2, 2)
    ga, gb = to_gpk([a, b], device)
    assert_match(getattr(gp, name).outer(ga, gb), getattr(numpy, name).outer(a, b), device)
    assert_match(getattr(gp, name).outer(gb, ga), getattr(numpy, name).outer(b, a), device)


@pytest.mark.parametrize("name", ["add", "maximum", "minimum", "multiply"])
def test_reduceat(name, device):
    x = numpy.arange(16.0).reshape(2, 8)
    idx = numpy.array([0, 4, 1, 6])
    gx = gp.asarray(x, device=device)
    u, g = getattr(numpy, name), getattr(gp, name)
    assert_match(g.reduceat(gx, [0, 4, 1, 6], axis=1), u.reduceat(x, idx, axis=1), device)
    assert_match(g.reduceat(gx.reshape(-1), gp.asarray(idx, device=device)), u.reduceat(x.reshape(-1), idx), device)


def test_at(device):
    a = numpy.zeros(5)
    ga = gp.asarray(a, device=device)
    idx = [0, 1, 1, 3, 3, 3]
    numpy.add.at(a, idx, 1.5)
    gp.add.at(ga, idx, 1.5)
    assert_match(ga, a)
    b = numpy.arange(6.0)
    numpy.add.at(a, idx, b)
    gp.add.at(ga, gp.asarray(idx, device=device), gp.asarray(b, device=device))
    assert_match(ga, a)
    numpy.subtract.at(a, [2, 2], 1.0)
    gp.subtract.at(ga, [2, 2], 1.0)
    assert_match(ga, a)
    m = numpy.arange(12.0).reshape(3, 4)
    gm = gp.asarray(m, device=device)
    numpy.add.at(m, (slice(None), [0, 0, 2]), 1.0)
    gp.add.at(gm, (slice(None), [0, 0, 2]), 1.0)
    assert_match(gm, m)
    if str(device) == "cpu":
        numpy.negative.at(m, [0, 2])
        gp.negative.at(gm, [0, 2])
        assert_match(gm, m)
        numpy.maximum.at(a, [0, 0, 4], [9.0, 3.0, -1.0])
        gp.maximum.at(ga, [0, 0, 4], [9.0, 3.0, -1.0])
        assert_match(ga, a)


def test_unary_methods_raise():
    with pytest.raises(ValueError):
        gp.sin.reduce(gp.asarray([1.0, 2.0]))


def test_ufunc_pickles():
    import pickle
    assert pickle.loads(pickle.dumps(gp.add)) is gp.add


def test_result_is_array(device):
    r = gp.add(gp.asarray([1, 2], device=device), 1)
    assert isinstance(r, gp.ndarray)
    assert isinstance(to_numpy(r), numpy.ndarray)


def test_a_backend_compile_failure_is_numpys_type_error(device):
    """CuPy compiles some ufuncs for operand types they have no loop for and fails in the CUDA compiler (the fake
    device reproduces it for nextafter and arctan2): every call form gives NumPy's TypeError."""
    z = gp.zeros(4, dtype=gp.complex64, device=device)
    zn = numpy.zeros(4, numpy.complex64)
    for want, got in ((lambda: numpy.nextafter(zn, zn), lambda: gp.nextafter(z, z)),
                      (lambda: numpy.nextafter(zn, zn[:1]), lambda: gp.nextafter(z, z[:1])),
                      (lambda: numpy.arctan2(zn, 1.0), lambda: gp.arctan2(z, 1.0)),
                      (lambda: numpy.nextafter(zn, zn, out=numpy.empty(4, numpy.complex64)),
                       lambda: gp.nextafter(z, z, out=gp.empty(4, dtype=gp.complex64, device=device)))):
        with pytest.raises(TypeError):
            want()
        with pytest.raises(TypeError, match="nextafter|arctan2|atan2"):
            got()
