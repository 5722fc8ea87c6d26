"""NumPy-compatible names beside the standard's (issue 6): where the standard is silent, behave like NumPy 2.

``from gpk_array._numpy import *`` (done by gpk_array/__init__ after the standard's names) adds NumPy's functions,
ufunc objects, dtype names, I/O and the ``random`` and ``lib`` submodules to the namespace. Names the standard
also defines (sum, max, argsort, zeros, asarray, where, ...) are replaced by wrappers that take NumPy's
signatures and hand the standard's call forms to the standard's implementations, so both kinds of call work.
``install(Array)`` adds numpy.ndarray's methods and attributes.

Modules: ufuncs (ufunc objects; ufunc_types: their types, ntypes, resolve_dtypes), creation, reductions,
statistics, shaping, indexing, sorting, linalg_funcs, logic, poly, types (dtype names, ndarray, finfo, errstate,
the datetime64 functions), printing, io, iteration (nditer, frompyfunc), multiiter (the broadcast object,
nested_iters), windows (bartlett, hanning, kaiser, ...), matrix (matrix, asmatrix, bmat), bits (packbits,
unpackbits), info (info, show_config), methods (ndarray methods; memory: getfield, setfield, byteswap, setflags),
linalg (extras for gpk_array.linalg), emath (np.emath). gpk_array.testing is numpy.testing for Arrays
(gpk_array.random and gpk_array.testing are imported on first access).
"""
from . import creation as _creation
from . import indexing as _indexing
from . import bits as _bits
from . import info as _info
from . import io as _io
from . import iteration as _iteration
from . import linalg_funcs as _linalg_funcs
from . import logic as _logic
from . import poly as _poly
from . import printing as _printing
from . import reductions as _reductions
from . import shaping as _shaping
from . import sorting as _sorting
from . import statistics as _statistics
from . import types as _types
from . import ufuncs as _ufuncs
from . import windows as _windows
from . import multiiter as _multiiter
from . import matrix as _matrix
from .methods import install  # noqa: F401

_MODULES = (_types, _ufuncs, _creation, _reductions, _statistics, _shaping, _indexing, _sorting, _linalg_funcs,
            _logic, _poly, _printing, _io, _iteration, _bits, _info, _windows, _multiiter, _matrix)

__all__ = []
for _m in _MODULES:
    for _name in _m.__all__:
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)

# the submodules NumPy scripts reach as attributes: np.lib.stride_tricks, np.emath; np.random and np.testing too,
# but those two are imported on first access (gpk_array.__getattr__): numpy.random and numpy.testing (which loads
# unittest and importlib.metadata) cost ~25 ms of import time that a program not using them need not pay
from .. import lib  # noqa: E402
from . import emath  # noqa: E402

__all__ += ["lib", "emath"]
del _m, _name
