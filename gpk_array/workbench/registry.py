"""The kernel registry: the tracked JSON records (``gpk_array/_kernels/registry/*.json``) that dispatch reads, their
schema, and the compiled lookups the dispatch code calls.

A registry file is ``{"schema": 1, "table": T, "records": [...]}``; its name is ``<T>.json``. Tables:

- ``gemm_sm90``: plain GEMMs on SM90. Selector ``gemm/<f16|bf16|tf32>/<nn|tn>/sm90``; ``choice`` is
  ``{"family": F}`` (the instance ``gemm/<dt>/<layout>/<F>/sm90``) or ``{"backend": "cublaslt"}`` (an incumbent
  recorded explicitly: cuBLASLt, which is also what a problem no record covers gets).
- ``gemm_sm90_fused``: ``linear`` with a fused bias/activation epilogue on SM90. Selector
  ``linear/<f16|bf16>/tn/<bias|bias_relu|bias_gelu_tanh|bias_gelu|bias_silu>/sm90``; ``choice`` ``{"family": F}``
  (instance ``gemm/<dt>/tn/<F>_<epilogue>/sm90``), ``{"few_rows": {"wave_sms": S, "narrow": F1, "wide": F2}}`` (the
  wave-count rule of ``gemm._few_rows_family`` between a 128x96 and a 128x192 tile family) or
  ``{"backend": "cublaslt"}``.
- ``routing``: which backend serves elementwise functions and reductions on CUDA. Selectors
  ``elementwise/*/cuda`` with ``{"own_from": N}`` (our kernels from N elements) and
  ``reduce/<f16|bf16|f32|f64|int|*>/<op|*>/<full|rows|cols|*>/cuda`` with ``{"own_from": N}`` or
  ``{"backend": "cupy"}`` (``_gpu.REDUCE_ROUTE``'s keys and values).

Every record: ``id`` (unique in the registry), ``selector``, ``where`` (the shape class: inclusive ``[lo, hi]``
bounds, either may be null, on ``m``, ``n``, ``k``, ``tiles128`` = ceil(m/128) * ceil(n/128) and ``mnk`` =
m * n * k; ``{}`` covers every shape; routing records take none), ``choice``, ``status`` (``bootstrap``: a rule that
predates the workbench, with the dated result files that justified it as ``evidence``, paths relative to the
repository; ``promoted``: entered through ``gpk kernels promote``, with ``evidence`` naming its validation and
benchmark records and a ``fingerprint`` of the machine that measured them), ``summary`` (one line of what the
evidence showed). Within one selector the records are tried in file order; the first whose ``where`` holds wins.

``load(directory)`` validates every file and raises ``RegistryError`` naming the file and the field (the SM90
instances a GEMM record names included: each must be a launchable instance of the CUTLASS MANIFEST the runtime
reads, ``manifest_instances()``);
``load_tables(directory)`` is what dispatch calls: each file that fails validation is left out with one warning
(dispatch then falls back to cuBLASLt / CuPy for what it covered), and the rest are compiled into plain Python
functions and dicts, once per process (``compiled()``). ``GPK_KERNEL_REGISTRY`` names another directory.
"""
from __future__ import annotations

import json
import pathlib

from .. import _config

SCHEMA = 1
PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[1] / "_kernels" / "registry"
TABLES = ("gemm_sm90", "gemm_sm90_fused", "routing")
STATUSES = ("bootstrap", "promoted")
DTYPES = ("f16", "bf16", "tf32")
LAYOUTS = ("nn", "tn")
EPILOGUES = ("bias", "bias_relu", "bias_gelu_tanh", "bias_gelu", "bias_silu")
REDUCE_CLASSES = ("f16", "bf16", "f32", "f64", "int", "*")
REDUCE_OPS = ("sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "*")
REDUCE_KINDS = ("full", "rows", "cols", "*")
QUANTITIES = {"m": "m", "n": "n", "k": "k", "tiles128": "(-(-m // 128) * -(-n // 128))", "mnk": "(m * n * k)"}
_RECORD_FIELDS = ("id", "selector", "where", "choice", "status", "summary", "evidence")
_OPTIONAL_FIELDS = ("fingerprint", "promoted_at", "candidate")


class RegistryError(ValueError):
    """A registry file that does not follow the schema: ``.file`` and ``.field`` say where."""

    def __init__(self, file, field, message):
        self.file, self.field = str(file), field
        super().__init__(f"kernel registry {self.file}: {field}: {message}")


def directory() -> pathlib.Path:
    """The registry directory dispatch reads: ``GPK_KERNEL_REGISTRY`` if set, else the package's."""
    env = _config.get("GPK_KERNEL_REGISTRY")
    return env if env is not None else PACKAGE_DIR


# --- validation ---------------------------------------------------------------------------------------------------


def _int_or_none(v):
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def parse_selector(selector: str, table: str):
    """The parts of a selector of ``table`` as a tuple, or None where it does not fit the table."""
    if not isinstance(selector, str):
        return None
    p = selector.split("/")
    if table == "gemm_sm90":
        if len(p) == 4 and p[0] == "gemm" and p[1] in DTYPES and p[2] in LAYOUTS and p[3] == "sm90":
            return (p[1], p[2])
    elif table == "gemm_sm90_fused":
        if (len(p) == 5 and p[0] == "linear" and p[1] in ("f16", "bf16") and p[2] == "tn" and p[3] in EPILOGUES
                and p[4] == "sm90"):
            return (p[1], p[3])
    elif table == "routing":
        if p == ["elementwise", "*", "cuda"]:
            return ("elementwise",)
        if (len(p) == 5 and p[0] == "reduce" and p[1] in REDUCE_CLASSES and p[2] in REDUCE_OPS
                and p[3] in REDUCE_KINDS and p[4] == "cuda"):
            return (p[1], p[2], p[3])
    return None


def _check_where(where, table, fail):
    if not isinstance(where, dict):
        fail("where", f"must be an object of [lo, hi] bounds, got {type(where).__name__}")
    if table == "routing" and where:
        fail("where", "routing records take no shape bounds (their choice says from how many elements)")
    for q, b in where.items():
        if q not in QUANTITIES:
            fail(f"where.{q}", f"unknown quantity (one of {', '.join(QUANTITIES)})")
        if not (isinstance(b, list) and len(b) == 2 and all(_int_or_none(v) for v in b)):
            fail(f"where.{q}", f"must be [lo, hi], non-negative integers or null, got {b!r}")
        if None not in b and b[0] > b[1]:
            fail(f"where.{q}", f"empty range {b!r}")


def _check_choice(choice, table, fail):
    if not isinstance(choice, dict) or len(choice) != 1:
        fail("choice", f"must be an object with one key, got {choice!r}")
    (what, v), = choice.items()
    if table == "routing":
        if what == "own_from" and _int_or_none(v) and v is not None:
            return
        if what == "backend" and v == "cupy":
            return
        fail("choice", f"routing takes {{'own_from': N}} or {{'backend': 'cupy'}}, got {choice!r}")
    if what == "backend":
        if v != "cublaslt":
            fail("choice.backend", f"must be 'cublaslt', got {v!r}")
    elif what == "family":
        if not (isinstance(v, str) and v.isidentifier()):
            fail("choice.family", f"must be an instance family name, got {v!r}")
    elif what == "few_rows" and table == "gemm_sm90_fused":
        if not isinstance(v, dict) or set(v) != {"wave_sms", "narrow", "wide"}:
            fail("choice.few_rows", f"must hold wave_sms, narrow, wide, got {v!r}")
        if not (isinstance(v["wave_sms"], int) and v["wave_sms"] > 0):
            fail("choice.few_rows.wave_sms", f"must be a positive integer, got {v['wave_sms']!r}")
        for f in ("narrow", "wide"):
            if not (isinstance(v[f], str) and v[f].isidentifier()):
                fail(f"choice.few_rows.{f}", f"must be a family name, got {v[f]!r}")
    else:
        fail("choice", f"unknown choice {what!r} for table {table}")


_manifest_cache: list = []    # [(the manifest object, its instance keys)]: computed once per process


def manifest_instances() -> frozenset:
    """The keys of the launchable SM90 instances (arch 90, host_params probed) of the CUTLASS MANIFEST the runtime
    reads (``params.load_manifest()``, which gemm.py has read at import; its parse is cached): computed once per
    process, so validating the registry on dispatch's first use costs one set lookup per family."""
    from .._kernels.cutlass import params
    m = params.load_manifest()
    if not _manifest_cache or _manifest_cache[0][0] is not m:
        keys = frozenset(e["key"] for e in m["instances"] if e.get("arch") == 90 and
                         (e.get("host_params") or {}).get("status") == "probed")
        _manifest_cache[:] = [(m, keys)]
    return _manifest_cache[0][1]


def instances_of(rec, table: str) -> list:
    """(field, instance key) for each SM90 instance a GEMM record's choice names: ``choice.family`` as
    ``gemm/<dt>/<layout>/<F>/sm90`` (fused: ``gemm/<dt>/tn/<F>_<epilogue>/sm90``), the few-row rule's
    ``choice.few_rows.narrow`` and ``.wide`` likewise; [] for a backend or a routing record. The keys are those
    ``compile_tables`` makes."""
    sel = parse_selector(rec["selector"], table)
    (what, v), = rec["choice"].items()
    if table == "gemm_sm90" and what == "family":
        return [("choice.family", f"gemm/{sel[0]}/{sel[1]}/{v}/sm90")]
    if table == "gemm_sm90_fused":
        key = f"gemm/{sel[0]}/tn/{{}}_{sel[1]}/sm90"
        if what == "family":
            return [("choice.family", key.format(v))]
        if what == "few_rows":
            return [(f"choice.few_rows.{f}", key.format(v[f])) for f in ("narrow", "wide")]
    return []


def validate_record(rec, table: str, file="<record>", index=0, instances=None):
    """Raise RegistryError unless ``rec`` is a valid record of ``table`` (``file``/``index`` name it), the SM90
    instances its choice names included: each must be in ``instances`` (default ``manifest_instances()``, the
    MANIFEST the runtime reads)."""
    def fail(field, message):
        raise RegistryError(file, f"records[{index}].{field}", message)

    if not isinstance(rec, dict):
        raise RegistryError(file, f"records[{index}]", f"must be an object, got {type(rec).__name__}")
    for f in _RECORD_FIELDS:
        if f not in rec:
            fail(f, "missing")
    for f in rec:
        if f not in _RECORD_FIELDS and f not in _OPTIONAL_FIELDS:
            fail(f, "unknown field")
    if not isinstance(rec["id"], str) or not rec["id"]:
        fail("id", f"must be a non-empty string, got {rec['id']!r}")
    if parse_selector(rec["selector"], table) is None:
        fail("selector", f"{rec['selector']!r} is not a selector of table {table}")
    _check_where(rec["where"], table, fail)
    _check_choice(rec["choice"], table, fail)
    if table != "routing":
        known = manifest_instances() if instances is None else instances
        for field, key in instances_of(rec, table):
            if key not in known:
                from .._kernels.cutlass import params
                fail(field, f"{rec['choice']} names instance {key}, which is not a launchable SM90 instance of "
                            f"the CUTLASS MANIFEST {params.MANIFEST_PATH}")
    if rec["status"] not in STATUSES:
        fail("status", f"must be one of {STATUSES}, got {rec['status']!r}")
    if not isinstance(rec["summary"], str):
        fail("summary", "must be a string")
    ev = rec["evidence"]
    if not isinstance(ev, list) or not ev or not all(isinstance(e, str) and e for e in ev):
        fail("evidence", "must be a non-empty list of paths (the results or evidence records it rests on)")
    if rec["status"] == "promoted":
        fp = rec.get("fingerprint")
        if not (isinstance(fp, dict) and isinstance(fp.get("id"), str)):
            fail("fingerprint", "a promoted record needs the fingerprint of the machine its evidence came from")


def validate_file(data, file) -> str:
    """Raise RegistryError unless ``data`` (a parsed registry file) follows the schema; returns its table."""
    if not isinstance(data, dict):
        raise RegistryError(file, "(top level)", "must be a JSON object")
    if data.get("schema") != SCHEMA:
        raise RegistryError(file, "schema", f"must be {SCHEMA}, got {data.get('schema')!r}")
    table = data.get("table")
    if table not in TABLES:
        raise RegistryError(file, "table", f"must be one of {TABLES}, got {table!r}")
    if pathlib.Path(str(file)).stem != table:
        raise RegistryError(file, "table", f"{table!r} must be stored as {table}.json")
    recs = data.get("records")
    if not isinstance(recs, list):
        raise RegistryError(file, "records", "must be a list")
    seen = set()
    for i, r in enumerate(recs):
        validate_record(r, table, file, i)
        if r["id"] in seen:
            raise RegistryError(file, f"records[{i}].id", f"duplicate id {r['id']!r}")
        seen.add(r["id"])
    return table


def read_file(path):
    """The validated content of one registry file (RegistryError for unreadable JSON or a schema violation)."""
    path = pathlib.Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise RegistryError(path, "(file)", f"cannot be read: {e}") from None
    except json.JSONDecodeError as e:
        raise RegistryError(path, f"(JSON, line {e.lineno} column {e.colno})", e.msg) from None
    validate_file(data, path)
    return data


def load(path=None) -> dict:
    """Every table of the registry directory ``path`` (default: ``directory()``), validated: table -> file content.
    Raises RegistryError for the first file that fails; a missing table is an empty one."""
    d = pathlib.Path(path) if path is not None else directory()
    out = {t: {"schema": SCHEMA, "table": t, "records": []} for t in TABLES}
    for t in TABLES:
        f = d / f"{t}.json"
        if f.exists():
            out[t] = read_file(f)
    return out


# --- compiled lookups -----------------------------------------------------------------------------------------------


def where_expr(where: dict) -> str:
    """A Python expression in m, n, k that holds exactly where the bounds ``where`` hold ("True" for none)."""
    parts = []
    for q, (lo, hi) in where.items():
        e = QUANTITIES[q]
        if lo is not None:
            parts.append(f"{e} >= {int(lo)}")
        if hi is not None:
            parts.append(f"{e} <= {int(hi)}")
    return " and ".join(parts) or "True"


def where_holds(where: dict, m: int, n: int, k: int) -> bool:
    """Whether the bounds ``where`` hold for (m, n, k) (the interpreted form of ``where_expr``, for tools)."""
    return bool(eval(where_expr(where), {}, {"m": m, "n": n, "k": k}))  # noqa: S307 - integers and names only


def _compile_selector(records, few_rows, key=None):
    """One function (m, n, k) -> family name or None over the records of one selector, tried in order; with
    ``key`` (a format string with ``{}`` for the family) it returns ``key.format(family)`` instead, the instance
    key, formatted here once per record rather than per call. A ``few_rows`` choice is the wave count of
    ``few_rows`` (gemm._few_rows: 128x96 tiles in 1x2x1 clusters against 128x192 in 2x1x1) inlined."""
    lines = ["def select(m, n, k):"]
    env = {"few_rows": few_rows}
    for r in records:
        (what, v), = r["choice"].items()
        if what == "backend":
            ret = "None"
        elif what == "family":
            ret = repr(v if key is None else key.format(v))
        else:   # few_rows: gemm._few_rows's arithmetic inlined, returning one of two precomputed names
            narrow, wide = (v["narrow"], v["wide"]) if key is None else (key.format(v["narrow"]),
                                                                      key.format(v["wide"]))
            s = int(v["wave_sms"])
            lines.append(f"    if {where_expr(r['where'])}:\n"
                         f"        rows = -(-m // 128)\n"
                         f"        c96 = -(-n // 96)\n"
                         f"        w96 = -(-(rows * (c96 + (c96 & 1))) // {s})\n"
                         f"        w192 = -(-((rows + (rows & 1)) * -(-n // 192)) // {s})\n"
                         f"        return {wide!r} if 2 * w192 <= w96 else {narrow!r}")
            continue
        lines.append(f"    if {where_expr(r['where'])}:\n        return {ret}")
    lines.append("    return None")
    exec("\n".join(lines), env)  # noqa: S102 - generated from validated integers and identifiers only
    return env["select"]


def lower_bound(records, q, default):
    """The least lower bound on quantity ``q`` over the records that choose one of our kernels (not a backend): the
    cheap necessary conditions of the dispatch code. ``default`` where none does (nothing to take)."""
    los = [r["where"].get(q, [None, None])[0] or 0 for r in records if "backend" not in r["choice"]]
    return min(los) if los else default


def compile_tables(tables: dict, few_rows) -> dict:
    """The dispatch lookups of validated tables: ``plain`` (dt, layout) -> select(m, n, k) (a family or None),
    ``plain_key`` the same returning the instance key ``gemm/<dt>/<layout>/<family>/sm90``, ``fused`` (dt,
    epilogue) -> select(m, n, k) returning ``gemm/<dt>/tn/<family>_<epilogue>/sm90``, ``plain_records`` /
    ``fused_records`` (the same keys -> records), ``route`` (REDUCE_ROUTE's dict), ``elementwise_min`` (an int or
    None: no record, CuPy)."""
    out = {"plain": {}, "plain_key": {}, "fused": {}, "plain_records": {}, "fused_records": {}, "route": {},
           "elementwise_min": None}
    for table, key in (("gemm_sm90", "plain"), ("gemm_sm90_fused", "fused")):
        groups: dict = {}
        for r in tables.get(table, {}).get("records", ()):
            groups.setdefault(parse_selector(r["selector"], table), []).append(r)
        out[key + "_records"] = groups
        if key == "plain":
            out["plain"] = {sel: _compile_selector(rs, few_rows) for sel, rs in groups.items()}
            out["plain_key"] = {sel: _compile_selector(rs, few_rows, f"gemm/{sel[0]}/{sel[1]}/{{}}/sm90")
                                for sel, rs in groups.items()}
        else:
            out["fused"] = {sel: _compile_selector(rs, few_rows, f"gemm/{sel[0]}/tn/{{}}_{sel[1]}/sm90")
                            for sel, rs in groups.items()}
    for r in tables.get("routing", {}).get("records", ()):
        sel = parse_selector(r["selector"], "routing")
        (what, v), = r["choice"].items()
        if sel == ("elementwise",):
            out["elementwise_min"] = v if what == "own_from" else None
        else:
            out["route"][sel] = v if what == "own_from" else None
    return out


_compiled = None
_errors: list = []


def load_tables(path=None, warn=True) -> dict:
    """The validated tables of the registry directory, each file that fails validation left out (with a warning
    naming the file and the field, and the error kept in ``errors()``): what dispatch runs on."""
    import warnings
    d = pathlib.Path(path) if path is not None else directory()
    out = {}
    for t in TABLES:
        f = d / f"{t}.json"
        if not f.exists():
            continue
        try:
            out[t] = read_file(f)
        except RegistryError as e:
            _errors.append(e)
            if warn:
                fallback = "CuPy" if t == "routing" else "cuBLASLt"
                warnings.warn(f"gpk_array: {e}; the file is ignored, dispatch falls back to {fallback} for what it "
                              f"covered", RuntimeWarning, stacklevel=3)
    return out


def compiled(few_rows) -> dict:
    """``compile_tables(load_tables())``, once per process (``few_rows``: gemm's few-row family function)."""
    global _compiled
    if _compiled is None:
        _compiled = compile_tables(load_tables(), few_rows)
    return _compiled


def errors() -> list:
    """The RegistryErrors of the files dispatch left out in this process."""
    return list(_errors)
