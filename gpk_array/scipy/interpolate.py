"""``scipy.interpolate`` on gpk_array Arrays, on their device: SciPy's own functions, and on a CUDA device, where SciPy
computes on the host, CuPy's ``cupyx.scipy.interpolate`` (see gpk_array.scipy)."""
from ._bridge import install

install(globals(), "interpolate")
del install
