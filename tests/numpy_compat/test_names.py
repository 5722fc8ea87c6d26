"""Issue 30, "missing or incomplete names": each name or argument NumPy scripts used that gpk_array lacked, compared
with NumPy's own result on the device under test (CPU, the stand-in CUDA device, and cuda:0 on a GPU machine)."""
import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match, compare

RNG = numpy.random.default_rng(30)


def _on(dev, a):
    return gp.asarray(a, device=dev)


# --- fft2 / ifft2 / rfft2 / irfft2 ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32])
def test_fft2(dev, name, dtype):
    a = RNG.normal(size=(3, 5, 6)).astype(dtype)
    # cuFFT's and pocketfft's roundings differ: entries near zero agree to an absolute tolerance
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == numpy.float32 else {"rtol": 1e-10, "atol": 1e-12}
    compare(name, a, module="fft", device=dev, **tol)
    compare(name, a, s=(4, 6), module="fft", device=dev, **tol)
    compare(name, a, axes=(0, 2), norm="ortho", module="fft", device=dev, **tol)
    got = getattr(gp.fft, name)(_on(dev, a))
    assert got.device == dev


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn",
                                  "irfftn", "fft2"])
def test_fft_norm_none(dev, name):
    a = RNG.normal(size=(4, 6))
    compare(name, a, norm=None, module="fft", device=dev, atol=1e-12)


def test_fft2_out(dev):
    a = RNG.normal(size=(4, 4))
    out = gp.empty((4, 4), dtype=gp.complex128, device=dev)
    r = gp.fft.fft2(_on(dev, a), out=out)
    assert r is out
    assert_match(out, numpy.fft.fft2(a), dev, atol=1e-12)


# --- window functions -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("M", [-1, 0, 1, 2, 5, 12, 7.0])
def test_windows(dev, name, M):
    got = getattr(gp, name)(M)
    assert got.device == dev
    assert_match(got, getattr(numpy, name)(M), dev, atol=1e-15)


@pytest.mark.parametrize("M,beta", [(0, 5.0), (1, 5.0), (2, 0.0), (7, 14), (12, 8.6), (5, 2.5)])
def test_kaiser(dev, M, beta):
    got = gp.kaiser(M, beta)
    assert got.device == dev
    assert_match(got, numpy.kaiser(M, beta), dev, rtol=1e-12)


# --- asarray_chkfinite, require, isfortran ------------------------------------------------------------------------
def test_asarray_chkfinite(dev):
    assert_match(gp.asarray_chkfinite([1.0, 2.0]), numpy.asarray_chkfinite([1.0, 2.0]), dev)
    assert_match(gp.asarray_chkfinite(_on(dev, numpy.arange(3)), dtype=gp.float32),
                 numpy.asarray_chkfinite(numpy.arange(3), dtype=numpy.float32), dev)
    for bad in ([1.0, numpy.nan], [numpy.inf, 0.0], [1 + 1j, complex(0, numpy.inf)]):
        with pytest.raises(ValueError):
            numpy.asarray_chkfinite(bad)
        with pytest.raises(ValueError, match="infs or NaNs"):
            gp.asarray_chkfinite(_on(dev, numpy.asarray(bad)))


def test_require(dev):
    a = numpy.arange(12.0).reshape(3, 4)
    x = _on(dev, a)
    for req in (None, "C", ["F"], ["A", "W"], ["O"], ["F_CONTIGUOUS"], ["C", "O"], ["E"], "CW", ["contiguous"]):
        want = numpy.require(a, requirements=req)
        got = gp.require(x, requirements=req)
        assert_match(got, want, dev)
        assert got.flags.c_contiguous == want.flags.c_contiguous
        assert got.flags.f_contiguous == want.flags.f_contiguous
    t = x.T
    assert gp.require(t, requirements="C").flags.c_contiguous
    assert gp.require(x, requirements="C") is x  # nothing to change: no copy
    assert_match(gp.require(x, dtype=gp.float32, requirements="F"), numpy.require(a, numpy.float32, "F"), dev)
    with pytest.raises(ValueError):
        numpy.require(a, requirements=["C", "F"])
    with pytest.raises(ValueError, match="both"):
        gp.require(x, requirements=["C", "F"])


def test_isfortran(dev):
    a = numpy.arange(6.0).reshape(2, 3)
    for v in (a, numpy.asfortranarray(a), numpy.arange(3.0), numpy.ones((1, 3)), numpy.ones((3, 1), order="F")):
        assert gp.isfortran(_on(dev, v)) is numpy.isfortran(v)
    x = _on(dev, a)
    assert gp.isfortran(x[:, :1]) is numpy.isfortran(a[:, :1])
    assert gp.isfortran(x.T) is numpy.isfortran(a.T) is True
    assert gp.isfortran(x) is numpy.isfortran(a) is False
    assert gp.isfortran(gp.asfortranarray(x)) is True


# --- the broadcast object, nested_iters, nditer(op_axes=) ---------------------------------------------------------
def _vals(t):
    return tuple(float(v) for v in t)


def test_broadcast_object(dev):
    a = numpy.arange(3.0).reshape(3, 1)
    b = numpy.arange(4.0) * 10
    nb = numpy.broadcast(a, b, 5)
    gb = gp.broadcast(_on(dev, a), _on(dev, b), 5)
    assert (gb.shape, gb.ndim, gb.size, gb.numiter, gb.index) == (nb.shape, nb.ndim, nb.size, nb.numiter, nb.index)
    got = [_vals(t) for t in gb]
    assert got == [_vals(t) for t in nb]
    assert gb.index == nb.index == 12
    gb.reset()
    assert gb.index == 0
    assert _vals(next(gb)) == _vals(next(numpy.broadcast(a, b, 5)))
    # the NumPy idiom: an output of the broadcast shape, filled element by element
    out = gp.empty(gb.shape, device=dev)
    out.flat = [u + v for (u, v, _) in gp.broadcast(_on(dev, a), _on(dev, b), 5)]
    assert_match(out, numpy.asarray([u + v for (u, v, _) in numpy.broadcast(a, b, 5)]).reshape(3, 4), dev)
    nested = gp.broadcast(gb, _on(dev, b))
    assert nested.numiter == numpy.broadcast(nb, b).numiter == 4
    assert [len(list(i)) for i in gp.broadcast(_on(dev, a), _on(dev, b)).iters] == [12, 12]
    with pytest.raises(ValueError):
        numpy.broadcast(numpy.ones(3), numpy.ones(4))
    with pytest.raises(ValueError):
        gp.broadcast(gp.ones(3, device=dev), gp.ones(4, device=dev))


def test_nested_iters(dev):
    a = numpy.arange(12).reshape(2, 3, 2)
    want = []
    i, j = numpy.nested_iters(a, [[1], [0, 2]], flags=["multi_index"])
    for x in i:
        want.append(("outer", i.multi_index, int(x)))
        for y in j:
            want.append(("inner", j.multi_index, int(y)))
    got = []
    gi, gj = gp.nested_iters(_on(dev, a), [[1], [0, 2]], flags=["multi_index"])
    for x in gi:
        got.append(("outer", gi.multi_index, int(x)))
        for y in gj:
            got.append(("inner", gj.multi_index, int(y)))
    assert got == want
    # three levels, two operands broadcast
    b = numpy.arange(2).reshape(2, 1, 1) * 100
    n0, n1, n2 = numpy.nested_iters([a, b], [[0], [1], [2]])
    g0, g1, g2 = gp.nested_iters([_on(dev, a), _on(dev, b)], [[0], [1], [2]])
    want = [(int(u), int(v)) for _ in n0 for _ in n1 for (u, v) in n2]
    got = [(int(u), int(v)) for _ in g0 for _ in g1 for (u, v) in g2]
    assert got == want
    with pytest.raises(ValueError):
        gp.nested_iters(_on(dev, a), [[0], [1]])  # axis 2 not named


def test_nested_iters_write(dev):
    a = numpy.zeros((2, 3))
    x = _on(dev, a)
    i, j = numpy.nested_iters(a, [[0], [1]], op_flags=[["readwrite"]])
    gi, gj = gp.nested_iters(x, [[0], [1]], op_flags=[["readwrite"]])
    k = 0
    for _ in i:
        for y in j:
            y[...] = k
            k += 1
    k = 0
    for _ in gi:
        for y in gj:
            y[...] = k
            k += 1
    assert_match(x, a, dev)


def test_nditer_op_axes(dev):
    a = numpy.arange(3.0)
    b = numpy.arange(2.0) * 10
    want = [(float(u), float(v)) for u, v in numpy.nditer([a, b], op_axes=[[0, -1], [-1, 0]])]
    got = [(float(u), float(v)) for u, v in gp.nditer([_on(dev, a), _on(dev, b)], op_axes=[[0, -1], [-1, 0]])]
    assert got == want
    # the outer product through an output operand of the full shape
    out = numpy.empty((3, 2))
    with numpy.nditer([a, b, out], op_axes=[[0, -1], [-1, 0], None],
                      op_flags=[["readonly"], ["readonly"], ["writeonly"]]) as it:
        for u, v, o in it:
            o[...] = u * v
    gout = gp.empty((3, 2), device=dev)
    with gp.nditer([_on(dev, a), _on(dev, b), gout], op_axes=[[0, -1], [-1, 0], None],
                   op_flags=[["readonly"], ["readonly"], ["writeonly"]]) as it:
        for u, v, o in it:
            o[...] = u * v
    assert_match(gout, out, dev)
    # a permutation of a 2-D operand's axes
    m = numpy.arange(6.0).reshape(2, 3)
    want = [float(v) for v in numpy.nditer(m, op_axes=[[1, 0]], order="C")]
    got = [float(v) for v in gp.nditer(_on(dev, m), op_axes=[[1, 0]], order="C")]
    assert got == want
    with pytest.raises(ValueError):
        numpy.nditer([a], op_axes=[[1]])
    with pytest.raises(ValueError, match="not a valid axis"):
        gp.nditer([_on(dev, a)], op_axes=[[1]])
    with pytest.raises(ValueError, match="duplicate"):
        gp.nditer([_on(dev, m)], op_axes=[[0, 0]])


def _reduce_allocated(m, a):
    it = m.nditer([a, None], flags=["reduce_ok"], op_flags=[["readonly"], ["readwrite", "allocate"]],
                  op_axes=[[0, 1, 2], [0, 1, -1]])
    with it:
        it.operands[1][...] = 0
        for x, y in it:
            y[...] += x
        return it.operands[1]


def test_nditer_reductions(dev):
    """NumPy's documented reductions: an allocated output with op_axes -1 on the summed axis, and a given output
    of length 1 along it; without reduce_ok both raise."""
    a = numpy.arange(24.0).reshape(2, 3, 4)
    x = _on(dev, a)
    assert_match(_reduce_allocated(gp, x), _reduce_allocated(numpy, a), dev)
    out = numpy.zeros((2, 1, 4))
    gout = gp.zeros((2, 1, 4), device=dev)
    with numpy.nditer([a, out], flags=["reduce_ok"], op_flags=[["readonly"], ["readwrite"]]) as it:
        for u, v in it:
            v[...] += u
    with gp.nditer([x, gout], flags=["reduce_ok"], op_flags=[["readonly"], ["readwrite"]]) as it:
        for u, v in it:
            v[...] += u
    assert_match(gout, out, dev)
    for m, arr, o in ((numpy, a, out), (gp, x, gout)):
        with pytest.raises(ValueError, match="reduction"):
            m.nditer([arr, None], op_flags=[["readonly"], ["readwrite", "allocate"]], op_axes=[[0, 1, 2], [0, 1, -1]])
        with pytest.raises(ValueError):
            m.nditer([arr, o], op_flags=[["readonly"], ["readwrite"]])
    # an allocated output under a permutation (no reduction): its axes follow op_axes
    it = numpy.nditer([a[0], None], op_axes=[[0, 1], [1, 0]])
    git = gp.nditer([x[0], None], op_axes=[[0, 1], [1, 0]])
    assert git.operands[1].shape == it.operands[1].shape == (4, 3)


# --- mask_indices -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, -1])
def test_mask_indices(dev, k):
    want = numpy.mask_indices(4, numpy.triu, k)
    got = gp.mask_indices(4, gp.triu, k)
    assert all(g.device == dev for g in got)
    assert_match(got, want, dev)
    assert_match(gp.mask_indices(3, gp.tril, k), numpy.mask_indices(3, numpy.tril, k), dev)
    a = numpy.arange(16).reshape(4, 4)
    assert_match(_on(dev, a)[gp.mask_indices(4, gp.triu, k)], a[want], dev)


# --- polydiv and poly1d / poly1d --------------------------------------------------------------------------------
@pytest.mark.parametrize("u,v", [([3.0, 5.0, 2.0], [2.0, 1.0]), ([1, 2, 3], [1, 1]), ([1.0, 0, -1], [1.0, -1]),
                                 ([2.0], [4.0, 1.0]), ([1, -3, 3, -1], [1, -1]), ([5.0], [2.0])])
def test_polydiv(dev, u, v):
    want = numpy.polydiv(u, v)
    got = gp.polydiv(_on(dev, numpy.asarray(u)), _on(dev, numpy.asarray(v)))
    assert_match(got, want, dev)
    pq, pr = numpy.poly1d(u) / numpy.poly1d(v)
    gq, gr = gp.poly1d(_on(dev, numpy.asarray(u))) / gp.poly1d(_on(dev, numpy.asarray(v)))
    assert isinstance(gq, gp.poly1d) and isinstance(gr, gp.poly1d)
    assert_match(gq.coeffs, pq.coeffs, dev)
    assert_match(gr.coeffs, pr.coeffs, dev)


def test_poly1d_scalar_division(dev):
    p = gp.poly1d(_on(dev, numpy.asarray([2.0, 4.0])))
    assert_match((p / 2).coeffs, (numpy.poly1d([2.0, 4.0]) / 2).coeffs, dev)
    q, r = gp.poly1d(_on(dev, numpy.asarray([1.0, 0.0, -1.0]))) / [1.0, 1.0]
    nq, nr = numpy.poly1d([1.0, 0.0, -1.0]) / [1.0, 1.0]
    assert_match(q.coeffs, nq.coeffs, dev)
    assert_match(r.coeffs, nr.coeffs, dev)


# --- buffer size and error callback (NumPy's host state) --------------------------------------------------------
def test_bufsize_errcall():
    old = numpy.getbufsize()
    assert gp.getbufsize() == old
    try:
        assert gp.setbufsize(16384) == old
        assert gp.getbufsize() == numpy.getbufsize() == 16384
    finally:
        numpy.setbufsize(old)
    calls = []
    prev = gp.seterrcall(lambda kind, flag: calls.append(kind))
    try:
        assert gp.geterrcall() is numpy.geterrcall()
        with gp.errstate(divide="call"):
            numpy.float64(1.0) / numpy.zeros(1)
        assert calls == ["divide by zero"]
    finally:
        gp.seterrcall(prev)


# --- ndarray.getfield / setfield / byteswap / setflags -----------------------------------------------------------
@pytest.mark.parametrize("src,dt,offset", [(numpy.float64, numpy.int32, 0), (numpy.float64, numpy.int32, 4),
                                           (numpy.int32, numpy.int16, 2), (numpy.complex128, numpy.float64, 8),
                                           (numpy.int64, numpy.float64, 0), (numpy.uint16, numpy.uint8, 1)])
def test_getfield_setfield(dev, src, dt, offset):
    a = (RNG.normal(size=(3, 4)) * 1000).astype(src)
    if numpy.dtype(src).kind == "c":
        a = a + 1j * RNG.normal(size=(3, 4))
    x = _on(dev, a)
    assert_match(x.getfield(dt, offset), a.getfield(dt, offset), dev)
    assert_match(x.T.getfield(dt, offset), a.T.getfield(dt, offset), dev)
    b = a.copy()
    y = _on(dev, b)
    b.setfield(7, dt, offset)
    assert y.setfield(7, dt, offset) is None
    assert_match(y, b, dev)
    vals = numpy.arange(4).astype(dt)
    b.setfield(vals, dt, offset)
    y.setfield(_on(dev, vals), dt, offset)
    assert_match(y, b, dev)
    with pytest.raises(ValueError):
        a.getfield(dt, a.itemsize)
    with pytest.raises(ValueError, match="offset"):
        x.getfield(dt, a.itemsize)


def test_getfield_is_a_view_on_the_cpu():
    a = numpy.zeros(3, numpy.float64)
    x = gp.asarray(a.copy(), device="cpu")
    f = x.getfield(gp.int32, 4)
    f[...] = 1072693248  # the high word of 1.0
    a.getfield(numpy.int32, 4)[...] = 1072693248
    assert_match(x, a)


@pytest.mark.parametrize("dtype", [numpy.int8, numpy.uint16, numpy.int32, numpy.int64, numpy.float16,
                                   numpy.float32, numpy.float64, numpy.complex64, numpy.complex128, numpy.bool_])
def test_byteswap(dev, dtype):
    a = (RNG.normal(size=(2, 5)) * 100).astype(dtype)
    if numpy.dtype(dtype).kind == "c":
        a = a + 1j * RNG.normal(size=(2, 5)).astype(dtype)
    x = _on(dev, a)
    assert_match(x.byteswap(), a.byteswap(), dev)
    assert_match(x.T.byteswap(), a.T.byteswap(), dev)
    assert_match(x.byteswap().byteswap(), a, dev)
    b = a.copy()
    y = _on(dev, b)
    assert y.byteswap(inplace=True) is y
    b.byteswap(inplace=True)
    assert_match(y, b, dev)


def test_setflags_cpu():
    a = numpy.arange(3.0)
    x = gp.asarray(a.copy(), device="cpu")
    x.setflags(write=False)
    a.setflags(write=False)
    assert x.flags.writeable is a.flags.writeable is False
    with pytest.raises(ValueError):
        a[0] = 1
    with pytest.raises(ValueError):
        x[0] = 1
    x.setflags(write=True)
    x[0] = 5.0
    assert float(x[0]) == 5.0
    with pytest.raises(ValueError):
        a.setflags(uic=True)
    with pytest.raises(ValueError):
        x.setflags(uic=True)
    x.setflags(align=True)


@pytest.mark.gpu
@pytest.mark.skipif(not any(d.kind == "cuda" for d in gp.__array_namespace_info__().devices()),
                    reason="no CUDA GPU")
def test_setflags_cuda():
    """Read-only arrays on CUDA come with the 'semantics' part of issue 30 (x.flags.writeable = False there);
    setflags(write=False) goes through that flag."""
    x = gp.arange(3.0, device="cuda:0")
    x.setflags(write=False)
    assert x.flags.writeable is False
    with pytest.raises(ValueError):
        x[0] = 1


# --- ufunc attributes --------------------------------------------------------------------------------------------
_OUR = set("?bBhHiIlLqQefdFD")


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "sqrt", "exp", "floor_divide", "power",
                                  "arctan2", "logical_and", "isnan", "fmax", "gcd", "divmod", "modf", "frexp",
                                  "ldexp", "invert", "signbit", "float_power", "heaviside"])
def test_ufunc_type_attributes(name):
    g, n = getattr(gp, name), getattr(numpy, name)
    want = [t for t in n.types if set(t.replace("->", "")) <= _OUR]
    assert g.types == want
    assert g.ntypes == len(want)
    assert g.signature is n.signature is None
    assert (g.nin, g.nout, g.nargs) == (n.nin, n.nout, n.nargs)


@pytest.mark.parametrize("name,dtypes", [("add", (numpy.float32, numpy.float64, None)),
                                         ("add", (numpy.int8, numpy.uint8, None)),
                                         ("add", (numpy.int16, float, None)),
                                         ("divide", (numpy.int32, numpy.int32, None)),
                                         ("sqrt", (numpy.float16, None)),
                                         ("less", (numpy.int64, numpy.float32, None)),
                                         ("divmod", (numpy.int32, numpy.int64, None, None))])
def test_ufunc_resolve_dtypes(name, dtypes):
    nd = tuple(numpy.dtype(d) if d not in (None, float) else d for d in dtypes)
    assert getattr(gp, name).resolve_dtypes(nd) == getattr(numpy, name).resolve_dtypes(nd)


def test_ufunc_resolve_dtypes_agrees_with_calls(dev):
    """What resolve_dtypes reports is the dtype a call gives on each device."""
    for a, b in [(numpy.float32, numpy.float64), (numpy.int8, numpy.uint8), (numpy.int32, numpy.float32),
                 (numpy.uint16, numpy.int16)]:
        res = gp.multiply.resolve_dtypes((numpy.dtype(a), numpy.dtype(b), None))[-1]
        got = gp.multiply(gp.ones(2, dtype=a, device=dev), gp.ones(2, dtype=b, device=dev))
        assert got.dtype == res == numpy.multiply(numpy.ones(2, a), numpy.ones(2, b)).dtype


def test_ufunc_resolve_dtypes_refuses_host_only():
    with pytest.raises(TypeError):
        gp.add.resolve_dtypes((numpy.dtype("U3"), numpy.dtype("U3"), None))


# --- astype(casting='same_value') --------------------------------------------------------------------------------
@pytest.mark.parametrize("vals,src,dst", [([0.0, 1.0, -3.0], numpy.float64, numpy.int64),
                                          ([0.5, 1.0], numpy.float64, numpy.int32),
                                          ([numpy.nan, numpy.inf, 1.5], numpy.float64, numpy.float32),
                                          ([0.1], numpy.float64, numpy.float32),
                                          ([1e300], numpy.float64, numpy.float32),
                                          ([numpy.nan], numpy.float64, numpy.int64),
                                          ([255, 1], numpy.int64, numpy.uint8), ([256], numpy.int64, numpy.uint8),
                                          ([-1], numpy.int32, numpy.uint32), ([2 ** 32 - 1], numpy.uint32, numpy.int32),
                                          ([2 ** 53 + 1], numpy.int64, numpy.float64),
                                          ([2.0 ** 63], numpy.float64, numpy.int64), ([2, 0], numpy.int64, numpy.bool_),
                                          ([True, False], numpy.bool_, numpy.int8),
                                          ([1.5], numpy.float16, numpy.float32),
                                          ([-0.0, 3.0], numpy.float32, numpy.int16)])
def test_astype_same_value(dev, vals, src, dst):
    a = numpy.asarray(vals, dtype=src)
    x = _on(dev, a)
    try:
        want = a.astype(dst, casting="same_value")
    except ValueError:
        with pytest.raises(ValueError, match="could not cast .same_value."):
            x.astype(dst, casting="same_value")
        return
    assert_match(x.astype(dst, casting="same_value"), want, dev)


def test_astype_same_value_complex(dev):
    ok = numpy.asarray([1 + 0j, 2 + 0j])
    with pytest.warns(numpy.exceptions.ComplexWarning):
        want = ok.astype(numpy.float64, casting="same_value")
    with pytest.warns(numpy.exceptions.ComplexWarning):
        assert_match(_on(dev, ok).astype(gp.float64, casting="same_value"), want, dev)
    with pytest.raises(ValueError, match="imag"):
        _on(dev, numpy.asarray([1 + 1j])).astype(gp.float64, casting="same_value")


# --- np.size(a, axis=tuple), trim_zeros(axis=), matrix_rank of 1-D, block of scalars, linspace keywords ------------
def test_size_axis_tuple(dev):
    a = numpy.zeros((2, 3, 4))
    x = _on(dev, a)
    for axis in [None, 0, -1, (0, 1), (0, 2), (-1, 0), (), (0, 1, 2)]:
        assert gp.size(x, axis) == numpy.size(a, axis)
    assert gp.size(x, axis=(0, 1)) == numpy.size(a, axis=(0, 1)) == 6
    with pytest.raises(ValueError):
        gp.size(x, (0, 0))


@pytest.mark.parametrize("trim", ["fb", "f", "b", "FB"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
def test_trim_zeros_axis(dev, trim, axis):
    a = numpy.zeros((5, 6), dtype=numpy.int64)
    a[1, 2] = 1
    a[3, 4] = 2
    compare("trim_zeros", a, trim, axis, device=dev)
    compare("trim_zeros", numpy.zeros((3, 3)), trim, axis, device=dev)


def test_trim_zeros_1d_and_lists(dev):
    compare("trim_zeros", numpy.array([0, 0, 1, 2, 0]), device=dev)
    compare("trim_zeros", numpy.array([0, 0, 1, 2, 0]), "b", device=dev)
    assert gp.trim_zeros([0, 1, 2, 0]) == numpy.trim_zeros([0, 1, 2, 0]) == [1, 2]
    with pytest.raises(ValueError):
        gp.trim_zeros(gp.asarray([0, 1], device=dev), "x")


def test_matrix_rank_1d(dev):
    for v in ([1.0, 2.0], [0.0, 0.0], [0.0, 3.0], 5.0, 0.0):
        want = numpy.linalg.matrix_rank(numpy.asarray(v))
        got = gp.linalg.matrix_rank(_on(dev, numpy.asarray(v)))
        assert got == want
        assert isinstance(got, int)


def test_block_of_scalars(dev):
    compare("block", [1, 2, 3], device=dev)
    compare("block", [[1, 2], [3, 4]], device=dev)
    compare("block", [[1.5, 2], [3, 4]], device=dev)
    assert gp.block([1, 2, 3]).device == dev


def test_linspace_keywords(dev):
    compare("linspace", start=0, stop=1, num=5, device=dev)
    compare("linspace", start=2.0, stop=3.0, num=4, endpoint=False, device=dev)
    compare("linspace", 0, stop=10, num=3, dtype=numpy.int64, device=dev)
    compare("linspace", start=numpy.array([0.0, 1.0]), stop=numpy.array([1.0, 3.0]), num=3, axis=1, device=dev)


# --- float_power(range(...)), fromiter subarray, result_type of scalars, average, min_scalar_type, binomial -------
@pytest.mark.parametrize("name", ["float_power", "power", "add", "fmod", "heaviside", "ldexp", "gcd"])
def test_ufuncs_take_ranges(dev, name):
    got = getattr(gp, name)(range(1, 6), 2)
    assert got.device == dev
    assert_match(got, getattr(numpy, name)(range(1, 6), 2), dev)
    assert_match(getattr(gp, name)(range(1, 6), range(2, 7)), getattr(numpy, name)(range(1, 6), range(2, 7)), dev)
    assert_match(gp.sqrt(range(4)), numpy.sqrt(range(4)), dev)
    assert_match(gp.asarray(range(3)), numpy.asarray(range(3)), dev)


@pytest.mark.parametrize("dtype", [(numpy.int64, 2), (numpy.float32, (2, 3)), ("f8", 3)])
def test_fromiter_subarray(dev, dtype):
    n = int(numpy.prod(numpy.dtype(dtype).shape))
    items = [tuple(range(i, i + n)) if isinstance(dtype[1], int) else numpy.arange(i, i + n).reshape(dtype[1])
             for i in range(4)]
    got = gp.fromiter(iter(items), dtype=dtype)
    assert got.device == dev
    assert_match(got, numpy.fromiter(iter(items), dtype=dtype), dev)
    assert_match(gp.fromiter(iter(items), dtype=dtype, count=2), numpy.fromiter(iter(items), dtype=dtype, count=2),
                 dev)


@pytest.mark.parametrize("args", [(1, 2.0), (1,), (True,), (1j, 1), (True, 2), (2.5, 1j, False), (3, 4)])
def test_result_type_python_scalars(args):
    assert gp.result_type(*args) == numpy.result_type(*args)


def test_result_type_unchanged_with_arrays(dev):
    x = gp.ones(2, dtype=gp.float32, device=dev)
    assert gp.result_type(x, 1.0) == numpy.result_type(numpy.ones(2, numpy.float32), 1.0) == numpy.float32
    assert gp.result_type(gp.int8, 1) == gp.int8
    with pytest.raises(ValueError):
        gp.result_type()


@pytest.mark.parametrize("shape,axis,wshape", [((2, 3, 4), (1, 2), (3, 4)), ((2, 3, 4), (2, 1), (4, 3)),
                                               ((2, 3, 4), 1, (3,)), ((2, 3, 4), (0, 2), (2, 4)),
                                               ((2, 3, 4), -1, (4,)), ((2, 3, 4), None, (2, 3, 4)),
                                               ((2, 3, 4), (0, 1, 2), (2, 3, 4)), ((5,), 0, (5,))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_average_weights_of_another_shape(dev, shape, axis, wshape, keepdims):
    a = RNG.normal(size=shape)
    w = RNG.uniform(0.5, 2.0, size=wshape)
    compare("average", a, axis, w, keepdims=keepdims, device=dev)
    got = gp.average(_on(dev, a), axis=axis, weights=_on(dev, w), returned=True, keepdims=keepdims)
    assert_match(got, numpy.average(a, axis=axis, weights=w, returned=True, keepdims=keepdims), dev)
    ai = numpy.arange(int(numpy.prod(shape))).reshape(shape)
    compare("average", ai, axis, w, device=dev)
    compare("average", ai, axis, device=dev)
    assert_match(gp.average(_on(dev, ai), axis=axis, returned=True),
                 numpy.average(ai, axis=axis, returned=True), dev)


def test_average_errors(dev):
    a = numpy.ones((2, 3))
    x = _on(dev, a)
    with pytest.raises(TypeError):
        numpy.average(a, weights=numpy.ones(3))
    with pytest.raises(TypeError):
        gp.average(x, weights=gp.ones(3, device=dev))
    with pytest.raises(ValueError):
        numpy.average(a, axis=1, weights=numpy.ones(2))
    with pytest.raises(ValueError):
        gp.average(x, axis=1, weights=gp.ones(2, device=dev))
    with pytest.raises(ZeroDivisionError):
        gp.average(x, axis=1, weights=gp.zeros(3, device=dev))
    assert_match(gp.average(_on(dev, numpy.float32([1, 2, 3])), weights=_on(dev, numpy.float32([1, 1, 2]))),
                 numpy.average(numpy.float32([1, 2, 3]), weights=numpy.float32([1, 1, 2])), dev)


@pytest.mark.parametrize("v,dtype", [(10, numpy.int64), (-300, numpy.int64), (3.5, numpy.float64),
                                     (1e300, numpy.float64), (70000, numpy.int32), (1 + 2j, numpy.complex128),
                                     (True, numpy.bool_), (200, numpy.uint16)])
def test_min_scalar_type_of_device_arrays(dev, v, dtype):
    a = numpy.asarray(v, dtype=dtype)
    assert gp.min_scalar_type(_on(dev, a)) == numpy.min_scalar_type(a)
    b = numpy.asarray([v, v], dtype=dtype)
    assert gp.min_scalar_type(_on(dev, b)) == numpy.min_scalar_type(b)
    assert gp.min_scalar_type(v) == numpy.min_scalar_type(v)


def test_mintypecode_of_device_arrays(dev):
    for typechars in (["d", "f"], ["f"], ["F", "d"], "fd", [numpy.float32], ["i"]):
        assert gp.mintypecode(typechars) == numpy.mintypecode(typechars)
    for dt in (numpy.float32, numpy.float64, numpy.complex64, numpy.int32):
        a = numpy.ones(3, dtype=dt)
        assert gp.mintypecode(_on(dev, a)) == numpy.mintypecode(a)
        assert gp.mintypecode([_on(dev, a), "f"]) == numpy.mintypecode([a, "f"])


def test_binomial_with_device_parameters(dev):
    n = numpy.asarray([10, 20, 30])
    p = numpy.asarray([0.2, 0.5, 0.9])
    want = numpy.random.default_rng(5).binomial(n, p)
    got = gp.random.default_rng(5).binomial(_on(dev, n), _on(dev, p))
    assert got.device == dev
    assert_match(got, want, dev)
    want = numpy.random.default_rng(6).binomial(n.sum(), p.mean(), size=4)
    got = gp.random.default_rng(6).binomial(_on(dev, n).sum(), _on(dev, p).mean(), size=4)
    assert_match(got, want, dev)
    assert_match(gp.random.default_rng(7).binomial(_on(dev, n), 0.5), numpy.random.default_rng(7).binomial(n, 0.5),
                 dev)
    numpy.random.seed(3)
    want = numpy.random.binomial(n, p)
    gp.random.seed(3)
    assert_match(gp.random.binomial(_on(dev, n), _on(dev, p)), want, dev)

