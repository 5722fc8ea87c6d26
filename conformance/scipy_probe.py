"""Probe SciPy on gpk_array Arrays against SciPy on CuPy arrays, function by function (issue 22, item 2).

    python -m conformance.scipy_probe [--device cuda:0] [--dtype float64 float32] [--modules special stats ...]
                                      [--timeout 20] [--json OUT.json]

Every function of SciPy's array-API coverage tables (``scipy._lib._array_api_docs_tables``: the public functions
of special, stats, signal, fft, ndimage, linalg, cluster, integrate, interpolate, spatial.distance) is called the
same way on

- NumPy arrays (the reference: it picks the call; functions no candidate call works for are reported as such),
- CuPy arrays (SciPy's own dispatch to ``cupyx.scipy`` or the array API), where CuPy is installed and the device is
  CUDA,
- gpk_array Arrays on ``--device``, two ways: SciPy's function itself (``scipy.special.erf(x)``: SciPy's array-API
  path, ``Array.__array_ufunc__``, the ``gpk_array.special`` hook) and ``gpk_array.scipy``'s (``gpk_array.scipy
  .special.erf(x)``).

A call works when it raises nothing. Values are compared leaf by leaf (arrays, and the values of result objects and
of interpolators evaluated at the sample points) with CuPy's where CuPy works, else with NumPy's, within 1e-12
(float64) / 1e-5 (float32) relative (plus as much absolute tolerance on results near zero). Written as JSON after
each module (a run cut short keeps what it did); the summary counts, per module, what works with CuPy and with
gpk_array, and lists where CuPy works and gpk_array does not, and where values differ.

``--device cpu`` (no CuPy needed) checks gpk_array on the CPU device against NumPy: a run of the probe itself on a
machine without a GPU. ``--stand-in`` runs gpk_array on the test suite's stand-in CUDA device with a stand-in
``cupyx.scipy`` holding CuPy's names (conformance/results/cupyx_scipy_names.json, from CuPy's source; each computes
with SciPy on the device memory): the routing a real GPU will take, values by construction SciPy's, a prediction
and not a measurement. SCIPY_ARRAY_API=1 is set here, before SciPy is imported.
"""
import argparse
import contextlib
import datetime
import importlib
import inspect
import json
import os
import signal
import sys
import traceback
import warnings

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402

MODULES = ["special", "stats", "signal", "fft", "ndimage", "linalg", "cluster.vq", "cluster.hierarchy",
           "integrate", "interpolate", "spatial.distance"]
TOL = {"float64": 1e-12, "float32": 1e-5}


# --- inputs ---------------------------------------------------------------------------------------------------------
def _data(dtype):
    rng = np.random.default_rng(0)
    x = np.linspace(0.1, 0.9, 16)
    m = rng.uniform(0.1, 0.9, (8, 8))
    d = {
        "x": x, "y": x[::-1] * 0.9 + 0.05, "z": np.sqrt(x),
        "xs": np.linspace(0.0, 1.5, 16),                                 # sorted sample points
        "xm": np.linspace(0.05, 1.45, 7),                                # points between them
        "m": m, "spd": m @ m.T + 8 * np.eye(8), "m2": rng.uniform(0.1, 0.9, (8, 8)),
        "k": np.asarray([[0.25, 0.5], [0.5, 0.25]]),
        "obs": rng.uniform(0.1, 0.9, (12, 3)), "c": rng.uniform(0.1, 0.9, (3, 3)),
        "cond": rng.uniform(0.1, 0.9, 28),                               # a condensed distance matrix of 8
        "b": m > 0.5,
        "i": np.arange(1, 17), "i2": np.arange(2, 18) % 5 + 1,
    }
    return {k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in d.items()}


# candidate calls: (description, positional array keys or scalars, keyword arguments); the first that NumPy takes
# is the call every backend gets
_GENERIC = [
    ("x",), ("x", "y"), ("x", "y", "z"), ("x", "y", "z", "x"),
    ("i", "x"), ("x", "i"), ("i", "i2", "x"), ("i", "x", "y"), ("x", "i", "y"), ("i", "i2"),
    ("x", 0.5), (0.5, "x"), ("x", 2), (2, "x"), ("i",),
    ("m",), ("m", "m2"), ("spd",), ("spd", "x8"), ("m", 1.0), ("m", 2), ("m", 3), ("m", "k"), ("b",),
    ("obs",), ("obs", "c"), ("obs", 3), ("cond",),
    ("xs", "x"), ("xs", "x", "z"),
    ("x", "y", 0.5), ("x", 0.5, 0.5), ("x", 4),
]
_NO_ARRAYS = [(8,), (8, 0.5), (16, 4)]


def _candidates(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    takes_xp = "xp" in params
    cands = [(c, {}) for c in _GENERIC]
    cands += [(c, {"xp": None}) if takes_xp else (c, {}) for c in _NO_ARRAYS]
    return cands


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds):
    def alarm(signum, frame):
        raise _Timeout(f"took more than {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _build(cand, data, conv, xp):
    keys, kw = cand
    args = []
    for k in keys:
        if isinstance(k, str):
            args.append(conv(data["x"][:8] if k == "x8" else data[k]))
        else:
            args.append(k)
    kw = dict(kw)
    if "xp" in kw:
        kw["xp"] = xp
    return args, kw


# --- results as NumPy leaves ----------------------------------------------------------------------------------------
def _leaves(r, to_host, sample, depth=0):
    """r as a list of NumPy arrays: arrays, tuples/lists/dicts of them, result objects' values, interpolators at
    the sample points."""
    if depth > 4:
        return []
    h = to_host(r)
    if h is not None:
        return [h]
    if isinstance(r, (bool, int, float, complex, np.generic)):
        return [np.asarray(r)]
    if isinstance(r, dict):
        return [leaf for k in sorted(r, key=str) for leaf in _leaves(r[k], to_host, sample, depth + 1)]
    if isinstance(r, (tuple, list)):
        return [leaf for v in r for leaf in _leaves(v, to_host, sample, depth + 1)]
    fields = getattr(r, "_fields", None)
    if fields:
        return [leaf for f in fields for leaf in _leaves(getattr(r, f), to_host, sample, depth + 1)]
    if hasattr(r, "__iter__") and hasattr(r, "__len__"):
        try:
            return [leaf for v in r for leaf in _leaves(v, to_host, sample, depth + 1)]
        except TypeError:
            pass
    for attr in ("statistic", "pvalue", "x", "fun", "c", "coeffs"):
        if hasattr(r, attr) and not callable(getattr(r, attr)):
            return [leaf for a in ("statistic", "pvalue", "x", "fun", "c", "coeffs") if hasattr(r, a)
                    and not callable(getattr(r, a)) for leaf in _leaves(getattr(r, a), to_host, sample, depth + 1)]
    if callable(r) and sample is not None:
        return _leaves(r(sample), to_host, None, depth + 1)
    return []


def _match(a, b, tol):
    if len(a) != len(b):
        return False, f"{len(a)} result arrays against {len(b)}"
    for i, (u, v) in enumerate(zip(a, b)):
        u, v = np.asarray(u), np.asarray(v)
        if u.shape != v.shape:
            return False, f"result {i}: shape {u.shape} against {v.shape}"
        if u.dtype.kind in "biu" and v.dtype.kind in "biu":
            if not np.array_equal(u, v):
                return False, f"result {i}: integers differ"
            continue
        if u.dtype.kind not in "biufc" or v.dtype.kind not in "biufc":
            if not np.array_equal(u, v):
                return False, f"result {i}: values differ"
            continue
        scale = float(np.max(np.abs(v[np.isfinite(v)]))) if np.isfinite(v).any() else 1.0
        if not np.allclose(u, v, rtol=tol, atol=tol * max(scale, 1e-300) * 8, equal_nan=True):
            err = np.nanmax(np.abs(u.astype(complex) - v.astype(complex)))
            return False, f"result {i}: max abs difference {err:.3g} (scale {scale:.3g})"
    return True, ""


def _error(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


# --- the backends ---------------------------------------------------------------------------------------------------
def _backends(device):
    import gpk_array as gp
    dev = gp.Device(device)
    out = {}

    def gp_conv(a):
        return gp.asarray(a, device=dev)

    def gp_host(r):
        if isinstance(r, gp.Array):
            SEEN_DEVICES.add(str(r.device))
            return np.asarray(r.to_device("cpu"))
        un = getattr(r, "unwrapped", None)
        if un is not None and not callable(un) and not isinstance(un, (tuple, list)):
            return None
        if isinstance(r, np.ndarray):
            return r   # NumPy data from a gpk_array call: host data, compared as it is
        return None

    out["gpk_direct"] = (gp_conv, gp_host, gp, lambda mod, name: getattr(importlib.import_module(f"scipy.{mod}"),
                                                                         name))
    out["gpk_namespace"] = (gp_conv, gp_host, gp, lambda mod, name: _gpk_scipy_fn(mod, name))
    if dev.kind == "cuda":
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None:
            def cp_conv(a):
                with cupy.cuda.Device(dev.index):
                    return cupy.asarray(a)

            def cp_host(r):
                if isinstance(r, cupy.ndarray):
                    return cupy.asnumpy(r)
                if isinstance(r, np.ndarray):
                    return r
                return None
            out["cupy"] = (cp_conv, cp_host, cupy, lambda mod, name: getattr(importlib.import_module(f"scipy.{mod}"),
                                                                             name))
    return out


SEEN_DEVICES = set()   # the devices of the gpk_array Arrays in the result being read


def _gpk_scipy_fn(mod, name):
    import gpk_array.scipy as gs
    m = gs
    for part in mod.split("."):
        m = getattr(m, part)
    return getattr(m, name)


def _table(modules):
    """[(module, function name, SciPy's claim for CuPy on GPU or None)] of SciPy's coverage tables."""
    rows = []
    try:
        from scipy._lib._array_api_docs_tables import make_flat_capabilities_table
        for mod in modules:
            for row in make_flat_capabilities_table(f"scipy.{mod}", "gpu"):
                claim = row.get("cupy")
                rows.append((mod, row["function"], None if claim is None else getattr(claim, "name", str(claim))))
        return rows
    except ImportError:
        pass
    for mod in modules:   # older SciPy: the modules' public functions
        m = importlib.import_module(f"scipy.{mod}")
        for name in getattr(m, "__all__", []):
            if callable(getattr(m, name, None)):
                rows.append((mod, name, None))
    return rows


def probe(device, dtypes, modules, timeout, json_out=None):
    """Run the probe; returns the report (also written to json_out after each module)."""
    import scipy
    import gpk_array as gp
    report = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(), "device": device,
              "scipy": scipy.__version__, "numpy": np.__version__, "gpk_array": gp.__version__,
              "commit": os.environ.get("GPK_COMMIT", ""), "dtypes": dtypes, "functions": [], "summary": {}}
    try:
        import cupy
        report["cupy"] = cupy.__version__
    except ImportError:
        report["cupy"] = None
    backends = _backends(device)
    rows = _table(modules)
    for mod in modules:
        for (m, name, claim) in rows:
            if m != mod:
                continue
            for dtype in dtypes:
                report["functions"].append(_probe_one(mod, name, claim, dtype, backends, timeout))
        report["summary"] = _summary(report["functions"], device)
        print(f"probed {mod}: {sum(f['module'] == mod for f in report['functions'])} calls", file=sys.stderr,
              flush=True)
        if json_out:
            with open(json_out, "w") as f:
                json.dump(report, f, indent=1, default=str)
    return report


def _probe_one(mod, name, claim, dtype, backends, timeout):
    entry = {"module": mod, "function": name, "dtype": dtype, "scipy_claims_cupy_gpu": claim}
    fn = getattr(importlib.import_module(f"scipy.{mod}"), name)
    data = _data(dtype)
    sample = data["xm"]
    call = ref = None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for cand in _candidates(fn):
            try:
                with _deadline(timeout):
                    args, kw = _build(cand, data, lambda a: a, np)
                    r = fn(*args, **kw)
                    leaves = _leaves(r, lambda v: v if isinstance(v, np.ndarray) else None, sample)
            except Exception:
                continue
            if leaves:
                call, ref = cand, leaves
                break
        if call is None:
            entry["numpy"] = "no candidate call works with NumPy arrays"
            return entry
        entry["call"] = f"{name}({', '.join(map(str, call[0]))}{', xp=...' if 'xp' in call[1] else ''})"
        entry["numpy"] = "ok"
        entry["array_inputs"] = any(isinstance(k, str) for k in call[0]) or "xp" in call[1]
        results = {}
        for bname, (conv, host, xp, get) in backends.items():
            try:
                f = get(mod, name)
                SEEN_DEVICES.clear()
                with _deadline(timeout):
                    args, kw = _build(call, data, conv, xp)
                    if "xp" in kw and bname != "cupy":
                        kw["device"] = conv(np.zeros(1)).device
                    r = f(*args, **kw)
                    leaves = _leaves(r, host, conv(sample))
                if not leaves:
                    raise TypeError(f"no arrays in the result ({type(r).__name__})")
                results[bname] = leaves
                entry[bname] = {"ok": True}
                if bname != "cupy":
                    entry[bname]["result_devices"] = sorted(SEEN_DEVICES)
            except Exception as e:
                entry[bname] = {"ok": False, "error": _error(e)}
        oracle = results.get("cupy", ref)
        for bname in ("gpk_direct", "gpk_namespace"):
            if bname in results:
                ok, why = _match(results[bname], oracle, TOL[dtype])
                entry[bname]["match"] = ok
                if not ok:
                    entry[bname]["mismatch"] = why + (" (against CuPy)" if "cupy" in results else " (against NumPy)")
        if "cupy" in results:
            ok, why = _match(results["cupy"], ref, max(TOL[dtype], 1e-9))
            entry["cupy"]["matches_numpy"] = ok
    return entry


def _works(e, device):
    """Whether a gpk_array call worked: no exception, and on a CUDA device no result on the CPU device (a result
    computed on the host from host values is not a device result)."""
    return bool(e.get("ok")) and (device == "cpu" or "cpu" not in e.get("result_devices", []))


def _summary(rows, device):
    out = {}
    for r in rows:
        s = out.setdefault(f"{r['module']}/{r['dtype']}", {
            "functions": 0, "numpy_call_found": 0, "cupy_ok": 0, "gpk_ok": 0, "gpk_direct_ok": 0,
            "gpk_namespace_ok": 0, "gpk_ok_and_matching": 0, "cupy_ok_gpk_not": [], "value_mismatch": []})
        s["functions"] += 1
        if r.get("numpy") != "ok":
            continue
        s["numpy_call_found"] += 1
        cupy_ok = r.get("cupy", {}).get("ok", False)
        d, n = r.get("gpk_direct", {}), r.get("gpk_namespace", {})
        on = device if r.get("array_inputs", True) else "cpu"   # no arrays in the call: no device to be on
        dok, nok = _works(d, on), _works(n, on)
        gpk_ok = dok or nok
        s["cupy_ok"] += cupy_ok
        s["gpk_ok"] += gpk_ok
        s["gpk_direct_ok"] += dok
        s["gpk_namespace_ok"] += nok
        matching = (dok and d.get("match")) or (nok and n.get("match"))
        s["gpk_ok_and_matching"] += bool(matching)
        if cupy_ok and not gpk_ok:
            s["cupy_ok_gpk_not"].append(r["function"])
        if gpk_ok and not matching:
            s["value_mismatch"].append(r["function"])
    return out


@contextlib.contextmanager
def _stand_in():
    """The test suite's stand-in cuda:0 (made the default device) with a stand-in cupyx.scipy of CuPy's names."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from tests.numpy_compat.fakecupyx import fake_cupyx
    from tests.numpy_compat.fakegpu import fake_cuda_device
    import gpk_array as gp
    with open(os.path.join(root, "conformance", "results", "cupyx_scipy_names.json")) as f:
        names = json.load(f)["modules"]
    with fake_cuda_device() as dev, fake_cupyx(names):
        old = gp._device._default
        gp.set_default_device(dev)
        try:
            yield
        finally:
            gp._device._default = old


def _print(report):
    print(f"SciPy {report['scipy']}, CuPy {report['cupy']}, device {report['device']}")
    print(f"{'module/dtype':28s} {'funcs':>5s} {'call':>5s} {'cupy':>5s} {'gpk':>5s} {'direct':>6s} {'ns':>5s} "
          f"{'match':>5s}  cupy-only")
    for k, s in report["summary"].items():
        print(f"{k:28s} {s['functions']:5d} {s['numpy_call_found']:5d} {s['cupy_ok']:5d} {s['gpk_ok']:5d} "
              f"{s['gpk_direct_ok']:6d} {s['gpk_namespace_ok']:5d} {s['gpk_ok_and_matching']:5d}  "
              f"{', '.join(s['cupy_ok_gpk_not'][:12])}")


def markdown(cpu, cuda):
    """docs/scipy.md's per-module lists from a CPU report and a CUDA (or stand-in) report."""
    lines = []
    by = {}
    for rep, dev in ((cpu, "cpu"), (cuda, "cuda")):
        for f in rep["functions"]:
            if f["dtype"] == "float64":
                by.setdefault((f["module"], f["function"]), {})[dev] = f
    modules = []
    for (m, _) in by:
        if m not in modules:
            modules.append(m)
    for m in modules:
        rows = {n: v for (mm, n), v in by.items() if mm == m}
        unprobed = sorted(n for n, v in rows.items() if v.get("cpu", {}).get("numpy") != "ok")
        probed = sorted(n for n in rows if n not in unprobed)

        def ok(v, key, device="cuda"):
            e = v.get(key, {})
            return _works(e, device) and e.get("match")
        cpu_ok = [n for n in probed if ok(rows[n].get("cpu", {}), "gpk_namespace", "cpu")]
        cpu_bad = [n for n in probed if n not in cpu_ok]
        cu = {n: rows[n].get("cuda", {}) for n in probed}
        hostonly = [n for n in probed if not cu[n].get("array_inputs", True)]
        probed_dev = [n for n in probed if n not in hostonly]
        direct = [n for n in probed_dev if ok(cu[n], "gpk_direct")]
        via = [n for n in probed_dev if n not in direct and ok(cu[n], "gpk_namespace")]
        bad = [n for n in probed_dev if n not in direct and n not in via]
        lines.append(f"### scipy.{m}\n")
        lines.append(f"- probed: {len(probed)} of {len(rows)} functions (no candidate call fits the others)")
        lines.append(f"- CPU device, `gpk_array.scipy.{m}`: {len(cpu_ok)} of {len(probed)}"
                     + (f"; not: {', '.join(f'`{n}`' for n in cpu_bad)} (random draws or SciPy's own failures)"
                        if cpu_bad else ""))
        lines.append(f"- CUDA, SciPy's own function on the Arrays (`scipy.{m}.f(x)`): {len(direct)}: "
                     + ", ".join(f"`{n}`" for n in direct))
        lines.append(f"- CUDA, only through `gpk_array.scipy.{m}` (CuPy's `cupyx.scipy.{m}`, or gpk_array.linalg): "
                     f"{len(via)}: " + ", ".join(f"`{n}`" for n in via))
        lines.append(f"- CUDA, neither (HostOnlyError): {len(bad)}: " + ", ".join(f"`{n}`" for n in bad))
        if hostonly:
            lines.append("- called without arrays (SciPy's results, on the CPU): "
                         + ", ".join(f"`{n}`" for n in hostonly))
        if unprobed:
            lines.append("- not probed: " + ", ".join(f"`{n}`" for n in unprobed))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dtype", nargs="+", default=["float64"], choices=sorted(TOL))
    ap.add_argument("--modules", nargs="+", default=MODULES)
    ap.add_argument("--timeout", type=int, default=20, help="seconds per call")
    ap.add_argument("--json", help="write the report here (after each module)")
    ap.add_argument("--stand-in", action="store_true",
                    help="the stand-in CUDA device and cupyx.scipy of the test suite (no GPU needed)")
    ap.add_argument("--markdown", nargs=2, metavar=("CPU.json", "CUDA.json"),
                    help="print docs/scipy.md's per-module lists from two reports, and exit")
    a = ap.parse_args(argv)
    if a.markdown:
        with open(a.markdown[0]) as f, open(a.markdown[1]) as g:
            print(markdown(json.load(f), json.load(g)))
        return 0
    try:
        if a.stand_in:
            with _stand_in():
                report = probe("cuda:0", a.dtype, a.modules, a.timeout, a.json)
            report["stand_in"] = True
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(report, f, indent=1, default=str)
        else:
            report = probe(a.device, a.dtype, a.modules, a.timeout, a.json)
    except Exception:
        traceback.print_exc()
        return 2
    _print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
