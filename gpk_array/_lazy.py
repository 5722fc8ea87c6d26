"""Submodules that run on first use and cost nothing per call afterwards (import time: tests/test_import_time.py).

``lazy_submodules(globals(), "random", "_gpu", ...)``, at the top of gpk_array/__init__.py (before anything imports
those), binds each ``gpk_array.<name>`` to its real module object, made from its spec and entered in sys.modules
but not run yet: its namespace holds the import metadata (``__name__``, ``__file__``, ``__path__``, ``__spec__``)
and a PEP 562 ``__getattr__``/``__dir__`` pair. The first read of any other attribute (``_gpu.OWN_KERNELS_MIN`` on a
CUDA device's first op, ``gpk_array.random.seed``) runs the module's code in that namespace, under a lock, and
removes the pair. From then on it is an ordinary module: one object everywhere (``from .. import _gpu`` in
gpk_array._ops, ``import gpk_array.random``, sys.modules), of type ``module``, with its functions' ``__module__``
and globals its own, and attribute reads as fast as any module's. (CPython does not specialize attribute reads of
a module whose namespace has a ``__getattr__``: 18 ns instead of 5 ns per read on 3.11, measured on the development
machine; that is why gpk_array itself defines none and why the pair goes away once used.)

Importing a submodule of a package that has not run yet does not run the package (``import gpk_array.sched._cuda``,
as gpk_array._gpu does, leaves gpk_array/sched/__init__.py and with it asyncio for later), nor does reading a
submodule's name from it (that imports the submodule). So the package's submodules must not import names the
package's __init__ defines (``from . import <submodule>`` is fine): gpk_array.sched and gpk_array._kernels don't.
"""
import _thread  # threading's lock without importing threading (not otherwise loaded by `import gpk_array`)
import importlib.util
import sys

_lock = _thread.RLock()
_running = set()  # names of the modules whose code is being run (a read from inside their own code: AttributeError)


def lazy_submodules(namespace, *names):
    """Bind ``namespace[name]`` to the not-yet-run submodule ``<package>.<name>`` for each name (``namespace``: the
    package's globals())."""
    package = namespace["__name__"]
    for name in names:
        full = f"{package}.{name}"
        module = sys.modules.get(full)
        if module is None:
            spec = importlib.util.find_spec(full)
            module = importlib.util.module_from_spec(spec)
            _arm(module)
            sys.modules[full] = module
        namespace[name] = module


def pending(module):
    """Whether ``module`` is a lazy submodule whose code has not run yet."""
    return getattr(module.__dict__.get("__getattr__"), "_gpk_lazy", False)


def _arm(module):
    package = module.__spec__.submodule_search_locations is not None

    def __getattr__(attr):
        if package and not attr.startswith("__"):
            # a submodule (``from . import _aio`` inside gpk_array/sched/_api.py probes the package for it):
            # import it without running the package, as importing ``gpk_array.sched._api`` directly does; running
            # the package here, in the middle of a submodule, would import that submodule again, half run
            sub = f"{module.__name__}.{attr}"
            if importlib.util.find_spec(sub) is not None:
                return importlib.import_module(sub)
        ns = _run(module)
        if attr in ns:
            return ns[attr]
        own = ns.get("__getattr__")   # the module's own PEP 562 hook, where it defines one
        if own is not None and own is not __getattr__:
            return own(attr)
        raise AttributeError(f"module {module.__name__!r} has no attribute {attr!r}")

    def __dir__():
        ns = _run(module)
        own = ns.get("__dir__")
        return own() if own is not None and own is not __dir__ else sorted(ns)

    __getattr__._gpk_lazy = __dir__._gpk_lazy = True
    module.__dict__["__getattr__"] = __getattr__
    module.__dict__["__dir__"] = __dir__


def _run(module):
    """Run ``module``'s code once (other threads wait for it) and drop the lazy pair; its namespace."""
    ns = module.__dict__
    name = module.__name__
    with _lock:
        if name in _running:   # read from inside its own code: a partially run module, as in a plain import
            raise AttributeError(f"partially initialized module {name!r} (its code is running)")
        if pending(module):
            _running.add(name)
            keep = dict(ns)  # the import metadata and the lazy pair
            try:
                module.__spec__.loader.exec_module(module)
            except BaseException:
                # as after a failed import, nothing of the half-run code stays visible: the namespace goes back to
                # what it held before, still armed, so the next read runs the module from the start again
                ns.clear()
                ns.update(keep)
                raise
            finally:
                _running.discard(name)
            for key in ("__getattr__", "__dir__"):
                if getattr(ns.get(key), "_gpk_lazy", False):
                    del ns[key]
    return ns
