"""safetensors reading/writing: round trips against the reference library, validation, zero copy."""
import json
import mmap
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpk_array.llm.safetensors import SafeTensorsError, SafeTensorsFile, save_file

DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64, "F16": np.float16,
    "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64, "C64": np.complex64,
    "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu, "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}


def _random(shape, dtype, seed=0):
    """An array of random bytes (any bit pattern, NaNs included; 0/1 for bool)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _same(a, b):
    """Same dtype, shape and bytes (bitwise, so NaNs compare equal)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _sample():
    tensors = {f"w.{name}": _random((2, 3), dt, seed=i) for i, (name, dt) in enumerate(DTYPES.items())}
    tensors.update(scalar=np.array(3.5, np.float32), empty=np.zeros((0, 4), np.int16),
                   big=_random((7, 5, 3), np.float32), odd=_random((3,), np.uint8))
    return tensors


def _write_raw(path, header, data=b"", length=None):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes((len(raw) if length is None else length).to_bytes(8, "little") + raw + data)
    return path


# ---- interoperability with the reference library ------------------------------------------------

def test_reads_reference_files(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    tensors = _sample()
    st_numpy.save_file(tensors, tmp_path / "ref.safetensors", metadata={"format": "np", "note": "\u00e9"})
    with SafeTensorsFile(tmp_path / "ref.safetensors") as f:
        assert f.num_tensors == len(f) == len(tensors)
        assert f.names() == f.keys() == sorted(tensors)
        assert f.metadata == {"format": "np", "note": "\u00e9"}
        assert f.file_size == os.path.getsize(tmp_path / "ref.safetensors")
        for name, want in tensors.items():
            assert f.dtype(name) == want.dtype and f.shape(name) == want.shape
            assert _same(f.numpy(name), want), name


def test_reference_reads_our_files(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    tensors = _sample()
    save_file(tensors, tmp_path / "ours.safetensors", metadata={"k": "v"})
    data = (tmp_path / "ours.safetensors").read_bytes()
    loaded = dict(safetensors.deserialize(data))
    assert sorted(loaded) == sorted(tensors)
    for name, want in tensors.items():
        info = loaded[name]
        assert DTYPES[info["dtype"]] == want.dtype.type and tuple(info["shape"]) == want.shape
        assert bytes(info["data"]) == want.tobytes(), name
    with safetensors.safe_open(tmp_path / "ours.safetensors", framework="numpy") as f:
        assert f.metadata() == {"k": "v"}


def test_byte_identical_to_reference_writer(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    tensors = _sample()
    save_file(tensors, tmp_path / "ours.safetensors", metadata={"k": "v"})
    st_numpy.save_file(tensors, tmp_path / "ref.safetensors", metadata={"k": "v"})
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "ref.safetensors").read_bytes()


def test_layout_is_aligned_and_padded(tmp_path):
    save_file({"b": np.zeros(3, np.uint8), "a": np.zeros(2, np.float64), "c": np.zeros(1, np.int32)},
              tmp_path / "x.safetensors")
    data = (tmp_path / "x.safetensors").read_bytes()
    n = int.from_bytes(data[:8], "little")
    assert n % 8 == 0 and data[8:8 + n].endswith(b" ")
    header = json.loads(data[8:8 + n])
    assert list(header) == ["a", "c", "b"]  # widest dtype first, then by name
    assert [header[k]["data_offsets"] for k in header] == [[0, 16], [16, 20], [20, 23]]


# ---- zero copy, closing, get ---------------------------------------------------------------------

def test_views_are_zero_copy_and_read_only(tmp_path):
    path = tmp_path / "x.safetensors"
    save_file({"x": np.arange(4, dtype=np.int32), "y": np.ones(2, np.float64)}, path)
    f = SafeTensorsFile(path)
    x = f.numpy("x")
    assert not x.flags.writeable
    base = x
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)
    assert np.shares_memory(x, f.numpy("x"))
    # a write to the file shows through the mapping
    with open(path, "r+b") as raw:
        n = int.from_bytes(raw.read(8), "little")
        offset = 8 + n + json.loads(raw.read(n))["x"]["data_offsets"][0]
        os.pwrite(raw.fileno(), np.int32(99).tobytes(), offset)
    assert x[0] == 99
    with pytest.raises(ValueError, match="read-only"):
        x[1] = 5
    f.close()
    assert x[0] == 99 and x[3] == 3  # views outlive the file object
    with pytest.raises(ValueError, match="closed"):
        f.numpy("x")


def test_missing_name(tmp_path):
    save_file({"x": np.zeros(1)}, tmp_path / "x.safetensors")
    with SafeTensorsFile(tmp_path / "x.safetensors") as f:
        assert "x" in f and "y" not in f
        with pytest.raises(KeyError, match="no tensor named 'y'"):
            f.numpy("y")


def test_get_returns_gpk_array(tmp_path):
    gpk_array = pytest.importorskip("gpk_array")
    if not hasattr(gpk_array, "asarray"):
        pytest.skip("gpk_array.asarray is not available")
    save_file({"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, tmp_path / "x.safetensors")
    with SafeTensorsFile(tmp_path / "x.safetensors") as f:
        x = f.get("x")
        assert np.array_equal(np.asarray(x), np.arange(6, dtype=np.float32).reshape(2, 3))
        assert np.asarray(f.get("x", dtype=gpk_array.float64)).dtype == np.float64


def test_save_accepts_array_likes(tmp_path):
    class HostOnly:  # __array__ only
        def __array__(self, dtype=None, copy=None):
            return np.arange(3, dtype=np.int64)

    class DeviceLike:  # refuses implicit conversion, moves to the host on request
        def __array__(self, dtype=None, copy=None):
            raise TypeError("implicit conversion to a host array is not allowed")

        def to_device(self, device):
            assert device == "cpu"
            return np.full(2, 7, np.uint16)

    tensors = {"h": HostOnly(), "d": DeviceLike(), "big_endian": np.arange(3, dtype=">f4"),
               "strided": np.arange(10, dtype=np.int32)[::3], "fortran": np.asfortranarray(np.eye(3))}
    save_file(tensors, tmp_path / "x.safetensors")
    with SafeTensorsFile(tmp_path / "x.safetensors") as f:
        assert f.numpy("h").tolist() == [0, 1, 2]
        assert f.numpy("d").tolist() == [7, 7]
        assert f.numpy("big_endian").tolist() == [0.0, 1.0, 2.0]
        assert f.numpy("strided").tolist() == [0, 3, 6, 9]
        assert np.array_equal(f.numpy("fortran"), np.eye(3))
    with pytest.raises(TypeError, match="no safetensors equivalent"):
        save_file({"x": np.zeros(2, np.complex128)}, tmp_path / "y.safetensors")
    with pytest.raises(TypeError, match="cannot convert list"):
        save_file({"x": [1, 2]}, tmp_path / "y.safetensors")
    with pytest.raises(ValueError, match="invalid tensor name"):
        save_file({"__metadata__": np.zeros(1)}, tmp_path / "y.safetensors")
    with pytest.raises(TypeError, match="metadata must map strings to strings"):
        save_file({}, tmp_path / "y.safetensors", metadata={"a": 1})


def test_unpadded_header_gives_unaligned_views(tmp_path):
    values = np.array([1.5, -2.25], np.float64)
    header = {"x": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}
    raw = json.dumps(header).encode() + b" "
    assert len(raw) % 8 != 0
    with SafeTensorsFile(_write_raw(tmp_path / "x.safetensors", raw, values.tobytes())) as f:
        assert f.numpy("x").tolist() == [1.5, -2.25]


def test_empty_file_round_trip(tmp_path):
    save_file({}, tmp_path / "x.safetensors")
    with SafeTensorsFile(tmp_path / "x.safetensors") as f:
        assert f.num_tensors == 0 and f.names() == [] and f.metadata == {}


# ---- validation -------------------------------------------------------------------------------

F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}

BAD_HEADERS = [
    ({"x": {"shape": [2], "data_offsets": [0, 8]}}, 8, r"tensor 'x': missing key 'dtype'"),
    ({"x": {"dtype": "F32", "data_offsets": [0, 8]}}, 8, r"tensor 'x': missing key 'shape'"),
    ({"x": {"dtype": "F32", "shape": [2]}}, 8, r"tensor 'x': missing key 'data_offsets'"),
    ({"x": [1]}, 8, r"tensor 'x': entry must be an object"),
    ({"x": {**F32_2, "dtype": "F7"}}, 8, r"tensor 'x': unknown dtype 'F7'"),
    ({"x": {**F32_2, "dtype": ["F32"]}}, 8, r"tensor 'x': unknown dtype \['F32'\]"),
    ({"x": {**F32_2, "shape": [-2]}}, 8, r"tensor 'x': shape must be a list of non-negative integers, got \[-2\]"),
    ({"x": {**F32_2, "shape": [2.0]}}, 8, r"tensor 'x': shape must be .* got \[2.0\]"),
    ({"x": {**F32_2, "shape": [True, 2]}}, 8, r"tensor 'x': shape must be .* got \[True, 2\]"),
    ({"x": {**F32_2, "shape": "2"}}, 8, r"tensor 'x': shape must be"),
    ({"x": {**F32_2, "data_offsets": [8, 0]}}, 8, r"tensor 'x': data_offsets must be \[begin, end\]"),
    ({"x": {**F32_2, "data_offsets": [0]}}, 8, r"tensor 'x': data_offsets must be"),
    ({"x": {**F32_2, "data_offsets": [-8, 0]}}, 8, r"tensor 'x': data_offsets must be"),
    ({"x": {**F32_2, "data_offsets": [0, 16]}}, 8,
     r"tensor 'x': data_offsets \[0, 16\] run past the end of the 8-byte data buffer"),
    ({"x": {**F32_2, "data_offsets": [0, 2 ** 70]}}, 8, r"run past the end"),
    ({"x": {**F32_2, "shape": [3]}}, 8,
     r"tensor 'x': shape \[3\] of F32 needs 12 bytes but data_offsets \[0, 8\] hold 8"),
    ({"x": {**F32_2, "shape": [2 ** 40, 2 ** 40]}}, 8, r"needs 4835703278458516698824704 bytes"),
    ({"x": {**F32_2, "data_offsets": [4, 12]}}, 12,
     r"tensor 'x': data starts at 4 but the data buffer starts at 0 \(4-byte gap\)"),
    ({"a": F32_2, "b": {**F32_2, "data_offsets": [12, 20]}}, 20,
     r"tensor 'b': data starts at 12 but tensor 'a' ends at 8 \(4-byte gap\)"),
    ({"a": F32_2, "b": {**F32_2, "data_offsets": [4, 12]}}, 12,
     r"tensor 'b': data_offsets \[4, 12\] overlap tensor 'a', which ends at 8"),
    ({"a": F32_2}, 12, r"tensors end at byte 8 of a 12-byte data buffer \(4 trailing bytes\)"),
    ({"__metadata__": {"k": 1}, "a": F32_2}, 8, r"__metadata__ must map strings to strings"),
    ({"__metadata__": ["k"], "a": F32_2}, 8, r"__metadata__ must map strings to strings"),
    ([1, 2], 0, r"header must be a JSON object, not list"),
    (b'{"a": 1, "a": 2}', 0, r"header repeats the key 'a'"),
    (b'{"x": {"dtype": "F32", "dtype": "F16"}}', 0, r"header repeats the key 'dtype'"),
    (b'{"x": {"shape": [' + b"9" * 5000 + b']}}', 0, r"header is not valid JSON: .*digits"),
    (b'{"x": ' + b"[" * 100000 + b"]" * 100000 + b'}', 0, r"header is not valid JSON"),
    (b'{"a": ', 0, r"header is not valid JSON"),
    (b'{"\xff": 1}', 0, r"header is not valid UTF-8"),
]


@pytest.mark.parametrize("header, data_len, message", BAD_HEADERS)
def test_bad_headers(tmp_path, header, data_len, message):
    path = _write_raw(tmp_path / "bad.safetensors", header, b"\0" * data_len)
    with pytest.raises(SafeTensorsError, match=message):
        SafeTensorsFile(path)


def test_bad_lengths(tmp_path):
    path = tmp_path / "bad.safetensors"
    for content in (b"", b"\x01\x00\x00"):
        path.write_bytes(content)
        with pytest.raises(SafeTensorsError, match=rf"file has {len(content)} bytes, too few for the 8-byte header"):
            SafeTensorsFile(path)
    _write_raw(path, {}, length=1000)
    with pytest.raises(SafeTensorsError, match=r"header length 1000 runs past the end of the 10-byte file"):
        SafeTensorsFile(path)
    _write_raw(path, {}, length=2 ** 63)
    with pytest.raises(SafeTensorsError, match=r"header length 9223372036854775808 exceeds the limit of 100000000"):
        SafeTensorsFile(path)
    _write_raw(path, b"", length=0)
    with pytest.raises(SafeTensorsError, match=r"bad.safetensors: header is not valid JSON"):
        SafeTensorsFile(path)


def test_errors_are_value_errors():
    assert issubclass(SafeTensorsError, ValueError)


# ---- properties -------------------------------------------------------------------------------

_TENSOR = st.tuples(st.sampled_from(sorted(DTYPES)), st.lists(st.integers(0, 5), max_size=4), st.integers(0, 2 ** 32))
_TENSORS = st.dictionaries(st.text(min_size=1, max_size=12).filter(lambda s: s != "__metadata__"), _TENSOR,
                           max_size=6)
_METADATA = st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3)


@settings(max_examples=100, deadline=None)
@given(_TENSORS, _METADATA)
def test_property_round_trip(tmp_path_factory, specs, metadata):
    safetensors = pytest.importorskip("safetensors")
    path = tmp_path_factory.mktemp("prop") / "x.safetensors"
    tensors = {name: _random(tuple(shape), DTYPES[dt], seed) for name, (dt, shape, seed) in specs.items()}
    save_file(tensors, path, metadata=metadata)
    with SafeTensorsFile(path) as f:
        assert f.names() == sorted(tensors)
        assert f.metadata == (metadata or {})
        for name, want in tensors.items():
            assert _same(f.numpy(name), want)
    theirs = dict(safetensors.deserialize(path.read_bytes()))
    for name, want in tensors.items():
        assert bytes(theirs[name]["data"]) == want.tobytes() and tuple(theirs[name]["shape"]) == want.shape
    # and back: files the reference writes read the same
    if not tensors and metadata == {}:
        return  # safetensors 0.8 writes the invalid header '{},"__metadata__":{}}' for this case
    st_numpy = pytest.importorskip("safetensors.numpy")
    st_numpy.save_file(tensors, path, metadata=metadata)
    with SafeTensorsFile(path) as f:
        for name, want in tensors.items():
            assert _same(f.numpy(name), want)


# ---- malformed and changing files (reliability) --------------------------------------------------

def test_truncated_file_raises_instead_of_sigbus(tmp_path):
    """A file truncated under a live mapping: reads raise SafeTensorsError (in a child process, so a SIGBUS,
    the failure this guards against, fails the test instead of killing the test run)."""
    import subprocess
    import sys
    path = tmp_path / "x.safetensors"
    save_file({"a": np.arange(1 << 16, dtype=np.float64), "b": np.ones(1 << 16, np.float32)}, path)
    code = f"""
import os, numpy as np
from gpk_array.llm.safetensors import SafeTensorsFile, SafeTensorsError
f = SafeTensorsFile({str(path)!r})
os.truncate({str(path)!r}, 4096)
for read in (lambda: f.numpy("a").sum(), lambda: f.get("b", device="cpu")):
    try:
        read()
        print("no error")
    except SafeTensorsError as e:
        print("SafeTensorsError", "truncated" in str(e))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, GPK_DEVICE="cpu"))
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.split("\n")[:2] == ["SafeTensorsError True", "SafeTensorsError True"], r.stdout


def test_get_copies_so_arrays_outlive_file_changes(tmp_path):
    pytest.importorskip("gpk_array")
    path = tmp_path / "x.safetensors"
    save_file({"x": np.arange(4, dtype=np.int32)}, path)
    with SafeTensorsFile(path) as f:
        x = f.get("x", device="cpu")
        view = f.numpy("x")
        assert not np.shares_memory(np.asarray(x), view)


def test_duplicate_key_check_is_linear():
    """The duplicate check compares each key a bounded number of times (a quadratic scan compared n^2 / 2)."""
    from gpk_array.llm.safetensors import _no_duplicates
    compared = [0]

    class Key(str):
        def __eq__(self, other):
            compared[0] += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    n = 3000
    pairs = [(Key(f"t{i}"), {}) for i in range(n)] + [(Key(f"t{n - 1}"), {})]
    with pytest.raises(SafeTensorsError, match=f"t{n - 1}"):
        _no_duplicates(pairs)
    assert compared[0] < 4 * n, compared[0]
    assert list(_no_duplicates(pairs[:-1])) == [f"t{i}" for i in range(n)]


@pytest.mark.parametrize("shape", [[0, 2**64], [2**62, 0], [2**61, 0], [0] * 65], ids=["2^64", "2^62", "2^61", "65d"])
def test_impossible_shapes_are_refused_at_open(tmp_path, shape):
    with pytest.raises(ValueError):  # NumPy cannot make such an array
        np.frombuffer(b"", dtype="<f4", count=0).reshape(shape)
    path = _write_raw(tmp_path / "x.safetensors", {"x": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}})
    with pytest.raises(SafeTensorsError, match="dimensions|too large"):
        SafeTensorsFile(path)


def test_save_file_argument_types(tmp_path):
    with pytest.raises(TypeError, match="tensors"):
        save_file([np.zeros(2)], tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="metadata"):
        save_file({"x": np.zeros(2)}, tmp_path / "x.safetensors", metadata=["k"])
    with pytest.raises(TypeError, match="metadata"):
        save_file({"x": np.zeros(2)}, tmp_path / "x.safetensors", metadata={"k": 1})
