"""Root causes found by running the peers' own array-API test suites on gpk_array (issue 22, item 3), each against
NumPy's or array_api_strict's behaviour, on the CPU device and on a CUDA device (the stand-in where no GPU exists):

- finfo's limits of float32/float16 (a float subclass printing as NumPy's scalars) are Python floats to our
  operators, asarray, where, clip, maximum; ``x == eps`` is an Array;
- ``matmul(..., dtype=float64)`` of float32 operands multiplies in float64;
- ``iter()`` of a 0-d array raises (``numpy.iterable`` says False);
- argmax/argmin of an empty array whose reduced axis is not empty give the empty result;
- ``broadcast_arrays`` gives back, writable, the arrays that needed no broadcasting;
- an axis out of range raises NumPy's ``AxisError`` (a ValueError and an IndexError) with NumPy's wording.
"""
import array_api_strict as xps
import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match, to_numpy

AxisError = numpy.exceptions.AxisError
FLOATS = ["float16", "float32", "float64"]


# --- finfo / iinfo limits ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_finfo_limits_are_python_floats_everywhere(device, dtype):
    dt = getattr(gp, dtype)
    fi = gp.finfo(dt)
    assert isinstance(fi.eps, float) and isinstance(fi.max, float) and isinstance(fi.tiny, float)
    vals = numpy.asarray([0.5, 1.0, 2.0], dtype=dtype)
    x = gp.asarray(vals, device=device)
    # the same calls with the plain Python float (array_api_strict's finfo gives one) are the oracle
    for name in ("eps", "max", "min", "smallest_normal", "tiny", "resolution"):
        lim = getattr(fi, name)
        plain = float(lim)
        assert plain == float(getattr(numpy.finfo(dtype), name))
        for what, got, want in [
            ("asarray", gp.asarray(lim, device=device), numpy.asarray(plain)),
            ("where", gp.where(x > 1, x, lim), numpy.where(vals > 1, vals, plain)),
            ("clip", gp.clip(x, lim, None) if name != "max" else gp.clip(x, None, lim),
             numpy.clip(vals, plain, None) if name != "max" else numpy.clip(vals, None, plain)),
            ("maximum", gp.maximum(x, lim), numpy.maximum(vals, plain)),
            ("minimum", gp.minimum(lim, x), numpy.minimum(plain, vals)),
            ("add", gp.add(x, lim), numpy.add(vals, plain)),
            ("==", x == lim, vals == plain),
            ("<", lim < x, plain < vals),
            ("full", gp.full(2, lim, device=device), numpy.full(2, plain)),
        ]:
            if what in ("add", "minimum", "maximum") and not numpy.isfinite(numpy.add(vals, plain)).all():
                continue
            assert isinstance(got, gp.Array), f"{name} {what}: {type(got).__name__}"
            assert got.device == device, what
            with numpy.errstate(over="ignore"):
                assert_match(got, want, device, what=f"{dtype} {name} {what}")


def test_finfo_comparison_gives_an_array_like_array_api_strict(device):
    """``x == eps`` (scikit-learn compares against finfo's eps): an Array, as array_api_strict's with its float."""
    eps = gp.finfo(gp.float32).eps
    x = gp.asarray([1.0, float(eps)], dtype=gp.float32, device=device)
    r = x == eps
    assert isinstance(r, gp.Array) and r.dtype == gp.bool
    s = xps.asarray([1.0, float(eps)], dtype=xps.float32) == xps.finfo(xps.float32).eps
    assert to_numpy(r).tolist() == numpy.asarray(s).tolist() == [False, True]
    assert isinstance(x != eps, gp.Array) and isinstance(eps != x, gp.Array)


def test_iinfo_limits_work_as_python_ints(device):
    ii = gp.iinfo(gp.int32)
    x = gp.asarray([1, -2, 3], dtype=gp.int32, device=device)
    assert_match(gp.clip(x, ii.min, ii.max), numpy.clip(numpy.asarray([1, -2, 3], numpy.int32), -2**31, 2**31 - 1),
                 device)
    assert_match(gp.full(2, ii.max, dtype=gp.int32, device=device), numpy.full(2, 2**31 - 1, numpy.int32), device)
    assert_match(gp.where(x > 0, x, ii.min), numpy.where(numpy.asarray([1, -2, 3]) > 0,
                                                         numpy.asarray([1, -2, 3], numpy.int32), numpy.int32(-2**31)),
                 device)


def test_int_enum_members_are_python_ints(device):
    import enum

    class K(enum.IntEnum):
        TWO = 2
    x = gp.asarray([1, 2, 3], dtype=gp.int8, device=device)
    assert_match(x * K.TWO, numpy.asarray([2, 4, 6], numpy.int8), device)  # weak: int8 stays int8
    assert_match(gp.asarray(K.TWO, device=device), numpy.asarray(2), device)


# --- matmul(dtype=) ----------------------------------------------------------------------------------------------
def test_matmul_dtype_multiplies_in_that_dtype(device):
    """scikit-learn's _safe_accumulator_op: float32 operands, dtype=float64; 1 + 2**-24 exists in float64 only."""
    a = numpy.asarray([[1.0, 2.0 ** -24]], dtype=numpy.float32)
    b = numpy.asarray([[1.0], [1.0]], dtype=numpy.float32)
    want = numpy.matmul(a, b, dtype=numpy.float64)
    assert want[0, 0] == 1 + 2.0 ** -24                            # the oracle itself computes in float64
    assert numpy.matmul(a, b).astype(numpy.float64)[0, 0] == 1.0   # what computing in float32 first gives
    got = gp.matmul(gp.asarray(a, device=device), gp.asarray(b, device=device), dtype=gp.float64)
    assert got.dtype == gp.float64
    assert to_numpy(got)[0, 0] == 1 + 2.0 ** -24
    out = gp.empty((1, 1), dtype=gp.float64, device=device)
    gp.matmul(gp.asarray(a, device=device), gp.asarray(b, device=device), out=out, dtype=gp.float64)
    assert to_numpy(out)[0, 0] == 1 + 2.0 ** -24


@pytest.mark.parametrize("fname", ["matvec", "vecmat"])
def test_matvec_vecmat_dtype(device, fname):
    a = numpy.asarray([[1.0, 2.0 ** -24]], dtype=numpy.float32)
    v = numpy.asarray([1.0, 1.0], dtype=numpy.float32)
    args = (a, v) if fname == "matvec" else (v, a.T)
    want = getattr(numpy, fname)(*args, dtype=numpy.float64)
    got = getattr(gp, fname)(*(gp.asarray(t, device=device) for t in args), dtype=gp.float64)
    assert_match(got, want, device, rtol=0)


def test_matmul_rejects_unknown_keywords(device):
    x = gp.ones((2, 2), device=device)
    with pytest.raises(TypeError, match="axes"):
        gp.matmul(x, x, axes=[(0, 1), (0, 1), (0, 1)])


# --- iteration of 0-d arrays -------------------------------------------------------------------------------------
def test_iter_of_0d_raises_and_iterable_is_false(device):
    x0 = gp.asarray(1.5, device=device)
    with pytest.raises(TypeError, match="0-d"):
        iter(x0)
    assert numpy.iterable(x0) is numpy.iterable(numpy.asarray(1.5)) is False
    x1 = gp.asarray([1.0, 2.0], device=device)
    assert numpy.iterable(x1) is True
    assert [float(v) for v in x1] == [1.0, 2.0]


# --- argmax/argmin of empty arrays -------------------------------------------------------------------------------
@pytest.mark.parametrize("fname", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis,keepdims", [((0, 4), -1, False), ((0, 4), 1, True), ((3, 0, 2), 2, False),
                                                 ((3, 0, 2), 0, True)])
def test_argmax_argmin_of_empty_arrays_along_nonempty_axes(device, fname, shape, axis, keepdims):
    a = numpy.zeros(shape, dtype=numpy.float32)
    want = getattr(numpy, fname)(a, axis=axis, keepdims=keepdims)
    got = getattr(gp, fname)(gp.asarray(a, device=device), axis=axis, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == gp.int64
    assert getattr(xps, fname)(xps.asarray(a), axis=axis, keepdims=keepdims).shape == want.shape


@pytest.mark.parametrize("fname", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", [((0, 4), 0), ((0, 4), None), ((0,), None), ((2, 0), -1)])
def test_argmax_argmin_over_an_empty_axis_raise(device, fname, shape, axis):
    a = numpy.zeros(shape)
    with pytest.raises(ValueError) as np_err:
        getattr(numpy, fname)(a, axis=axis)
    with pytest.raises(ValueError) as err:
        getattr(gp, fname)(gp.asarray(a, device=device), axis=axis)
    assert str(err.value) == str(np_err.value)


# --- broadcast_arrays --------------------------------------------------------------------------------------------
def test_broadcast_arrays_returns_unbroadcast_arrays_writable(device):
    a = numpy.arange(6.0).reshape(2, 3)
    b = numpy.arange(3.0)
    na, nb = numpy.broadcast_arrays(a, b)
    x, y = gp.asarray(a, device=device), gp.asarray(b, device=device)
    rx, ry = gp.broadcast_arrays(x, y)
    assert na is a and rx is x                      # NumPy gives the array itself back where nothing broadcasts
    rx[0, 0] = 42.0
    assert float(x[0, 0]) == 42.0
    assert ry.shape == (2, 3) and to_numpy(ry).tolist() == nb.tolist()
    with pytest.raises((ValueError, TypeError)):    # a write to a broadcast view would change several elements
        ry[0, 0] = 1.0
    same = gp.broadcast_arrays(x, x)                # nothing broadcast at all: both writable
    same[1][1, 1] = 7.0
    assert float(x[1, 1]) == 7.0


# --- axis out of range: NumPy's AxisError ------------------------------------------------------------------------
_AXIS_CASES = {
    "sum": lambda m, v: m.sum(v, axis=2),
    "mean": lambda m, v: m.mean(v, axis=-3),
    "max": lambda m, v: m.max(v, axis=2),
    "prod": lambda m, v: m.prod(v, axis=(0, 2)),
    "std": lambda m, v: m.std(v, axis=2),
    "var": lambda m, v: m.var(v, axis=2),
    "argmax": lambda m, v: m.argmax(v, axis=2),
    "argmin": lambda m, v: m.argmin(v, axis=-3),
    "sort": lambda m, v: m.sort(v, axis=2),
    "argsort": lambda m, v: m.argsort(v, axis=2),
    "expand_dims": lambda m, v: m.expand_dims(v, axis=3),
    "squeeze": lambda m, v: m.squeeze(v, axis=2),
    "flip": lambda m, v: m.flip(v, axis=2),
    "roll": lambda m, v: m.roll(v, 1, axis=2),
    "concatenate": lambda m, v: m.concatenate([v, v], axis=2),
    "stack": lambda m, v: m.stack([v, v], axis=4),
    "moveaxis": lambda m, v: m.moveaxis(v, 3, 0),
    "moveaxis_destination": lambda m, v: m.moveaxis(v, 0, -3),
    "swapaxes": lambda m, v: m.swapaxes(v, 0, 2),
    "cumsum": lambda m, v: m.cumsum(v, axis=2),
    "cumulative_sum": lambda m, v: m.cumulative_sum(v, axis=2),
    "diff": lambda m, v: m.diff(v, axis=2),
    "take": lambda m, v: m.take(v, [0], axis=2),
    "all": lambda m, v: m.all(v, axis=2),
    "any": lambda m, v: m.any(v, axis=2),
    "count_nonzero": lambda m, v: m.count_nonzero(v, axis=2),
    "repeat": lambda m, v: m.repeat(v, 2, axis=2),
    "median": lambda m, v: m.median(v, axis=2),
    "vecdot": lambda m, v: m.vecdot(v, v, axis=2),
    "vector_norm": lambda m, v: m.linalg.vector_norm(v, axis=2),
    "norm": lambda m, v: m.linalg.norm(v, axis=2),
    "ptp": lambda m, v: m.ptp(v, axis=2),
    "nansum": lambda m, v: m.nansum(v, axis=2),
    "add.reduce": lambda m, v: m.add.reduce(v, axis=2),
    "maximum.reduce": lambda m, v: m.maximum.reduce(v, axis=2),
}


@pytest.mark.parametrize("case", sorted(_AXIS_CASES))
def test_axis_out_of_range_raises_numpys_axis_error(device, case):
    f = _AXIS_CASES[case]
    a = numpy.zeros((2, 3))
    with pytest.raises(AxisError) as np_err:
        f(numpy, a)
    with pytest.raises(AxisError) as err:
        f(gp, gp.asarray(a, device=device))
    assert isinstance(err.value, ValueError) and isinstance(err.value, IndexError)
    assert str(err.value) == str(np_err.value)


def test_axis_errors_are_caught_as_value_and_index_errors(device):
    x = gp.zeros((2, 3), device=device)
    for exc in (ValueError, IndexError):
        with pytest.raises(exc, match="axis 5 is out of bounds for array of dimension 2"):
            gp.sum(x, axis=5)
    with pytest.raises(ValueError, match="out of bounds"):   # the standard's cross: ValueError
        gp.linalg.cross(x, x, axis=3)
    with pytest.raises(IndexError, match="out of bounds"):
        gp.softmax(x, axis=2)
