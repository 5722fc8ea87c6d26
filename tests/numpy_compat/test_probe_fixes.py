"""Differences found by conformance/numpy_probe.py (NumPy's docstring examples and numpy-100 run under NumPy and
under gpk_array, issue 30), each fixed and compared here with NumPy on the CPU device and on a CUDA device (the
stand-in where no GPU exists):

- median/percentile/quantile/nanmedian with ``overwrite_input=True`` may use the input as scratch, as NumPy does;
- nan_to_num takes arrays for nan/posinf/neginf;
- ``r_``/``c_`` directives "axis,ndmin,trans1d" place the items' own axes as NumPy's;
- ``x.shape = s`` with a shape of another size raises ValueError (AttributeError only where no view can);
- polyval at a poly1d composes the polynomials;
- NumPy functions given CPU Arrays and arguments gpk_array refuses (None, as matplotlib passes) give NumPy's result;
- histogram/histogram_bin_edges with an estimator name (bins="auto", ...) on CUDA; edges given keep their dtype;
- pad with a function as its mode on CUDA; lcm.reduce on CUDA;
- ``ndarray(shape, buffer=x)`` of an Array x views its memory on its device;
- ``it[i] = v`` on an nditer, and operands iterated in another dtype written back (cast) by ``close()``;
- a poly1d where an array is expected (``np.square(p)``) is its coefficients, on their device;
- ``isin(x, a_set)`` is all False (NumPy takes the set as one object);
- ``np.core.records`` is ``np.rec`` (NumPy 1's spelling, numpy-100 #91);
- lexsort of string keys, choice among strings, can_cast to and from bytes, isreal of strings: NumPy's answers
  (strings live on the CPU device, indices and bools go to the default device);
- ``atleast_2d(x).base is x``; fromiter with a subarray ``numpy.dtype``.
"""
import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match, compare


@pytest.mark.parametrize("name, args", [("median", ()), ("percentile", (40,)), ("quantile", ([0.25, 0.5],)),
                                        ("nanmedian", ())])
@pytest.mark.parametrize("axis", [None, 1])
def test_overwrite_input_may_use_the_input(dev, name, args, axis):
    a = numpy.array([[10.0, 7, 4], [3, 2, 1]])
    want_b = a.copy()
    want = getattr(numpy, name)(want_b, *args, axis=axis, overwrite_input=True)
    b = gp.asarray(a)
    got = getattr(gp, name)(b, *args, axis=axis, overwrite_input=True)
    assert_match(got, want, dev, what=name)
    hb = numpy.asarray(b.to_device("cpu"))
    # the input holds its values in some order (NumPy's docstring: "may be modified"); where NumPy's changed, ours
    # changed too (the docstring's ``assert not np.all(a == b)``)
    assert numpy.array_equal(numpy.sort(hb, axis=None), numpy.sort(a, axis=None))
    # (CuPy's nanmedian, which the CUDA device runs, copies its input: the values there stay in place)
    if not numpy.array_equal(want_b, a) and (str(dev) == "cpu" or name != "nanmedian"):
        assert not numpy.array_equal(hb, a)
    untouched = gp.asarray(a)
    assert_match(getattr(gp, name)(untouched, *args, axis=axis), want, dev)
    assert numpy.array_equal(numpy.asarray(untouched.to_device("cpu")), a)


def test_nan_to_num_with_array_replacements(dev):
    x = numpy.array([numpy.inf, -numpy.inf, numpy.nan, -128.0, 128.0])
    compare("nan_to_num", x, nan=numpy.array([1.0, 2, 3, 4, 5]), posinf=numpy.array([9.0, 8, 7, 6, 5]),
            neginf=-1.0, device=dev)
    y = numpy.array([complex(numpy.inf, numpy.nan), numpy.nan, complex(numpy.nan, numpy.inf)])
    compare("nan_to_num", y, nan=numpy.array([11, 12, 13]), posinf=numpy.array([21, 22, 23]),
            neginf=numpy.array([31, 32, 33]), device=dev)
    compare("nan_to_num", y, nan=111111, posinf=222222, device=dev)


@pytest.mark.parametrize("directive", ["0,2,0", "1,2,0", "0,2", "0,3,1", "0,3,-2", "1,3,0", "-1", "0,2,-1"])
def test_r_directives(dev, directive):
    a, b = numpy.array([1, 2, 3]), numpy.array([4, 5, 6])
    m = numpy.arange(6).reshape(2, 3)
    for items in ([a, b], [m, m], [a, 7, b]):
        try:
            want = numpy.r_[(directive, *items)]
        except ValueError as e:
            with pytest.raises(ValueError):
                gp.r_[(directive, *[gp.asarray(i) if isinstance(i, numpy.ndarray) else i for i in items])]
            assert "dimensions" in str(e) or "concatenat" in str(e)
            continue
        got = gp.r_[(directive, *[gp.asarray(i) if isinstance(i, numpy.ndarray) else i for i in items])]
        assert_match(got, want, dev, what=directive)


def test_r_slices_and_c(dev):
    assert_match(gp.r_["0,2,0", 0:3, gp.asarray([4, 5, 6])], numpy.r_["0,2,0", 0:3, [4, 5, 6]], dev)
    assert_match(gp.c_[gp.asarray([1, 2, 3]), gp.asarray([4, 5, 6])], numpy.c_[[1, 2, 3], [4, 5, 6]], dev)
    assert_match(gp.c_[gp.asarray([[1, 2, 3]]), 0, 0, gp.asarray([[4, 5, 6]])],
                 numpy.c_[numpy.array([[1, 2, 3]]), 0, 0, numpy.array([[4, 5, 6]])], dev)
    with pytest.raises(ValueError, match="directive"):
        gp.r_["x,2", [1, 2, 3]]


def test_shape_assignment_errors(dev):
    y = gp.zeros((2, 3, 4))
    ny = numpy.zeros((2, 3, 4))
    for shape in [(3, 6), (-1, 5), (3, -1, -1)]:
        with pytest.raises(ValueError) as want:
            ny.shape = shape
        with pytest.raises(type(want.value)):
            y.shape = shape
    with pytest.raises(AttributeError, match="Incompatible shape"):
        numpy.zeros((4, 2))[::2].shape = (-1,)
    with pytest.raises(AttributeError, match="Incompatible shape"):
        gp.zeros((4, 2))[::2].shape = (-1,)
    y.shape = (4, 6)
    ny.shape = (4, 6)
    assert_match(y, ny, dev)


@pytest.mark.parametrize("p, x", [([3, 0, 1], [5]), ([3, 0, 1], [1, 2]), ([2.5, 1], [1, -1, 2]), ([1], [4, 3])])
def test_polyval_at_a_poly1d(dev, p, x):
    want = numpy.polyval(p, numpy.poly1d(x))
    got = gp.polyval(p, gp.poly1d(gp.asarray(x)))
    assert isinstance(got, gp.poly1d)
    assert_match(got.coeffs, want.coeffs, dev)
    got = gp.polyval(gp.poly1d(gp.asarray(p)), gp.poly1d(gp.asarray(x)))
    assert_match(got.coeffs, want.coeffs, dev)


def test_numpy_function_with_arguments_ours_refuse(dev):
    x = gp.arange(3)
    if dev.kind == "cpu":
        want = numpy.broadcast_arrays(numpy.arange(3), None)
        got = numpy.broadcast_arrays(x, None)
        assert got[1].dtype == object and list(got[1]) == [None, None, None]
        assert_match(got[0], want[0], dev)
        got = numpy.broadcast_arrays(x, None, subok=True)   # through the slower path (keywords)
        assert list(got[1]) == [None, None, None]
    else:
        with pytest.raises(TypeError):     # no implicit copy of device memory to the host
            numpy.broadcast_arrays(x, None)
    with pytest.raises(ValueError):        # an error NumPy raises too stays ours
        numpy.broadcast_arrays(x, gp.arange(2))


ESTIMATORS = ["auto", "fd", "doane", "scott", "rice", "sturges", "sqrt"]


@pytest.mark.parametrize("bins", ESTIMATORS)
def test_histogram_estimators(dev, bins):
    rng = numpy.random.default_rng(5)
    for x in (rng.normal(size=500), rng.integers(0, 20, 300), rng.exponential(size=57), numpy.ones(3),
              numpy.array([0, 0, 0, 0, 1, 2, 50.0]), rng.standard_cauchy(2000), numpy.array([], dtype=float)):
        for rng_ in (None, (0.5, 3.0)):
            compare("histogram_bin_edges", x, bins, rng_, device=dev, rtol=1e-12)
            compare("histogram", x, bins, rng_, device=dev, rtol=1e-12)
    with pytest.raises(TypeError, match="weighted"):
        gp.histogram(gp.asarray([1.0, 2.0]), "auto", weights=gp.asarray([1.0, 1.0]))


def test_histogram_given_edges_keep_their_dtype(dev):
    compare("histogram_bin_edges", numpy.arange(5), [1, 2], device=dev)
    compare("histogram_bin_edges", numpy.arange(5.0), numpy.array([1, 2, 4], dtype=numpy.float32), device=dev)


def _pad_with(vector, pad_width, iaxis, kwargs):
    pad_value = kwargs.get("padder", 10)
    vector[:pad_width[0]] = pad_value
    if pad_width[1]:
        vector[-pad_width[1]:] = pad_value


@pytest.mark.parametrize("width", [2, (1, 2), ((0, 1), (2, 0))])
def test_pad_with_a_function(dev, width):
    a = numpy.arange(6).reshape((2, 3))
    compare("pad", a, width, _pad_with, device=dev)
    compare("pad", a, width, _pad_with, padder=100, device=dev)


def test_lcm_reduce(dev):
    compare("reduce", [3, 12, 20], module="lcm", device=dev)
    compare("reduce", numpy.array([[4, 6], [10, 15]]), axis=1, module="lcm", device=dev)


@pytest.mark.parametrize("shape, offset, strides", [((2,), 8, None), ((3,), 0, None), ((2,), 0, (16,)),
                                                    ((2, 2), 0, (8, 8))])
def test_ndarray_over_an_array_buffer(dev, shape, offset, strides):
    base = numpy.array([1, 2, 3, 4], dtype=numpy.int64)
    want = numpy.ndarray(shape, buffer=base, offset=offset, strides=strides, dtype=numpy.int64)
    x = gp.asarray(base)
    got = gp.ndarray(shape, buffer=x, offset=offset, strides=strides, dtype=gp.int64)
    assert got.device == x.device
    assert_match(got, want, dev)
    if strides is None:                # a view: writes reach the buffer, as NumPy's
        got[0] = 9
        want[0] = 9
        assert_match(x, base, dev)
    with pytest.raises(TypeError, match="too small"):
        numpy.ndarray((5,), buffer=base, offset=8, dtype=numpy.int64)
    with pytest.raises(TypeError, match="too small"):
        gp.ndarray((5,), buffer=x, offset=8, dtype=gp.int64)


def _luf(np, lamdaexpr, *args, **kwargs):
    """NumPy's nditer docstring: a ufunc-like function from a lambda, through item assignment on the iterator."""
    nargs = len(args)
    op = (kwargs.get("out", None),) + args
    it = np.nditer(op, ["buffered", "external_loop"], [["writeonly", "allocate", "no_broadcast"]] +
                   [["readonly", "nbo", "aligned"]] * nargs, order=kwargs.get("order", "K"),
                   casting=kwargs.get("casting", "safe"), buffersize=kwargs.get("buffersize", 0))
    while not it.finished:
        it[0] = lamdaexpr(*it[1:])
        it.iternext()
    return it.operands[0]


@pytest.mark.parametrize("flags", [["buffered", "external_loop"], []])
def test_nditer_item_assignment(dev, flags):
    a, b = numpy.arange(6.0).reshape(2, 3), numpy.ones(3)
    want = _luf(numpy, lambda i, j: i * i + j / 2, a, b)
    got = _luf(gp, lambda i, j: i * i + j / 2, gp.asarray(a), gp.asarray(b))
    assert_match(got, want, dev)
    out_w, out_g = numpy.zeros((2, 3)), gp.zeros((2, 3))
    for np_, out, src in ((numpy, out_w, a), (gp, out_g, gp.asarray(a))):
        it = np_.nditer([out, src], flags, [["writeonly"], ["readonly"]])
        while not it.finished:
            it[0] = it[1] * 3
            it.iternext()
    assert_match(out_g, out_w, dev)


def test_nditer_writes_back_a_cast_copy_on_close(dev):
    results = []
    for np_ in (numpy, gp):
        a = np_.arange(6, dtype=np_.int32)[::-2]
        with np_.nditer(a, [], [["writeonly", "updateifcopy"]], casting="unsafe",
                        op_dtypes=[np_.float32]) as it:
            x = it.operands[0]
            x[:] = [-1.5, -2, -3]
            before = a.copy()
        results.append((before, a, x))
    for got, want in zip(results[1], results[0]):
        assert_match(got, want, dev)
    with pytest.raises(TypeError):
        gp.nditer(gp.arange(3, dtype=gp.int32), [], [["readwrite"]], op_dtypes=[gp.float32])
    with pytest.raises(TypeError):
        numpy.nditer(numpy.arange(3, dtype=numpy.int32), [], [["readwrite"]], op_dtypes=[numpy.float32])


def test_poly1d_as_an_array(dev):
    want_p = numpy.poly1d([1, 2, 3])
    p = gp.poly1d(gp.asarray([1, 2, 3]))
    assert_match(gp.square(p), numpy.square(want_p), dev)
    assert_match(gp.asarray(p), numpy.asarray(want_p), dev)
    assert_match(gp.asarray(p, dtype=gp.float32), numpy.asarray(want_p, dtype=numpy.float32), dev)
    assert gp.asarray(p).device == p.coeffs.device


@pytest.mark.parametrize("invert", [False, True])
def test_isin_with_a_python_set(dev, invert):
    element = numpy.arange(8).reshape(2, 4)
    for test in ({0, 2, 4}, frozenset([1]), [0, 2, 4]):
        got = gp.isin(gp.asarray(element), test, invert=invert)
        assert_match(got, numpy.isin(element, test, invert=invert), dev)


def test_np_core_records(dev):
    z = numpy.array([("Hello", 2.5, 3), ("World", 3.6, 2)])
    want = numpy.rec.fromarrays(z.T, names="col1, col2, col3", formats="S8, f8, i8")
    got = gp.core.records.fromarrays(gp.array(z).T, names="col1, col2, col3", formats="S8, f8, i8")
    for name in ("col1", "col2", "col3"):
        assert_match(got[name], numpy.asarray(want[name]), dev)
    with pytest.raises(AttributeError, match="records"):
        gp.core.multiarray


def test_strings_in_lexsort_choice_can_cast_isreal(dev):
    surnames, first = ("Hertz", "Galilei", "Hertz"), ("Heinrich", "Galileo", "Gustav")
    got = gp.lexsort((first, surnames))
    assert_match(got, numpy.lexsort((first, surnames)), "cpu" if got.device == gp.Device("cpu") else dev)
    names = ["pooh", "rabbit", "piglet", "Christopher"]
    r = gp.random.default_rng(3).choice(names, 5, p=[0.5, 0.1, 0.1, 0.3])
    want = numpy.random.default_rng(3).choice(names, 5, p=[0.5, 0.1, 0.1, 0.3])
    assert r.device == gp.Device("cpu") and r.dtype == want.dtype and r.tolist() == want.tolist()
    for a, b in (("i4", "S4"), ("S4", "S8"), ("S8", "S4"), ("U4", "U8"), ("i8", "U21")):
        assert gp.can_cast(a, b) == numpy.can_cast(a, b), (a, b)
    strs = numpy.array([2j, "a"], dtype="U")
    assert gp.isreal(gp.asarray(strs)).tolist() == numpy.isreal(strs).tolist()


def test_atleast_views_and_fromiter_subarray(dev):
    x = gp.arange(3.0, device=dev)
    assert gp.atleast_2d(x).base is x and gp.atleast_3d(x).base is x and gp.atleast_1d(x) is x
    want = numpy.fromiter(((i + 1, i + 2) for i in range(5)), dtype=numpy.dtype((int, 2)))
    got = gp.fromiter(((i + 1, i + 2) for i in range(5)), dtype=numpy.dtype((int, 2)), device=dev)
    assert_match(got, want, dev)
