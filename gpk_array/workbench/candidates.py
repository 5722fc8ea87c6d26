"""Candidates of the workbench: a workspace directory per candidate holding ``candidate.json`` (its metadata
contract) and ``evidence/`` (the validation, benchmark and profile records made for it).

The contract: ``name``, ``kind`` (gemm, elementwise, reduction, kernel), ``dtype``, ``layout``, ``arch``,
``selector`` (the registry selector it competes for), ``where`` (its shape class, registry bounds), ``choice``
(the registry choice promoting it would record), ``shapes`` (the family of shapes validate and bench run),
``launch`` (launch parameters: tile, cluster, stages and schedule of a GEMM instance), and what it runs:
``instance`` (an emitted CUTLASS SM90 instance of the MANIFEST) or ``ops`` (elementwise/reduction ops of our
kernels). Its ``hash`` (SHA-256 of the contract and of the source it runs) ties evidence to it: evidence made
for another hash cannot promote it.

The workspace root is ``GPK_WORKBENCH_DIR``, else ``~/.cache/gpk_array/workbench``.
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import re
import shutil

from .. import _config
from . import registry

KINDS = ("gemm", "elementwise", "reduction", "kernel")
GEMM_DTYPES = {"float16": "f16", "bfloat16": "bf16", "tf32": "tf32"}
REDUCE_DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int32": "int",
                 "int64": "int"}
EW_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "exp", "log", "sqrt", "tanh", "negative")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HASHED = ("name", "kind", "dtype", "layout", "arch", "selector", "where", "choice", "shapes", "launch", "instance",
           "epilogue", "ops", "axis_kind", "source_sha256", "tolerance")


class CandidateError(ValueError):
    """A candidate that cannot be created or found, or whose contract does not hold."""


def root() -> pathlib.Path:
    """The workspace root: ``GPK_WORKBENCH_DIR``, else ``~/.cache/gpk_array/workbench``."""
    env = _config.get("GPK_WORKBENCH_DIR")
    return env if env is not None else pathlib.Path.home() / ".cache" / "gpk_array" / "workbench"


def workspace(name: str, base=None) -> pathlib.Path:
    """The directory of candidate ``name``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise CandidateError(f"candidate name {name!r}: letters, digits, '_', '.', '-' (up to 64, not starting "
                             f"with a punctuation mark)")
    return (pathlib.Path(base) if base is not None else root()) / name


def parse_shapes(text: str) -> list[list[int]]:
    """``"512x3072x768,1024x3072x768"`` (M x N x K; one number per shape for elementwise/reduction sizes) as a
    list of integer lists."""
    out = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        try:
            dims = [int(v) for v in part.lower().split("x")]
        except ValueError:
            raise CandidateError(f"shape {part!r}: integers joined by 'x' (MxNxK), e.g. 512x3072x768") from None
        if any(d <= 0 for d in dims):
            raise CandidateError(f"shape {part!r}: every extent must be at least 1")
        out.append(dims)
    if not out:
        raise CandidateError(f"no shapes in {text!r}")
    return out


def parse_where(text: str | None) -> dict:
    """``"m=:1024,n=3072:3072,k=768:"`` as registry bounds ``{"m": [None, 1024], ...}`` (inclusive; empty: open)."""
    out = {}
    for part in (text or "").replace(" ", "").split(","):
        if not part:
            continue
        q, _, rng = part.partition("=")
        if q not in registry.QUANTITIES or ":" not in rng:
            raise CandidateError(f"--where {part!r}: QUANTITY=LO:HI with QUANTITY one of "
                                 f"{', '.join(registry.QUANTITIES)} (either bound may be empty)")
        lo, _, hi = rng.partition(":")
        try:
            b = [int(lo) if lo else None, int(hi) if hi else None]
        except ValueError:
            raise CandidateError(f"--where {part!r}: bounds must be integers") from None
        out[q] = b
    registry._check_where(out, "gemm_sm90", lambda f, m: (_ for _ in ()).throw(CandidateError(f"--where: {f}: {m}")))
    return out


def _bench_shapes():
    """(M, N, K) of the GEMM benchmark's sweep (benchmarks/gemm_bench.py's SQUARE, TAILS, GPT2_M x GPT2_KN)."""
    sq = [512, 1024, 2048, 4096, 8192, 1000, 4095]
    out = [(n, n, n) for n in sq]
    out += [(m, n, k) for m in (1, 8, 128, 512, 1024, 8192) for k, n in ((768, 3072), (3072, 768), (768, 2304),
                                                                          (768, 768))]
    return out


def _manifest_entry(key: str):
    from .._kernels.cutlass import params_sm90
    for e in params_sm90.load_manifest()["instances"]:
        if e.get("key") == key and e.get("arch") == 90:
            return e
    return None


def source_drift(meta: dict) -> str | None:
    """Why the source a candidate runs is no longer the one it was created with (None: unchanged, or a candidate
    with no source of its own: routing thresholds run the namespace's kernels): its instance gone from the CUTLASS
    MANIFEST the runtime reads, or the MANIFEST's sha256 of the instance's ``.cu`` file, or the file itself, other
    than the ``source_sha256`` that ``candidate.json`` records. Read from disk at each call (the runtime's cached
    copy would not see a re-emission in the same process). Evidence made before a re-emission was made for the
    old source: validate, bench and promote refuse such a candidate; create it again (``--force``)."""
    want = meta.get("source_sha256")
    key = meta.get("instance")
    if not key or not want:
        return None
    from .._kernels.cutlass import params
    path = params.MANIFEST_PATH
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["instances"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"the CUTLASS MANIFEST {path} cannot be read ({e}): the source of {key} cannot be checked"
    entry = next((e for e in entries if e.get("key") == key and e.get("arch") == 90), None)
    if entry is None:
        return f"instance {key} is no longer in {path}: the candidate's source (sha256 {want}) is gone"
    have = entry.get("sha256")
    again = "create the candidate again (--force) and validate and bench it anew"
    if have != want:
        return (f"the source of {key} changed since the candidate was created (re-emitted?): candidate.json "
                f"records source_sha256 {want}, the MANIFEST now has {have}: {again}")
    src = path.parent / str(entry.get("file"))
    try:
        on_disk = hashlib.sha256(src.read_bytes()).hexdigest()
    except OSError as e:
        return f"the source of {key} ({src}) cannot be read ({e}): the candidate's sha256 {want} cannot be checked"
    if on_disk != want:
        return (f"the source of {key} changed since the candidate was created (edited by hand?): candidate.json "
                f"and the MANIFEST record source_sha256 {want}, {src.name} now has {on_disk}: {again}")
    return None


def candidate_hash(meta: dict) -> str:
    """The SHA-256 (hex) of a candidate's contract fields."""
    body = {k: meta.get(k) for k in _HASHED}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _gemm(meta, dtype, layout, arch, family, epilogue, where, shapes, source):
    if source is not None:
        raise CandidateError("hand-written GEMM sources are not supported yet (their launch contract is not "
                             "defined): give --family, an instance emitted by scripts/gen_cutlass.py")
    if dtype not in GEMM_DTYPES:
        raise CandidateError(f"gemm --dtype must be one of {', '.join(GEMM_DTYPES)}, got {dtype!r}")
    if layout not in registry.LAYOUTS:
        raise CandidateError(f"gemm --layout must be nn or tn, got {layout!r}")
    if arch != "sm90":
        raise CandidateError(f"gemm --arch: only sm90 instances drive dispatch, got {arch!r}")
    if not family:
        raise CandidateError("gemm needs --family, the instance family (e.g. fr96, ppt, co128t)")
    dt = GEMM_DTYPES[dtype]
    if epilogue is not None:
        if epilogue not in registry.EPILOGUES or layout != "tn" or dt == "tf32":
            raise CandidateError(f"--epilogue {epilogue!r}: one of {', '.join(registry.EPILOGUES)}, with --layout "
                                 f"tn and a 16-bit --dtype")
        key, selector = f"gemm/{dt}/tn/{family}_{epilogue}/sm90", f"linear/{dt}/tn/{epilogue}/sm90"
    else:
        key, selector = f"gemm/{dt}/{layout}/{family}/sm90", f"gemm/{dt}/{layout}/sm90"
    entry = _manifest_entry(key)
    if entry is None or entry.get("host_params", {}).get("status") != "probed":
        raise CandidateError(f"no launchable instance {key!r} in gpk_array/_kernels/cutlass/MANIFEST.json "
                             f"(emit it with scripts/gen_cutlass.py and probe it first)")
    shapes = [list(s) for s in (shapes or [s for s in _bench_shapes() if registry.where_holds(where, *s)])]
    if not shapes:
        raise CandidateError(f"no shape of the GEMM sweep falls in --where {where}: give --shapes")
    for s in shapes:
        if len(s) != 3:
            raise CandidateError(f"gemm shapes are MxNxK, got {'x'.join(map(str, s))}")
        if not registry.where_holds(where, *s):
            raise CandidateError(f"shape {'x'.join(map(str, s))} is outside the candidate's class --where {where}")
    meta.update(dtype=dtype, layout=layout, arch=arch, selector=selector, where=where, choice={"family": family},
                shapes=shapes, instance=key, epilogue=epilogue, source_sha256=entry.get("sha256"),
                launch={f: entry.get(f) for f in ("tile", "cluster", "stages", "kernel_schedule",
                                                   "epilogue_schedule", "alignment")})


def _routing(meta, kind, dtype, ops, axis_kind, min_elements, shapes):
    if min_elements is None:
        raise CandidateError(f"{kind} needs --min-elements, the least size our kernels take")
    if kind == "elementwise":
        ops = ops or ["add", "multiply", "exp"]
        bad = [o for o in ops if o not in EW_OPS]
        if bad:
            raise CandidateError(f"elementwise ops {bad}: choose from {', '.join(EW_OPS)}")
        selector = "elementwise/*/cuda"
        dtypes = [dtype] if dtype else ["float16", "float32"]
    else:
        if not ops or len(ops) != 1 or ops[0] not in registry.REDUCE_OPS[:-1]:
            raise CandidateError(f"reduction needs one --ops of {', '.join(registry.REDUCE_OPS[:-1])}")
        if dtype not in REDUCE_DTYPES:
            raise CandidateError(f"reduction --dtype must be one of {', '.join(REDUCE_DTYPES)}, got {dtype!r}")
        if axis_kind not in ("full", "rows", "cols"):
            raise CandidateError(f"reduction --axis-kind must be full, rows or cols, got {axis_kind!r}")
        selector = f"reduce/{REDUCE_DTYPES[dtype]}/{ops[0]}/{axis_kind}/cuda"
        dtypes = [dtype]
    n = int(min_elements)
    sizes = shapes or [[max(1, v)] for v in sorted({n // 4, n // 2, n, 2 * n, 4 * n}) if v]
    meta.update(dtype=",".join(dtypes), layout=None, arch="cuda", selector=selector, where={},
                choice={"own_from": n}, shapes=[list(s) for s in sizes], ops=list(ops), axis_kind=axis_kind,
                launch=None, instance=None, source_sha256=None)


def create(kind: str, name: str, *, dtype=None, layout="tn", arch="sm90", family=None, epilogue=None, where=None,
           shapes=None, ops=None, axis_kind=None, min_elements=None, source=None, tolerance=None, base=None,
           force=False) -> dict:
    """Create the workspace of candidate ``name`` of ``kind`` and return its metadata (``candidate.json``).

    gemm: ``dtype`` (float16, bfloat16, tf32), ``layout`` (nn, tn), ``arch`` (sm90), ``family`` (an emitted
    instance family, e.g. fr96), ``epilogue`` (None, or bias, bias_gelu, ...: a fused linear), ``where`` (the shape
    class it claims, text as for ``parse_where`` or a dict), ``shapes`` (text or lists; default: the GEMM sweep's
    shapes in the class). elementwise: ``ops``, ``dtype`` (default float16 and float32), ``min_elements``.
    reduction: one op in ``ops``, ``dtype``, ``axis_kind``, ``min_elements``. kernel: a user's ``@gpk_array.kernel``
    or ``jit`` source, refused for now (no registry selector dispatches user kernels). ``tolerance`` overrides the
    dtype's relative tolerance. CandidateError for a bad contract or an existing workspace (``force``: replace)."""
    if kind not in KINDS:
        raise CandidateError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    if kind == "kernel":
        raise CandidateError("kind 'kernel' (a user's @gpk_array.kernel or gpk_array.jit source) is not taken "
                             "by the workbench yet: user kernels have no registry selector for dispatch to read; "
                             "create gemm, elementwise or reduction candidates")
    d = workspace(name, base)
    if d.exists() and not force:
        raise CandidateError(f"candidate {name!r} exists ({d}): pick another --name or pass --force")
    if isinstance(shapes, str):
        shapes = parse_shapes(shapes)
    if isinstance(ops, str):
        ops = [o for o in ops.split(",") if o]
    where = parse_where(where) if not isinstance(where, dict) else where
    if tolerance is not None and not (isinstance(tolerance, (int, float)) and 0 < tolerance < 1):
        raise CandidateError(f"--tolerance must be in (0, 1), got {tolerance!r}")
    from .evidence import utc_now
    meta = {"schema": 1, "name": name, "kind": kind, "created": utc_now(), "tolerance": tolerance}
    if kind == "gemm":
        _gemm(meta, dtype or "float16", layout, arch, family, epilogue, where, shapes, source)
    else:
        _routing(meta, kind, dtype, ops, axis_kind, min_elements, shapes)
    meta["hash"] = candidate_hash(meta)
    if d.exists():
        shutil.rmtree(d)
    (d / "evidence").mkdir(parents=True)
    (d / "candidate.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def load(name: str, base=None) -> dict:
    """The metadata of candidate ``name``, its hash checked against its contract (CandidateError: missing or
    edited by hand into a different contract without a new hash)."""
    d = workspace(name, base)
    f = d / "candidate.json"
    if not f.is_file():
        raise CandidateError(f"no candidate {name!r} under {d.parent} (gpk kernels list shows them)")
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise CandidateError(f"{f}: unreadable ({e})") from None
    if candidate_hash(meta) != meta.get("hash"):
        raise CandidateError(f"{f}: the contract does not match its hash (edited by hand?): create it again")
    meta["workspace"] = str(d)
    return meta


def names(base=None) -> list[str]:
    """The candidates of the workspace root, sorted."""
    r = pathlib.Path(base) if base is not None else root()
    if not r.is_dir():
        return []
    return sorted(p.name for p in r.iterdir() if (p / "candidate.json").is_file())


def evidence_files(name: str, base=None) -> list[pathlib.Path]:
    """The evidence records of candidate ``name``, oldest first."""
    d = workspace(name, base) / "evidence"
    return sorted(d.glob("*.json")) if d.is_dir() else []


def tolerance_of(meta: dict, dtype: str) -> float:
    """The candidate's relative tolerance for ``dtype``: its override, else the contract's default."""
    from .evidence import TOLERANCE
    return float(meta["tolerance"]) if meta.get("tolerance") else TOLERANCE[dtype]
