"""Differences conformance/numpy_probe.py found on the H200 (CuPy computes them otherwise), each compared with NumPy
on the CPU device and on a CUDA device (the stand-in where no GPU exists, whose backend raises no floating-point
flags, as a GPU):

- ``arange`` with an integer dtype and a float bound or step follows NumPy's rule (length ceil((stop-start)/step),
  step ``dtype(start + step) - dtype(start)``);
- an integer base to a negative integer power raises ValueError; ``bool`` of an array without exactly one element
  raises NumPy's ValueError (also a TypeError);
- percentile/quantile of a slice holding a NaN give NaN; geomspace with an integer dtype gives NumPy's values;
  ``pad(mode="median")``;
- ``seterr``/``errstate``/``seterrcall`` act on device results (raise, call) as NumPy's on its own.
"""
import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match


def test_arange_integer_dtype_float_step(dev):
    for args in [(-3, 3, 0.5), (0, 5, 0.5), (1.5, 7, 1.25), (10, 2.5, -1.5)]:
        assert_match(gp.arange(*args, dtype=gp.int64), numpy.arange(*args, dtype=numpy.int64), dev, what=args)


def test_negative_integer_power_and_ambiguous_truth(dev):
    z = gp.asarray(numpy.arange(-5, 6))
    for f in (lambda: z ** z, lambda: z ** -1, lambda: 2 ** z, lambda: gp.pow(z, z)):
        with pytest.raises(ValueError, match="negative integer powers"):
            f()
    assert_match(z ** gp.asarray(numpy.arange(11)), numpy.arange(-5, 6) ** numpy.arange(11), dev)
    for x in (z, gp.zeros(0)):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(x)
        with pytest.raises(TypeError):
            bool(x)


def test_percentile_of_nan_slices_and_geomspace_and_pad_median(dev):
    a = numpy.array([[10.0, numpy.nan, 4.0], [3.0, 2.0, 1.0]])
    for name, q in (("percentile", 50), ("quantile", [0.1, 0.5])):
        for axis in (None, 0, 1):
            assert_match(getattr(gp, name)(gp.asarray(a), q, axis=axis), getattr(numpy, name)(a, q, axis=axis),
                         dev, what=(name, axis))
    assert_match(gp.geomspace(1, 256, num=9, dtype=gp.int64), numpy.geomspace(1, 256, num=9, dtype=numpy.int64), dev)
    assert_match(gp.geomspace(1000, 1, num=4), numpy.geomspace(1000, 1, num=4), dev)
    for arr, pw, kw in [(numpy.array([1, 2, 3, 4, 5]), 2, {}), (numpy.array([[1, 2], [3, 4]]), ((3, 2), (2, 3)), {}),
                        (numpy.arange(12.0).reshape(3, 4), ((1, 2), (0, 3)), {"stat_length": 2}),
                        (numpy.array([1, 2, 3, 5]), 1, {"stat_length": 2})]:
        assert_match(gp.pad(gp.asarray(arr), pw, "median", **kw), numpy.pad(arr, pw, "median", **kw), dev)


def test_seterr_modes_act_on_device_results(dev):
    with gp.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid value encountered in sqrt"):
            gp.sqrt(gp.asarray(-1.0))
        with pytest.raises(FloatingPointError, match="invalid value encountered in divide"):
            gp.arange(3.0) / gp.arange(3.0)
        assert_match(gp.sqrt(gp.asarray([4.0, numpy.nan])), numpy.array([2.0, numpy.nan]), dev)  # NaN in: no error
    calls = []
    old_call = gp.seterrcall(lambda kind, flag: calls.append((kind, flag)))
    old = gp.seterr(all="call")
    try:
        gp.asarray([1.0, 2.0, 3.0]) / 0.0
        gp.asarray([1e308]) * 10
        gp.asarray([1.0, 2.0]) + 1.0
    finally:
        gp.seterr(**old)
        gp.seterrcall(old_call)
    assert calls == [("divide by zero", 1), ("overflow", 2)]
    with gp.errstate(all="ignore"):
        assert_match(gp.asarray([1.0]) / 0.0, numpy.array([numpy.inf]), dev)
