"""gpk_array: the Python Array API standard (2025.12) on NVIDIA GPUs (CuPy-backed) and the CPU (NumPy-backed)."""
__version__ = "0.1.0"

from ._version import get as _get_version, set_array_api_version  # noqa: E402

__array_api_version__ = _get_version()

from math import e, inf, nan, pi  # noqa: E402

newaxis = None

from ._dtypes import (  # noqa: E402
    bfloat16, bool, complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
    uint32, uint64,
)
from ._errors import DeviceError, GpkArrayError, OutOfMemoryError  # noqa: E402
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
from ._ops.info import __array_namespace_info__  # noqa: E402
from . import linalg, fft  # noqa: E402
from ._ops.nn import *  # noqa: E402,F401,F403  fused ops: linear, layer_norm, softmax, ...
from ._precision import (  # noqa: E402,F401
    float32_matmul_precision, get_float32_matmul_precision, set_float32_matmul_precision)
from ._numpy import *  # noqa: E402,F401,F403  NumPy's names beside the standard's
from ._numpy import install as _install_numpy_methods  # noqa: E402

_install_operators()
_install_numpy_methods(Array)
