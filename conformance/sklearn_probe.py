"""Probe scikit-learn's array-API estimators, meta-estimators, metrics and tools on gpk_array arrays, each against
the same call on NumPy arrays, with scikit-learn's own checks, beside the namespaces scikit-learn itself tests.

    python -m conformance.sklearn_probe [--device cpu|cuda:0] [--dtypes float64,float32]
                                        [--compare array_api_strict] [--only NAME,...] [--json OUT.json]

What is probed:
- estimators: every instance scikit-learn's own test-instance generator builds whose ``array_api_support`` tag is
  set, plus the configurations its documentation (doc/modules/array_api.rst) lists (PCA's solvers, Ridge and
  RidgeClassifier with ``solver="svd"``, MaxAbsScaler, GaussianMixture with random initialisation,
  CalibratedClassifierCV with ``method="temperature"``, the search meta-estimators, PoissonRegressor, ...), through
  ``sklearn.utils.estimator_checks.check_array_api_input(..., check_values=True)`` (fitted attributes and every
  method's output compared with the NumPy fit: namespace, device, dtype, shape and values);
- metrics: every metric of scikit-learn's ``array_api_metric_checkers`` table with each of its checkers;
- tools: ``train_test_split``, ``cross_val_predict`` and ``check_consistent_length`` against their NumPy results.

An estimator whose values differ from NumPy's but whose namespace, device, dtype and shape checks pass is
reported as "types only" (PCA's default solver and GaussianMixture do so for every namespace). Each probe runs on
gpk_array (``--device``, each dtype) and on each ``--compare`` namespace (its devices as
scikit-learn's test generator gives them), so a failure can be told apart from one of scikit-learn's own. Prints
a table (probe, then one column per namespace/device/dtype) and writes JSON. Exit status 1 when some probe fails
on gpk_array where every comparison namespace passes it.
"""
import argparse
import json
import os
import sys
import time
import traceback
import warnings

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy / scikit-learn are imported

GPK = "gpk_array"


def documented_estimators():
    """Instances in the configurations scikit-learn's array-API documentation lists (sklearn 1.9)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import (LogisticRegression, PoissonRegressor, Ridge, RidgeClassifier,
                                      RidgeClassifierCV, RidgeCV)
    from sklearn.mixture import GaussianMixture
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV
    from sklearn.naive_bayes import GaussianNB
    from sklearn.preprocessing import (Binarizer, KernelCenterer, MaxAbsScaler, MinMaxScaler, Normalizer,
                                       PolynomialFeatures, StandardScaler)
    out = [PCA(n_components=2, svd_solver="full"), PCA(n_components=2, svd_solver="covariance_eigh"),
           PCA(n_components=2, svd_solver="randomized", power_iteration_normalizer="QR", random_state=0),
           PCA(n_components=2, svd_solver="full", whiten=True), Ridge(solver="svd"), RidgeCV(),
           RidgeClassifier(solver="svd"), RidgeClassifierCV(), LinearDiscriminantAnalysis(solver="svd"),
           Binarizer(), KernelCenterer(), MaxAbsScaler(), MinMaxScaler(), Normalizer(), PolynomialFeatures(),
           StandardScaler(), GaussianMixture(n_components=2, init_params="random", random_state=0),
           GaussianMixture(n_components=2, init_params="random_from_data", random_state=0), GaussianNB(),
           LogisticRegression(), PoissonRegressor(), Nystroem(n_components=10, random_state=0),
           CalibratedClassifierCV(LogisticRegression(), method="temperature"),
           GridSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 1.0]}, cv=2),
           RandomizedSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 1.0]}, n_iter=2, cv=2, random_state=0)]
    try:
        from sklearn.experimental import enable_halving_search_cv  # noqa: F401
        from sklearn.model_selection import HalvingGridSearchCV, HalvingRandomSearchCV
        out += [HalvingGridSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 1.0]}, cv=2, min_resources=20),
                HalvingRandomSearchCV(Ridge(solver="svd"), {"alpha": [0.1, 1.0]}, cv=2, min_resources=20,
                                      random_state=0)]
    except ImportError:
        pass
    return out


def tagged_estimators():
    """The instances scikit-learn's test-instance generator builds whose array_api_support tag is set."""
    from unittest import SkipTest

    from sklearn.utils import all_estimators
    from sklearn.utils._tags import get_tags
    try:
        from sklearn.utils._test_common.instance_generator import _construct_instances
    except ImportError:  # another scikit-learn layout: default instances
        def _construct_instances(E):
            yield E()
    out = []
    for _, E in all_estimators():
        try:
            instances = list(_construct_instances(E))
        except (SkipTest, TypeError, ValueError):
            continue
        out += [i for i in instances if get_tags(i).array_api_support]
    return out


def estimator_probes():
    """[(probe name, instance)] without repeats (one name per distinct repr)."""
    seen, out = set(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        candidates = tagged_estimators() + documented_estimators()
    for est in candidates:
        name = " ".join(repr(est).split())
        if name not in seen:
            seen.add(name)
            out.append((name, est))
    return out


def metric_probes():
    """[(probe name, metric, checker)] from scikit-learn's own table of array-API metrics."""
    try:
        from sklearn.metrics.tests.test_common import array_api_metric_checkers
    except ImportError:
        return []
    out = []
    for metric, checkers in array_api_metric_checkers.items():
        name = getattr(metric, "__name__", None) or getattr(getattr(metric, "func", None), "__name__", repr(metric))
        if hasattr(metric, "keywords") and metric.keywords:
            name += "(" + ",".join(f"{k}={v}" for k, v in metric.keywords.items()) + ")"
        for checker in checkers:
            out.append((f"{name} {checker.__name__.removeprefix('check_array_api_')}", metric, checker))
    return out


def _tool_probes():
    import numpy as np
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import cross_val_predict, train_test_split
    from sklearn.preprocessing import LabelEncoder
    from sklearn.utils import check_consistent_length

    def split(xp, device, dtype):
        X = np.arange(40, dtype=dtype).reshape(20, 2)
        y = np.arange(20, dtype=dtype)
        ref = train_test_split(X, y, test_size=0.25, random_state=0)
        got = train_test_split(xp.asarray(X, device=device), xp.asarray(y, device=device), test_size=0.25,
                               random_state=0)
        return ref, got

    def cvp(xp, device, dtype):
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(40, 3)).astype(dtype), rng.normal(size=40).astype(dtype)
        ref = cross_val_predict(Ridge(solver="svd"), X, y, cv=3)
        got = cross_val_predict(Ridge(solver="svd"), xp.asarray(X, device=device), xp.asarray(y, device=device),
                                cv=3)
        return [ref], [got]

    def ccl(xp, device, dtype):
        a, b = xp.asarray(np.zeros(3, dtype), device=device), xp.asarray(np.zeros(4, dtype), device=device)
        check_consistent_length(a, a)
        try:
            check_consistent_length(a, b)
        except ValueError:
            return [], []
        raise AssertionError("check_consistent_length accepted lengths 3 and 4")
    def label_encoder(xp, device, dtype):
        y = np.array([3, 1, 7, 1, 3, 3, 9])
        ref = LabelEncoder().fit(y)
        enc = LabelEncoder().fit(xp.asarray(y, device=device))
        codes = enc.transform(xp.asarray(y, device=device))
        return [ref.classes_, ref.transform(y), y], [enc.classes_, codes, enc.inverse_transform(codes)]
    return [("train_test_split", split), ("cross_val_predict(Ridge)", cvp), ("check_consistent_length", ccl),
            ("LabelEncoder fit/transform/inverse_transform", label_encoder)]


def _to_numpy(a):
    import numpy as np
    if type(a).__module__.startswith("array_api_strict"):
        import array_api_strict
        a = a.to_device(array_api_strict.Device("CPU_DEVICE"))
    elif hasattr(a, "to_device"):  # gpk_array
        a = a.to_device("cpu")
    if hasattr(a, "cpu"):  # torch
        a = a.cpu()
    if hasattr(a, "get"):  # cupy
        a = a.get()
    return np.asarray(a)


def run_tool(fn, namespace, device, dtype):
    import numpy as np
    from sklearn import config_context
    from sklearn.utils._testing import _array_api_for_tests
    xp, dev = _array_api_for_tests(namespace, device, dtype)
    with config_context(array_api_dispatch=True):
        ref, got = fn(xp, dev, dtype)
    for r, g in zip(ref, got):
        if not isinstance(g, (np.ndarray, list)):  # an array of the namespace, on the input's device
            assert type(g).__module__.split(".")[0] == namespace.split(".")[0], type(g)
        np.testing.assert_allclose(_to_numpy(g), r, rtol=1e-5 if dtype == "float32" else 1e-12)


def configurations(namespaces, device, dtypes):
    """[(namespace, device name, dtype name)]: gpk_array on ``device``; the others as scikit-learn tests them."""
    from sklearn.utils._array_api import yield_namespace_device_dtype_combinations
    kind = "cpu" if device == "cpu" else "cuda"
    out = []
    for ns in namespaces:
        if ns == GPK:
            out += [(GPK, device, dt) for dt in dtypes]
            continue
        for name, dev, dt in yield_namespace_device_dtype_combinations():
            if name != ns or (name == "torch" and dev != kind) or (dt is not None and dt not in dtypes):
                continue
            out.append((name, dev, dt))
    return out


def run_one(call):
    """'passed', 'skipped: why' or 'failed: Error: first line' for one probe call."""
    from unittest import SkipTest
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except SkipTest as e:
        return f"skipped: {str(e).splitlines()[0][:200] if str(e) else ''}"
    except Exception as e:  # noqa: BLE001  (a probe reports every failure)
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        first = lines[0][:240] if lines else ""
        where = traceback.extract_tb(e.__traceback__)[-1]
        return f"failed: {type(e).__name__}: {first} ({os.path.basename(where.filename)}:{where.lineno})"
    return "passed"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--compare", default="array_api_strict",
                    help="namespaces scikit-learn tests, probed beside gpk_array (array_api_strict, torch, cupy)")
    ap.add_argument("--only", help="comma-separated substrings: probe only names containing one")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    import gpk_array
    gpk_array.set_default_device(a.device)
    import sklearn
    from sklearn.utils.estimator_checks import check_array_api_input
    dtypes = [d for d in a.dtypes.split(",") if d]
    namespaces = [GPK] + [n for n in a.compare.split(",") if n and n != GPK]
    configs = configurations(namespaces, a.device, dtypes)
    probes = []
    for name, est in estimator_probes():
        if type(est).__name__ == "LabelEncoder":  # fit(y) alone: the generic check cannot call it (tools below)
            continue
        probes.append(("estimator", name, lambda ns, dev, dt, values=True, est=est, name=name:
                       check_array_api_input(name, est, array_namespace=ns, device_name=dev, dtype_name=dt,
                                             check_values=values)))
    for name, metric, checker in metric_probes():
        probes.append(("metric", name, lambda ns, dev, dt, m=metric, c=checker: c(m, ns, dev, dt)))
    for name, fn in _tool_probes():
        probes.append(("tool", name, lambda ns, dev, dt, fn=fn: run_tool(fn, ns, dev, dt or "float64")))
    if a.only:
        keys = [k for k in a.only.split(",") if k]
        probes = [p for p in probes if any(k in p[1] for k in keys)]
    rows, t0 = [], time.monotonic()
    for kind, name, fn in probes:
        row = {"kind": kind, "probe": name, "results": {}}
        for ns, dev, dt in configs:
            res = run_one(lambda: fn(ns, dev, dt))
            if kind == "estimator" and res.startswith("failed"):  # do namespace, device, dtype, shape hold?
                if run_one(lambda: fn(ns, dev, dt, values=False)) == "passed":
                    res = "types only: values differ: " + res[len("failed: "):]
            row["results"][f"{ns}/{dev}/{dt}"] = res
        rows.append(row)
    cols = [f"{ns}/{dev}/{dt}" for ns, dev, dt in configs]
    gpk_cols = [c for c in cols if c.startswith(GPK + "/")]
    other_cols = [c for c in cols if c not in gpk_cols]
    ours = []
    for r in rows:
        for c in gpk_cols:
            res = r["results"][c]
            values_elsewhere = any(r["results"][o] == "passed" for o in other_cols)
            if res.startswith("failed") or (res.startswith("types only") and values_elsewhere):
                others = {o: r["results"][o].split(":")[0] for o in other_cols}
                ours.append({"probe": r["probe"], "kind": r["kind"], "config": c, "result": res, "others": others})
    counts = {c: {k: sum(r["results"][c].startswith(p) for r in rows) for k, p in
                  (("passed", "passed"), ("types only", "types only"), ("failed", "failed"),
                   ("skipped", "skipped"))} for c in cols}
    print(f"scikit-learn {sklearn.__version__} array-API probe: {len(rows)} probes, gpk_array on {a.device}, "
          f"{time.monotonic() - t0:.0f} s")
    print(f"{'configuration':40} {'passed':>7} {'types only':>10} {'failed':>7} {'skipped':>8}")
    for c in cols:
        n = counts[c]
        print(f"{c:40} {n['passed']:7} {n['types only']:10} {n['failed']:7} {n['skipped']:8}")
    for f in ours:
        others = ", ".join(f"{k} {v}" for k, v in f["others"].items())
        print(f"  {f['config']}  {f['kind']} {f['probe'][:90]}: {f['result'][:200]}  [{others}]")
    if a.json:
        from conformance.peers import versions
        out = {"device": a.device, "dtypes": dtypes, "namespaces": namespaces, "date": time.strftime("%Y-%m-%d"),
               "versions": versions(["sklearn"]), "counts": counts, "gpk_array_failures": ours, "probes": rows}
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if any(all(f["others"].get(o) == "passed" for o in other_cols) for f in ours) else 0


if __name__ == "__main__":
    sys.exit(main())
