"""Indexing helpers with NumPy's signatures against NumPy: where, take, put, copyto, choose, select, index grids."""
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match, compare, to_gpk

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(x=hnp.arrays(numpy.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                    elements=st.sampled_from([0.0, 1.0, -2.5, 3.0])))
def test_where_nonzero(x, device):
    compare("where", x > 0, device=device)
    compare("where", x > 0, x, -x, device=device)
    compare("where", x > 0, x, 0, device=device)
    compare("where", x > 0, 1, 0.5, device=device)
    compare("nonzero", x, device=device)
    compare("argwhere", x, device=device)
    compare("flatnonzero", x, device=device)
    compare("count_nonzero", x, device=device)
    compare("extract", x > 0, x, device=device)
    assert_match(gp.asarray(x, device=device).nonzero(), x.nonzero())


def test_where_errors(device):
    with pytest.raises(ValueError):
        gp.where(gp.asarray([True], device=device), 1)


@SETTINGS
@given(data=st.data())
def test_take(data, device):
    x = data.draw(hnp.arrays(numpy.int64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                             elements=st.integers(-9, 9)), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    n = x.shape[axis]
    idx = numpy.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=5), label="idx"),
                      dtype=numpy.int64)
    compare("take", x, idx, axis, device=device)
    compare("take", x, idx % x.size if x.size else idx, device=device)
    compare("take", x, idx + 3 * n, axis, mode="wrap", device=device)
    compare("take", x, idx + 3 * n, axis, mode="clip", device=device)
    compare("take", x, 0, axis, device=device)
    ii = numpy.argsort(x, axis=axis)
    compare("take_along_axis", x, ii, axis, device=device)
    compare("take_along_axis", x.ravel(), numpy.argsort(x.ravel()), None, device=device)
    assert_match(gp.asarray(x, device=device).take(idx, axis), x.take(idx, axis))


def _inplace(device, fn_name, x, *args, **kwargs):
    want = x.copy()
    getattr(numpy, fn_name)(want, *args, **kwargs)
    got = gp.asarray(x.copy(), device=device)
    getattr(gp, fn_name)(got, *to_gpk(list(args), device), **kwargs)
    assert_match(got, want, what=fn_name)


def test_inplace_setters(device):
    x = numpy.arange(12.0).reshape(3, 4)
    _inplace(device, "put", x, [0, 5, -1], [10.0, 20.0, 30.0])
    _inplace(device, "put", x, numpy.array([1, 2, 3, 4]), numpy.array([7.0, 8.0]))
    _inplace(device, "put", x, [0, 50], [1.0, 2.0], mode="wrap")
    _inplace(device, "put", x, [0, 50], [1.0, 2.0], mode="clip")
    with pytest.raises(IndexError):
        gp.put(gp.asarray(x, device=device), [100], 1.0)
    _inplace(device, "put_along_axis", x, numpy.array([[0], [1], [2]]), 99.0, 1)
    _inplace(device, "putmask", x, x > 5, numpy.array([-1.0, -2.0]))
    _inplace(device, "place", x, x < 3, numpy.array([5.0, 6.0]))
    _inplace(device, "copyto", x, numpy.ones(4))
    _inplace(device, "copyto", x, 7, where=x > 4)
    _inplace(device, "copyto", x, numpy.arange(12.0).reshape(3, 4), where=numpy.array([True, False, True, False]))
    _inplace(device, "fill_diagonal", x, 5.0)
    _inplace(device, "fill_diagonal", numpy.zeros((5, 3)), [1.0, 2.0], wrap=True)
    with pytest.raises(TypeError):
        gp.copyto(gp.asarray(numpy.zeros(3, dtype=numpy.int64), device=device),
                  gp.asarray(numpy.ones(3), device=device))


def test_choose_select_compress_piecewise(device):
    a = numpy.array([0, 2, 1, 0])
    choices = [numpy.arange(4), numpy.arange(4) * 10, numpy.arange(4) * 100]
    compare("choose", a, choices, device=device)
    x = numpy.linspace(-2, 2, 9)
    compare("select", [x < -1, x > 1], [x, x ** 2], device=device)
    compare("select", [x < 0], [numpy.ones(9, dtype=numpy.float32)], 0, device=device)
    compare("select", [x < 0, x >= 1], [x, 7.0], default=-1.0, device=device)
    compare("compress", [True, False, True], numpy.arange(12).reshape(3, 4), axis=0, device=device)
    compare("compress", x > 0, x, device=device)
    compare("piecewise", x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 2], device=device)
    compare("piecewise", x, [x < -1, x > 1], [0.0, 1.0, lambda v: v / 2], device=device)


def test_index_helpers(dev):
    for name, args in [("diag_indices", (3,)), ("tril_indices", (4,)), ("tril_indices", (4, -1)),
                       ("triu_indices", (3, 1, 5)), ("unravel_index", (numpy.array([5, 7, 0]), (3, 4))),
                       ("unravel_index", (7, (3, 4))), ("ix_", ([0, 1], [2, 3, 0]))]:
        compare(name, *args, device=dev)
    m = numpy.arange(16).reshape(4, 4)
    compare("tril_indices_from", m, device=dev)
    compare("triu_indices_from", m, 1, device=dev)
    compare("diag_indices_from", m, device=dev)
    compare("ravel_multi_index", (numpy.array([0, 1, 2]), numpy.array([3, 0, 1])), (3, 4), device=dev)
    g = gp.asarray(m)
    r, c = gp.triu_indices(4, 1)
    assert_match(g[r, c], m[numpy.triu_indices(4, 1)])
    assert_match(g[gp.ix_([0, 2], [1, 3])], m[numpy.ix_([0, 2], [1, 3])])


def test_grids(dev):
    for key in [numpy.s_[0:5], numpy.s_[0:3, 0:4], numpy.s_[-1:1:5j], numpy.s_[0:1:0.25, 0:2],
                numpy.s_[0:4:2, 1:3, 0:2]]:
        assert_match(gp.mgrid[key], numpy.mgrid[key])
        assert_match(gp.ogrid[key], numpy.ogrid[key])
    assert_match(gp.r_[1:4, 7, [8, 9]], numpy.r_[1:4, 7, [8, 9]])
    assert_match(gp.r_[numpy.array([1.5]), 0:2], numpy.r_[numpy.array([1.5]), 0:2])
    assert_match(gp.r_[-1:1:5j], numpy.r_[-1:1:5j])
    assert_match(gp.c_[numpy.array([1, 2]), numpy.array([3, 4])], numpy.c_[numpy.array([1, 2]), numpy.array([3, 4])])
    assert_match(gp.c_[gp.asarray([[1, 2]]), 5, 6], numpy.c_[numpy.array([[1, 2]]), 5, 6])
    assert_match(gp.r_["1", numpy.ones((2, 2)), numpy.zeros((2, 1))],
                 numpy.r_["1", numpy.ones((2, 2)), numpy.zeros((2, 1))])
    assert gp.s_[1:2] == slice(1, 2) and gp.index_exp[0] == (0,)
    assert list(gp.ndindex(2, 2)) == list(numpy.ndindex(2, 2))
    got = [(i, v) for i, v in gp.ndenumerate(gp.asarray([[1, 2], [3, 4]]))]
    assert got == [(i, v) for i, v in numpy.ndenumerate(numpy.array([[1, 2], [3, 4]]))]


def test_apply_along_axis_and_vectorize(dev):
    x = numpy.arange(12.0).reshape(3, 4)
    g = gp.asarray(x)
    assert_match(gp.apply_along_axis(lambda v: v.max() - v.min(), 1, g),
                 numpy.apply_along_axis(lambda v: v.max() - v.min(), 1, x))
    assert_match(gp.apply_along_axis(lambda v: v[::-1] * 2, 0, g), numpy.apply_along_axis(lambda v: v[::-1] * 2, 0, x))
    assert_match(gp.apply_along_axis(lambda v: gp.stack([v, v]), 1, g),
                 numpy.apply_along_axis(lambda v: numpy.stack([v, v]), 1, x))
    if dev.xp.__name__ == "numpy":
        f = gp.vectorize(lambda a, b: a + 2 * b if a > b else a - b)
        nf = numpy.vectorize(lambda a, b: a + 2 * b if a > b else a - b)
        assert_match(f(g, 3.0), nf(x, 3.0))


@pytest.mark.parametrize("args", [(0.0, 1.0), (None, 5.0), (2.0, None), (numpy.array([1.0, 2, 3, 4]), 6.0)])
def test_clip(args, device):
    x = numpy.arange(12.0).reshape(3, 4)
    compare("clip", x, *args, device=device)
    compare("clip", x.astype(numpy.int32), *args, device=device) if args[0] is not None and \
        not isinstance(args[0], numpy.ndarray) else None
    g = gp.asarray(x, device=device)
    assert_match(g.clip(*args), x.clip(*args))
    assert_match(gp.clip(g, a_min=args[0], a_max=args[1]), numpy.clip(x, a_min=args[0], a_max=args[1]))
    out = gp.empty((3, 4), device=device)
    gp.clip(g, args[0], args[1], out)
    assert_match(out, numpy.clip(x, *args))


def test_getitem_setitem_numpy_styles(device):
    x = numpy.arange(24).reshape(2, 3, 4)
    g = gp.asarray(x, device=device)
    for key in [(0, 1), (Ellipsis, 1), (slice(None), [0, 2]), (x > 5,), ([0, 1], [1, 2]), (None, 0),
                (numpy.int64(1),), (slice(None, None, -1),), (0, slice(1, None), numpy.array([0, 3]))]:
        assert_match(g[key if len(key) > 1 else key[0]], x[key if len(key) > 1 else key[0]])
    g[g > 20] = 0
    x[x > 20] = 0
    g[0, :, [1, 2]] = gp.asarray([-1, -2, -3], device=device)
    x[0, :, [1, 2]] = numpy.array([-1, -2, -3])
    g[1] = [5, 6, 7, 8]
    x[1] = [5, 6, 7, 8]
    assert_match(g, x)


def test_cuda_index_check_is_skipped_during_graph_capture(monkeypatch):
    """The CUDA bounds check of integer index arrays syncs with the host, which a stream capturing a CUDA graph
    forbids: while the current stream captures, no check runs (and outside capture it does)."""
    import types

    from gpk_array._ops import indexing

    from .fakegpu import fake_cuda_device
    with fake_cuda_device() as d:
        capturing = [False]
        stream = types.SimpleNamespace(is_capturing=lambda: capturing[0])
        monkeypatch.setattr(d.xp, "cuda", types.SimpleNamespace(get_current_stream=lambda: stream), raising=False)
        checks = []
        real = indexing._out_of_range
        monkeypatch.setattr(indexing, "_out_of_range",
                            lambda xp, kind: (checks.append(kind), real(xp, kind))[1])
        x = gp.arange(10, device=d)
        idx = gp.asarray([1, 2], device=d)
        x[idx]
        assert checks == ["i"]
        capturing[0] = True
        x[idx]
        gp.take(x, idx)
        assert checks == ["i"]


def test_cuda_index_check_counts_a_python_bool_as_a_new_axis():
    """(True, idx) indexes axis 0 with idx (the bool adds an axis): the device check must look at axis 0."""
    from .fakegpu import fake_cuda_device
    with fake_cuda_device() as d:
        x = gp.reshape(gp.arange(30, device=d), (10, 3))
        got = x[(True, gp.asarray([7], device=d))]
        assert got.shape == numpy.arange(30).reshape(10, 3)[(True, [7])].shape
        with pytest.raises(IndexError):
            x[(True, gp.asarray([10], device=d))]
