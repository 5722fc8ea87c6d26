"""Linear algebra functions of the main namespace (standard section "Linear Algebra Functions")."""
import operator

import numpy as np

from .. import _dtypes as _dt
from .. import _gpu, _hooks
from .elementwise import array_operands, binary_operands
from ._common import as_array, axis_error, new, oom_guard


@oom_guard
def matmul(x1, x2, /):
    """Matrix product with broadcasting (standard: linear_algebra_functions.matmul)."""
    a, b, dev = binary_operands(x1, x2)
    if getattr(a, "ndim", 0) == 0 or getattr(b, "ndim", 0) == 0:
        raise ValueError("matmul does not take zero-dimensional operands")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ValueError(f"matmul: inner dimensions differ, shapes {a.shape} and {b.shape}")
    if dev.kind == "cuda":
        return new(_gpu.matmul(a, b), dev)
    if _hooks.prealloc_hook is not None:
        _precheck_matmul(a, b, dev)
    if a.dtype in _LOW:
        # NumPy has no half-precision GEMM (and gives float32 for bfloat16): accumulate in float32
        return new(dev.xp.matmul(a.astype(_dt.F32), b.astype(_dt.F32)).astype(a.dtype), dev)
    return new(dev.xp.matmul(a, b), dev)


_LOW = (_dt.F16, _dt.BF16)


def _precheck_matmul(a, b, dev):
    """The pre-allocation hook (set while a CPU scheduler context is entered) asked about matmul's result."""
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return  # NumPy raises its own error
    shape = batch + ((a.shape[-2],) if a.ndim > 1 else ()) + ((b.shape[-1],) if b.ndim > 1 else ())
    _hooks.precheck(shape, np.result_type(a.dtype, b.dtype), dev)


def matrix_transpose(x, /):
    """Transpose the last two axes (standard: linear_algebra_functions.matrix_transpose)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got {x.ndim}")
    return new(x._data.swapaxes(-1, -2), x._device)


@oom_guard
def tensordot(x1, x2, /, *, axes=2):
    """Tensor contraction over axes (standard: linear_algebra_functions.tensordot)."""
    a, b, dev = array_operands(x1, x2)
    if isinstance(axes, bool) or not isinstance(axes, (int, tuple, list)) and not hasattr(axes, "__index__"):
        raise TypeError(f"axes must be an integer or a pair of sequences of axes, got {axes!r}")
    if not isinstance(axes, (tuple, list)):
        axes = operator.index(axes)
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"axes must be non-negative, got {axes}")
        if axes > a.ndim or axes > b.ndim:
            raise ValueError(f"cannot contract {axes} axes of arrays with {a.ndim} and {b.ndim} dimensions")
        ax = (list(range(a.ndim - axes, a.ndim)), list(range(axes)))
    else:
        ax = (list(axes[0]), list(axes[1]))
        if len(ax[0]) != len(ax[1]):
            raise ValueError(f"axes {axes} must name the same number of axes for both arrays")
    for i, j in zip(*ax):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"shape mismatch for contraction: {a.shape}[{i}] != {b.shape}[{j}]")
    if not ax[0]:  # no contraction: the outer product (CuPy refuses zero-dimensional operands here)
        return new(a.reshape(a.shape + (1,) * b.ndim) * b, dev)
    if dev.kind == "cuda" and a.dtype.itemsize == 2 and a.dtype.kind in "fV" and b.dtype == a.dtype:
        return new(_gpu.tensordot(a, b, ax), dev)     # float16/bfloat16: one matmul through the GEMM dispatch
    return new(dev.xp.tensordot(a, b, axes=ax), dev)


@oom_guard
def vecdot(x1, x2, /, *, axis=-1):
    """Dot product of vectors along axis, conjugating x1 (standard: linear_algebra_functions.vecdot)."""
    a, b, dev = array_operands(x1, x2)
    xp = dev.xp
    nd = max(a.ndim, b.ndim)
    axis = operator.index(axis)
    if not -min(a.ndim, b.ndim) <= axis < 0 and not 0 <= axis < min(a.ndim, b.ndim):
        raise axis_error(axis, min(a.ndim, b.ndim))  # a ValueError, as the standard asks
    ax = axis if axis < 0 else axis - nd
    if a.shape[ax] != b.shape[ax]:
        raise ValueError(f"vecdot: sizes along axis {axis} differ: {a.shape} and {b.shape}")
    if _dt.kind(a.dtype) == "c":
        a = xp.conj(a)
    a = xp.moveaxis(a, ax, -1)[..., None, :]
    b = xp.moveaxis(b, ax, -1)[..., :, None]
    return new(xp.matmul(a, b)[..., 0, 0], dev)

