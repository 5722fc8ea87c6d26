"""Every ``GPK_*`` environment variable gpk_array reads: one table (``VARS``) of its parser, its default and when
it is read, and the one accessor the rest of the package uses, ``get(name)``.

No other module of gpk_array touches ``os.environ`` for a ``GPK_*`` name (tests/test_config.py greps for it), and
docs/environment.md lists exactly the variables of this table (tests/test_docs.py checks both ways).

``get(name)`` reads the environment at the moment it is called and parses the value; it caches nothing. When a
variable is read is therefore where its reader calls ``get``, and the table records it per reader:

- ``IMPORT``: a module-level constant, set when that module is imported (``PDL = _config.get("GPK_PDL")``); hot
  paths read the constant, never the environment.
- ``FIRST_USE``: once, the first time the value is needed (then kept by the reader: the default device, PDL per
  device).
- ``EACH_USE``: every time it is needed (each cache lookup, each compile, each command), so that a process can
  change it between calls (the tests do, with ``monkeypatch.setenv``).

A malformed value raises ``ValueError`` naming the variable where the readers raised before this table existed (an
integer that does not parse; ``GPK_ARRAY_API_VERSION``, whose reader raises it as ``ImportError``), warns for
``GPK_GEMM``, and is ignored where it always was: each row's ``malformed`` says which.
"""
import os

_environ = os.environ

IMPORT = "import"
FIRST_USE = "first use"
EACH_USE = "each use"

ARRAY_API_VERSIONS = ("2024.12", "2025.12")


class Var:
    """One row of the table: ``name``; ``parse(name, raw)`` for a set value (``raw`` a str, possibly empty), which
    returns the value, or ``UNSET`` to answer as if the variable were unset; ``default``, the value when unset
    (None where the reader computes its own, ``default_note`` says what); ``readers``, ``(module path, when)``
    pairs; ``malformed``, what a malformed value does."""

    __slots__ = ("name", "parse", "default", "readers", "malformed", "default_note")

    def __init__(self, name, parse, default, readers, malformed, default_note=None):
        self.name, self.parse, self.default = name, parse, default
        self.readers, self.malformed, self.default_note = tuple(readers), malformed, default_note

    def __repr__(self):
        return f"Var({self.name!r}, default={self.default!r}, readers={self.readers!r})"


UNSET = object()


# --- parsers: (name, raw) -> value or UNSET; raw is the variable's text, never None ------------------------------

def _true_unless(off, strip=False):
    """A switch that is on unless its (stripped) text is ``off``: any other text, the empty one included, is on."""
    if strip:
        return lambda name, raw: raw.strip() != off
    return lambda name, raw: raw != off


def _true_if(on):
    """A switch that is on only when its text is exactly ``on``."""
    return lambda name, raw: raw == on


def _int(name, raw):
    """An integer; ValueError naming the variable otherwise (the empty text included)."""
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


def _autotune(name, raw):
    """GPK_BLAS_AUTOTUNE: an integer, at least 1; the empty text means 1."""
    return max(1, _int(name, raw or "1"))


def _text(name, raw):
    """The text itself; the empty text counts as unset."""
    return raw if raw else UNSET


def _path(expand):
    """A ``pathlib.Path`` (with ``~`` expanded where ``expand``); the empty text counts as unset."""
    def parse(name, raw):
        if not raw:
            return UNSET
        from pathlib import Path
        return Path(raw).expanduser() if expand else Path(raw)
    return parse


def _api_version(name, raw):
    """One of ARRAY_API_VERSIONS, exactly; ValueError otherwise (gpk_array/_version.py raises it as ImportError)."""
    if raw not in ARRAY_API_VERSIONS:
        raise ValueError(f"{name}={raw!r} is not one of {ARRAY_API_VERSIONS}")
    return raw


def _kernel_backend(name, raw):
    """``nvrtc`` or ``nvcc`` (any case, spaces around ignored); any other text is ignored (counts as unset)."""
    v = raw.strip().lower()
    return v if v in ("nvrtc", "nvcc") else UNSET


def gemm_mode(value, stacklevel=2):
    """GPK_GEMM's value: ``auto`` (unset, empty, ``auto`` or ``default``), ``cublas`` or ``cutlass`` (any case,
    spaces around ignored); anything else warns and means ``auto``."""
    v = (value or "").strip().lower()
    if v in ("", "auto", "default"):
        return "auto"
    if v in ("cublas", "cutlass"):
        return v
    import warnings
    warnings.warn(f"gpk_array: GPK_GEMM={value!r} is not one of 'auto', 'cutlass', 'cublas': using 'auto'",
                  stacklevel=stacklevel)
    return "auto"


def _gemm(name, raw):
    return gemm_mode(raw, stacklevel=4)   # the warning points at the reader's get() call


def parse_settings(text):
    """``"unroll=8,load=1,fin=kernel"`` -> ``(("unroll", 8), ("load", 1), ("fin", "kernel"))``: comma-separated
    ``key=value`` items (empty items skipped, spaces around keys and values dropped); a value is ``None``, ``True``,
    ``False``, an integer where it is one, else the text. The keys are the reader's to check."""
    items = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        key, _, val = item.partition("=")
        val = val.strip()
        items.append((key.strip(), None if val == "None" else True if val == "True" else False if val == "False"
                      else int(val) if val.lstrip("-").isdigit() else val))
    return tuple(items)


def _settings(name, raw):
    return parse_settings(raw) if raw else UNSET


# --- the table ---------------------------------------------------------------------------------------------------

_D = "gpk_array/"
VARS = {v.name: v for v in (
    Var("GPK_DEVICE", _text, None, [(_D + "_device.py", FIRST_USE)], "kept: Device() raises on a bad name",
        "cuda:0 when a GPU is usable, else cpu (the reader probes)"),
    Var("GPK_ARRAY_API_VERSION", _api_version, "2025.12", [(_D + "_version.py", IMPORT)],
        "ValueError here, raised as ImportError by the reader"),
    Var("GPK_TF32", _true_if("1"), False, [(_D + "_precision.py", IMPORT)], "ignored: only '1' turns it on"),
    Var("GPK_NO_TF32", _true_if("1"), False, [(_D + "_precision.py", IMPORT), (_D + "_kernels/blas.py", IMPORT)],
        "ignored: only '1' turns it on"),
    Var("GPK_OWN_KERNELS_MIN", _int, None, [(_D + "_gpu.py", IMPORT)], "ValueError",
        "the kernel registry's elementwise record (routing.json), else 2^62"),
    Var("GPK_OWN_REDUCTIONS", _true_unless("0"), True, [(_D + "_gpu.py", IMPORT)], "ignored: only '0' is off"),
    Var("GPK_INDEX_CHECK", _true_unless("0", strip=True), True, [(_D + "_ops/indexing.py", IMPORT)],
        "ignored: only '0' (spaces around allowed) is off"),
    Var("GPK_GEMM", _gemm, "auto", [(_D + "_gpu.py", IMPORT)], "UserWarning, then 'auto'"),
    Var("GPK_GEMM_LT", _true_unless("0"), True, [(_D + "_gpu.py", IMPORT)], "ignored: only '0' is off"),
    Var("GPK_FLASH_ATTENTION", _true_unless("0"), True, [(_D + "_gpu.py", IMPORT)], "ignored: only '0' is off"),
    Var("GPK_BLAS_AUTOTUNE", _autotune, 8, [(_D + "_kernels/blas.py", IMPORT)],
        "ValueError; below 1 means 1, the empty text 1"),
    Var("GPK_PDL", _true_unless("0"), True,
        [(_D + "_kernels/cutlass/launch_sm90.py", IMPORT), (_D + "_kernels/loader.py", FIRST_USE)],
        "ignored: only '0' is off"),
    Var("GPK_CACHE_DIR", _path(expand=True), None, [(_D + "_kernels/loader.py", EACH_USE)],
        "none: any path (the empty text: the default)", "~/.cache/gpk_array/kernels (the reader's, at each lookup)"),
    Var("GPK_KERNEL_BACKEND", _kernel_backend, None,
        [(_D + "_kernels/loader.py", EACH_USE), (_D + "_pykernel/backend.py", EACH_USE)],
        "ignored: anything but nvrtc / nvcc is unset (but _pykernel/backend.py's is_set() sees any non-empty text, "
        "as before, and then does not fall back to nvcc)", "NVRTC where available, else nvcc (the reader's)"),
    Var("GPK_KERNEL_DEBUG", _true_if("1"), False, [(_D + "_pykernel/api.py", EACH_USE)],
        "ignored: only '1' turns it on"),
    Var("GPK_KERNEL_LOG", _text, None, [(_D + "_kernels/loader.py", EACH_USE), (_D + "_jit/cache.py", EACH_USE)],
        "none: any path (the empty text: no log)"),
    Var("GPK_CUTLASS_INCLUDE", _path(expand=False), None, [(_D + "_kernels/cutlass/launch_sm90.py", EACH_USE)],
        "none: any path (the empty text: the default)", "the nvidia-cutlass wheel's headers (the reader's)"),
    Var("GPK_CUTLASS_BACKEND", _text, None, [(_D + "_kernels/cutlass/launch_sm90.py", EACH_USE)],
        "not checked here: the compile step rejects an unknown backend", "nvcc when installed, else nvrtc"),
    Var("GPK_KERNEL_REGISTRY", _path(expand=False), None, [(_D + "workbench/registry.py", EACH_USE)],
        "none: any path (the empty text: the default)", "the package's gpk_array/_kernels/registry/"),
    Var("GPK_WORKBENCH_DIR", _path(expand=True), None, [(_D + "workbench/candidates.py", EACH_USE)],
        "none: any path (the empty text: the default)", "~/.cache/gpk_array/workbench (the reader's)"),
    Var("GPK_COMMIT", _text, None, [(_D + "workbench/evidence.py", EACH_USE)],
        "none: any text (the empty text: unset)", "git rev-parse HEAD of the checkout, else 'unknown' (the reader's)"),
    Var("GPK_RED_CONFIG", _settings, (), [(_D + "_kernels/reduction.py", IMPORT)],
        "syntax never fails here; the reader raises ValueError for an unknown key"),
)}


def get(name):
    """The parsed value of ``GPK_*`` variable ``name``, read from the environment now; its default when unset
    (or when its parser ignores the text). KeyError for a name the table does not have."""
    var = VARS[name]
    raw = _environ.get(name)
    if raw is None:
        return var.default
    value = var.parse(name, raw)
    return var.default if value is UNSET else value


def is_set(name):
    """Whether ``name`` (a variable of the table) is set to a non-empty text, whatever its parser makes of it."""
    if name not in VARS:
        raise KeyError(name)
    return bool(_environ.get(name))
