"""Malformed safetensors files: opening and reading either works or raises SafeTensorsError (a ValueError)."""
import json
import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpk_array.llm.safetensors import SafeTensorsError, SafeTensorsFile, save_file

FUZZ = settings(max_examples=int(os.environ.get("GPK_FUZZ_EXAMPLES", "300")), deadline=None,
                suppress_health_check=list(HealthCheck))

JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=6),
                       lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                       max_leaves=10)
ENTRY = st.fixed_dictionaries({}, optional={
    "dtype": st.sampled_from(["F32", "F16", "BF16", "I64", "BOOL", "X9", 3]) | JSONISH,
    "shape": st.lists(st.integers(-2, 2**65), max_size=4) | JSONISH,
    "data_offsets": st.lists(st.integers(-4, 2**65), max_size=3) | JSONISH,
})


def _open_and_read(path):
    try:
        with SafeTensorsFile(path) as f:
            for name in f.names():
                f.numpy(name).tobytes()
                f.get(name, device="cpu")
    except SafeTensorsError:
        pass


@FUZZ
@given(header=st.dictionaries(st.text(max_size=6), ENTRY | JSONISH, max_size=4), data=st.binary(max_size=64),
       length_delta=st.integers(-9, 9) | st.just(0))
def test_malformed_headers(tmp_path_factory, header, data, length_delta):
    raw = json.dumps(header).encode()
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    path.write_bytes(max(0, len(raw) + length_delta).to_bytes(8, "little") + raw + data)
    _open_and_read(path)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.none() | st.integers(0, 10_000))
def test_mutated_valid_files(tmp_path_factory, flips, cut):
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    save_file({"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(5, np.int64)}, path,
              metadata={"k": "v"})
    raw = bytearray(path.read_bytes())
    for pos, byte in flips:
        raw[pos % len(raw)] = byte
    path.write_bytes(bytes(raw[:cut] if cut is not None else raw))
    _open_and_read(path)
