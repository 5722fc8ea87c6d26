"""``np.char``: NumPy's ``numpy.char``, string operations on arrays of str or bytes (``np.char.upper``,
``np.char.add``, ...).

Its functions compute with NumPy on the host values of their arguments (Arrays of any device), and their results
are placed by the rule of host-only dtypes (gpk_array/_hostdata.py): strings, bytes, dates and records on the CPU
device, standard dtypes (lengths, counts, masks) on the default device. A lazy submodule: ``import gpk_array`` runs
it (and imports ``numpy.char``) on first use.
"""
from ._hostdata import numpy_namespace as _numpy_namespace

__getattr__, __dir__ = _numpy_namespace("char", globals())
