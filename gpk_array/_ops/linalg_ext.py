"""The linalg extension (standard section "Linear Algebra Extension"), plus NumPy's ``norm``."""
import math
from collections import namedtuple

import numpy as np

from .. import _dtypes as _dt
from .elementwise import array_operands
from .linalg_basic import matmul, matrix_transpose, tensordot, vecdot
from .statistical import _sum_dtype
from ._common import CPU, as_array, axis_error, new, normalize_axes, oom_guard

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _square(x, name):
    x = as_array(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} needs a stack of square matrices, got shape {x.shape}")
    return x


def _float(x):
    """Integer and bool input computes in the default floating dtype."""
    return x._data if _dt.kind(x.dtype) in "fc" else x._data.astype(_dt.F64)


def _low(data):
    """float16 / bfloat16 compute in float32 (LAPACK and cuSOLVER have no half precision)."""
    return data.astype(_dt.F32) if data.dtype in (_dt.F16, _dt.BF16) else data


@oom_guard
def cholesky(x, /, *, upper=False):
    """Cholesky factor (standard: linalg.cholesky)."""
    x = _square(x, "cholesky")
    xp = x._device.xp
    L = xp.linalg.cholesky(_low(_float(x)))
    if upper:
        L = xp.conj(xp.swapaxes(L, -1, -2))
    return new(L.astype(x.dtype, copy=False) if _dt.kind(x.dtype) in "fc" else L, x._device)


@oom_guard
def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-vectors (standard: linalg.cross)."""
    a, b, dev = array_operands(x1, x2)
    xp = dev.xp
    nd = max(a.ndim, b.ndim)
    if not -min(a.ndim, b.ndim) <= axis < min(a.ndim, b.ndim):
        raise axis_error(axis, min(a.ndim, b.ndim))  # a ValueError, as the standard asks
    ax = axis if axis < 0 else axis - nd
    if a.shape[ax] != 3 or b.shape[ax] != 3:
        raise ValueError(f"cross needs size 3 along axis {axis}, got shapes {a.shape} and {b.shape}")
    shape = xp.broadcast_shapes(a.shape, b.shape) if hasattr(xp, "broadcast_shapes") else None
    a = xp.broadcast_to(a, shape)
    b = xp.broadcast_to(b, shape)
    return new(xp.cross(a, b, axis=ax), dev)


@oom_guard
def det(x, /):
    """Determinant (standard: linalg.det)."""
    x = _square(x, "det")
    r = x._device.xp.linalg.det(_low(_float(x)))
    return new(r.astype(x.dtype, copy=False) if x.dtype in (_dt.F16, _dt.BF16) else r, x._device)


def diagonal(x, /, *, offset=0):
    """Diagonals of the last two axes (standard: linalg.diagonal)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal needs at least 2 dimensions, got {x.ndim}")
    return new(x._device.xp.diagonal(x._data, offset=offset, axis1=-2, axis2=-1), x._device)


def _eig_backend(x):
    """numpy.linalg or cupy.linalg when it has eig; else NumPy on a host copy (cuSOLVER has no general eig
    before CuPy 14)."""
    xp = x._device.xp
    return xp if hasattr(xp.linalg, "eig") else None


@oom_guard
def eig(x, /):
    """Eigenvalues and right eigenvectors of general square matrices, always complex (standard 2025.12:
    linalg.eig)."""
    x = _square(x, "eig")
    data = _low(_float(x))
    cdt = _dt.complex_of(data.dtype) if _dt.kind(data.dtype) == "f" else data.dtype
    xp = _eig_backend(x)
    if xp is None:
        import numpy as np
        w, v = np.linalg.eig(data.get())
        dev_xp = x._device.xp
        return EigResult(new(dev_xp.asarray(w.astype(cdt)), x._device), new(dev_xp.asarray(v.astype(cdt)),
                                                                            x._device))
    w, v = xp.linalg.eig(data)
    return EigResult(new(w.astype(cdt), x._device), new(v.astype(cdt), x._device))


@oom_guard
def eigvals(x, /):
    """Eigenvalues of general square matrices, complex (standard 2025.12: linalg.eigvals)."""
    return eig(x).eigenvalues


@oom_guard
def eigh(x, /):
    """Eigen-decomposition of Hermitian matrices (standard: linalg.eigh)."""
    x = _square(x, "eigh")
    w, v = x._device.xp.linalg.eigh(_low(_float(x)))
    return EighResult(new(w, x._device), new(v, x._device))


@oom_guard
def eigvalsh(x, /):
    """Eigenvalues of Hermitian matrices (standard: linalg.eigvalsh)."""
    x = _square(x, "eigvalsh")
    return new(x._device.xp.linalg.eigvalsh(_low(_float(x))), x._device)


@oom_guard
def inv(x, /):
    """Matrix inverse (standard: linalg.inv)."""
    x = _square(x, "inv")
    return new(x._device.xp.linalg.inv(_low(_float(x))), x._device)


def _svdvals(data, xp):
    return xp.linalg.svd(data, compute_uv=False)


@oom_guard
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes (standard: linalg.matrix_norm)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm needs at least 2 dimensions, got {x.ndim}")
    xp = x._device.xp
    data = _low(_float(x))
    a = xp.abs(data)
    if ord == "fro":
        r = xp.sqrt(xp.sum(a * a, axis=(-2, -1)))
    elif ord == "nuc":
        r = xp.sum(_svdvals(data, xp), axis=-1)
    elif ord in (2, -2):
        s = _svdvals(data, xp)
        r = xp.max(s, axis=-1) if ord == 2 else xp.min(s, axis=-1)
    elif ord in (1, -1):
        s = xp.sum(a, axis=-2)
        r = xp.max(s, axis=-1) if ord == 1 else xp.min(s, axis=-1)
    elif ord in (math.inf, -math.inf):
        s = xp.sum(a, axis=-1)
        r = xp.max(s, axis=-1) if ord > 0 else xp.min(s, axis=-1)
    else:
        raise ValueError(f"invalid matrix norm order {ord!r}")
    if keepdims:
        r = r[..., None, None]
    return new(r, x._device)


@oom_guard
def matrix_power(x, n, /):
    """x raised to the integer power n (standard: linalg.matrix_power)."""
    x = _square(x, "matrix_power")
    return new(x._device.xp.linalg.matrix_power(x._data, n), x._device)


@oom_guard
def matrix_rank(x, /, *, rtol=None):
    """Rank from the singular values (standard: linalg.matrix_rank)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_rank needs at least 2 dimensions, got {x.ndim}")
    xp = x._device.xp
    data = _low(_float(x))
    s = _svdvals(data, xp)
    smax = xp.max(s, axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype)
    if rtol is None:
        tol = smax * (max(x.shape[-2:]) * xp.finfo(s.dtype).eps)
    else:
        r = rtol._data if hasattr(rtol, "_data") else rtol
        tol = smax * (xp.asarray(r)[..., None] if hasattr(r, "ndim") and r.ndim else r)
    return new(xp.count_nonzero(s > tol, axis=-1).astype(_dt.I64), x._device)


@oom_guard
def outer(x1, x2, /):
    """Outer product of two vectors (standard: linalg.outer)."""
    a, b, dev = array_operands(x1, x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer needs one-dimensional arrays, got shapes {a.shape} and {b.shape}")
    return new(dev.xp.multiply.outer(a, b) if dev is CPU else a[:, None] * b[None, :], dev)


@oom_guard
def pinv(x, /, *, rtol=None):
    """Moore-Penrose pseudo-inverse (standard: linalg.pinv)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"pinv needs at least 2 dimensions, got {x.ndim}")
    xp = x._device.xp
    data = _low(_float(x))
    if rtol is None:
        rtol = max(x.shape[-2:]) * float(xp.finfo(data.dtype).eps)
    elif hasattr(rtol, "_data"):
        rtol = rtol._data
    if x.size == 0:
        return new(xp.zeros(x.shape[:-2] + (x.shape[-1], x.shape[-2]), dtype=data.dtype), x._device)
    u, s, vh = xp.linalg.svd(data, full_matrices=False)
    cutoff = (xp.asarray(rtol)[..., None] if getattr(rtol, "ndim", 0) else rtol) * xp.max(
        s, axis=-1, keepdims=True)
    sinv = xp.where(s > cutoff, 1 / xp.where(s > cutoff, s, 1), 0).astype(s.dtype)
    r = xp.matmul(xp.conj(xp.swapaxes(vh, -1, -2)) * sinv[..., None, :], xp.conj(xp.swapaxes(u, -1, -2)))
    return new(r.astype(data.dtype, copy=False), x._device)


@oom_guard
def qr(x, /, *, mode="reduced"):
    """QR decomposition (standard: linalg.qr)."""
    x = as_array(x)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete', got {mode!r}")
    if x.ndim < 2:
        raise ValueError(f"qr needs at least 2 dimensions, got {x.ndim}")
    q, r = x._device.xp.linalg.qr(_low(_float(x)), mode=mode)
    return QRResult(new(q, x._device), new(r, x._device))


@oom_guard
def slogdet(x, /):
    """Sign and log of the absolute determinant (standard: linalg.slogdet)."""
    x = _square(x, "slogdet")
    sign, logabs = x._device.xp.linalg.slogdet(_low(_float(x)))
    return SlogdetResult(new(sign, x._device), new(logabs, x._device))


@oom_guard
def solve(x1, x2, /):
    """Solve x1 @ y = x2 (standard: linalg.solve); a one-dimensional x2 is a vector."""
    a, b, dev = array_operands(x1, x2)
    xp = dev.xp
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve needs a stack of square matrices as x1, got shape {a.shape}")
    if _dt.kind(a.dtype) not in "fc":
        a = a.astype(_dt.F64)
        b = b.astype(_dt.F64)
    if b.ndim == 0:
        raise ValueError("solve needs x2 to be a vector or a stack of matrices, got a zero-dimensional operand")
    if b.ndim == 1:
        if b.shape[0] != a.shape[-1]:
            raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}")
        r = xp.linalg.solve(a, xp.broadcast_to(b[:, None], a.shape[:-2] + (b.shape[0], 1)))[..., 0]
        return new(r, dev)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}")
    if a.ndim == 2 and b.ndim == 2 and a.size and b.size:  # one system: nothing to broadcast
        return new(xp.linalg.solve(a, b), dev)
    batch = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    if a.size == 0 or b.size == 0:  # nothing to solve (cuSOLVER's batching divides by zero here)
        return new(xp.empty(batch + b.shape[-2:], dtype=xp.result_type(a, b)), dev)
    return new(xp.linalg.solve(a, b), dev)


@oom_guard
def svd(x, /, *, full_matrices=True):
    """Singular value decomposition (standard: linalg.svd)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"svd needs at least 2 dimensions, got {x.ndim}")
    u, s, vh = x._device.xp.linalg.svd(_low(_float(x)), full_matrices=full_matrices)
    return SVDResult(new(u, x._device), new(s, x._device), new(vh, x._device))


@oom_guard
def svdvals(x, /):
    """Singular values (standard: linalg.svdvals)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"svdvals needs at least 2 dimensions, got {x.ndim}")
    return new(_svdvals(_low(_float(x)), x._device.xp), x._device)


@oom_guard
def trace(x, /, *, offset=0, dtype=None):
    """Sum along diagonals of the last two axes (standard: linalg.trace)."""
    x = as_array(x)
    if x.ndim < 2:
        raise ValueError(f"trace needs at least 2 dimensions, got {x.ndim}")
    dt = _sum_dtype(x.dtype, dtype)
    xp = x._device.xp
    d = xp.diagonal(x._data, offset=offset, axis1=-2, axis2=-1)
    return new(xp.sum(d, axis=-1, dtype=dt), x._device)


@oom_guard
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector p-norm over axes (standard: linalg.vector_norm); the result has a real floating dtype."""
    x = as_array(x)
    d = x._data
    if ord == 2 and x._device is CPU and d.ndim == 1 and d.dtype.kind == "f" and d.itemsize >= 4 and d.size \
            and axis in (None, 0, -1):
        # one float32/float64 vector on the CPU: BLAS's dot, as numpy.linalg.norm computes it
        r = np.sqrt(np.dot(d, d))
        return new(r.reshape((1,)) if keepdims else r, CPU)
    xp = x._device.xp
    axes = normalize_axes(axis, x.ndim)
    data = _float(x)
    a = xp.abs(data)
    if a.dtype in (_dt.F16, _dt.BF16):
        a = a.astype(_dt.F32)
    if ord == 2:
        r = xp.sqrt(xp.sum(a * a, axis=axes, keepdims=keepdims))
    elif ord == 1:
        r = xp.sum(a, axis=axes, keepdims=keepdims)
    elif ord == math.inf:
        r = xp.max(a, axis=axes, keepdims=keepdims) if a.size else xp.zeros(
            _reduced_shape(a.shape, axes, keepdims), a.dtype)
    elif ord == -math.inf:
        r = xp.min(a, axis=axes, keepdims=keepdims)
    elif ord == 0:
        r = xp.sum(a != 0, axis=axes, keepdims=keepdims).astype(a.dtype)
    else:
        if isinstance(ord, bool) or not isinstance(ord, (int, float)):
            raise ValueError(f"invalid vector norm order {ord!r}")
        r = xp.sum(a ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)
    real = _dt.real_of(data.dtype)
    return new(r.astype(real, copy=False), x._device)


def _reduced_shape(shape, axes, keepdims):
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keepdims or i not in axes)


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's ``linalg.norm``: a vector norm, or a matrix norm when two axes (or a 2-D x, axis=None) apply."""
    x = as_array(x)
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        axis = tuple(range(x.ndim))
    axes = normalize_axes(axis, x.ndim)
    if len(axes) == 2:
        from .manipulation import moveaxis
        m = moveaxis(x, axes, (-2, -1))
        r = matrix_norm(m, keepdims=False, ord="fro" if ord is None else ord)
        if keepdims:
            from .manipulation import expand_dims
            r = expand_dims(r, axis=tuple(sorted(axes)))
        return r
    return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)


__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigvals", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm", "norm"]
