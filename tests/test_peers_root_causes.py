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


@pytest.mark.parametrize("args", [(), (1, 1.0), (1 + 1j,)], ids=["none", "int-float", "complex"])
def test_result_type_without_arrays_raises_numpys_error_in_plain_words(args):
    """scipy._lib.tests.test_array_api::test_xp_result_type_force_floating matches the namespace's own message
    as a pattern: it must match itself (no parentheses), and the type and words follow NumPy."""
    want = _message(np.result_type, exc=ValueError)  # NumPy's: "at least one array or dtype is required"
    got = _message(xp.result_type, *args, exc=ValueError)
    assert got.startswith(want)
    assert re.search(got, got)
