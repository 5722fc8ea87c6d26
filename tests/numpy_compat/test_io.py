"""File and buffer I/O against NumPy's, on every device (files go through host copies)."""
import io

import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match


def test_npy_roundtrip(tmp_path, dev):
    for x in [numpy.arange(12.0).reshape(3, 4), numpy.array([1, 2, 3], dtype=numpy.int16), numpy.array(True),
              numpy.array([1 + 2j], dtype=numpy.complex64)]:
        g = gp.asarray(x)
        gp.save(tmp_path / "a.npy", g)
        assert_match(numpy.load(tmp_path / "a.npy"), x)
        r = gp.load(tmp_path / "a.npy")
        assert isinstance(r, gp.Array) and r.device == dev
        assert_match(r, x)
    numpy.save(tmp_path / "b.npy", numpy.arange(5))
    assert_match(gp.load(str(tmp_path / "b.npy"), device="cpu"), numpy.arange(5))
    assert_match(gp.load(tmp_path / "b.npy", mmap_mode="r"), numpy.arange(5))
    buf = io.BytesIO()
    gp.save(buf, gp.asarray([1.5, 2.5]))
    buf.seek(0)
    assert_match(gp.load(buf), numpy.array([1.5, 2.5]))
    gp.save(tmp_path / "c.npy", [[1, 2], [3, 4]])
    assert_match(numpy.load(tmp_path / "c.npy"), numpy.array([[1, 2], [3, 4]]))


@pytest.mark.parametrize("compressed", [False, True])
def test_npz(tmp_path, compressed, dev):
    a = gp.asarray(numpy.arange(6.0))
    b = gp.asarray(numpy.eye(2, dtype=numpy.int32))
    (gp.savez_compressed if compressed else gp.savez)(tmp_path / "f.npz", a, weights=b)
    with numpy.load(tmp_path / "f.npz") as n:
        assert sorted(n.files) == ["arr_0", "weights"]
        assert_match(n["weights"], numpy.eye(2, dtype=numpy.int32))
    with gp.load(tmp_path / "f.npz") as z:
        assert sorted(z.files) == ["arr_0", "weights"] and "weights" in z and len(z) == 2
        assert_match(z["arr_0"], numpy.arange(6.0))
        assert z["weights"].device == dev
        assert sorted(k for k, _ in z.items()) == ["arr_0", "weights"]


def test_text(tmp_path, dev):
    x = numpy.arange(12.0).reshape(3, 4) / 3
    gp.savetxt(tmp_path / "a.txt", gp.asarray(x))
    numpy.savetxt(tmp_path / "b.txt", x)
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()
    gp.savetxt(tmp_path / "c.csv", gp.asarray(x), fmt="%.3f", delimiter=",", header="a,b,c,d")
    numpy.savetxt(tmp_path / "d.csv", x, fmt="%.3f", delimiter=",", header="a,b,c,d")
    assert (tmp_path / "c.csv").read_text() == (tmp_path / "d.csv").read_text()
    assert_match(gp.loadtxt(tmp_path / "a.txt"), numpy.loadtxt(tmp_path / "a.txt"))
    assert gp.loadtxt(tmp_path / "a.txt").device == dev
    assert_match(gp.loadtxt(tmp_path / "c.csv", delimiter=","), numpy.loadtxt(tmp_path / "c.csv", delimiter=","))
    assert_match(gp.loadtxt(tmp_path / "c.csv", delimiter=",", usecols=(0, 2), unpack=True),
                 numpy.loadtxt(tmp_path / "c.csv", delimiter=",", usecols=(0, 2), unpack=True))
    assert_match(gp.loadtxt(tmp_path / "c.csv", delimiter=",", dtype=numpy.float32, skiprows=2),
                 numpy.loadtxt(tmp_path / "c.csv", delimiter=",", dtype=numpy.float32, skiprows=2))
    (tmp_path / "m.csv").write_text("1,2,\n4,,6\n")
    assert_match(gp.genfromtxt(tmp_path / "m.csv", delimiter=","), numpy.genfromtxt(tmp_path / "m.csv", delimiter=","))
    assert_match(gp.fromstring("1 2 3.5", sep=" "), numpy.fromstring("1 2 3.5", sep=" "))


def test_binary(tmp_path, dev):
    x = numpy.arange(10, dtype=numpy.int32)
    gp.asarray(x).tofile(tmp_path / "r.bin")
    assert (tmp_path / "r.bin").read_bytes() == x.tobytes()
    assert_match(gp.fromfile(tmp_path / "r.bin", dtype=numpy.int32), x)
    assert_match(gp.fromfile(tmp_path / "r.bin", dtype=numpy.int32, count=3, offset=8), x[2:5])
    assert_match(gp.frombuffer(x.tobytes(), dtype=numpy.int32), x)
    assert_match(gp.frombuffer(b"\x01\x02\x03\x04", dtype=numpy.uint8, count=2, offset=1),
                 numpy.frombuffer(b"\x01\x02\x03\x04", dtype=numpy.uint8, count=2, offset=1))
    assert gp.frombuffer(x.tobytes(), dtype="i4").device == dev
    assert gp.asarray(x).tobytes() == x.tobytes()


def test_host_only_dtypes_load_on_the_cpu_device(tmp_path, dev):
    # strings, records and bytes read from files are arrays on the CPU device whatever the default device
    # (gpk_array/_hostdata.py); object arrays stay refused
    cpu = gp.Device("cpu")
    s = numpy.array(["a", "bc"])
    numpy.save(tmp_path / "s.npy", s)
    got = gp.load(tmp_path / "s.npy")
    assert got.device == cpu
    assert_match(got, s)
    r = numpy.array([(1, 2.5), (3, 4.5)], dtype=[("a", "i4"), ("b", "f8")])
    numpy.save(tmp_path / "r.npy", r)
    got = gp.load(tmp_path / "r.npy")
    assert got.device == cpu
    assert_match(got, r)
    assert got["b"].device == dev  # a numeric field: on the default device
    assert_match(got["b"], r["b"], dev)
    assert_match(gp.frombuffer(b"abcd", dtype="S2"), numpy.frombuffer(b"abcd", dtype="S2"))
    numpy.save(tmp_path / "o.npy", numpy.array([1, None], dtype=object))
    with pytest.raises(TypeError, match="Python objects"):
        gp.load(tmp_path / "o.npy", allow_pickle=True)
