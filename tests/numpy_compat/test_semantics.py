"""Semantics that differed from NumPy's (issue 30), each against NumPy on the CPU device, the stand-in CUDA device
and cuda:0: 0-d results as dict keys and in round()/json, identity returns of asarray and friends, resizing
Fortran-ordered arrays, shares_memory's max_work, read-only arrays on devices, a view's dtype then an overlapping
assignment, unique along an axis."""
import json

import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match


# --- 0-d results where NumPy gives scalars: hash, round, json ----------------------------------------------------

@pytest.mark.parametrize("dt", ["bool", "int8", "int64", "uint32", "float32", "float64", "complex128"])
def test_0d_hash_as_numpy_scalar(dev, dt):
    n = numpy.asarray([3, 1, 2]).astype(dt)
    g = gp.asarray(n, device=dev)
    for gv, nv in [(g[0], n[0]), (g.sum(), n.sum()), (g.max(), n.max())]:
        assert hash(gv) == hash(nv)
    assert hash(g.argmax()) == hash(n.argmax())
    want = {n.argmax(): "best", n[1]: "second"}
    got = {g.argmax(): "best", g[1]: "second"}
    assert len(got) == len(want)
    assert got[int(n.argmax())] == "best"    # an equal Python value finds the 0-d key, as it finds NumPy's
    assert {k.item() for k in got} == {k.item() for k in want}


def test_nd_arrays_stay_unhashable(dev):
    for shape in [(3,), (2, 2), (1,)]:
        with pytest.raises(TypeError, match="unhashable type") as ours:
            hash(gp.zeros(shape))
        with pytest.raises(TypeError, match="unhashable type") as theirs:
            hash(numpy.zeros(shape))
        assert type(ours.value) is type(theirs.value)
    with pytest.raises(TypeError, match="unhashable"):
        {gp.zeros(2): 1}


@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int32", "int64", "uint8"])
def test_round_builtin_as_numpy_scalar(dev, dt):
    n = numpy.asarray([1.0, 2.0, 4.25]).astype(dt)
    g = gp.asarray(n, device=dev)
    for ndigits in [None, 0, 1, 2, -1]:
        want = round(n.mean(dtype=n.dtype if n.dtype.kind == "f" else None), ndigits) if ndigits is not None \
            else round(n.mean(dtype=n.dtype if n.dtype.kind == "f" else None))
        got = round(g.mean(), ndigits) if ndigits is not None else round(g.mean())
        assert type(got) is type(want), (ndigits, type(got), type(want))
        assert got == want or (got != got and want != want)
        wi = round(n[2], ndigits)
        gi = round(g[2], ndigits)
        assert type(gi) is type(wi) and gi == wi


def test_round_builtin_of_arrays(dev):
    n = numpy.asarray([[1.25, -2.5], [0.125, 3.5]])
    g = gp.asarray(n, device=dev)
    assert_match(round(g, 1), numpy.round(n, 1), dev)
    assert_match(round(g), numpy.round(n), dev)
    # the json idiom NumPy's own scalars and arrays need (json serialises only int/float subclasses) works the same
    enc = dict(default=lambda o: o.tolist())
    for gv, nv in [(g.sum(), n.sum()), (g.argmax(), n.argmax()), (g, n), (g[0, 1], n[0, 1])]:
        assert json.dumps({"v": gv}, **enc) == json.dumps({"v": nv}, **enc)
    assert json.dumps(round(g.mean(), 2)) == json.dumps(round(n.mean(), 2))


# --- identity returns --------------------------------------------------------------------------------------------

def _layouts(np):
    c = np.ones((2, 3))
    return {"C": c, "F": np.asfortranarray(np.ones((2, 3))), "1d": np.ones(4), "strided": np.ones((4, 6))[:, ::2],
            "0d": np.asarray(1.0), "int": np.ones((2, 2), dtype=np.int32)}


def test_identity_returns_as_numpy(dev):
    calls = [
        ("asarray", lambda np, x: np.asarray(x)),
        ("asarray dtype same", lambda np, x: np.asarray(x, dtype=x.dtype)),
        ("asarray dtype other", lambda np, x: np.asarray(x, dtype=np.float32)),
        ("asarray order C", lambda np, x: np.asarray(x, order="C")),
        ("asarray order F", lambda np, x: np.asarray(x, order="F")),
        ("asarray order K", lambda np, x: np.asarray(x, order="K")),
        ("asarray copy False", lambda np, x: np.asarray(x, copy=False)),
        ("asarray copy True", lambda np, x: np.asarray(x, copy=True)),
        ("asanyarray", lambda np, x: np.asanyarray(x)),
        ("ascontiguousarray", lambda np, x: np.ascontiguousarray(x)),
        ("ascontiguousarray dtype", lambda np, x: np.ascontiguousarray(x, dtype=x.dtype)),
        ("asfortranarray", lambda np, x: np.asfortranarray(x)),
        ("atleast_1d", lambda np, x: np.atleast_1d(x)),
        ("atleast_2d", lambda np, x: np.atleast_2d(x)),
        ("atleast_3d", lambda np, x: np.atleast_3d(x)),
    ]
    ours, theirs = _layouts(gp), _layouts(numpy)
    for name, fn in calls:
        for k in theirs:
            if "dtype other" in name and k == "int":
                continue
            want = fn(numpy, theirs[k])
            got = fn(gp, ours[k])
            assert (got is ours[k]) == (want is theirs[k]), f"{name} of {k}: is-identity differs from NumPy's"
            assert_match(got, want, dev, what=f"{name} of {k}")
            if want.ndim > 1:
                assert got.flags.c_contiguous == want.flags.c_contiguous, f"{name} of {k}"
                assert got.flags.f_contiguous == want.flags.f_contiguous, f"{name} of {k}"


# --- resize --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 3), (2, 2), (6,), (3, 2), (1, 7), (0,)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_resize_keeps_memory_order(dev, shape, order):
    n = numpy.arange(6).reshape(2, 3).copy(order=order)     # owns its memory, as NumPy's resize needs
    g = gp.asarray(numpy.arange(6).reshape(2, 3), order=order, device=dev)
    assert g.flags.f_contiguous == n.flags.f_contiguous
    assert_match(gp.resize(g, shape), numpy.resize(n, shape), dev, what="np.resize")
    n.resize(shape, refcheck=False)
    assert g.resize(shape) is None
    assert_match(g, n, dev, what="x.resize")
    assert g.flags.f_contiguous == n.flags.f_contiguous and g.flags.c_contiguous == n.flags.c_contiguous


def test_resize_refuses_what_numpy_refuses(dev):
    n = numpy.arange(12).reshape(3, 4)[:, ::2]
    g = gp.arange(12).reshape(3, 4)[:, ::2]
    with pytest.raises(ValueError, match="single-segment"):
        n.resize((2, 2), refcheck=False)
    with pytest.raises(ValueError, match="single-segment"):
        g.resize((2, 2))
    assert_match(gp.resize(gp.asarray([], device=dev), (2, 2)), numpy.resize(numpy.asarray([]), (2, 2)), dev)


# --- shares_memory -----------------------------------------------------------------------------------------------

def test_shares_memory_max_work(dev):
    n = numpy.zeros((4, 5, 6), dtype=numpy.int8)
    g = gp.zeros((4, 5, 6), dtype=gp.int8)
    pairs = [((slice(None), slice(None, None, 2), slice(None, None, 3)),
              (slice(None), slice(None, None, 3), slice(None, None, 2))),
             ((0,), (1,)), ((slice(0, 2),), (slice(1, 3),)), ((slice(None), 0), (slice(None), 1)),
             ((Ellipsis, 0), (Ellipsis, 1))]
    for ka, kb in pairs:
        for fn in ("shares_memory", "may_share_memory"):
            for max_work in (None, 0, 1, 1000):
                try:
                    want = getattr(numpy, fn)(n[ka], n[kb], max_work=max_work)
                except numpy.exceptions.TooHardError:
                    with pytest.raises(numpy.exceptions.TooHardError):
                        getattr(gp, fn)(g[ka], g[kb], max_work=max_work)
                    continue
                assert getattr(gp, fn)(g[ka], g[kb], max_work=max_work) is bool(want), (fn, ka, kb, max_work)
    # the case NumPy gives up on within max_work=1
    with pytest.raises(numpy.exceptions.TooHardError):
        numpy.shares_memory(n[:, ::2, ::3], n[:, ::3, ::2], max_work=1)
    with pytest.raises(numpy.exceptions.TooHardError, match="max_work"):
        gp.shares_memory(g[:, ::2, ::3], g[:, ::3, ::2], max_work=1)
    assert gp.shares_memory(g, gp.zeros(3, dtype=gp.int8)) is False


def test_shares_memory_of_a_large_strided_pair(dev):
    # NumPy's docstring example: answered from the layouts, without a search over the 192 MB
    n = numpy.zeros(192163377, dtype=numpy.int8)
    g = gp.zeros(192163377, dtype=gp.int8)
    assert gp.shares_memory(g[::107], g[::109], max_work=1000) is bool(
        numpy.shares_memory(n[::107], n[::109], max_work=1000))
    assert gp.may_share_memory(g[::107], g[1::109]) is bool(numpy.may_share_memory(n[::107], n[1::109]))


# --- read-only arrays ----------------------------------------------------------------------------------------------

_WRITES = {
    "setitem": lambda np, x: x.__setitem__(0, 1.0),
    "slice setitem": lambda np, x: x.__setitem__(slice(1, 3), np.asarray([7.0, 8.0])),
    "index-array setitem": lambda np, x: x.__setitem__(np.asarray([0, 2]), 5.0),
    "iadd": lambda np, x: x.__iadd__(1.0),
    "imul": lambda np, x: x.__imul__(x),
    "ufunc out=": lambda np, x: np.add(x, 1.0, out=x),
    "fill": lambda np, x: x.fill(0.0),
    "view write": lambda np, x: x[1:].__setitem__(0, 5.0),
    "reshape view write": lambda np, x: x.reshape(2, 3).__setitem__((0, 0), 5.0),
    "copyto": lambda np, x: np.copyto(x, 1.0),
    "sort": lambda np, x: x.sort(),
    "put": lambda np, x: np.put(x, [0], [1.0]),
    "putmask": lambda np, x: np.putmask(x, x > 2, 0.0),
    "flat": lambda np, x: x.flat.__setitem__(1, 3.0),
    "setfield": lambda np, x: x.setfield(1.0, np.float64),
    "byteswap inplace": lambda np, x: x.byteswap(inplace=True),
}


@pytest.mark.parametrize("write", list(_WRITES))
def test_read_only_arrays_refuse_writes(dev, write):
    n = numpy.arange(6.0)
    g = gp.arange(6.0)
    assert g.flags.writeable is True and n.flags.writeable is True
    n.flags.writeable = False
    g.flags.writeable = False
    assert g.flags.writeable is False and g.flags["WRITEABLE"] is False and g[1:].flags.writeable is False
    with pytest.raises(ValueError) as theirs:
        _WRITES[write](numpy, n)
    with pytest.raises(ValueError, match="read-only"):
        _WRITES[write](gp, g)
    assert "read-only" in str(theirs.value)
    assert_match(g, n, dev, what="unchanged")
    with pytest.raises(ValueError, match="read-only"):
        gp.add.at(g, [0, 0], 1.0)   # NumPy 2.4's add.at writes into a read-only array; ours refuses
    # reading and computing still work; copies are writeable
    assert_match(g * 2, n * 2, dev)
    c, nc = g.copy(), n.copy()
    assert c.flags.writeable and nc.flags.writeable
    _WRITES[write](gp, c)
    _WRITES[write](numpy, nc)
    assert_match(c, nc, dev, what="written copy")


def test_setflags_write(dev):
    n = numpy.arange(4.0)
    g = gp.arange(4.0)
    n.setflags(write=False)
    g.setflags(write=False, align=True)
    assert g.flags.writeable is False and n.flags.writeable is False
    with pytest.raises(ValueError, match="read-only"):
        g[0] = 1.0
    n.setflags(write=True)
    g.setflags(write=True)
    g[0] = 1.0
    n[0] = 1.0
    assert_match(g, n, dev)


def test_read_only_flag_rules(dev):
    n = numpy.arange(4.0)
    g = gp.arange(4.0)
    n.flags.writeable = False
    g.flags.writeable = False
    nv, gv = n[1:], g[1:]
    with pytest.raises(ValueError, match="WRITEABLE"):
        nv.flags.writeable = True
    with pytest.raises(ValueError, match="WRITEABLE"):
        gv.flags.writeable = True
    n.flags.writeable = True
    g.flags.writeable = True
    g[0] = 9.0
    n[0] = 9.0
    assert_match(g, n, dev)
    for key in ("C_CONTIGUOUS", "F_CONTIGUOUS", "WRITEABLE", "W", "C", "F"):
        assert g.flags[key] == n.flags[key], key
    b, nb = gp.broadcast_to(g, (2, 4)), numpy.broadcast_to(n, (2, 4))
    assert b.flags.writeable == nb.flags.writeable


# --- a view's dtype, then an overlapping assignment -------------------------------------------------------------

def test_view_then_assign_over_itself(dev):
    # numpy-100 #53: convert a float32 array into an int32 one in place
    z0 = (numpy.random.default_rng(5).random(10) * 100).astype(numpy.float32)
    n = z0.copy()
    g = gp.asarray(z0.copy(), device=dev)
    ny = n.view(numpy.int32)
    gy = g.view(gp.int32)
    ny[:] = n
    gy[:] = g
    assert_match(gy, ny, dev, what="Y")
    numpy.testing.assert_array_equal(numpy.asarray(g.to_device("cpu")).view(numpy.int32), n.view(numpy.int32))
    for src, dst in [((slice(None, -1),), (slice(1, None),)), ((slice(1, None),), (slice(None, -1),)),
                     ((slice(None, None, -1),), (slice(None),))]:
        n = numpy.arange(8)
        g = gp.arange(8)
        n[dst] = n[src]
        g[dst] = g[src]
        assert_match(g, n, dev, what=f"{dst} = {src}")
    n = numpy.arange(12.0).reshape(3, 4)
    g = gp.arange(12.0).reshape(3, 4)
    n[:, :] = n.T.reshape(3, 4)
    g[:, :] = g.T.reshape(3, 4)
    assert_match(g, n, dev)


# --- unique along an axis ----------------------------------------------------------------------------------------

def _rows():
    rng = numpy.random.default_rng(3)
    return [rng.integers(0, 4, (256, 256, 3)).astype(numpy.uint8).reshape(-1, 3),
            rng.integers(-3, 3, (50, 4)).astype(numpy.int16),
            rng.integers(-2, 2, (40, 3)),                                 # 3 x 64 bits: the lexsort path
            rng.integers(0, 2, (30, 2)).astype(bool),
            numpy.round(rng.normal(size=(40, 2))),
            numpy.asarray([[1.0, numpy.nan], [1.0, numpy.nan], [-1.0, 2.0], [-1.0, 2.0]]),
            rng.integers(0, 3, (3, 20, 2)).astype(numpy.int8),
            rng.integers(0, 2, (60, 8)).astype(numpy.uint8)]               # exactly 64 bits


@pytest.mark.parametrize("case", range(8))
def test_unique_axis(dev, case, monkeypatch):
    a = _rows()[case]
    g = gp.asarray(a, device=dev)
    if dev.xp.__name__ != "numpy" and not hasattr(dev.xp, "cuda"):
        # the stand-in CUDA device: the backend's own unique(axis=) must not be what answers
        real = dev.xp.unique

        def no_axis_unique(*args, **kwargs):
            assert kwargs.get("axis") is None, "unique(axis=) fell back to the backend's per-row implementation"
            return real(*args, **kwargs)
        monkeypatch.setattr(dev.xp, "unique", no_axis_unique)
    for axis in ([0] if a.ndim == 2 else [0, 1, -1]):
        want = numpy.unique(a, axis=axis, return_index=True, return_inverse=True, return_counts=True)
        got = gp.unique(g, axis=axis, return_index=True, return_inverse=True, return_counts=True)
        assert_match(got, want, dev, what=f"axis={axis}")
        assert_match(gp.unique(g, axis=axis), numpy.unique(a, axis=axis), dev)
        assert_match(gp.unique(g, axis=axis, return_counts=True), numpy.unique(a, axis=axis, return_counts=True),
                     dev)
