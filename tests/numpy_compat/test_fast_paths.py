"""The fast paths of the common calls (zeros/ones/empty with tuple shapes, arange of Python ints, array of lists,
linspace of Python numbers, ``a[i, j]`` and ``float(a[i, j])``, dtype lookup) give what the general paths give:
NumPy's values bit for bit, the same dtypes, errors and views, on every device; and the overhead script times
the CPU on the CPU whatever the default device."""
import warnings

import numpy
import pytest

import gpk_array as gp
from gpk_array import _dtypes

from .helpers import assert_match, to_numpy


def _bits(x):
    h = numpy.ascontiguousarray(to_numpy(x))
    return h.dtype.str, h.shape, h.tobytes()


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_shapes_and_errors(name, dev):
    for shape in [(3, 3), (), (0, 2), 4, 0, [2, 3], (numpy.int64(2), 3), numpy.int32(3)]:
        for dtype in [None, float, int, bool, "f4", numpy.int8, gp.float32]:
            got = getattr(gp, name)(shape, dtype)
            want = getattr(numpy, name)(shape, dtype)
            assert got.shape == want.shape and got.dtype == want.dtype and got.device == dev
            if name != "empty":
                assert_match(got, want, dev)
    for shape in [(-1, 2), -2]:
        with pytest.raises(ValueError, match="negative dimensions"):
            getattr(gp, name)(shape)
    for shape in [(2.0, 3), "3", None]:
        with pytest.raises(TypeError):
            getattr(gp, name)(shape)
    assert getattr(gp, name)((True, 2)).shape == (1, 2)
    # host-only dtypes: arrays on the CPU device (gpk_array/_hostdata.py)
    for dt in ("datetime64[D]", [("x", float)]):
        got = getattr(gp, name)((2,), dt)
        assert got.device == gp.Device("cpu") and got.dtype == numpy.dtype(dt)
        if name != "empty":
            assert_match(got, getattr(numpy, name)((2,), dt))


def test_arange_ints(dev):
    for args in [(10,), (0,), (-3,), (2, 9), (9, 2, -2), (0, 10, 3), (-2**63, -2**63 + 3), (1, 5, None),
                 (0, 2**62, 2**61)]:
        got = gp.arange(*args)
        assert got.device == dev
        assert _bits(got) == _bits(numpy.arange(*args))
    with pytest.raises(ValueError, match="step must not be zero"):
        gp.arange(0, 10, 0)
    with pytest.raises((OverflowError, ValueError)):
        gp.arange(2**70)
    assert_match(gp.arange(3, dtype=float), numpy.arange(3, dtype=float), dev)


def test_array_of_lists(dev):
    for obj in [[1, 2, 3], [1.0, 2], (1, 2), [], [[]], [True, 2], [1 + 2j], [numpy.float32(1), 2], [[1, 2], [3, 4]],
                [2**63], [-2**63]]:
        for kw in [{}, {"dtype": float}, {"ndmin": 2}, {"copy": None}]:
            try:
                numpy.array(obj, **kw)
            except Exception as e:
                with pytest.raises(type(e)):
                    gp.array(obj, **kw)
                continue
            got = gp.array(obj, **kw)
            assert got.device == dev
            assert _bits(got) == _bits(numpy.array(obj, **kw))
        assert _bits(gp.asarray(obj)) == _bits(numpy.asarray(obj))
    with pytest.raises(ValueError, match="inhomogeneous"):
        gp.array([[1, 2], [3]])
    got = gp.array(["a"])  # a host-only dtype: on the CPU device (gpk_array/_hostdata.py)
    assert got.device == gp.Device("cpu") and _bits(got) == _bits(numpy.array(["a"]))
    with pytest.raises(TypeError):
        gp.array([1, None])
    with pytest.raises((TypeError, OverflowError)):
        gp.array([2**64])
    with pytest.raises(OverflowError):
        gp.array([300], "int8")
    with pytest.raises(ValueError, match="copy"):
        gp.array([1, 2], copy=False)
    parts = [gp.asarray(1.0), 2.0]
    assert_match(gp.array(parts), numpy.array([1.0, 2.0]), dev)


_ENDPOINTS = [0, 1, -7, 13.5, 0.1, 0.3, 1e-310, 5e-324, -1e308, 1e308, 2**53, 2**60, 3, float("inf"),
              float("nan"), -0.0]


def test_linspace_bits(dev):
    """Bit for bit NumPy's samples, views and warnings (the fast path replays NumPy's arithmetic)."""
    for a in _ENDPOINTS:
        for b in _ENDPOINTS:
            for num in (0, 1, 2, 5, 50):
                for endpoint in (True, False):
                    with warnings.catch_warnings(record=True) as w_np:
                        warnings.simplefilter("always")
                        want = numpy.linspace(a, b, num, endpoint=endpoint)
                    with warnings.catch_warnings(record=True) as w_gp:
                        warnings.simplefilter("always")
                        got = gp.linspace(a, b, num, endpoint=endpoint)
                    assert got.device == dev
                    if dev.kind == "cpu":
                        assert _bits(got) == _bits(want), (a, b, num, endpoint)
                        assert [type(w.message) for w in w_gp] == [type(w.message) for w in w_np]
                        assert (got.base is None) == (want.base is None)
                    else:
                        assert_match(got, want, dev, check_dtype=True)
    for kw in [{"dtype": "f4"}, {"dtype": int}, {"dtype": complex}, {"retstep": True}]:
        assert_match(gp.linspace(-7, 13.5, 6, **kw), numpy.linspace(-7, 13.5, 6, **kw), dev)
    with pytest.raises(ValueError, match="non-negative"):
        gp.linspace(0, 1, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):
            numpy.linspace(-1e308, 1e308, 3)
        with pytest.raises(RuntimeWarning):
            gp.linspace(-1e308, 1e308, 3)


def test_scalar_indexing(dev):
    n = numpy.arange(12.0).reshape(3, 4)
    a = gp.asarray(n)
    for key in [(0, 1), (-1, -3), (2, 3), (numpy.int64(1), 2)]:
        r = a[key]
        assert r.__class__ is gp.Array and r.shape == () and r.dtype == n.dtype and r.device == dev
        assert_match(r, numpy.asarray(n[key]), dev)
        assert float(r) == float(n[key])
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        a[3, 0]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        a[0, -5]
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 1, 2]
    with pytest.raises(IndexError):
        a[0, 1.0]
    assert_match(a[1, :], n[1, :], dev)
    assert_match(a[(0,)], n[(0,)], dev)
    assert_match(a[True, 1], n[True, 1], dev)
    b = gp.arange(24).reshape(2, 3, 4)
    assert_match(b[1, 2, 3], numpy.int64(23), dev)
    assert_match(b[1, 2], numpy.arange(24).reshape(2, 3, 4)[1, 2], dev)
    r = a[0, 1]
    a[0, 1] = 100.0
    assert float(a[0, 1]) == 100.0
    if dev.kind == "cpu":  # on the CPU an element read is a copy (CuPy's is a view)
        assert float(r) == 1.0 and r.base is None


def test_float_of_elements(dev):
    for dtype in ["float64", "float32", "int64", "bool", "uint8", gp.bfloat16, "float16"]:
        a = gp.asarray([[1.5, 0.0], [3.0, 4.0]], dtype=dtype)
        want = numpy.asarray([[1.5, 0.0], [3.0, 4.0]]).astype(dtype)
        for key in [(0, 0), (1, 0), (0, 1)]:
            v = float(a[key])
            assert v.__class__ is float and v == float(want[key])
    assert float(gp.asarray([[2.5]])) == 2.5
    with pytest.raises(TypeError, match="complex"):
        float(gp.asarray([[1 + 2j]])[0, 0])
    with pytest.raises(TypeError, match="one element"):
        float(gp.asarray([1.0, 2.0]))
    with pytest.raises(TypeError, match="one element"):
        float(gp.asarray([], dtype=float))
    nan = float(gp.asarray([numpy.nan])[0])
    assert nan != nan


def test_dtype_table():
    """The looked-up dtype-likes give what the general conversion gives."""
    for k, v in _dtypes._TO_DTYPE.items():
        assert _dtypes._to_dtype(k) == v and _dtypes.to_dtype(k) is v
    for dt in [float, int, complex, bool, "float32", "f8", "i4", numpy.float16, numpy.dtype("uint16"), gp.bfloat16]:
        assert _dtypes.to_dtype(dt) == _dtypes._to_dtype(dt)
    for bad in [[("x", float)], "datetime64[s]", object, "U3"]:
        with pytest.raises(TypeError, match="unsupported dtype"):
            _dtypes.to_dtype(bad)


SEEN = []


def test_overhead_script_times_the_cpu(dev, monkeypatch):
    """In its CPU mode the overhead script creates arrays on the CPU even where the default device is another
    one, and restores the default device after."""
    from . import overhead
    probe = "__import__('tests.numpy_compat.test_fast_paths', fromlist=['SEEN']).SEEN.append(gp.arange(3).device)"
    monkeypatch.setattr(overhead, "CASES", [("probe", probe, "numpy.arange(3)", None)])
    SEEN.clear()
    rows = overhead.main(number=1, device="cpu")
    assert rows and rows[0][0] == "probe"
    assert SEEN and all(d == gp.Device("cpu") for d in SEEN)
    assert gp._device._default is dev


def test_setitem_fast_paths_match_numpy(dev):
    """``x[int or slice] = Python scalar or Array`` (the fast path on the CPU device) writes what NumPy writes and
    raises what NumPy raises: out of range, read-only destinations, shape mismatches, complex into real."""
    for dtype in ("float32", "int64", "bool", "uint8"):
        base = numpy.arange(6).astype(dtype)
        for key, value in [(0, 1), (-1, True), (2, 7.9), (slice(1, 4), 0), (slice(None, None, 2), 3),
                           (slice(1, 3), numpy.array([5, 6]).astype(dtype))]:
            got, want = gp.asarray(base.copy()), base.copy()
            got[key] = gp.asarray(value) if isinstance(value, numpy.ndarray) else value
            want[key] = value
            assert_match(got, want, dev)
    x = gp.arange(4.0)
    with pytest.raises(IndexError, match="out of bounds"):
        x[4] = 1.0
    with pytest.raises(ValueError):
        x[0:2] = gp.arange(3.0)
    with pytest.raises(TypeError):
        x[0] = 1j
    with pytest.raises(OverflowError):
        gp.arange(3, dtype=gp.uint8)[0] = -1
    if dev.kind == "cpu":
        ro = numpy.arange(3.0)
        ro.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            gp.asarray(ro)[0] = 1.0


def test_tuple_of_slices_and_reshape_fast_paths(dev):
    h = numpy.arange(600.0).reshape(20, 30)
    x = gp.asarray(h)
    for key in [(slice(3, 15), slice(None, None, 2)), (1, slice(2, 9)), (slice(None), -1), (slice(5, 2),)]:
        assert_match(x[key], h[key], dev)
    with pytest.raises(IndexError):
        x[20, slice(None)]
    with pytest.raises(IndexError):
        x[slice(None), slice(None), 0]
    for shape in [(30, 20), (-1, 10), (600,), (2, -1, 3)]:
        assert_match(gp.reshape(x, shape), h.reshape(shape), dev)
    for shape in [(7, -1), (-1, -1), (-2, 300), (601,)]:
        with pytest.raises(ValueError):
            gp.reshape(x, shape)
    with pytest.raises(TypeError):
        gp.reshape(x, (2.0, 300))


def test_concat_argmax_and_vector_norm_fast_paths(dev):
    rng = numpy.random.default_rng(1)
    for dtype in ("float32", "float64", "int16"):
        a, b = rng.random((3, 4)).astype(dtype), rng.random((2, 4)).astype(dtype)
        assert_match(gp.concat([gp.asarray(a), gp.asarray(b)]), numpy.concatenate([a, b]), dev)
        assert_match(gp.concat((gp.asarray(a), gp.asarray(a)), axis=-1), numpy.concatenate([a, a], -1), dev)
        assert_match(gp.argmax(gp.asarray(a)), numpy.argmax(a), dev)
        assert_match(gp.argmax(gp.asarray(a), axis=1, keepdims=True), numpy.argmax(a, 1, keepdims=True), dev)
    with pytest.raises(ValueError):
        gp.concat([gp.ones((2, 3)), gp.ones((2, 4))])
    with pytest.raises(ValueError):
        gp.concat([gp.ones(3), gp.ones((1, 3))])
    with pytest.raises((ValueError, IndexError)):
        gp.concat([gp.ones(3), gp.ones(3)], axis=1)
    for dtype in ("float32", "float64"):
        v = rng.standard_normal(1000).astype(dtype)
        want = numpy.linalg.norm(v.astype(numpy.float64))
        got = gp.linalg.vector_norm(gp.asarray(v))
        assert got.dtype == numpy.dtype(dtype) and got.shape == ()
        assert float(got) == pytest.approx(want, rel=1e-5 if dtype == "float32" else 1e-12)
        assert gp.linalg.vector_norm(gp.asarray(v), keepdims=True).shape == (1,)
