"""Host-only dtypes (strings, bytes, datetime64/timedelta64, void, structured records; gpk_array/_hostdata.py):
arrays of them live on the CPU device whatever the default device, results of standard dtypes computed from them
go to the default device, and every value is NumPy's. ``dev`` is the default device of each test."""
import io
import pickle

import numpy
import pytest

import gpk_array as gp
from gpk_array._hostdata import HostData

from .helpers import assert_match

CPU = gp.Device("cpu")
REC = [("name", "U5"), ("age", "i4"), ("w", "f8")]
ROWS = [("ann", 31, 1.5), ("bob", 25, 2.5), ("cy", 47, 0.5), ("di", 25, 4.0)]


def _records(ns):
    return ns.array(ROWS, dtype=REC)


def _on(x, device):
    assert x.device == device, f"on {x.device}, expected {device}"
    return x


@pytest.mark.parametrize("make", [
    lambda ns: ns.array(["b", "a", "ccc"]),
    lambda ns: ns.asarray(["b", "a"]),
    lambda ns: ns.array([b"ab", b"c"]),
    lambda ns: ns.array(ROWS, dtype=REC),
    lambda ns: ns.asarray([numpy.datetime64("2024-02-28"), numpy.datetime64("2024-03-01")]),
    lambda ns: ns.array(["2024-01-01", "2024-06-30"], dtype="datetime64[D]"),
    lambda ns: ns.array([1, 2, 3], dtype="timedelta64[h]"),
    lambda ns: ns.zeros(3, dtype="U2"),
    lambda ns: ns.ones(2, dtype=REC),
    lambda ns: ns.empty(0, dtype="M8[s]"),
    lambda ns: ns.zeros((2, 2), dtype="U2", order="F"),
    lambda ns: ns.full(3, "xy"),
    lambda ns: ns.full(2, numpy.datetime64("2020-05-05")),
    lambda ns: ns.full((2,), 7, dtype="m8[D]"),
    lambda ns: ns.zeros_like(ns.array(ROWS, dtype=REC)),
    lambda ns: ns.full_like(ns.array(["a", "b"]), "q"),
    lambda ns: ns.empty_like(ns.array(["a", "b"]), shape=(3,)).shape,
    lambda ns: ns.arange("2024-02-25", "2024-03-03", dtype="datetime64[D]"),
    lambda ns: ns.arange(numpy.datetime64("2024-01"), numpy.datetime64("2024-07"), 2),
    lambda ns: ns.arange(numpy.timedelta64(5, "m")),
    lambda ns: ns.fromiter(["x", "yy", "z"], dtype="U2"),
    lambda ns: ns.fromiter(((i, i / 2) for i in range(3)), dtype=[("i", "i8"), ("h", "f8")]),
    lambda ns: ns.arange(4).astype(str),
    lambda ns: ns.arange(4).astype("datetime64[D]"),
    lambda ns: ns.arange(6).reshape(3, 2).view([("a", "i8"), ("b", "i8")]),
    lambda ns: ns.frombuffer(b"abcdef", dtype="S3"),
    lambda ns: ns.loadtxt(io.StringIO("a 1\nb 2"), dtype=[("k", "U1"), ("v", "i4")]),
    lambda ns: ns.loadtxt(io.StringIO("a,1\nb,2"), delimiter=",", usecols=0, dtype=str),
    lambda ns: ns.genfromtxt(io.StringIO("a,1.5\nb,2.5"), delimiter=",", dtype=None, encoding="utf-8"),
])
def test_creation_gives_numpys_values_on_the_cpu_device(make, dev):
    want = make(numpy)
    got = make(gp)
    if isinstance(want, tuple):  # a shape
        assert got == want
        return
    _on(got, CPU)
    assert got._data.__class__ is HostData  # marked: its results are placed by the rule
    assert_match(got, want, dev)
    assert repr(got) == repr(want)
    assert str(got) == str(want)


def test_other_devices_and_the_standard_refuse(dev):
    if dev.kind != "cpu":
        for make in (lambda: gp.zeros(2, dtype="U1", device=dev), lambda: gp.asarray(["a"], device=dev),
                     lambda: gp.arange("2024-01", "2024-03", dtype="M8[M]", device=dev)):
            with pytest.raises(TypeError, match="live on the CPU device only"):
                make()
        for x in (gp.array(["a"]), gp.zeros(2, dtype=REC), gp.arange("2024-01", "2024-03", dtype="M8[M]")):
            with pytest.raises(TypeError, match="CPU device only"):
                x.to_device(dev)
            with pytest.raises(TypeError, match="CPU device only"):
                gp.asarray(x, device=dev)
        # a prototype on the device: no implied move to the CPU (CuPy raises here too; Dask's argmax relies on it)
        v = gp.ones((2, 1), device=dev)
        for fn in (gp.empty_like, gp.zeros_like, numpy.empty_like):
            with pytest.raises(TypeError, match="CPU device only"):
                fn(v, dtype=[("vals", "f8"), ("arg", "i8")])
        assert gp.empty_like(v, dtype=REC, device="cpu").device == gp.Device("cpu")
    from gpk_array._ops import creation as std
    with pytest.raises(TypeError, match="string dtypes are host-only"):
        std.zeros(2, dtype="U1")
    with pytest.raises(TypeError):
        std.asarray(["a", "b"])
    with pytest.raises(TypeError, match="^Unsupported input type str"):  # bare strings: CuPy's refusal (peers)
        gp.asarray("a duck")
    with pytest.raises(TypeError, match="Python objects|object"):
        gp.array([1, None])
    with pytest.raises(TypeError, match="object dtypes are not supported"):
        gp.zeros(2, dtype=object)


def test_fields_go_to_the_default_device(dev):
    r, rn = _records(gp), _records(numpy)
    assert r.dtype.names == rn.dtype.names
    assert r.dtype == rn.dtype
    for f in ("age", "w"):
        assert_match(_on(r[f], dev), rn[f], dev)
    assert_match(_on(r["name"], CPU), rn["name"])
    assert_match(_on(r[["name", "w"]], CPU), rn[["name", "w"]])
    assert_match(_on(r[1], CPU), rn[1])
    assert_match(_on(r[1]["age"], dev), rn[1]["age"], dev)
    assert_match(_on(r["age"].mean(), dev), rn["age"].mean(), dev)
    assert_match(r["w"] * r["age"], rn["w"] * rn["age"], dev)
    # assignment into fields, with values of the default device
    r["age"] = gp.arange(4, dtype=gp.int32) * 10
    rn["age"] = numpy.arange(4, dtype=numpy.int32) * 10
    r["w"][r["age"] > 15] += 1.0
    rn["w"][rn["age"] > 15] += 1.0
    r[0] = ("zed", 99, 9.5)
    rn[0] = ("zed", 99, 9.5)
    assert_match(r, rn)
    if dev.kind == "cpu":  # on the CPU a field is a view into the records, as in NumPy
        ages = r["age"]
        ages[1] = -1
        assert int(r[1]["age"]) == -1


def test_comparisons_and_masks_mix_with_numeric_work(dev):
    s, sn = gp.array(["b", "a", "c", "a"]), numpy.array(["b", "a", "c", "a"])
    v, vn = gp.arange(4.0), numpy.arange(4.0)
    _on(v, dev)
    for got, want in [(s == "a", sn == "a"), (s != "a", sn != "a"), (s < "b", sn < "b"), ("a" == s, "a" == sn),
                      (s == ["a", "a", "b", "a"], sn == ["a", "a", "b", "a"]), (s == s, sn == sn),
                      (s[1:] == s[:-1], sn[1:] == sn[:-1]), (s >= gp.sort(s), sn >= numpy.sort(sn))]:
        assert_match(_on(got, dev), want, dev)
    assert_match(_on(v[s == "a"], dev), vn[sn == "a"], dev)
    assert_match(_on(s[s == "a"], CPU), sn[sn == "a"])  # a mask of the default device indexes host data
    assert_match(_on(s[gp.asarray([2, 0])], CPU), sn[[2, 0]])
    assert_match(_on(gp.where(s == "a", v, -1.0), dev), numpy.where(sn == "a", vn, -1.0), dev)
    assert_match(_on(gp.where(s == "a", s, "z"), CPU), numpy.where(sn == "a", sn, "z"))
    assert_match(_on((s == "a").sum(), dev), (sn == "a").sum(), dev)
    s[v > 2] = "q"  # a mask of the default device, assigning into host data
    sn[vn > 2] = "q"
    assert_match(s, sn)


def test_dates_arithmetic_and_conversions(dev):
    d = gp.arange("2024-02-26", "2024-03-04", dtype="datetime64[D]")
    dn = numpy.arange("2024-02-26", "2024-03-04", dtype="datetime64[D]")
    for got, want in [(d + 1, dn + 1), (d - d[0], dn - dn[0]),
                      (d + gp.timedelta64(2, "W"), dn + numpy.timedelta64(2, "W")),
                      (d.astype("datetime64[M]"), dn.astype("datetime64[M]")), (gp.diff(d), numpy.diff(dn)),
                      (d.max(), dn.max()), (d[::-1][gp.argsort(d[::-1])], dn), (-(d - d[-1]), -(dn - dn[-1])),
                      (d + gp.arange(7), dn + numpy.arange(7)), (gp.arange(7) + d, numpy.arange(7) + dn)]:
        assert_match(_on(got, CPU), want)
    for got, want in [((d - d[0]) / gp.timedelta64(1, "h"), (dn - dn[0]) / numpy.timedelta64(1, "h")),
                      (d.astype(int), dn.astype(int)), (d.astype("datetime64[s]").astype(float),
                                                        dn.astype("datetime64[s]").astype(float)),
                      (d > gp.datetime64("2024-02-29"), dn > numpy.datetime64("2024-02-29")),
                      (d.view("int64"), dn.view("int64")), (gp.argmax(d), numpy.argmax(dn)),
                      (gp.isnat(d), numpy.isnat(dn)), (gp.is_busday(d), numpy.is_busday(dn)),
                      (gp.busday_count(d[0], d[-1]), numpy.busday_count(dn[0], dn[-1]))]:
        assert_match(_on(got, dev), want, dev)
    nat = gp.array(["2024-01-05", "NaT", "2024-01-02"], dtype="M8[D]")
    natn = numpy.array(["2024-01-05", "NaT", "2024-01-02"], dtype="M8[D]")
    for name in ("nanmin", "nanmax", "min", "max", "sort"):
        assert_match(_on(getattr(gp, name)(nat), CPU), getattr(numpy, name)(natn), what=name)
    assert_match(gp.datetime_as_string(d), numpy.datetime_as_string(dn))
    assert_match(gp.busday_offset(d[:3], 2, roll="forward"), numpy.busday_offset(dn[:3], 2, roll="forward"))
    assert d.tolist() == dn.tolist()


def test_strings_sorting_sets_and_char(dev):
    s, sn = gp.array(["pear", "fig", "apple", "fig", "kiwi"]), numpy.array(["pear", "fig", "apple", "fig", "kiwi"])
    assert_match(_on(gp.sort(s), CPU), numpy.sort(sn))
    assert_match(_on(gp.argsort(s), dev), numpy.argsort(sn, kind="stable"), dev)
    got, want = gp.unique(s, return_index=True, return_inverse=True, return_counts=True), \
        numpy.unique(sn, return_index=True, return_inverse=True, return_counts=True)
    assert_match(got, want, dev)
    assert [g.device for g in got] == [CPU, dev, dev, dev]
    assert_match(_on(gp.searchsorted(gp.sort(s), "kiwi"), dev), numpy.searchsorted(numpy.sort(sn), "kiwi"), dev)
    assert_match(_on(gp.isin(s, ["fig", "kiwi"]), dev), numpy.isin(sn, ["fig", "kiwi"]), dev)
    for name in ("intersect1d", "union1d", "setdiff1d", "setxor1d"):
        assert_match(getattr(gp, name)(s, ["fig", "plum"]), getattr(numpy, name)(sn, ["fig", "plum"]))
    assert_match(gp.concatenate([s, ["plum"]]), numpy.concatenate([sn, ["plum"]]))
    assert_match(gp.append(s, "plum"), numpy.append(sn, "plum"))
    assert_match(gp.stack([s, s]), numpy.stack([sn, sn]))
    assert_match(gp.char.upper(s), numpy.char.upper(sn))
    assert_match(gp.char.add(s, "!"), numpy.char.add(sn, "!"))
    assert_match(_on(gp.char.str_len(s), dev), numpy.char.str_len(sn), dev)
    assert_match(gp.strings.replace(s, "i", "I"), numpy.strings.replace(sn, "i", "I"))
    r, rn = _records(gp), _records(numpy)
    assert_match(_on(gp.sort(r, order=["age", "name"]), CPU), numpy.sort(rn, order=["age", "name"]))
    assert_match(_on(gp.argsort(r, order="age", kind="stable"), dev), numpy.argsort(rn, order="age", kind="stable"),
                 dev)
    with pytest.raises(ValueError, match="fields"):
        gp.sort(gp.arange(3), order="x")
    rec = gp.rec.fromarrays([gp.arange(3), gp.array(["a", "b", "c"])], names="n,s")
    recn = numpy.rec.fromarrays([numpy.arange(3), numpy.array(["a", "b", "c"])], names="n,s")
    assert_match(rec["s"], recn["s"])
    assert_match(rec["n"], recn["n"], dev)
    assert [str(v) for v in s] == sn.tolist()


def test_void_rows_give_unique_rows(dev):
    z = gp.asarray([[1, 2], [3, 4], [1, 2], [0, 0]])
    zn = numpy.asarray([[1, 2], [3, 4], [1, 2], [0, 0]])
    void = numpy.dtype((numpy.void, zn.dtype.itemsize * zn.shape[1]))
    u = gp.unique(gp.ascontiguousarray(z).view(void))
    un = numpy.unique(numpy.ascontiguousarray(zn).view(void))
    assert_match(_on(u, CPU), un)
    assert_match(_on(u.view(z.dtype).reshape(-1, 2), dev), un.view(zn.dtype).reshape(-1, 2), dev)


def test_pickle_and_numpy_conversion(dev):
    r = _records(gp)
    back = pickle.loads(pickle.dumps(r))
    _on(back, CPU)
    assert back._data.__class__ is HostData
    assert_match(back, _records(numpy))
    h = numpy.asarray(r)
    assert h.__class__ is numpy.ndarray and h.dtype == numpy.dtype(REC)


def test_numeric_arrays_never_carry_the_mark(dev):
    # the mark is set where host-only data is created; numeric results (of host-only data too) are plain
    x = gp.arange(6.0)
    for y in (x + 1, x == 2, gp.sort(x), x.astype(gp.float32), _records(gp)["age"], gp.array(["a"]) == "a"):
        assert y._data.__class__ is not HostData


def _write_through_fields(ns):
    r = ns.zeros(4, dtype=[("a", "f8"), ("b", "i4"), ("p", [("x", "f4"), ("y", "f4")])])
    r["a"][r["b"] == 0] += 5
    f = r["b"]
    f[1] = 7
    f += 1
    f *= 2
    r["p"]["x"][2] = 3.5
    r["a"][::2] = -1.0
    r["b"].fill(3)
    g = r["a"]
    g.sort()
    r[3] = (9.0, 9, (1.0, 2.0))
    r[1]["a"] = 4.25  # an element of records is a view of them, as NumPy's record scalar is
    row = r[2]
    row["b"] = -7
    row["p"]["y"] = 0.5
    for rec in r[:1]:
        rec["b"] = 11
    return r


def test_writes_through_numeric_fields_reach_the_records(dev):
    # on a CUDA default device a numeric field is a device copy whose writes are written back (gpk_array/_hostfield.py)
    assert_match(_write_through_fields(gp), _write_through_fields(numpy))


def _numpy100(np):
    """numpy-100 exercises that need host-only dtypes (#34, #46, #51, #73, #87, #96), as their solutions read."""
    out = {"34": np.arange("2016-07", "2016-08", dtype="datetime64[D]")}
    Z = np.zeros((5, 5), [("x", float), ("y", float)])
    Z["x"], Z["y"] = np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 1, 5))
    out["46"] = Z
    out["51"] = np.zeros(10, [("position", [("x", float), ("y", float)]),
                              ("color", [("r", float), ("g", float), ("b", float)])])
    faces = np.random.RandomState(0).randint(0, 100, (10, 3))
    F = np.roll(faces.repeat(2, axis=1), -1, axis=1)
    F = F.reshape(len(F) * 3, 2)
    F = np.sort(F, axis=1)
    G = F.view(dtype=[("p0", F.dtype), ("p1", F.dtype)])
    out["73"] = np.unique(G)
    Z = np.array([("Hello", 2.5, 3), ("World", 3.6, 2)])
    out["87"] = np.rec.fromarrays(Z.T, names="col1, col2, col3", formats="S8, f8, i8")
    Z = np.random.RandomState(1).randint(0, 2, (6, 3))
    T = np.ascontiguousarray(Z).view(np.dtype((np.void, Z.dtype.itemsize * Z.shape[1])))
    _, idx = np.unique(T, return_index=True)
    out["96"] = Z[idx]
    return out


def test_numpy100_exercises_with_host_dtypes(dev):
    assert_match(_numpy100(gp), _numpy100(numpy), dev)


def _methods_and_reductions(np):
    out = {}
    r = np.array([("b", 2, 0.5), ("a", 1, 1.5), ("c", 1, 2.5)], dtype=[("n", "U1"), ("k", "i8"), ("v", "f8")])
    t = r.copy()
    t.sort(order="k")
    out["sort"] = t
    out["argsort"] = r.argsort(order=["k", "n"])
    td = np.array([1, 2, 6], dtype="m8[h]")
    out.update(tdmean=td.mean(), tdsum=td.sum(), cumsum=np.cumsum(td), tdmax=td.max(), absdiff=abs(td - td[-1]))
    out["ndarray"] = np.ndarray((2,), dtype="U2").shape
    out["full"] = np.full((2, 2), "x", dtype="U3")
    out["center"] = np.char.center(np.array(["a", "bb"]), 5, "*")
    out["rows"] = [str(x["n"]) for x in r]
    out["by_name"] = {str(k): float(v) for k, v in zip(r["n"], r["v"])}
    out["field_dtype"] = str(r.dtype.fields["k"][0])
    out["astype_records"] = r[["k", "v"]].astype([("k", "f4"), ("v", "f4")])
    return out


def test_methods_and_timedelta_reductions(dev):
    assert_match(_methods_and_reductions(gp), _methods_and_reductions(numpy), dev)
    if dev.kind != "cpu":  # a CUDA array alone given to a function computed on the host: no implicit copy
        with pytest.raises(gp.HostOnlyError, match=r"mod is computed on the host"):
            gp.char.mod("%d", gp.arange(3))
    assert_match(gp.char.mod("%d", gp.arange(3, device="cpu")), numpy.char.mod("%d", numpy.arange(3)))
