"""Malformed input thrown at the namespace: every call returns or raises an exception of the kinds NumPy and the
standard use for bad input (TypeError, ValueError, IndexError, OverflowError, gpk_array.OutOfMemoryError), never an
internal error (AttributeError, KeyError, RecursionError, UnboundLocalError, ...). On cuda:0 the device must still
work afterwards (no sticky CUDA error)."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpk_array as xp

ALLOWED = (TypeError, ValueError, IndexError, OverflowError, ZeroDivisionError, xp.OutOfMemoryError)
FUZZ = settings(max_examples=int(__import__("os").environ.get("GPK_FUZZ_EXAMPLES", "300")), deadline=None,
                suppress_health_check=list(HealthCheck))

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "float32", "float64", "complex64",
          "complex128"]
ODD_SCALARS = [None, True, 0, -1, 1 << 70, -(1 << 70), 2.5, float("nan"), float("inf"), -0.0, 1j, "x", b"ab",
               {1: 2}, [], [[1], [2, 3]], (), object(), 1.5e308, Ellipsis, slice(None), "float32"]


@st.composite
def arrays(draw, device):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 4), max_size=3).map(tuple))
    n = math.prod(shape)
    vals = draw(st.lists(st.sampled_from([0, 1, -1, 2, 3.5, -0.0, float("nan"), float("inf"), 1e30]),
                         min_size=n, max_size=n))
    with np.errstate(all="ignore"):
        host = np.asarray(vals, dtype=np.float64).reshape(shape)
        if dtype == "bool":
            host = host != 0
        elif "int" in dtype:
            host = np.nan_to_num(host, nan=0, posinf=7, neginf=-7).clip(-7, 7)
        host = host.astype(dtype)
    return xp.asarray(host, device=device)


def arguments(device):
    return st.one_of(arrays(device), st.sampled_from(ODD_SCALARS), st.integers(-5, 5),
                     st.tuples(st.integers(-3, 5), st.integers(-3, 5)))


UNARY = ["abs", "negative", "exp", "log", "sqrt", "sin", "floor", "round", "sign", "isnan", "logical_not",
         "bitwise_invert", "sum", "prod", "max", "min", "mean", "std", "var", "argmax", "argmin", "all", "any",
         "cumulative_sum", "sort", "argsort", "unique_values", "unique_counts", "nonzero", "flip", "squeeze",
         "matrix_transpose", "ravel", "diff", "count_nonzero", "copy", "real", "conj", "astype", "reshape",
         "expand_dims", "permute_dims", "roll", "tile", "repeat", "broadcast_to", "take", "asarray", "zeros",
         "ones", "empty", "arange", "eye", "full", "linspace", "meshgrid", "tril", "triu", "where",
         "broadcast_shapes", "isdtype", "can_cast", "result_type", "finfo", "iinfo", "clip", "searchsorted"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
          "equal", "less", "logical_and", "bitwise_and", "bitwise_left_shift", "atan2", "hypot", "copysign",
          "matmul", "tensordot", "vecdot", "concat", "stack", "take_along_axis", "isin", "nextafter"]
LINALG = ["inv", "det", "cholesky", "qr", "svd", "eigh", "norm", "matrix_norm", "vector_norm", "solve", "cross",
          "outer", "matrix_power", "pinv", "trace", "diagonal", "slogdet", "matrix_rank"]


OUTCOMES = {}  # exception type name (or "ok") -> count: what a run exercised (printed with -s by the last test)


def _call(fn, args, kwargs):
    try:
        with np.errstate(all="ignore"):
            fn(*args, **kwargs)
        OUTCOMES["ok"] = OUTCOMES.get("ok", 0) + 1
    except ALLOWED as e:
        OUTCOMES[type(e).__name__] = OUTCOMES.get(type(e).__name__, 0) + 1


KWARGS = st.dictionaries(st.sampled_from(["axis", "keepdims", "dtype", "n", "k", "copy", "device", "shape",
                                          "axes", "correction", "stable", "descending", "ord"]),
                         st.sampled_from([None, 0, 1, -1, 7, True, (0, 0), (0, 1), "x", 1.5, "float32", "cpu"]),
                         max_size=2)


def _fuzz(device, names, module, data, nargs):
    name = data.draw(st.sampled_from(names), label="function")
    fn = getattr(module, name)
    args = [data.draw(arguments(device), label=f"arg{i}") for i in range(nargs)]
    kwargs = data.draw(KWARGS, label="kwargs")
    if kwargs.get("device") == "cpu":
        kwargs["device"] = device
    _call(fn, args, kwargs)


def _device_still_works(device):
    x = xp.arange(8, device=device)
    assert int(xp.sum(x * 2)) == 56
    if device.kind == "cuda":
        import cupy
        cupy.cuda.runtime.deviceSynchronize()  # a sticky error (illegal address, ...) raises here


@FUZZ
@given(data=st.data())
def test_unary_fuzz(device, data):
    _fuzz(device, UNARY, xp, data, data.draw(st.integers(1, 2), label="nargs"))


@FUZZ
@given(data=st.data())
def test_binary_fuzz(device, data):
    _fuzz(device, BINARY, xp, data, data.draw(st.integers(2, 3), label="nargs"))


@FUZZ
@given(data=st.data())
def test_linalg_fuzz(device, data):
    _fuzz(device, LINALG, xp.linalg, data, data.draw(st.integers(1, 2), label="nargs"))


@FUZZ
@given(data=st.data())
def test_indexing_fuzz(device, data):
    x = data.draw(arrays(device), label="x")
    key = data.draw(st.one_of(
        st.sampled_from(ODD_SCALARS), st.integers(-6, 6),
        st.tuples(st.integers(-6, 6), st.sampled_from([slice(None), None, Ellipsis, 1, -9])),
        st.lists(st.integers(-7, 7), max_size=4).map(lambda v: xp.asarray(v, dtype=xp.int64, device=device)),
        arrays(device)), label="key")
    _call(lambda: x[key], (), {})
    value = data.draw(st.one_of(st.sampled_from(ODD_SCALARS), arrays(device)), label="value")
    _call(x.__setitem__, (key, value), {})


def test_device_works_after_fuzz(device):
    """Run last in each worker's share: the device still computes, with no sticky error."""
    _device_still_works(device)
    print("fuzz outcomes:", OUTCOMES)
