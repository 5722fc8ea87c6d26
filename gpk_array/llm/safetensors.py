"""Reading (memory-mapped, zero copy) and writing of Hugging Face safetensors files.

Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON mapping tensor names to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the byte buffer that follows the
header) plus an optional ``"__metadata__"`` string-to-string map, then the tensor bytes.
"""
import json
import math
from collections.abc import Mapping
import mmap
import os

import ml_dtypes
import numpy as np

MAX_HEADER_SIZE = 100_000_000  # the reference implementation's limit
_MAX_DIMS = 64  # NumPy's
_METADATA = "__metadata__"

# safetensors dtype name -> little-endian numpy dtype, in the reference writer's order: tensors are
# laid out by this order descending (widest first, keeping every tensor aligned), then by name.
_DTYPES = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype("<u1"),
    "I8": np.dtype("<i1"),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
    "F8_E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "F8_E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "I16": np.dtype("<i2"),
    "U16": np.dtype("<u2"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "I32": np.dtype("<i4"),
    "U32": np.dtype("<u4"),
    "F32": np.dtype("<f4"),
    "C64": np.dtype("<c8"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "U64": np.dtype("<u8"),
}
_NAME_OF = {dt: name for name, dt in _DTYPES.items()}
_WRITE_ORDER = {name: i for i, name in enumerate(_DTYPES)}


class SafeTensorsError(ValueError):
    """A safetensors file or header is malformed."""


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise SafeTensorsError(f"header repeats the key {k!r}")
        out[k] = v
    return out


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _parse_header(raw, data_len):
    """Validate a header against a data buffer of ``data_len`` bytes: (metadata, {name: entry})."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SafeTensorsError(f"header is not valid UTF-8: {e}") from None
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except SafeTensorsError:
        raise
    except (ValueError, RecursionError) as e:  # ValueError: also integers too long to convert
        raise SafeTensorsError(f"header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafeTensorsError(f"header must be a JSON object, not {type(header).__name__}")
    metadata = header.pop(_METADATA, None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafeTensorsError(f"{_METADATA} must map strings to strings, got {metadata!r:.200}")
    entries = {name: _parse_entry(name, info, data_len) for name, info in header.items()}
    _check_layout(entries, data_len)
    return metadata, entries


def _parse_entry(name, info, data_len):
    """(dtype, shape, begin, end) of one header entry, checked against the data buffer size."""
    if not isinstance(info, dict):
        raise SafeTensorsError(f"tensor {name!r}: entry must be an object, not {type(info).__name__}")
    for key in ("dtype", "shape", "data_offsets"):
        if key not in info:
            raise SafeTensorsError(f"tensor {name!r}: missing key {key!r}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        raise SafeTensorsError(f"tensor {name!r}: unknown dtype {dtype!r} (known: {', '.join(_DTYPES)})")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise SafeTensorsError(f"tensor {name!r}: shape must be a list of non-negative integers, got {shape!r:.200}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_int(o) for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise SafeTensorsError(f"tensor {name!r}: data_offsets must be [begin, end] with "
                               f"0 <= begin <= end, got {offsets!r}")
    begin, end = offsets
    if end > data_len:
        raise SafeTensorsError(f"tensor {name!r}: data_offsets [{begin}, {end}] run past the end of "
                               f"the {data_len}-byte data buffer")
    dt = _DTYPES[dtype]
    nbytes = math.prod(shape) * dt.itemsize
    if nbytes != end - begin:
        raise SafeTensorsError(f"tensor {name!r}: shape {shape} of {dtype} needs {nbytes} bytes but "
                               f"data_offsets [{begin}, {end}] hold {end - begin}")
    # an empty tensor passes the size check whatever its other dimensions: NumPy must be able to make it
    if len(shape) > _MAX_DIMS:
        raise SafeTensorsError(f"tensor {name!r}: {len(shape)} dimensions, more than the {_MAX_DIMS} an array has")
    if math.prod(max(d, 1) for d in shape) * dt.itemsize >= 2**63:
        raise SafeTensorsError(f"tensor {name!r}: shape {shape} is too large for an array")
    return dt, tuple(shape), begin, end


def _check_layout(entries, data_len):
    """Tensors must tile the data buffer exactly: from 0, no gaps, no overlaps, no trailing bytes."""
    position, previous = 0, None
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda item: item[1][2:]):
        if begin < position:
            raise SafeTensorsError(f"tensor {name!r}: data_offsets [{begin}, {end}] overlap tensor "
                                   f"{previous!r}, which ends at {position}")
        if begin > position:
            where = "the data buffer starts" if previous is None else f"tensor {previous!r} ends"
            raise SafeTensorsError(f"tensor {name!r}: data starts at {begin} but {where} at {position} "
                                   f"({begin - position}-byte gap)")
        position, previous = end, name
    if position != data_len:
        raise SafeTensorsError(f"tensors end at byte {position} of a {data_len}-byte data buffer "
                               f"({data_len - position} trailing bytes)")


class SafeTensorsFile:
    """A safetensors file, memory-mapped read-only; ``numpy(name)`` returns zero-copy views."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._mmap = None
        self._file = None
        with open(self.path, "rb") as f:
            self.file_size = size = os.fstat(f.fileno()).st_size
            if size < 8:
                raise SafeTensorsError(f"{self.path}: file has {size} bytes, too few for the 8-byte header length")
            self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._file = os.dup(f.fileno())  # kept open: each read first checks the file was not truncated
        n = int.from_bytes(self._mmap[:8], "little")
        self._data_start = 8 + n
        try:
            if n > MAX_HEADER_SIZE:
                raise SafeTensorsError(f"header length {n} exceeds the limit of {MAX_HEADER_SIZE} bytes")
            if 8 + n > size:
                raise SafeTensorsError(f"header length {n} runs past the end of the {size}-byte file")
            self._metadata, self._entries = _parse_header(self._mmap[8:8 + n], size - 8 - n)
        except SafeTensorsError as e:
            self.close()
            raise SafeTensorsError(f"{self.path}: {e}") from None

    def __enter__(self):
        return self

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            os.close(self._file)
            self._file = None

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        """Release the mapping; views handed out keep it alive until they are gone."""
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:  # numpy views still export the buffer; it closes when they die
                pass
            self._mmap = None
        if self._file is not None:
            os.close(self._file)
            self._file = None

    @property
    def num_tensors(self):
        """Number of tensors in the file."""
        return len(self._entries)

    @property
    def metadata(self):
        """The ``__metadata__`` map (a copy; empty if absent)."""
        return dict(self._metadata)

    def names(self):
        """Tensor names, sorted."""
        return sorted(self._entries)

    keys = names

    def __contains__(self, name):
        return name in self._entries

    def __len__(self):
        return len(self._entries)

    def _entry(self, name):
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor named {name!r}") from None

    def dtype(self, name):
        """numpy dtype of a tensor."""
        return self._entry(name)[0]

    def shape(self, name):
        """Shape of a tensor, a tuple."""
        return self._entry(name)[1]

    def _check_size(self):
        """SafeTensorsError if the file shrank since it was opened (a read of the mapping past the new end
        would kill the process with SIGBUS)."""
        size = os.fstat(self._file).st_size
        if size < self.file_size:
            raise SafeTensorsError(f"{self.path}: the file was truncated to {size} bytes after it was opened "
                                   f"({self.file_size} bytes then)")

    def numpy(self, name):
        """Read-only numpy view of a tensor's bytes in the mapped file (no copy). The view aliases the file:
        it stays valid while the file is not truncated or rewritten (``get`` copies)."""
        dt, shape, begin, end = self._entry(name)
        if self._mmap is None:
            raise ValueError(f"{self.path}: file is closed")
        self._check_size()
        count = (end - begin) // dt.itemsize
        return np.frombuffer(self._mmap, dtype=dt, count=count, offset=self._data_start + begin).reshape(shape)

    def get(self, name, device=None, dtype=None):
        """A tensor as a gpk_array array on ``device``, optionally cast: a copy of the file's bytes (a host copy on
        the CPU device, a host-to-device copy for GPUs), so the array outlives changes to the file."""
        import gpk_array

        view = self.numpy(name)
        array = gpk_array.asarray(view, device=device, copy=True)
        return array if dtype is None else gpk_array.astype(array, dtype)


def _host_array(x):
    """numpy view or copy of an array-like: numpy arrays, ``__array__`` objects, device arrays."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__array__"):
        try:
            a = np.asarray(x)
            if a.dtype != object:
                return a
        except (TypeError, ValueError, RuntimeError):  # device arrays refuse implicit conversion
            pass
    if hasattr(x, "to_device"):
        return np.asarray(x.to_device("cpu"))
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    raise TypeError(f"cannot convert {type(x).__name__} to an array")


def save_file(tensors, path, metadata=None):
    """Write ``{name: array}`` as a safetensors file, laid out as the reference library does."""
    if not isinstance(tensors, Mapping):
        raise TypeError(f"save_file: tensors must be a mapping of names to arrays, got {type(tensors).__name__}")
    if metadata is not None and (not isinstance(metadata, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError(f"save_file: metadata must map strings to strings, got {metadata!r:.100}")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or name == _METADATA:
            raise ValueError(f"invalid tensor name {name!r}")
        a = _host_array(value)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        if a.dtype not in _NAME_OF:
            raise TypeError(f"tensor {name!r}: dtype {a.dtype} has no safetensors equivalent")
        arrays[name] = a if a.flags.c_contiguous else a.copy(order="C")
    order = sorted(arrays, key=lambda k: (-_WRITE_ORDER[_NAME_OF[arrays[k].dtype]], k))
    header = {} if metadata is None else {_METADATA: dict(sorted(metadata.items()))}
    offset = 0
    for name in order:
        a = arrays[name]
        header[name] = {"dtype": _NAME_OF[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for name in order:
            f.write(arrays[name].reshape(-1).view(np.uint8).data)
