"""gpk_array: the Python Array API standard (2025.12) on NVIDIA GPUs (CuPy-backed) and the CPU (NumPy-backed)."""
__version__ = "0.1.0"

from ._lazy import lazy_submodules as _lazy_submodules  # noqa: E402

# Bound now, run on first attribute read (gpk_array/_lazy.py): `import gpk_array` does not load numpy.random
# (gpk_array.random), numpy.testing with unittest (gpk_array.testing), the scheduler with asyncio (gpk_array.sched),
# the CUDA dispatch layer and its kernel modules (gpk_array._gpu, gpk_array._kernels: the CPU device never reads
# them), the SciPy bridges (gpk_array.scipy, gpk_array.special: they import SciPy on first use), or what host-only
# dtypes need (gpk_array._hostdata, and gpk_array.char/.strings/.rec with numpy.char/.strings/.rec; gpk_array.core
# holds NumPy 1's spelling np.core.records of gpk_array.rec). Before anything
# below imports them; no module __getattr__ here, which would slow every gpk_array.<name> read.
_lazy_submodules(globals(), "random", "testing", "sched", "_gpu", "_kernels", "scipy", "special", "cuda",
                 "_hostdata", "char", "strings", "rec", "core")
del _lazy_submodules, _lazy  # noqa: F821  (the import bound the submodule too: keep dir(gpk_array) as it was)

from ._version import get as _get_version, set_array_api_version  # noqa: E402

__array_api_version__ = _get_version()

from math import e, inf, nan, pi  # noqa: E402

newaxis = None

from ._dtypes import (  # noqa: E402
    bfloat16, bool, complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
    uint32, uint64,
)
from ._errors import DeviceError, GpkArrayError, HostOnlyError, KernelCompileError, OutOfMemoryError  # noqa: E402
from ._jit.api import jit, kernel_cache_info, load_cu  # noqa: E402  (imports nothing until called)
from ._device import Device, default_device, set_default_device  # noqa: E402
from ._array import Array, _install_operators  # noqa: E402
from ._ops.creation import (  # noqa: E402
    arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace, meshgrid, ones, ones_like,
    tril, triu, zeros, zeros_like,
)
from ._ops.data_type import astype, can_cast, finfo, iinfo, isdtype, result_type  # noqa: E402
from ._ops.elementwise import (  # noqa: E402
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_invert, bitwise_left_shift,
    bitwise_or, bitwise_right_shift, bitwise_xor, ceil, clip, conj, copysign, cos, cosh, divide, equal, exp, expm1,
    floor, floor_divide, greater, greater_equal, hypot, imag, isfinite, isinf, isnan, less, less_equal, log, log1p,
    log2, log10, logaddexp, logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative,
    nextafter, not_equal, positive, pow, real, reciprocal, remainder, round, sign, signbit, sin, sinh, sqrt, square,
    subtract, tan, tanh, trunc,
)
from ._ops.indexing import take, take_along_axis  # noqa: E402
from ._ops.linalg_basic import matmul, matrix_transpose, tensordot, vecdot  # noqa: E402
from ._ops.manipulation import (  # noqa: E402
    broadcast_arrays, broadcast_shapes, broadcast_to, concat, expand_dims, flip, moveaxis, permute_dims, repeat,
    reshape, roll, squeeze, stack, tile, unstack,
)
from ._ops.searching import argmax, argmin, count_nonzero, nonzero, searchsorted, where  # noqa: E402
from ._ops.sets import isin, unique_all, unique_counts, unique_inverse, unique_values  # noqa: E402
from ._ops.sorting import argsort, sort  # noqa: E402
from ._ops.statistical import (  # noqa: E402
    all, any, cumulative_prod, cumulative_sum, diff, max, mean, min, prod, std, sum, var,
)
from ._ops.info import __array_namespace_info__  # noqa: E402,F401
from . import linalg, fft  # noqa: E402
from ._ops.nn import *  # noqa: E402,F401,F403  fused ops: linear, layer_norm, softmax, ...
from ._precision import (  # noqa: E402,F401
    float32_matmul_precision, get_float32_matmul_precision, set_float32_matmul_precision)
from ._numpy import *  # noqa: E402,F401,F403  NumPy's names beside the standard's
from ._numpy import install as _install_numpy_methods  # noqa: E402

_install_operators()
_install_numpy_methods(Array)
from ._protocols import install as _install_protocols  # noqa: E402
from ._pykernel import kernel  # noqa: E402  (@gpk_array.kernel: parses and compiles nothing until used)

_install_protocols(Array)
del _install_protocols


# The public names, one list (``from gpk_array import *``; tests/test_docstrings.py checks that it equals the
# names a fresh ``import gpk_array`` binds, each importable).
__all__ = [
    # the Array API standard (2025.12): constants, dtypes, functions, the linalg and fft extensions
    "Device", "abs", "acos", "acosh", "add", "all", "any", "arange", "argmax", "argmin", "argsort", "asarray",
    "asin", "asinh", "astype", "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert", "bitwise_left_shift",
    "bitwise_or", "bitwise_right_shift", "bitwise_xor", "bool", "broadcast_arrays", "broadcast_shapes",
    "broadcast_to", "can_cast", "ceil", "clip", "complex128", "complex64", "concat", "conj", "copysign", "cos",
    "cosh", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff", "divide", "e", "empty", "empty_like",
    "equal", "exp", "expand_dims", "expm1", "eye", "fft", "finfo", "flip", "float32", "float64", "floor",
    "floor_divide", "from_dlpack", "full", "full_like", "greater", "greater_equal", "hypot", "iinfo", "imag", "inf",
    "int16", "int32", "int64", "int8", "isdtype", "isfinite", "isin", "isinf", "isnan", "less", "less_equal",
    "linalg", "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logical_and", "logical_not", "logical_or",
    "logical_xor", "matmul", "matrix_transpose", "max", "maximum", "mean", "meshgrid", "min", "minimum", "moveaxis",
    "multiply", "nan", "negative", "newaxis", "nextafter", "nonzero", "not_equal", "ones", "ones_like",
    "permute_dims", "pi", "positive", "pow", "prod", "real", "reciprocal", "remainder", "repeat", "reshape",
    "result_type", "roll", "round", "searchsorted", "sign", "signbit", "sin", "sinh", "sort", "sqrt", "square",
    "squeeze", "stack", "std", "subtract", "sum", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile",
    "tril", "triu", "trunc", "uint16", "uint32", "uint64", "uint8", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "unstack", "var", "vecdot", "where", "zeros", "zeros_like",
    # gpk_array's own: the Array and error classes, devices, dtypes beyond the standard, fused ops, switches,
    # the scheduler
    "Array", "DeviceError", "GpkArrayError", "HostOnlyError", "OutOfMemoryError", "add_layer_norm",
    "add_layer_norm_linear", "bfloat16", "bias_add_inplace", "default_device", "float16",
    "float32_matmul_precision", "gelu", "get_float32_matmul_precision", "kernel", "kv_cache_attention",
    "layer_norm", "linear",
    "linear_bias_gelu", "scaled_dot_product_attention", "sched", "self_attention", "set_array_api_version",
    "set_default_device", "set_float32_matmul_precision", "softmax",
    # SciPy on both devices (gpk_array.scipy), and the special-function namespace SciPy looks for (xp.special)
    "scipy", "special",
    # your own kernels: CUDA source (gpk_array.jit), .cu files as modules, the compile cache, driver objects
    "KernelCompileError", "cuda", "jit", "kernel_cache_info", "load_cu",
    # NumPy's names beside the standard's (gpk_array._numpy): functions, ufuncs, dtype names, submodules
    "False_", "NAN", "NINF", "NZERO", "PINF", "PZERO", "ScalarType", "True_", "absolute", "allclose", "amax",
    "amin", "angle", "append", "apply_along_axis", "apply_over_axes", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argpartition", "argwhere", "around", "array", "array2string", "array_equal",
    "array_equiv", "array_repr", "array_split", "array_str", "asanyarray", "asarray_chkfinite", "ascontiguousarray",
    "asmatrix", "bmat", "matrix",
    "asfortranarray", "atleast_1d", "atleast_2d", "atleast_3d", "average", "bartlett", "base_repr", "binary_repr",
    "bincount", "bitwise_count", "bitwise_not", "blackman", "block", "bool_", "broadcast", "byte", "bytes_", "c_",
    "cbrt", "cdouble", "character", "choose", "clongdouble", "column_stack", "common_type", "complex_",
    "complexfloating", "compress", "concatenate", "conjugate", "convolve", "copy", "copyto", "corrcoef",
    "correlate", "cov", "cross", "csingle", "cumprod", "cumsum", "datetime64", "deg2rad", "degrees", "delete",
    "diag", "diag_indices", "diag_indices_from", "diagflat", "diagonal", "digitize", "divmod", "dot", "double",
    "dsplit", "dstack", "dtype", "ediff1d", "einsum", "einsum_path", "emath", "errstate", "euler_gamma",
    "exceptions", "exp2", "extract", "fabs", "fill_diagonal", "fix", "flatnonzero", "flexible", "fliplr", "flipud",
    "float_", "float_power", "floating", "fmax", "fmin", "fmod", "format_float_positional",
    "format_float_scientific", "frexp", "frombuffer", "fromfile", "fromfunction", "fromiter", "frompyfunc",
    "fromstring", "gcd", "generic", "genfromtxt", "geomspace", "get_printoptions", "getbufsize", "geterr",
    "geterrcall", "gradient", "half", "hamming", "hanning", "heaviside", "histogram", "histogram2d",
    "histogram_bin_edges", "histogramdd", "hsplit", "hstack", "i0", "identity", "index_exp", "indices", "inexact",
    "info", "inner", "insert", "int_", "intc", "integer", "interp", "intersect1d", "intp", "invert", "isclose",
    "iscomplex", "iscomplexobj", "isfortran", "isneginf", "isposinf", "isreal", "isrealobj", "isscalar",
    "issubdtype", "iterable", "ix_", "kaiser", "kron", "lcm", "ldexp", "left_shift", "lexsort", "lib",
    "little_endian", "load", "loadtxt", "logaddexp2", "logspace", "long", "longdouble", "longlong", "mask_indices",
    "matvec", "may_share_memory", "median", "mgrid", "min_scalar_type", "mintypecode", "mod", "modf", "msort",
    "nan_to_num", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin",
    "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar", "ndarray", "ndenumerate", "ndim",
    "ndindex", "nditer", "nested_iters", "number", "object_", "ogrid", "outer", "packbits", "pad", "partition",
    "percentile", "piecewise", "place", "poly", "poly1d", "polyadd", "polyder", "polydiv", "polyfit", "polyint",
    "polymul", "polysub", "polyval", "power", "printoptions", "promote_types", "ptp", "put", "put_along_axis",
    "putmask", "quantile", "r_", "rad2deg", "radians", "random", "ravel", "ravel_multi_index", "real_if_close",
    "require", "resize", "right_shift", "rint", "rollaxis", "roots", "rot90", "row_stack", "s_", "save", "savetxt",
    "savez", "savez_compressed", "sctypeDict", "select", "set_printoptions", "setbufsize", "setdiff1d", "seterr",
    "seterrcall", "setxor1d", "shape", "shares_memory", "short", "show_config", "show_runtime", "signedinteger",
    "sinc", "single", "size", "sort_complex", "spacing", "split", "str_", "swapaxes", "testing", "timedelta64",
    "trace", "transpose", "trapezoid", "tri", "tril_indices", "tril_indices_from", "trim_zeros", "triu_indices",
    "triu_indices_from", "true_divide", "typecodes", "typename", "ubyte", "ufunc", "uint", "uintc", "uintp",
    "ulong", "ulonglong", "union1d", "unique", "unpackbits", "unravel_index", "unsignedinteger", "unwrap", "ushort",
    "vander", "vdot", "vecmat", "vectorize", "void", "vsplit", "vstack",
    # host-only dtypes (gpk_array/_hostdata.py): dates, business days, string and record submodules
    "busday_count", "busday_offset", "busdaycalendar", "char", "datetime_as_string", "datetime_data", "is_busday",
    "isnat", "rec", "strings", "core",
]


def _register_with_dask():
    # Where Dask is imported already (a Dask worker unpickling an Array, or code that imported dask first), register
    # Array with it now (gpk_array/dask.py: chunk type, dispatch hooks, serializers); elsewhere `import gpk_array.dask`
    # does. Never imports Dask itself: `import gpk_array` stays as cheap as tests/test_import_time.py wants it.
    import sys
    if "dask" in sys.modules and "gpk_array.dask" not in sys.modules:
        try:
            import gpk_array.dask  # noqa: F401
        except ImportError:   # a Dask without dask.array's dependencies: nothing to register with
            pass


_register_with_dask()
del _register_with_dask
