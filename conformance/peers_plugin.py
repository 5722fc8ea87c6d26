"""pytest plugin: run a peer library's own array-API tests with gpk_array as one more backend, beside the
backends the library already tests (array_api_strict, torch, ...), without editing any installed file.

Loaded by ``conformance.peers`` as ``-p conformance.peers_plugin --peers-suite SUITE``; usable by hand the same
way. How each suite takes the new backend:

- ``sklearn``: its tests parametrize over ``sklearn.utils._array_api.yield_namespace_device_dtype_combinations()``
  (and ``yield_namespaces()``), called when a test module is imported; both are replaced before collection (and
  rebound in the sklearn modules already imported) by versions that yield gpk_array on ``--peers-device`` in
  float64 and float32, after the selected namespaces of the original. Its private ``_convert_to_numpy`` (the
  fallback of ``move_to`` and its tests' way to read a result) knows torch's ``.cpu()`` and CuPy's ``.get()`` by
  name and calls ``numpy.asarray`` for any other namespace, which a CUDA array refuses; the replacement copies a
  gpk_array array to the CPU with ``to_device("cpu")`` first.
- ``scipy``: its ``xp`` fixture (``scipy/conftest.py``) is parametrized over the backends found at import; its
  parameters get gpk_array (marked ``array_api_backends``, as the others are) and lose the namespaces not
  selected. gpk_array joins the conftest's set of known backends, so ``np_only`` and ``cpu_only`` markers treat it
  as they treat torch, and a test that skips every eager backend SciPy knows by name skips it too. gpk_array
  follows the standard's 2024.12 there, as the conftest makes array_api_strict do (its ``devices`` fixture adds a
  list to ``devices()``, a tuple from 2025.12 on). On a CUDA device gpk_array is a GPU backend that may run what
  CuPy may run (a ``cpu_only`` marker whose exceptions name CuPy lets it run: those are the functions SciPy
  delegates for CuPy arrays), and ``xp_assert_*`` compare its arrays on the host after their namespace, dtype and
  shape checks, as SciPy does for CuPy and torch.
- ``extra`` (array-api-extra): its ``library`` fixture is parametrized over the ``Backend`` enum; a
  ``Backend.GPK_ARRAY`` member (module ``gpk_array``) is added and becomes one more parameter. Its tests of the
  delegation to libraries it knows by name skip array_api_strict ("array-agnostic fallback") and gpk_array alike.

Every test item is labelled with the namespace it runs on (from its parameters); items with no namespace (tests
that do not run per backend) are deselected, so a run is exactly the suite's array-API tests. With
``--peers-report FILE`` the controlling process writes one JSON object,
``{test id: [label, outcome, message, seconds]}``: the id names the test module by its dotted name
(``sklearn.utils.tests.test_array_api::test_x[...]``), the outcome is one of passed, failed, error, skipped,
xfailed, xpassed, and seconds add setup, call and teardown.
"""
import enum
import functools
import inspect
import json
import sys

import pytest

SUITES = ("sklearn", "scipy", "extra")
GPK = "gpk_array"
_KNOWN = ("gpk_array", "array_api_strict", "torch", "numpy", "cupy", "jax.numpy", "dask.array", "dpnp", "mparray",
          "sparse")


def pytest_addoption(parser):
    g = parser.getgroup("peers", "gpk_array injected into a peer library's array-API tests")
    g.addoption("--peers-suite", choices=SUITES, help="which suite's fixtures to extend")
    g.addoption("--peers-namespaces", default="gpk_array,array_api_strict,torch",
                help="comma-separated namespaces to run (gpk_array is injected; the others must be the suite's own)")
    g.addoption("--peers-device", default="cpu", help="gpk_array's device for the run (cpu, cuda:0, ...)")
    g.addoption("--peers-api-version", default=None,
                help="the standard's version gpk_array follows in the run (default: 2024.12 for SciPy, which pins "
                     "array_api_strict to 2024.12 in its conftest; the library's default elsewhere)")
    g.addoption("--peers-report",
                help="write {test id: [namespace, outcome, message, seconds]} here (controller only)")


def _selected(config):
    return [n.strip() for n in config.getoption("peers_namespaces").split(",") if n.strip()]


def pytest_configure(config):
    suite = config.getoption("peers_suite")
    if suite is None:
        return
    config._peers = {"suite": suite, "namespaces": _selected(config), "device": config.getoption("peers_device")}
    device = config._peers["device"]
    if GPK in config._peers["namespaces"]:
        import gpk_array
        gpk_array.set_default_device(device)
        version = config.getoption("peers_api_version") or ("2024.12" if suite == "scipy" else None)
        if version:
            gpk_array.set_array_api_version(version)
    if suite == "sklearn":
        _patch_sklearn(config._peers["namespaces"], device)
    elif suite == "scipy":
        _patch_scipy_asserts(device)
    path = config.getoption("peers_report")
    if path and not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.pluginmanager.register(_Recorder(path), "peers_recorder")


# --- scikit-learn -------------------------------------------------------------------------------------------------

def _patch_sklearn(selected, device):
    import sklearn.utils._array_api as aa
    orig_combos, orig_names = aa.yield_namespace_device_dtype_combinations, aa.yield_namespaces
    if getattr(orig_combos, "_peers", False):
        return

    def yield_namespace_device_dtype_combinations(include_numpy_namespaces=True):
        for combo in orig_combos(include_numpy_namespaces=include_numpy_namespaces):
            if combo[0] in selected and combo[0] != GPK:  # the original calls the patched yield_namespaces
                yield combo
        if GPK in selected:
            for dtype in ("float64", "float32"):
                yield GPK, device, dtype

    def yield_namespaces(include_numpy_namespaces=True):
        for name in orig_names(include_numpy_namespaces=include_numpy_namespaces):
            if name in selected:
                yield name
        if GPK in selected:
            yield GPK

    orig_mixed = getattr(aa, "yield_mixed_namespace_input_permutations", None)

    def yield_mixed_namespace_input_permutations():
        both = set(selected) | {"numpy"}
        for first, second, desc in orig_mixed():
            if first.xp in both and second.xp in both and GPK not in (first.xp, second.xp):
                yield first, second, desc
        if GPK in selected:  # (y's, X's): y follows X; scikit-learn converts y
            ND = aa.NamespaceAndDevice
            for first, second in ((ND("numpy", None), ND(GPK, device)), (ND(GPK, device), ND("numpy", None)),
                                  (ND("array_api_strict", "device1"), ND(GPK, device))):
                yield first, second, " to ".join(f"{n.xp} {n.device}" if n.xp == GPK else n.xp
                                                 for n in (first, second))

    news = [yield_namespace_device_dtype_combinations, yield_namespaces]
    swaps = {id(orig_combos): yield_namespace_device_dtype_combinations, id(orig_names): yield_namespaces}
    if orig_mixed is not None:
        news.append(yield_mixed_namespace_input_permutations)
        swaps[id(orig_mixed)] = yield_mixed_namespace_input_permutations
    for new in news:
        new._peers = True
        new.__doc__ = "gpk_array added by conformance.peers_plugin, other namespaces filtered."
    orig_convert = aa._convert_to_numpy

    def _convert_to_numpy(array, xp):
        if getattr(xp, "__name__", "") == GPK:   # as scikit-learn's own branches for torch (.cpu()) and CuPy (.get())
            return orig_convert(_to_host(array), xp)
        return orig_convert(array, xp)
    swaps[id(orig_convert)] = _convert_to_numpy
    for name, mod in list(sys.modules.items()):
        if not (name == "sklearn" or name.startswith("sklearn.")) or mod is None:
            continue
        for attr in ("yield_namespace_device_dtype_combinations", "yield_namespaces",
                     "yield_mixed_namespace_input_permutations", "_convert_to_numpy"):
            current = getattr(mod, attr, None)
            if current is not None and id(current) in swaps:
                setattr(mod, attr, swaps[id(current)])


# --- SciPy --------------------------------------------------------------------------------------------------------

def _on_host(device):
    return str(device) == "cpu"


def _to_host(x):
    """A gpk_array array outside the CPU, copied to the CPU; anything else unchanged."""
    import gpk_array
    if isinstance(x, gpk_array.Array) and x.device != gpk_array.Device("cpu"):
        return x.to_device("cpu")
    return x


def _host_compare(check, original):
    """``xp_assert_*`` that checks namespace, dtype and shape where the arrays are, then compares on the host."""
    @functools.wraps(original)
    def wrapper(actual, desired, *args, **kwargs):
        import gpk_array
        if not any(isinstance(a, gpk_array.Array) and a.device != gpk_array.Device("cpu")
                   for a in (actual, desired)):
            return original(actual, desired, *args, **kwargs)
        keys = ("check_namespace", "check_dtype", "check_shape", "check_0d", "xp")
        check(actual, desired, **{k: kwargs[k] for k in keys if k in kwargs} | {"xp": kwargs.get("xp")})
        kwargs = dict(kwargs, check_namespace=False, xp=gpk_array)
        return original(_to_host(actual), _to_host(desired), *args, **kwargs)
    wrapper._peers = True
    return wrapper


def _patch_scipy_asserts(device):
    if _on_host(device):
        return
    from scipy._lib import _array_api as sa
    for name in ("xp_assert_equal", "xp_assert_close", "xp_assert_less", "xp_assert_close_nulp"):
        original = getattr(sa, name, None)
        if original is not None and not getattr(original, "_peers", False):
            setattr(sa, name, _host_compare(sa._strict_check, original))
    try:
        from scipy._lib import _array_api_no_0d as s0
    except ImportError:
        return
    for name in ("xp_assert_equal", "xp_assert_close", "xp_assert_less"):
        base = getattr(s0, name + "_base", None)
        if base is not None and not getattr(base, "_peers", False):
            setattr(s0, name + "_base", getattr(sa, name))


def _patch_scipy_fixture(fixturedef, selected, device):
    import gpk_array
    g = inspect.unwrap(fixturedef.func).__globals__
    keep = [p for p in fixturedef.params if getattr(p, "id", None) in selected]
    if GPK in selected:
        keep.append(pytest.param(gpk_array, id=GPK, marks=pytest.mark.array_api_backends))
        g["xp_known_backends"].add(GPK)
        on_gpu = not _on_host(device)
        if on_gpu:
            g["xp_skip_cpu_only_backends"].add(GPK)
        original = g["_backends_kwargs_from_request"]

        def _backends_kwargs_from_request(request, skip_or_xfail):
            reasons = original(request, skip_or_xfail)
            if on_gpu and GPK in reasons and _cupy_may_run(request, skip_or_xfail):
                del reasons[GPK]
            if skip_or_xfail == "skip" and GPK not in reasons and _EAGER <= _named(request, "skip"):
                reasons[GPK] = ("skipped for every eager backend SciPy knows (" + ", ".join(sorted(_EAGER)) +
                                "), as gpk_array is one: " + reasons.get("array_api_strict", ""))
            return reasons
        g["_backends_kwargs_from_request"] = _backends_kwargs_from_request
    fixturedef.params = keep


_EAGER = {"numpy", "array_api_strict", "torch", "cupy"}


def _named(request, skip_or_xfail):
    """The backends that the test's skip/xfail_xp_backends markers name one by one."""
    return {m.args[0] for m in request.node.iter_markers(f"{skip_or_xfail}_xp_backends") if m.args}


def _cupy_may_run(request, skip_or_xfail):
    """Whether every cpu_only marker of the test that stops gpk_array on a GPU names CuPy among its exceptions
    (and no other marker skips gpk_array)."""
    for marker in request.node.iter_markers(f"{skip_or_xfail}_xp_backends"):
        exceptions = set(marker.kwargs.get("exceptions", ()))
        if GPK in exceptions:
            continue
        if marker.kwargs.get("np_only") or (marker.args and marker.args[0] == GPK):
            return False
        if marker.kwargs.get("cpu_only") and "cupy" not in exceptions:
            return False
    return True


# --- array-api-extra ----------------------------------------------------------------------------------------------

def _gpk_backend(Backend):
    """``Backend.GPK_ARRAY``, added to the enum (members cannot be added the ordinary way)."""
    member = Backend._value2member_map_.get(GPK)
    if member is not None:
        return member
    member = object.__new__(Backend)
    member._name_, member._value_ = "GPK_ARRAY", GPK
    member.__objclass__ = Backend
    if hasattr(Backend, "_sort_order_"):
        member._sort_order_ = len(Backend._member_names_)
    Backend._member_map_["GPK_ARRAY"] = member
    Backend._member_names_.append("GPK_ARRAY")
    Backend._value2member_map_[GPK] = member
    type.__setattr__(Backend, "GPK_ARRAY", member)
    return member


def _patch_extra_fixture(fixturedef, selected, Backend):
    keep = [p for p in fixturedef.params if isinstance(p.values[0], Backend) and p.values[0].modname in selected]
    if GPK in selected:
        keep.append(pytest.param(_gpk_backend(Backend), id=GPK))
    fixturedef.params = keep


# --- collection: inject, label, deselect --------------------------------------------------------------------------

@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    peers = getattr(metafunc.config, "_peers", None)
    if peers is None:
        return
    name = {"scipy": "xp", "extra": "library"}.get(peers["suite"])
    if name is None or name not in metafunc.fixturenames:
        return
    for fixturedef in metafunc._arg2fixturedefs.get(name, ()):
        if fixturedef.params is None or getattr(fixturedef, "_peers", False):
            continue
        # SciPy's conftest by the names it defines beside the fixture; array-api-extra's by its Backend enum
        g = inspect.unwrap(fixturedef.func).__globals__
        if peers["suite"] == "scipy" and "xp_available_backends" in g and "xp_known_backends" in g:
            _patch_scipy_fixture(fixturedef, peers["namespaces"], peers["device"])
        elif peers["suite"] == "extra" and getattr(g.get("Backend"), "__name__", None) == "Backend":
            _patch_extra_fixture(fixturedef, peers["namespaces"], g["Backend"])
        else:
            continue
        fixturedef._peers = True


def _label(value):
    """(label, module) of the namespace a parameter value names, or None. The label is the parameter's id
    (array-api-extra runs one module as several backends: ``array_api_strict`` and ``array_api_strictest``)."""
    if isinstance(value, str):
        return (value, value) if value in _KNOWN else None
    if isinstance(value, functools.partial):  # scikit-learn's estimator checks
        for key in ("array_namespace", "X_ns_and_device", "other_ns_and_device"):
            if (found := _label(value.keywords.get(key))) is not None and found[0] != "numpy":
                return found
        return _label(value.keywords.get("array_namespace"))
    if inspect.ismodule(value):
        return (value.__name__, value.__name__) if value.__name__ in _KNOWN else None
    if isinstance(value, enum.Enum) and type(value).__name__ == "Backend":
        label = value.name.lower().replace("_gpu", ":gpu").replace("_readonly", ":readonly")  # its pytest id
        return label, str(value.value).split(":")[0]
    if isinstance(value, tuple) and type(value).__name__ == "NamespaceAndDevice":
        return _label(value.xp)
    return None


def namespace_of(item):
    """(label, module) of the namespace a collected test item runs on, or None where it does not run per
    namespace. A test of mixed inputs (one of them NumPy's, or array_api_strict's beside gpk_array's) counts for
    the namespace that is not NumPy, gpk_array first."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    found = [f for f in map(_label, callspec.params.values()) if f is not None]
    for f in found:
        if f[1] == GPK:
            return f
    for f in found:
        if f[0] != "numpy":
            return f
    return found[0] if found else None


def stable_id(item):
    """The test's id with its module's dotted name for the file part (node ids of installed packages depend on
    where pytest's rootdir is)."""
    module = getattr(getattr(item, "module", None), "__name__", None)
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return f"{module}::{rest}" if module else item.nodeid


def pytest_collection_modifyitems(config, items):
    peers = getattr(config, "_peers", None)
    if peers is None:
        return
    selected = set(peers["namespaces"])
    keep, drop = [], []
    for item in items:
        found = namespace_of(item)
        if found is not None and found[1] in selected:
            item.user_properties += [("peers_namespace", found[0]), ("peers_id", stable_id(item))]
            if found[0] == GPK and peers["suite"] == "extra":
                _extra_generic_skips(item)
            keep.append(item)
        else:
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _extra_generic_skips(item):
    """array-api-extra skips array_api_strict in tests of its delegation to the libraries it knows by name
    (reason "array-agnostic fallback"); gpk_array, not one of them, gets the same fallback and the same skip."""
    for marker in item.iter_markers("skip_xp_backend"):
        reason = marker.kwargs.get("reason") or ""
        if marker.args and getattr(marker.args[0], "name", None) == "ARRAY_API_STRICT" and \
                "array-agnostic" in reason:
            item.add_marker(pytest.mark.skip(reason=f"gpk_array, as array_api_strict: {reason}"))
            return


# --- outcomes -----------------------------------------------------------------------------------------------------

def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    elif isinstance(report.longrepr, tuple):  # skips: (path, line, reason)
        text = str(report.longrepr[-1])
    else:
        text = str(report.longrepr or "")
    text = text.strip().splitlines()
    return text[0][:300] if text else ""


class _Recorder:
    """Collects each test's outcome from its reports (on the controller too, under xdist) and writes them."""

    def __init__(self, path):
        self.path, self.results = path, {}

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        label, nodeid = props.get("peers_namespace"), props.get("peers_id", report.nodeid)
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if report.passed:
                outcome = "xpassed" if xfail else "passed"
            elif report.failed:
                outcome = "failed"
            else:
                outcome = "xfailed" if xfail else "skipped"
        elif report.failed:
            outcome = "error"
        elif report.skipped:
            outcome = "xfailed" if xfail else "skipped"
        else:
            return
        prev = self.results.get(nodeid)
        seconds = round(report.duration + (prev[3] if prev is not None else 0.0), 4)
        if prev is not None and prev[1] in ("failed", "error"):
            prev[3] = seconds
            return  # a teardown error after a failure keeps the failure
        self.results[nodeid] = [label, outcome, "" if outcome in ("passed", "xpassed") else _message(report),
                                seconds]

    def pytest_sessionfinish(self, session):
        with open(self.path, "w") as f:
            json.dump(self.results, f)
