"""Root causes of gpk_array failures in the peers' own array-API suites (conformance/peers.py), each against NumPy
or array_api_strict.

The suites use an error message as a regular expression (SciPy's ``pytest.raises(..., match=str(err))`` after
asking the namespace itself for the error), or accept a list of known libraries' wordings; a message with regex
metacharacters, or in words none of them uses, fails there although the error is right.
"""
import re

import numpy as np
import pytest

import gpk_array as xp


def _message(fn, *args, exc=Exception):
    with pytest.raises(exc) as info:
        fn(*args)
    return str(info.value)


def test_result_type_without_arrays_raises_numpys_error_in_plain_words():
    """scipy._lib.tests.test_array_api::test_xp_result_type_force_floating matches the namespace's own message
    as a pattern: it must match itself (no parentheses), and the type and words follow NumPy."""
    want = _message(np.result_type, exc=ValueError)  # NumPy's: "at least one array or dtype is required"
    got = _message(xp.result_type, exc=ValueError)
    assert got.startswith(want)
    assert re.search(got, got)


@pytest.mark.parametrize("args", [(1, 1.0), (1 + 1j,), (1, 1.0, 1.0)], ids=["int-float", "complex", "force-floating"])
def test_result_type_of_python_scalars_alone_is_numpys(args):
    """Python scalars alone: NumPy's result (the same test of SciPy then compares xp_result_type with it)."""
    assert xp.result_type(*args) == np.result_type(*args)


@pytest.mark.parametrize("obj", ["a duck", b"ab", {1: 2}], ids=["str", "bytes", "dict"])
def test_asarray_of_strings_words_its_refusal_as_cupy_does(device, obj):
    """scipy.ndimage.tests.test_filters::TestVectorizedFilter::test_input_validation accepts the wordings of the
    libraries it knows: CuPy's "Unsupported dtype", array_api_strict's "The array_api_strict namespace does not
    support the dtype", torch's "new(): invalid data type". gpk_array (backed by CuPy on CUDA) uses CuPy's word."""
    array_api_strict = pytest.importorskip("array_api_strict")
    with pytest.raises(TypeError):
        array_api_strict.asarray(obj)
    for fn in (xp.asarray, xp.array):
        with pytest.raises(TypeError, match=f"^Unsupported input type {type(obj).__name__}:"):
            fn(obj, device=device)
