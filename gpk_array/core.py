"""``np.core``: NumPy 2 keeps it as a deprecated alias of its internals; code written for NumPy 1 still reaches
record arrays through it (``np.core.records.fromarrays``, numpy-100 #91). Here it holds ``records``
(gpk_array.rec) only. A lazy submodule: ``import gpk_array`` runs it on first use."""
from . import rec as records

__all__ = ["records"]


def __getattr__(name):
    raise AttributeError(f"gpk_array.core has only 'records' (gpk_array.rec); NumPy's numpy.core.{name} is one of "
                         "NumPy's internals")
