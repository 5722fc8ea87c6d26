"""The one compile cache of kernels compiled at run time (``gpk_array.jit``, ``.cu`` modules, ``@gpk_array.kernel``).

It is the disk cache of gpk_array's own kernels (``gpk_array/_kernels/loader.py``): the same directory
(``$GPK_CACHE_DIR/sm_<arch>/`` or ``~/.cache/gpk_array/kernels/sm_<arch>/``), the same content-hashed names
(``loader.cache_key``: SHA-256 of the format version, arch, toolchain versions, options and source; here the
versions also carry the CUDA driver's and, when CuPy is absent, nvcc's), the same atomic writes and the same
compilers (NVRTC, else nvcc). What this module adds:

- ``compile(source, ...)``: one cubin on disk per key. Another process compiling the same key waits on an advisory
  lock (``<key>.lock``, ``fcntl.flock``) and then finds the cubin, so concurrent processes compile each entry once
  and readers only ever see whole files.
- why it compiled: every miss is recorded with its reason, found by comparing with the last compile of the same
  *identity* (a kernel name or a file path), kept in ``index/`` beside the cubins: "new source", "source changed",
  "options changed", "arch changed", "toolkit changed", or "not in cache" (same inputs, the cubin was deleted).
- ``cache_info()``: hits, misses and those records; ``warmup(items)``: compiles many ahead on a thread pool.
- ``load(source, names, ...)``: a ``Module`` whose ``get_function(name)`` gives the ``cupy.RawKernel`` on the
  current device (loads need a GPU; compiling needs none when ``arch`` is given).

Template kernels are reached through name expressions (``"scale<float, 2>"``): the source gets an explicit
instantiation line per expression and the symbol is the expression's Itanium-mangled name (``signature.instantiate``),
which works with both compilers.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

from .. import _config
from .._errors import KernelCompileError
from .._kernels import loader

_lock = threading.RLock()
_stats = {"hits": 0, "misses": 0, "memory_hits": 0}
_records: list = []          # one dict per compile, in order
_entries: dict = {}          # key -> Entry (in this process)
_versions = None
_MAX_RECORDS = 1000


def versions() -> str:
    """The toolchain fingerprint in every key: CuPy's and the CUDA runtime's versions (``loader``), the driver's,
    and nvcc's release line when CuPy is not installed (then nvcc is the compiler)."""
    global _versions
    if _versions is None:
        v = loader._toolchain_versions()
        drv = "none"
        if not v.startswith("cupy=none"):
            try:
                import cupy
                drv = str(cupy.cuda.runtime.driverGetVersion())
            except Exception:
                drv = "none"
        else:
            v += f";nvcc={_nvcc_version()}"
        _versions = f"{v};driver={drv}"
    return _versions


def _nvcc_version() -> str:
    nvcc = loader.nvcc_path()
    if not nvcc:
        return "none"
    import subprocess
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return "unknown"
    m = re.search(r"release [^\n]*", out)
    return m.group(0) if m else "unknown"


class Entry:
    """A compiled cubin on disk: ``path``, ``key``, ``arch``, ``symbols`` (name expression -> mangled name),
    ``cached`` (found on disk rather than compiled here) and ``reason`` (why it compiled, None on a hit)."""

    __slots__ = ("path", "key", "arch", "symbols", "cached", "reason", "seconds")

    def __init__(self, path, key, arch, symbols, cached, reason, seconds):
        self.path, self.key, self.arch, self.symbols = path, key, arch, symbols
        self.cached, self.reason, self.seconds = cached, reason, seconds

    def __repr__(self):
        return f"Entry({self.path.name}, arch={self.arch}, cached={self.cached}, reason={self.reason!r})"


def _index_path(identity: str) -> Path:
    return loader.cache_root() / "index" / (hashlib.sha256(identity.encode()).hexdigest()[:32] + ".json")


def _reason(identity: str, record: dict) -> str:
    try:
        old = json.loads(_index_path(identity).read_text())
    except (OSError, ValueError):
        return "new source"
    for field, reason in (("source", "source changed"), ("options", "options changed"), ("arch", "arch changed"),
                          ("versions", "toolkit changed")):
        if old.get(field) != record[field]:
            return reason
    return "not in cache"


def _remember(identity: str, record: dict, compiled: bool) -> None:
    """Keep ``record`` as the last inputs of ``identity`` (after a compile, or a disk hit on other inputs than the
    record says), so the next miss's reason compares with what was used last."""
    path = _index_path(identity)
    if not compiled:
        try:
            if json.loads(path.read_text()) == record:
                return
        except (OSError, ValueError):
            pass
    try:
        loader.write_atomic(path, json.dumps(record).encode())
    except OSError:
        pass


def _line_of(log: str, name: str, source: str):
    """(line number, text) of the first error the compiler log reports in ``name``, else (None, None)."""
    base = Path(name).name
    for m in re.finditer(r"([^\s()]*)\((\d+)\): (?:catastrophic )?error", log):
        if Path(m.group(1)).name == base:
            n = int(m.group(2))
            lines = source.splitlines()
            return n, (lines[n - 1] if 0 < n <= len(lines) else None)
    return None, None


def compile(source: str, *, name: str = "kernel.cu", options=(), arch=None, name_expressions=(), include_dirs=(),
            identity: str | None = None, include_text: str = "", backend: str | None = None) -> Entry:
    """The cubin of ``source`` built with ``options`` for ``arch`` (the current device's when None), from the
    disk cache or compiled now. ``name`` is the file name compiler messages use; ``include_dirs`` are searched for
    ``#include "..."`` (their contents must be in ``include_text``, which the key hashes: the directories are not);
    ``identity`` names the source for the "why it recompiled" records (``name`` when None). Raises
    ``KernelCompileError`` with the compiler log and the first offending line."""
    options = tuple(options)
    arch = loader.normalize_arch(arch if arch is not None else loader.device_arch())
    identity = identity or name
    name_expressions = tuple(name_expressions or ())
    extra, symbols = _instantiations(source, name_expressions)
    full = source + extra
    ver = versions()
    keyed = full if not include_text else f"{full}\n// includes\n{include_text}"
    key = loader.cache_key(keyed, options, arch, versions=ver)
    with _lock:
        e = _entries.get(key)
        if e is not None:
            _stats["memory_hits"] += 1
            return e
    path = loader.cache_root() / f"sm_{arch}" / f"{key}.cubin"
    record = {"source": hashlib.sha256((source + include_text).encode()).hexdigest(), "options": list(options),
              "arch": arch, "versions": ver}
    t0 = time.perf_counter()
    cached, reason = True, None
    if not path.is_file():
        with loader._path_lock(path), _file_lock(path):
            if not path.is_file():
                reason = _reason(identity, record)
                try:
                    cubin = _compile(full, options, arch, name, include_dirs, backend)
                except KernelCompileError as err:
                    line, text = _line_of(err.log, name, full)
                    raise KernelCompileError(f"gpk_array: failed to compile {name} for sm_{arch}"
                                             + (f" (line {line})" if line else ""), err.log, file=name,
                                             options=options, arch=arch, backend=err.backend, line=line,
                                             source_line=text) from None
                loader.write_atomic(path, cubin)
                cached = False
    seconds = time.perf_counter() - t0
    _remember(identity, record, compiled=not cached)
    e = Entry(path, key, arch, symbols, cached, reason, seconds)
    with _lock:
        _entries[key] = e
        if cached:
            _stats["hits"] += 1
        else:
            _stats["misses"] += 1
            _records.append({"identity": identity, "key": key, "arch": arch, "options": options,
                             "reason": reason, "seconds": seconds})
            del _records[:-_MAX_RECORDS]
    if not cached and _config.get("GPK_KERNEL_LOG"):
        loader._log_compile({"file": identity, "options": options, "arch": arch, "seconds": seconds})
    return e


def _compile(source, options, arch, name, include_dirs, backend) -> bytes:
    backend = backend or loader.default_backend()
    return loader.compile_cubin(source, options, arch, backend, name=name, include_dirs=tuple(include_dirs))


class _file_lock:
    """An exclusive advisory lock on ``<cubin>.lock`` across processes (no-op where fcntl is missing)."""

    def __init__(self, path: Path):
        self.path = path.with_suffix(".lock")
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            import fcntl
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _instantiations(source: str, exprs: tuple) -> tuple[str, dict]:
    """(text to append, {expression: mangled symbol}) for the name expressions."""
    if not exprs:
        return "", {}
    from . import signature
    ks = {}
    for k in signature.kernels(source):
        ks.setdefault("::".join(k.namespace + (k.name,)), k)
    structs = signature.structs(source)
    lines, symbols = ["\n// gpk_array: instantiations of the name expressions"], {}
    for expr in exprs:
        base, args = signature.parse_expression(expr)
        k = ks.get(base.lstrip(":"))
        if k is None:
            raise ValueError(f"gpk_array: name expression {expr!r}: no __global__ function {base!r} in the source")
        if not args:
            if k.template:
                raise ValueError(f"gpk_array: name expression {expr!r} names a template; give its arguments")
            symbols[expr] = k.name if k.extern_c else None
            continue
        line, _, mangled = signature.instantiate(k, expr, structs)
        lines.append(line)
        symbols[expr] = mangled
    return "\n".join(lines) + "\n", symbols


def resolve_symbol(entry: Entry, expr: str) -> str:
    """The symbol in ``entry``'s cubin for a name expression (or an ``extern "C"`` name): exact for extern "C",
    else the one mangled name that starts with the expression's prefix."""
    sym = entry.symbols.get(expr)
    if sym is None and expr not in entry.symbols:
        return expr
    names = getattr(entry, "_names", None)
    if names is None:
        names = loader.cubin_symbols(entry.path.read_bytes())
    if sym in names:
        return sym
    if sym is None:
        raise ValueError(f"gpk_array: {expr!r} has C++ linkage; declare it extern \"C\" or pass a template name "
                         "expression")
    found = sorted(n for n in names if n.startswith(sym) and not n.startswith("."))
    if len(found) != 1:
        raise ValueError(f"gpk_array: cannot find the symbol of {expr!r} in the cubin ({len(found)} candidates)")
    return found[0]


class Module:
    """A compiled source loaded on demand: ``get_function(name)`` is the ``cupy.RawKernel`` of the ``extern "C"``
    name or name expression ``name`` on the current device (loading the cubin there on first use); ``entry(arch)``
    the cubin for an arch. Made by ``load``."""

    def __init__(self, source, *, name, options, name_expressions, include_dirs, identity, include_text=""):
        self.source, self.name, self.options = source, name, tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self.include_dirs, self.identity, self.include_text = tuple(include_dirs), identity, include_text
        self._entries: dict = {}
        self._functions: dict = {}

    def entry(self, arch=None) -> Entry:
        """The cache entry (cubin) of this source for ``arch`` (the current device's when None)."""
        arch = loader.normalize_arch(arch if arch is not None else loader.device_arch())
        e = self._entries.get(arch)
        if e is None:
            e = compile(self.source, name=self.name, options=self.options, arch=arch,
                        name_expressions=self.name_expressions, include_dirs=self.include_dirs,
                        identity=self.identity, include_text=self.include_text)
            self._entries[arch] = e
        return e

    def get_function(self, name: str):
        """The ``cupy.RawKernel`` for ``name`` on the current device."""
        dev = loader.current_device_id()
        fn = self._functions.get((name, dev))
        if fn is None:
            import cupy
            e = self.entry(loader.device_arch(dev))
            sym = resolve_symbol(e, name)
            with cupy.cuda.Device(dev):
                mod = cupy.RawModule(path=str(e.path))
                fn = mod.get_function(sym)
            self._functions[(name, dev)] = fn
        return fn


def load(source: str, names=(), options=(), *, name: str = "kernel.cu", name_expressions=(), include_dirs=(),
         identity: str | None = None, include_text: str = "") -> Module:
    """A ``Module`` for ``source`` (nothing is compiled until a function or an entry is asked for).
    ``names``: extern "C" kernel names and template name expressions the caller will ask for (expressions among
    them are instantiated)."""
    exprs = tuple(dict.fromkeys([n for n in names if "<" in n] + list(name_expressions or ())))
    return Module(source, name=name, options=options, name_expressions=exprs, include_dirs=include_dirs,
                  identity=identity or name, include_text=include_text)


def cache_info() -> dict:
    """Counts and records of this process's lookups in the compile cache: ``hits`` (cubins found on disk),
    ``misses`` (compiled), ``memory_hits`` (found already loaded in this process), ``compiles`` (one dict per miss:
    ``identity``, ``key``, ``arch``, ``options``, ``reason``, ``seconds``), ``reasons`` (count per reason) and
    ``dir`` (the cache directory, ``GPK_CACHE_DIR`` or its default)."""
    with _lock:
        records = [dict(r) for r in _records]
        info = dict(_stats)
    reasons: dict = {}
    for r in records:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    info.update(compiles=records, reasons=reasons, dir=str(loader.cache_root()))
    return info


def cache_clear(memory_only: bool = True) -> None:
    """Reset the counts and forget the entries loaded in this process; ``memory_only=False`` also deletes every
    cubin under the cache directory, every arch, gpk_array's own kernels' included (they are rebuilt on use), and
    the ``index/`` records."""
    with _lock:
        _stats.update(hits=0, misses=0, memory_hits=0)
        _records.clear()
        _entries.clear()
    if not memory_only:
        import shutil
        root = loader.cache_root()
        for p in list(root.glob("sm_*")) + [root / "index"]:
            shutil.rmtree(p, ignore_errors=True)


def warmup(items, *, arch=None, workers: int | None = None) -> list:
    """Compile ahead, in parallel (threads; the compilers release the GIL or run as processes): ``items`` are jit
    kernels, ``Module`` objects, CUDA source strings, or ``(source, options)`` pairs. Returns the ``Entry`` of
    each, in order; raises the first ``KernelCompileError`` after every compile has finished."""
    from concurrent.futures import ThreadPoolExecutor
    jobs = []
    for it in items:
        if isinstance(it, str):
            jobs.append(lambda s=it: compile(s, arch=arch, identity="warmup"))
        elif isinstance(it, tuple) and it and isinstance(it[0], str):
            jobs.append(lambda s=it[0], o=tuple(it[1]) if len(it) > 1 else (): compile(s, options=o, arch=arch,
                                                                                         identity="warmup"))
        else:
            mod = getattr(it, "module", it)
            if not isinstance(mod, Module):
                raise TypeError(f"gpk_array: warmup takes jit kernels, modules or CUDA sources, got "
                                f"{type(it).__name__}")
            jobs.append(lambda m=mod: m.entry(arch))
    if not jobs:
        return []
    workers = workers or min(len(jobs), max(1, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(j) for j in jobs]
        errors = [f.exception() for f in futures]
    for err in errors:
        if err is not None:
            raise err
    return [f.result() for f in futures]
