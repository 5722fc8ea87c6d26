"""NumPy's ``numpy.lib`` pieces that scripts reach through the namespace: ``lib.stride_tricks``."""
from . import stride_tricks  # noqa: F401

__all__ = ["stride_tricks"]
