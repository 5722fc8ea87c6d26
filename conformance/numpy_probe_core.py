"""The machinery of conformance/numpy_probe.py: run one piece of NumPy code with ``np`` (and ``import numpy``)
bound to a module, and compare what it computed under NumPy with what it computed under gpk_array.

Two kinds of item:
- a script (a numpy-100 exercise): run as one ``exec``; every top-level name it binds to a value and its printed
  output are compared;
- a docstring's Examples section (doctest syntax): the examples run one after another in one namespace, as doctest
  runs them; each expression's value, each expected exception and each example's printed output are compared.
  Examples marked ``+SKIP`` and plotting examples (matplotlib: pictures, not values) are left out under both
  bindings.

The legacy generator is seeded (0) before each item and ``default_rng()`` without a seed takes seeds 0, 1, ... in
call order, under both bindings. NumPy runs every item twice: a value (or printed text) that still differs between
those two runs, or that NumPy's docstring marks "# may vary" (or that is uninitialized memory), is compared on its
type, shape and dtype only. An item passes when at least one thing was compared and everything compared matched;
it is skipped when nothing could be compared (NumPy itself raised NameError/ImportError/SyntaxError/OSError, the
values are functions, iterators or objects whose repr holds an address); it fails at the first difference, with
the reason. Where NumPy's code raises anything else (an example showing an error), the same exception type must
come.
"""
import builtins
import contextlib
import doctest
import importlib
import io
import math
import os
import re
import signal
import tempfile
import types
import warnings

import numpy

TIMEOUT_S = 30


class Uncomparable(Exception):
    """The value cannot be compared (a function, an iterator, an object printed with its address)."""


class ProbeTimeout(BaseException):
    """An item ran past its time limit (a BaseException so that the code under test cannot swallow it)."""


# --- binding np / import numpy to a module ---------------------------------------------------------------------

def _resolve(module, dotted):
    """numpy.X.Y under ``module``: attribute lookup first, then an import of module.X.Y."""
    obj = module
    for part in dotted.split(".")[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
    return obj


def namespace(module):
    """A fresh globals dict in which ``np`` and ``import numpy ...`` mean ``module``."""
    real_import = builtins.__import__

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if module is not numpy and level == 0 and (name == "numpy" or name.startswith("numpy.")):
            return _resolve(module, name) if fromlist else module
        return real_import(name, globals, locals, fromlist, level)

    b = dict(vars(builtins), __import__=_import)
    return {"np": module, "__builtins__": b, "__name__": "__numpy_probe__"}


def _seed(module):
    random = getattr(module, "random", None)
    if random is not None and hasattr(random, "seed"):
        random.seed(0)
    numpy.random.seed(0)


@contextlib.contextmanager
def _seeded_default_rng(module):
    """``default_rng()`` without a seed draws from seeds 0, 1, 2, ... in call order, under either binding, so that
    random examples give the same numbers in every run (gpk_array's generators give NumPy's streams)."""
    random = getattr(module, "random", None)
    original = getattr(random, "default_rng", None)
    if original is None:
        yield
        return
    calls = iter(range(1 << 30))

    def default_rng(seed=None, *args, **kwargs):
        return original(next(calls) if seed is None else seed, *args, **kwargs)

    random.default_rng = default_rng
    try:
        yield
    finally:
        random.default_rng = original


@contextlib.contextmanager
def isolated(module, timeout=TIMEOUT_S):
    """Run inside a temporary working directory, with NumPy's print options and error state restored after,
    warnings silenced, seeded generators and a time limit; yields the captured stdout."""
    saved_print, saved_err = numpy.get_printoptions(), numpy.geterr()
    gp = getattr(module, "get_printoptions", None)
    saved_mod_print = gp() if gp is not None and module is not numpy else None
    cwd = os.getcwd()
    out = io.StringIO()
    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            _seed(module)
            signal.alarm(timeout)
            with warnings.catch_warnings(), contextlib.redirect_stdout(out), _seeded_default_rng(module):
                warnings.simplefilter("ignore")
                yield out
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old_handler)
            os.chdir(cwd)
            numpy.set_printoptions(**saved_print)
            numpy.seterr(**saved_err)
            if saved_mod_print is not None:
                with contextlib.suppress(Exception):
                    module.set_printoptions(**saved_mod_print)


def _on_alarm(signum, frame):
    raise ProbeTimeout(f"ran past {TIMEOUT_S} s")


# --- comparing values ----------------------------------------------------------------------------------------

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def _is_gpk(v):
    return not isinstance(v, type) and any(c.__module__.split(".")[0] == "gpk_array" for c in type(v).__mro__)


def host(v):
    """A gpk_array Array as a NumPy array; anything else unchanged."""
    if _is_gpk(v) and hasattr(v, "to_device"):
        return numpy.asarray(v.to_device("cpu"))
    return v


def snapshot(v):
    """A copy of the arrays in v (through lists, tuples and dicts), so that later in-place changes leave it."""
    if _is_gpk(v) and hasattr(v, "to_device"):
        try:
            return numpy.array(host(v), copy=True)
        except Exception:  # noqa: BLE001  (compared as it is)
            return v
    if isinstance(v, numpy.ndarray):
        return v.copy()
    if type(v) in (list, tuple):
        return type(v)(snapshot(i) for i in v)
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return tuple(snapshot(i) for i in v)
    if type(v) is dict:
        return {k: snapshot(i) for k, i in v.items()}
    return v


def _tolerance(dtype, device):
    dt = numpy.dtype(dtype)
    gpu = device != "cpu"
    if dt.kind in "fc" and dt.itemsize <= 2:  # float16, bfloat16
        return 1e-2, 1e-3
    if dt in (numpy.float32, numpy.complex64):
        return (1e-4, 1e-6) if gpu else (1e-5, 1e-6)
    return (1e-7, 1e-12) if gpu else (1e-9, 1e-12)


def _close_text(g, w, rtol):
    """Printed text equal, or equal but for numbers within rtol (the last digits of a GPU's float32)."""
    if g == w:
        return True
    if " ".join(g.split()) == " ".join(w.split()):
        return True
    if _NUMBER.sub("#", g).split() != _NUMBER.sub("#", w).split():
        return False
    gn, wn = _NUMBER.findall(g), _NUMBER.findall(w)
    for a, b in zip(gn, wn):
        fa, fb = float(a), float(b)
        if not (fa == fb or (math.isnan(fa) and math.isnan(fb))
                or abs(fa - fb) <= rtol * max(abs(fa), abs(fb)) + 1e-8):
            return False
    return True


def _array_diff(g, w, device, structure_only):
    if g.shape != w.shape:
        return f"shape {g.shape} != {w.shape}"
    if g.dtype != w.dtype:
        return f"dtype {g.dtype} != {w.dtype}"
    if structure_only:
        return None
    if w.dtype.kind in "fc":
        rtol, atol = _tolerance(w.dtype, device)
        if numpy.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            return None
        bad = ~numpy.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        return f"values differ ({int(bad.sum())} of {w.size}): {g[bad][:3].tolist()} != {w[bad][:3].tolist()}"
    try:
        same = numpy.array_equal(g, w, equal_nan=w.dtype.kind not in "biuSUVMmO")
    except (TypeError, ValueError):
        same = numpy.array_equal(g, w)
    if same:
        return None
    return f"values differ: {numpy.ravel(g)[:4].tolist()} != {numpy.ravel(w)[:4].tolist()}"


def diff(got, want, device="cpu", structure_only=False):
    """None when ``got`` (computed under gpk_array) matches ``want`` (NumPy's), else a short reason; raises
    Uncomparable for values that cannot be compared. A 0-d Array stands for NumPy's scalar (the value is
    compared); lists and tuples stand for each other."""
    if isinstance(want, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type(iter(())),
                         types.GeneratorType, type)) and not (isinstance(want, type) and issubclass(want,
                                                                                                    numpy.generic)):
        raise Uncomparable(type(want).__name__)
    got = host(got)
    if isinstance(want, bytes) and structure_only:
        return None if isinstance(got, bytes) and len(got) == len(want) else f"{got!r} != {want!r}"
    if want is None or isinstance(want, (bool, bytes)):
        if isinstance(want, bool) and isinstance(got, (numpy.ndarray, numpy.generic)) and numpy.ndim(got) == 0 \
                and numpy.asarray(got).dtype == bool:
            got = bool(got)
        return None if (got is want or (type(got) is type(want) and got == want)) else f"{got!r} != {want!r}"
    if isinstance(want, str):
        if not isinstance(got, str):
            return f"{type(got).__name__} != str"
        if _ADDRESS.search(want):
            raise Uncomparable("text with an address")
        return None if structure_only or _close_text(got, want, _tolerance(numpy.float64, device)[0] * 1e3) \
            else f"text differs: {got[:60]!r} != {want[:60]!r}"
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"{type(got).__name__} != {type(want).__name__}"
        if len(got) != len(want):
            return f"length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            d = diff(g, w, device, structure_only)
            if d:
                return f"[{i}]: {d}"
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return "dict keys differ"
        for k in want:
            d = diff(got[k], want[k], device, structure_only)
            if d:
                return f"[{k!r}]: {d}"
        return None
    if isinstance(want, numpy.dtype) or (isinstance(want, type) and issubclass(want, numpy.generic)):
        try:
            return None if numpy.dtype(got) == numpy.dtype(want) else f"dtype {got!r} != {want!r}"
        except TypeError:
            return f"{got!r} != dtype {want!r}"
    if isinstance(want, (int, float, complex)):
        if isinstance(got, (numpy.ndarray, numpy.generic)) and numpy.ndim(got) == 0:
            got = numpy.asarray(got).item()
        if not isinstance(got, (int, float, complex)) or isinstance(got, bool):
            return f"{type(got).__name__} != {type(want).__name__}"
        if structure_only:
            return None
        w, g = numpy.asarray(want), numpy.asarray(got)
        return _array_diff(g.astype(w.dtype) if g.dtype.kind in "biufc" else g, w, device, False)
    if isinstance(want, (numpy.ndarray, numpy.generic)):
        if isinstance(want, numpy.ma.MaskedArray):
            raise Uncomparable("masked array")
        if isinstance(got, (int, float, complex)) and numpy.ndim(want) == 0:
            got = numpy.asarray(got, dtype=want.dtype)
        if not isinstance(got, (numpy.ndarray, numpy.generic)):
            return f"{type(got).__name__} != {type(want).__name__}"
        return _array_diff(numpy.asarray(got), numpy.asarray(want), device, structure_only)
    r = repr(want)
    if _ADDRESS.search(r):
        raise Uncomparable(f"{type(want).__name__} printed with its address")
    g = repr(got)
    return None if structure_only or _close_text(g, r, 1e-6) else f"repr {g[:60]!r} != {r[:60]!r}"


def _same_run(a, b):
    """Two NumPy runs agree exactly (deterministic value)."""
    try:
        return diff(a, b, "cpu") is None
    except Uncomparable:
        return True
    except Exception:  # noqa: BLE001
        return False


# --- scripts ---------------------------------------------------------------------------------------------------

_MAGIC = re.compile(r"^(\s*)%(\w+)\s?(.*)$", re.M)


def _unmagic(source):
    """IPython line magics as plain Python: ``%timeit stmt`` runs stmt once, other magics are left out."""
    return _MAGIC.sub(lambda m: m.group(1) + (m.group(3) if m.group(2) == "timeit" else "pass  # %" + m.group(2)),
                      source)


_MISSING = object()
# NumPy raising these means the script cannot run here at all (a package missing, a name from elsewhere)
_ENVIRONMENT_ERRORS = (ImportError, NameError, SyntaxError, OSError)


class Session:
    """One namespace in which scripts run one after another, as the cells of a notebook do."""

    def __init__(self, module):
        self.module, self.ns = module, namespace(module)

    def run(self, source):
        """(the names this script bound or rebound with their values, printed text, exception or None)."""
        before = dict(self.ns)  # the objects themselves: a new one may reuse a freed one's id
        err = None
        with isolated(self.module) as out:
            try:
                with numpy.errstate(all="ignore"):
                    exec(compile(_unmagic(source), "<script>", "exec"), self.ns)
            except ProbeTimeout as e:
                err = e
            except Exception as e:  # noqa: BLE001
                err = e
        star = vars(self.module)
        # the names this script (re)bound, but not what ``from numpy import *`` bound
        values = {k: v for k, v in self.ns.items() if not k.startswith("_") and k != "np"
                  and before.get(k, _MISSING) is not v and star.get(k) is not v}
        return values, out.getvalue(), err


def _reason(e):
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0][:120] if lines else ''}"


def probe_session(sources, module, device="cpu", reference=numpy):
    """Outcomes of scripts run one after another in one namespace per binding (numpy-100's notebook)."""
    s1, s2, sg = Session(reference), Session(reference), Session(module)
    return [_compare_script(s1.run(src), s2.run(src), sg.run(src), device) for src in sources]


def probe_script(source, module, device="cpu", reference=numpy):
    """Outcome of one script: {"outcome": passed|failed|skipped, "reason", "compared"}."""
    return probe_session([source], module, device, reference)[0]


def _compare_script(run1, run2, rung, device):
    (w1, out1, e1), (w2, out2, _), (g, gout, ge) = run1, run2, rung
    if isinstance(e1, _ENVIRONMENT_ERRORS) or isinstance(e1, ProbeTimeout):
        return {"outcome": "skipped", "reason": f"NumPy raises {_reason(e1)}", "compared": 0}
    compared = 0
    if e1 is not None:  # the script shows an error: the same error must come
        if ge is None or not _exc_matches(ge, e1):
            why = f"raises {_reason(ge)}" if ge is not None else "no exception"
            return {"outcome": "failed", "reason": f"{why} where NumPy raises {_reason(e1)}", "compared": 0}
        compared += 1
    elif ge is not None:
        return {"outcome": "failed", "reason": _reason(ge), "compared": 0}
    for k, w in w1.items():
        if k not in g:
            return {"outcome": "failed", "reason": f"name {k!r} not bound", "compared": compared}
        try:
            d = diff(g[k], w, device, structure_only=not _same_run(w, w2.get(k)))
        except Uncomparable:
            continue
        except Exception as e:  # noqa: BLE001  (comparing raised: a gpk value NumPy cannot take)
            d = f"comparison raised {_reason(e)}"
        if d:
            return {"outcome": "failed", "reason": f"value of {k}: {d}", "compared": compared}
        compared += 1
    if out1 and out1 == out2 and not _ADDRESS.search(out1):
        if not _close_text(gout, out1, 1e-5):
            return {"outcome": "failed", "reason": f"printed output differs: {_first_diff(gout, out1)}",
                    "compared": compared}
        compared += 1
    if not compared:
        return {"outcome": "skipped", "reason": "nothing to compare", "compared": 0}
    return {"outcome": "passed", "reason": "", "compared": compared}


def _first_diff(g, w):
    for a, b in zip(g.splitlines(), w.splitlines()):
        if not _close_text(a, b, 1e-5):
            return f"{a.strip()[:50]!r} != {b.strip()[:50]!r}"
    return f"{len(g.splitlines())} lines != {len(w.splitlines())} lines"


# --- docstring examples ----------------------------------------------------------------------------------------

def examples_of(doc):
    """The doctest examples of a docstring (empty when it has none or cannot be parsed)."""
    try:
        return doctest.DocTestParser().get_examples(doc or "")
    except ValueError:
        return []


# plotting (matplotlib) draws pictures, not values: such examples are left out under both bindings
# and so do timings (timeit)
_PLOT = re.compile(r"\bplt\.|matplotlib|\bax\.|\bfig\b|\btimeit\b")


def _run_examples(examples, module):
    """[(kind, value, stdout)] per example: kind "value", "none", "raise" (value = the exception), "skip";
    stops after a timeout."""
    ns = namespace(module)
    res = []
    with isolated(module, timeout=TIMEOUT_S) as out:
        for ex in examples:
            if ex.options.get(doctest.SKIP):
                res.append(("skip", "+SKIP", ""))
                continue
            if _PLOT.search(ex.source):
                res.append(("skip", "a plot", ""))
                continue
            start = out.tell()
            try:
                if True:
                    try:
                        code = compile(ex.source, "<doctest>", "eval")
                    except SyntaxError:
                        exec(compile(ex.source, "<doctest>", "exec"), ns)
                        res.append(("none", None, out.getvalue()[start:]))
                        continue
                    v = eval(code, ns)
                res.append(("value" if v is not None else "none", snapshot(v), out.getvalue()[start:]))
            except ProbeTimeout as e:
                res.append(("raise", e, ""))
                break
            except Exception as e:  # noqa: BLE001
                res.append(("raise", e, out.getvalue()[start:]))
    return res


def _unspecified(ex):
    """NumPy's expected output says its values are not specified ("# may vary", uninitialized memory of
    ``empty``; "# random" values are compared: ``default_rng()`` is seeded here)."""
    return "may vary" in ex.want or "uninitialized" in ex.want or bool(_UNINITIALIZED.search(ex.source))


_UNINITIALIZED = re.compile(r"\bnp\.(empty|empty_like|ndarray)\(")


def _exc_matches(g, w):
    return isinstance(g, type(w)) or type(g).__name__ == type(w).__name__


def probe_examples(examples, module, device="cpu", reference=numpy):
    """Outcome of one docstring's examples: {"outcome", "reason", "compared", "examples": per-example list}."""
    r1, r2 = _run_examples(examples, reference), _run_examples(examples, reference)
    g = _run_examples(examples, module)
    compared, per = 0, []
    for i, ex in enumerate(examples):
        if i >= len(r1):
            break
        k1, v1, o1 = r1[i]
        k2, v2, o2 = r2[i] if i < len(r2) else ("skip", None, "")
        if k1 == "skip":
            per.append(f"skipped: {v1}")
            continue
        if k1 == "raise" and ex.exc_msg is None:  # NumPy's own example fails here (a missing package, a file)
            per.append(f"skipped: NumPy raises {_reason(v1)}")
            break
        if i >= len(g):
            break
        kg, vg, og = g[i]
        if k1 == "raise":
            if kg == "raise" and _exc_matches(vg, v1):
                compared += 1
                per.append("passed")
                continue
            why = f"raises {_reason(vg)} where NumPy raises {type(v1).__name__}" if kg == "raise" else \
                f"no exception where NumPy raises {_reason(v1)}"
            per.append("failed: " + why)
            return {"outcome": "failed", "reason": why, "compared": compared, "examples": per}
        if kg == "raise":
            per.append("failed: " + _reason(vg))
            return {"outcome": "failed", "reason": _reason(vg), "compared": compared, "examples": per}
        checked = False
        if k1 == "value":
            try:
                d = diff(vg, v1, device, structure_only=_unspecified(ex) or not _same_run(v1, v2))
                checked = True
            except Uncomparable:
                d = None
            except Exception as e:  # noqa: BLE001
                d, checked = f"comparison raised {_reason(e)}", True
            if d:
                per.append("failed: " + d)
                return {"outcome": "failed", "reason": f"value differs: {d}", "compared": compared,
                        "examples": per}
        if o1 and o1 == o2 and not _ADDRESS.search(o1):
            if not _close_text(og, o1, 1e-5):
                why = f"printed output differs: {_first_diff(og, o1)}"
                per.append("failed: " + why)
                return {"outcome": "failed", "reason": why, "compared": compared, "examples": per}
            checked = True
        if checked:
            compared += 1
            per.append("passed")
        else:
            per.append("ran")
    if not compared:
        why = next((p[len("skipped: "):] for p in per if p.startswith("skipped: NumPy")), "nothing to compare")
        return {"outcome": "skipped", "reason": why, "compared": 0, "examples": per}
    return {"outcome": "passed", "reason": "", "compared": compared, "examples": per}
