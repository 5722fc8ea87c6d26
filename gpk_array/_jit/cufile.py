"""``.cu`` files as Python modules: ``gpk_array.load_cu(path)`` and the import hook of ``gpk_array.cuimport``.

A ``.cu`` module has one attribute per ``extern "C" __global__`` function (a ``JitKernel``; the file compiles once,
into one cubin, on the first launch), one NumPy structured dtype per plain struct, and ``__cu_hash__``: the SHA-256
of the file and of every ``#include "..."`` it names (recursively, searched beside the including file, then on the
include path). That hash, not the mtime, decides staleness: ``load_cu`` returns the same module object while the
hash is unchanged and rebuilds the module (in place) when it changes; ``importlib.reload(mod)`` does the same for
imported ones, and ``gpk_array.cuimport.reload_changed()`` reloads every ``.cu`` module whose hash changed.

Beside the file, where the directory is writable, a ``.pyi`` stub lists the kernels with their C signatures and the
struct dtypes, for editors and type checkers.
"""
from __future__ import annotations

import hashlib
import re
import sys
import threading
import types
from pathlib import Path

_lock = threading.RLock()
_modules: dict = {}          # resolved path -> module
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def includes(path: Path, include_dirs=(), _seen=None) -> list[Path]:
    """The local headers ``path`` includes with ``#include "..."``, recursively, each once, in order (those not
    found are skipped: the compiler reports them)."""
    seen = _seen if _seen is not None else {}
    try:
        text = path.read_text()
    except OSError:
        return list(seen)
    for name in _INCLUDE.findall(text):
        for d in (path.parent, *include_dirs):
            cand = (Path(d) / name).resolve()
            if cand.is_file():
                if cand not in seen:
                    seen[cand] = None
                    includes(cand, include_dirs, seen)
                break
    return list(seen)


def content(path: Path, include_dirs=()) -> tuple[str, str, str]:
    """(source text, text of its includes as the key hashes it, SHA-256 of both)."""
    source = path.read_text()
    parts = []
    for inc in includes(path, include_dirs):
        try:
            parts.append(f"// include {inc.name}\n{inc.read_text()}\n")
        except OSError:
            pass
    inc_text = "".join(parts)
    return source, inc_text, hashlib.sha256((source + "\0" + inc_text).encode()).hexdigest()


def load_cu(path, *, options=(), include_dirs=(), module=None, name: str | None = None):
    """See ``gpk_array.load_cu``."""
    p = Path(path).expanduser().resolve()
    if p.suffix != ".cu":
        raise ValueError(f"gpk_array.load_cu: {path} is not a .cu file")
    if not p.is_file():
        raise FileNotFoundError(f"gpk_array.load_cu: no such file {path}")
    options = tuple([options] if isinstance(options, str) else options)
    include_dirs = tuple(str(Path(d).expanduser().resolve()) for d in include_dirs)
    source, inc_text, digest = content(p, include_dirs)
    with _lock:
        mod = module if module is not None else _modules.get(p)
        if mod is not None and mod.__dict__.get("__cu_hash__") == digest and \
                mod.__dict__.get("__cu_options__") == options and module is None:
            return mod
        if mod is None:
            mod = types.ModuleType(name or p.stem)
        _fill(mod, p, source, inc_text, digest, options, include_dirs)
        _modules[p] = mod
    return mod


def _fill(mod, p: Path, source: str, inc_text: str, digest: str, options, include_dirs) -> None:
    from . import cache, signature
    from .kernel import JitKernel, kernel_params
    ks = signature.kernels(source)
    cmod = cache.load(source, (), options, name=p.name, include_dirs=(str(p.parent), *include_dirs),
                      identity=f"file:{p}", include_text=inc_text)
    structs = mod.__dict__.get("__cu_structs__", ())
    old = [k for k, v in mod.__dict__.items() if isinstance(v, JitKernel) or k in structs]
    for k in old:
        del mod.__dict__[k]
    kernels, structs = [], signature.structs(source)
    for k in ks:
        if k.extern_c and not k.template:
            setattr(mod, k.name, JitKernel(cmod, k.name, kernel_params(source, k.name, ks)))
            kernels.append(k.name)
    for sname, dt in structs.items():
        if sname not in kernels:
            setattr(mod, sname, dt)
    mod.__file__ = str(p)
    mod.__cu_hash__ = digest
    mod.__cu_options__ = tuple(options)
    mod.__cu_include_dirs__ = tuple(include_dirs)
    mod.__cu_kernels__ = tuple(kernels)
    mod.__cu_structs__ = tuple(s for s in structs if s not in kernels)
    mod.__cu_module__ = cmod
    mod.__doc__ = f"CUDA kernels of {p.name}: {', '.join(kernels) or 'none'}"
    try:
        write_stub(p, ks, structs)
    except OSError:
        pass


def is_stale(mod) -> bool:
    """Whether the ``.cu`` file behind ``mod`` or one of its includes changed since it was loaded."""
    try:
        return content(Path(mod.__file__), mod.__dict__.get("__cu_include_dirs__", ()))[2] != mod.__cu_hash__
    except OSError:
        return True


_PY_TYPES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def stub_text(kernels, structs) -> str:
    """The ``.pyi`` text for a ``.cu`` module."""
    lines = ['"""Generated by gpk_array from the .cu file beside it; regenerated on import."""',
             "from typing import Any", "import numpy", "from gpk_array._jit.kernel import JitKernel", ""]
    for sname in structs:
        lines.append(f"{sname}: numpy.dtype  # struct {sname}")
    for k in kernels:
        if not k.extern_c or k.template:
            continue
        sig = "?" if k.params is None else ", ".join(f"{p.ctype} {p.name}" for p in k.params)
        lines.append(f"{k.name}: JitKernel  # {k.name}({sig})")
    return "\n".join(lines) + "\n"


def write_stub(p: Path, kernels, structs) -> None:
    """Write ``<file>.pyi`` beside the ``.cu`` file when its text changed (atomically; OSError if not writable)."""
    from .._kernels.loader import write_atomic
    stub = p.with_suffix(".pyi")
    text = stub_text(kernels, structs)
    try:
        if stub.read_text() == text:
            return
    except OSError:
        pass
    write_atomic(stub, text.encode())


# ----------------------------------------------------------------------------------------------
# the import hook

class CuFinder:
    """A meta-path finder: ``import name`` finds ``name.cu`` in a directory of ``sys.path`` (or of the package's
    ``__path__``) when no Python module of that name comes first on the path."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        """The spec of ``fullname`` from a ``.cu`` file, or None."""
        import importlib.util
        leaf = fullname.rpartition(".")[2]
        for d in (path if path is not None else sys.path):
            try:
                cand = Path(d or ".") / f"{leaf}.cu"
            except TypeError:
                continue
            if cand.is_file():
                return importlib.util.spec_from_file_location(fullname, str(cand), loader=CuLoader(str(cand)))
        return None

    @classmethod
    def invalidate_caches(cls):
        """Nothing is cached by path here."""


class CuLoader:
    """Loads a ``.cu`` file as a module (``exec_module`` runs at import and at ``importlib.reload``)."""

    def __init__(self, path: str):
        self.path = path

    def create_module(self, spec):
        """Default module creation."""
        return None

    def exec_module(self, module):
        """Fill ``module`` from the file (a no-op when its content hash is unchanged)."""
        p = Path(self.path).resolve()
        digest = module.__dict__.get("__cu_hash__")
        if digest is not None and not is_stale(module):
            return
        load_cu(p, module=module, options=module.__dict__.get("__cu_options__", ()),
                include_dirs=module.__dict__.get("__cu_include_dirs__", ()))


def install() -> None:
    """Put ``CuFinder`` at the end of ``sys.meta_path`` (once)."""
    if CuFinder not in sys.meta_path:
        sys.meta_path.append(CuFinder)


def uninstall() -> None:
    """Take ``CuFinder`` off ``sys.meta_path``."""
    while CuFinder in sys.meta_path:
        sys.meta_path.remove(CuFinder)


def reload_changed() -> list:
    """Reload every imported ``.cu`` module whose file or includes changed; returns their names."""
    import importlib
    done = []
    for name, mod in list(sys.modules.items()):
        if isinstance(getattr(getattr(mod, "__spec__", None), "loader", None), CuLoader) and is_stale(mod):
            importlib.reload(mod)
            done.append(name)
    return done
