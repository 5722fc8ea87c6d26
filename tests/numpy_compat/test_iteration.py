"""Element iteration against NumPy: nditer (orders, indices, external_loop, readwrite write-back, allocated outputs,
iternext/finished), ndindex, ndenumerate, frompyfunc, vectorize, fromiter, fromfunction, unravel_index."""
import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match, to_gpk


def _values(it):
    """The values an nditer gives, as Python numbers (and indices where tracked)."""
    out = []
    for v in it:
        vs = v if isinstance(v, tuple) else (v,)
        row = [numpy.asarray(x.to_device("cpu") if isinstance(x, gp.Array) else x).tolist() for x in vs]
        if "multi_index" in getattr(it, "_flags", ()) or getattr(it, "has_multi_index", False):
            row.append(it.multi_index)
        if getattr(it, "has_index", False) or {"c_index", "f_index"} & set(getattr(it, "_flags", ())):
            row.append(it.index)
        out.append(row)
    return out


@pytest.mark.parametrize("order", ["K", "C", "F", "A"])
@pytest.mark.parametrize("flags", [[], ["multi_index"], ["c_index"], ["f_index"], ["external_loop"]])
def test_nditer_orders_and_indices(device, order, flags):
    a = numpy.arange(24).reshape(2, 3, 4)
    for src in (a, a.transpose(2, 0, 1), a[:, ::2], numpy.asfortranarray(a)):
        g = to_gpk(src, device)
        # K order and external_loop chunks follow the memory layout: a host array copied to a CUDA device is
        # C-contiguous there, so the oracle is NumPy's nditer over the same layout
        lay = src
        if g._data.flags.c_contiguous and not src.flags.c_contiguous:
            lay = numpy.ascontiguousarray(src)
        elif g._data.flags.f_contiguous and not src.flags.f_contiguous:
            lay = numpy.asfortranarray(src)
        assert _values(gp.nditer(g, flags=flags, order=order)) == _values(numpy.nditer(lay, flags=flags,
                                                                                        order=order))


def test_nditer_broadcast_operands(device):
    a = numpy.arange(3).reshape(3, 1)
    b = numpy.arange(4.0)
    want = _values(numpy.nditer([a, b], flags=["multi_index"]))
    got = _values(gp.nditer(to_gpk([a, b], device), flags=["multi_index"]))
    assert got == want


def test_nditer_readwrite_and_allocate(dev):
    a = numpy.arange(6.0).reshape(2, 3)
    g = gp.asarray(a)
    with numpy.nditer(a, op_flags=["readwrite"]) as it:
        for x in it:
            x[...] = 2 * x + 1
    with gp.nditer(g, op_flags=["readwrite"]) as it:
        for x in it:
            x[...] = 2 * x + 1
    assert_match(g, a, dev)

    def square(np, v):
        it = np.nditer([v, None])
        with it:
            for x, y in it:
                y[...] = x * x
            return it.operands[1]
    v = numpy.array([1, 2, 3])
    assert_match(square(gp, gp.asarray(v)), square(numpy, v), dev)
    x, y = numpy.arange(3).reshape(3, 1), numpy.arange(3).reshape(1, 3)
    it = gp.nditer(to_gpk([x, y], dev) + [None])
    for p, q, r in it:
        r[...] = p + q
    assert_match(it.operands[2], x + y, dev)


def test_nditer_iternext_finished(device):
    a = numpy.arange(6).reshape(2, 3)
    res = {}
    for np, arr in ((numpy, a), (gp, gp.asarray(a, device=device))):
        it = np.nditer(arr, flags=["f_index"])
        seen = []
        while not it.finished:
            seen.append((int(it[0]), it.index))
            it.iternext()
        res[np.__name__] = seen
        it.reset()
        assert int(it.value) == 0
    assert res["gpk_array"] == res["numpy"]


def test_nditer_errors(device):
    g = gp.arange(3, device=device)
    with pytest.raises(ValueError, match="non-broadcastable"):
        gp.nditer([g, gp.zeros((2, 3), device=device)], op_flags=[["readwrite"], ["readonly"]])
    with pytest.raises(ValueError):
        _ = gp.nditer(g).multi_index
    with pytest.raises(ValueError):
        gp.nditer(g, flags=["bogus"])
    with pytest.raises(TypeError):
        gp.nditer(g, op_dtypes=[gp.float64])
    vals = [float(v) for v in gp.nditer(g, op_dtypes=[gp.float64], flags=["buffered"])]
    assert vals == [0.0, 1.0, 2.0]
    if str(device) == "cpu":
        with pytest.raises(ValueError, match="read-only"):
            for x in gp.nditer(g):
                x[...] = 1


def test_ndindex_ndenumerate(device):
    assert list(gp.ndindex(2, 3)) == list(numpy.ndindex(2, 3))
    assert list(gp.ndindex((2, 1, 2))) == list(numpy.ndindex((2, 1, 2)))
    a = numpy.arange(6.0).reshape(3, 2)
    assert list(gp.ndenumerate(gp.asarray(a, device=device))) == list(numpy.ndenumerate(a))


def test_frompyfunc():
    f, nf = gp.frompyfunc(lambda x, y: x * 10 + y, 2, 1), numpy.frompyfunc(lambda x, y: x * 10 + y, 2, 1)
    a = numpy.arange(4)
    assert (f.nin, f.nout, f.nargs) == (nf.nin, nf.nout, nf.nargs)
    assert_match(f(gp.asarray(a), 3), nf(a, 3).astype(numpy.int64))
    assert_match(f.outer(gp.asarray(a), gp.asarray(a)), nf.outer(a, a).astype(numpy.int64))
    assert f.reduce(gp.asarray(a)) == nf.reduce(a)
    assert_match(f.accumulate(gp.asarray(a)), nf.accumulate(a).astype(numpy.int64))
    assert f(2, 3) == nf(2, 3)
    two = gp.frompyfunc(divmod, 2, 2)
    q, r = two(gp.asarray([7, 8]), 3)
    assert_match((q, r), (numpy.array([2, 2]), numpy.array([1, 2])))


def test_frompyfunc_is_host_only(device):
    if str(device) == "cpu":
        return
    with pytest.raises(TypeError, match="frompyfunc.*host"):
        gp.frompyfunc(abs, 1, 1)(gp.asarray([-1, 2], device=device))


def test_vectorize_fromiter_fromfunction(dev):
    f = lambda x, y: x * 2 + y  # noqa: E731
    a, b = numpy.arange(5.0), numpy.arange(5.0)[::-1]
    assert_match(gp.vectorize(f)(gp.asarray(a), gp.asarray(b)), numpy.vectorize(f)(a, b), dev)
    assert_match(gp.fromiter((i * i for i in range(6)), dtype=int), numpy.fromiter((i * i for i in range(6)),
                                                                                  dtype=int), dev)
    assert_match(gp.fromiter(iter([1.5, 2.5]), float, count=1), numpy.fromiter(iter([1.5, 2.5]), float, count=1),
                 dev)
    assert_match(gp.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=int),
                 numpy.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=int), dev)
    assert_match(gp.fromfunction(lambda i, j: i == j, (3, 3)), numpy.fromfunction(lambda i, j: i == j, (3, 3)), dev)


def test_unravel_ravel_index(dev):
    got, want = gp.unravel_index(99, (6, 7, 8)), numpy.unravel_index(99, (6, 7, 8))
    assert got == want and repr(got) == repr(want)
    idx = numpy.array([3, 17, 40])
    assert_match(gp.unravel_index(gp.asarray(idx), (6, 7)), numpy.unravel_index(idx, (6, 7)), dev)
    assert_match(gp.unravel_index(gp.asarray(idx), (6, 7), order="F"), numpy.unravel_index(idx, (6, 7), order="F"),
                 dev)
    assert gp.ravel_multi_index((1, 2), (3, 4)) == numpy.ravel_multi_index((1, 2), (3, 4))
    rows, cols = numpy.array([0, 2]), numpy.array([1, 3])
    assert_match(gp.ravel_multi_index(to_gpk((rows, cols), dev), (3, 4)), numpy.ravel_multi_index((rows, cols),
                                                                                                  (3, 4)), dev)
