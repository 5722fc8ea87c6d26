"""``import gpk_array.cuimport``: from then on ``import mykernels`` finds ``mykernels.cu`` on ``sys.path`` (when no
Python module of that name comes first) and makes it a module as ``gpk_array.load_cu`` does: every
``extern "C" __global__`` function an attribute, plain structs as NumPy structured dtypes, a ``.pyi`` stub beside the
file. ``importlib.reload(mykernels)`` rebuilds it when the file or an ``#include`` changed (content hash, not mtime);
``reload_changed()`` reloads every such module that changed. ``uninstall()`` removes the finder."""
from ._jit.cufile import CuFinder, install, reload_changed, uninstall

__all__ = ["CuFinder", "install", "reload_changed", "uninstall"]

install()
