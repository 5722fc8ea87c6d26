"""``scipy.cluster`` on gpk_array Arrays, on their device: SciPy's own functions, and on a CUDA device, where SciPy
computes on the host, CuPy's ``cupyx.scipy.cluster`` (see gpk_array.scipy)."""
from .._bridge import install

install(globals(), "cluster")
del install
