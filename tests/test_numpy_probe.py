"""conformance/numpy_probe.py's machinery on tiny inline snippets: what must pass passes, what must fail fails (a
binding whose ``arange`` is wrong, whose ``zeros`` does not raise), what cannot be compared is skipped."""
import types

import numpy

import gpk_array
from conformance import numpy_probe, numpy_probe_core as core


def _broken():
    """numpy, except that arange counts backwards and zeros takes a negative size without complaint."""
    m = types.ModuleType("broken_numpy")
    m.__dict__.update({k: getattr(numpy, k) for k in dir(numpy) if not k.startswith("__")})
    m.arange = lambda *a, **k: numpy.arange(*a, **k)[::-1]
    m.zeros = lambda shape, *a, **k: numpy.zeros(max(shape, 0) if isinstance(shape, int) else shape, *a, **k)
    return m


def _broken_setitem():
    """numpy, except that arange's arrays ignore assignments out of bounds."""
    class Lenient(numpy.ndarray):
        def __setitem__(self, key, value):
            try:
                super().__setitem__(key, value)
            except IndexError:
                pass
    m = _broken()
    m.arange = lambda *a, **k: numpy.arange(*a, **k).view(Lenient)
    return m


SCRIPT = "Z = np.arange(10)\nZ[4] = 1\nprint(Z.sum())\n"
DOC = """
>>> a = np.arange(6).reshape(2, 3)
>>> a.sum(axis=0)
array([3, 5, 7])
>>> np.zeros(-1)
Traceback (most recent call last):
ValueError: negative dimensions are not allowed
"""


def test_script_passes_on_gpk_array_and_fails_on_a_wrong_binding():
    ok = core.probe_script(SCRIPT, gpk_array)
    assert ok["outcome"] == "passed" and ok["compared"] == 2, ok   # Z and the printed sum
    bad = core.probe_script(SCRIPT, _broken())
    assert bad["outcome"] == "failed" and "value of Z: values differ" in bad["reason"], bad


def test_script_exception_is_reported_with_its_type():
    r = core.probe_script("Z = np.arange(3)\nY = undefined_name(Z)\n", gpk_array)
    assert r["outcome"] == "skipped" and "NameError" in r["reason"], r   # the script cannot run here at all
    r = core.probe_script("Z = np.arange(3)\nZ[5] = 1\n", gpk_array)
    assert r["outcome"] == "passed", r                                   # NumPy's IndexError comes here too
    r = core.probe_script("Z = np.arange(3)\nZ[5] = 1\n", _broken_setitem())
    assert r["outcome"] == "failed" and r["reason"].startswith("no exception where NumPy raises IndexError"), r
    m = _broken()
    m.cumsum = None
    got = core.probe_script("Y = np.cumsum([1, 2])\n", m)
    assert got["outcome"] == "failed" and got["reason"].startswith("TypeError:"), got


def test_script_without_values_is_skipped_not_passed():
    r = core.probe_script("def f(x):\n    return x\nobj = object()\n", gpk_array)
    assert r["outcome"] == "skipped" and r["reason"] == "nothing to compare", r


def test_session_carries_names_between_scripts():
    rs = core.probe_session(["a = np.arange(4.0)\n", "b = np.cumsum(a) * 2\n"], gpk_array)
    assert [r["outcome"] for r in rs] == ["passed", "passed"], rs
    rs = core.probe_session(["a = np.arange(4.0)\n", "b = np.cumsum(a) * 2\n"], _broken())
    assert [r["outcome"] for r in rs] == ["failed", "failed"], rs


def test_docstring_examples_values_and_expected_exceptions():
    ex = core.examples_of(DOC)
    assert len(ex) == 3
    ok = core.probe_examples(ex, gpk_array)
    assert ok["outcome"] == "passed" and ok["compared"] == 2, ok   # the sum and the expected ValueError
    bad = core.probe_examples(ex, _broken())
    assert bad["outcome"] == "failed" and "values differ" in bad["reason"], bad
    m = _broken()
    m.arange = numpy.arange
    bad = core.probe_examples(ex, m)
    assert bad["outcome"] == "failed" and bad["reason"].startswith("no exception where NumPy raises ValueError")


def test_docstring_skip_and_may_vary():
    ex = core.examples_of(">>> np.arange(3)  # doctest: +SKIP\narray([0, 1, 2])\n")
    assert core.probe_examples(ex, _broken())["outcome"] == "skipped"
    ex = core.examples_of(">>> np.arange(3)\narray([0, 1, 2]) # may vary\n")
    assert core.probe_examples(ex, _broken())["outcome"] == "passed"   # shape and dtype agree; values unspecified


def test_diff_rules():
    assert core.diff(gpk_array.asarray(3.0), numpy.float64(3.0)) is None          # a 0-d Array for a scalar
    assert core.diff(gpk_array.asarray([1, 2]), numpy.array([1.0, 2.0])).startswith("dtype")
    assert core.diff(gpk_array.asarray([1.0, 2.0 + 1e-12]), numpy.array([1.0, 2.0])) is None
    assert core.diff(gpk_array.asarray([1.0, 2.1]), numpy.array([1.0, 2.0])).startswith("values differ")
    assert core.diff((1, [2, "x"]), [1, (2, "x")]) is None
    assert core.diff("[0.1 0.2]", "[0.1 0.2]") is None
    try:
        core.diff(object(), object())
    except core.Uncomparable:
        pass
    else:
        raise AssertionError("an object printed with its address was compared")


def test_ktx_parsing_and_counts():
    text = "< q1\nQuestion\n\n< h1\nhint\n\n< a1\nZ = np.zeros(3)\n\n< q2\nQ2\n\n< a2\nprint(1)\n"
    items = numpy_probe.parse_ktx(text)
    assert items == [("numpy-100 #1", "Z = np.zeros(3)\n"), ("numpy-100 #2", "print(1)\n")]
    rows = numpy_probe.probe([("numpy-100", n, "script", s) for n, s in items], _broken(), "cpu")
    c = numpy_probe.counts(rows)["numpy-100"]
    assert (c["passed"], c["failed"], c["skipped"]) == (2, 0, 0)
    rows.append({"source": "numpy-100", "name": "x", "outcome": "failed", "reason": "TypeError: boom"})
    assert numpy_probe.groups(rows) == [{"reason": "TypeError: boom", "count": 1, "items": ["x"]}]
