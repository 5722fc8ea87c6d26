"""NumPy's ``numpy.linalg`` names and signatures beyond the standard's extension, for ``gpk_array.linalg``:
lstsq, multi_dot, cond, tensorsolve, tensorinv, and NumPy-flavoured svd (``compute_uv``), pinv (``rcond``),
matrix_rank (``tol``), qr (positional ``mode``), which hand the standard's call forms to the standard's functions.
"""
import numpy as _np

from .. import _dtypes as _dt
from .._array import Array
from .._ops import linalg_ext as _le
from ._util import data, dev_of, finish, new, oom_guard, std_fn, to_array

__all__ = ["LinAlgError", "lstsq", "multi_dot", "cond", "tensorsolve", "tensorinv", "svd", "pinv", "matrix_rank",
           "qr"]

# the exception NumPy's linalg raises (and CuPy's): scripts catch it as np.linalg.LinAlgError
LinAlgError = _np.linalg.LinAlgError


def _float(d):
    return d if d.dtype.kind in "fc" else d.astype(_np.float64)


@oom_guard
def lstsq(a, b, rcond=None):
    """Least-squares solution of a @ x = b: returns (x, residuals, rank, singular values), as NumPy."""
    dev = dev_of(a, b)
    xp = dev.xp
    A = _float(data(a, dev))
    B = _float(data(b, dev))
    dt = _np.result_type(A.dtype, B.dtype)
    A = A.astype(dt, copy=False)
    B = B.astype(dt, copy=False)
    if xp is _np:
        x, res, rank, s = _np.linalg.lstsq(A, B, rcond=rcond)
    else:
        m, n = A.shape
        u, s, vh = xp.linalg.svd(A, full_matrices=False)
        tol = (max(m, n) * _np.finfo(s.dtype).eps if rcond is None else rcond) * (s[0] if s.size else 0)
        keep = s > tol
        rank = int(keep.sum())
        sinv = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
        b2 = B if B.ndim == 2 else B[:, None]
        x = xp.conj(vh).T @ (sinv[:, None] * (xp.conj(u).T @ b2))
        if B.ndim == 1:
            x = x[:, 0]
        if rank == n and m > n:
            r = b2 - A @ (x if x.ndim == 2 else x[:, None])
            res = xp.sum(xp.abs(r) ** 2, axis=0)
        else:
            res = xp.empty((0,), dtype=s.dtype)
    return new(x, dev), new(xp.asarray(res), dev), int(rank), new(s, dev)


@oom_guard
def multi_dot(arrays, *, out=None):
    """Product of a chain of matrices in the cheapest order (first/last may be vectors)."""
    dev = dev_of(*arrays)
    ds = [data(a, dev) for a in arrays]
    if len(ds) < 2:
        raise ValueError("Expecting at least two arrays.")
    if dev.xp is _np:
        return finish(_np.asarray(_np.linalg.multi_dot(ds)), dev, out)
    first_vec = ds[0].ndim == 1
    last_vec = ds[-1].ndim == 1
    if first_vec:
        ds[0] = ds[0][None, :]
    if last_vec:
        ds[-1] = ds[-1][:, None]
    order = _chain_order([d.shape for d in ds])

    def mult(i, j):
        if i == j:
            return ds[i]
        k = order[i][j]
        return mult(i, k) @ mult(k + 1, j)
    r = mult(0, len(ds) - 1)
    if first_vec:
        r = r[0]
    if last_vec:
        r = r[..., 0]
    return finish(r, dev, out)


def _chain_order(shapes):
    """Split points of the matrix-chain order that minimises scalar multiplications."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j] = c
                    split[i][j] = k
    return split


@oom_guard
def cond(x, p=None):
    """Condition number of a matrix (2-norm by default; p as in norm)."""
    a = to_array(x)
    dev = a._device
    xp = dev.xp
    d = _float(a._data)
    if p is None or p in (2, -2):
        s = xp.linalg.svd(d, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return new(xp.asarray(r), dev)
    from .._ops.linalg_ext import matrix_norm
    inv = xp.linalg.inv(d)
    r = matrix_norm(new(d, dev), ord=p)._data * matrix_norm(new(inv, dev), ord=p)._data
    return new(r, dev)


@oom_guard
def tensorsolve(a, b, axes=None):
    """Solve tensordot(a, x, x.ndim) = b for x."""
    dev = dev_of(a, b)
    A = data(a, dev)
    B = data(b, dev)
    xp = dev.xp
    if axes is not None:
        allaxes = list(range(A.ndim))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(A.ndim, k)
        A = A.transpose(allaxes)
    oldshape = A.shape[-(A.ndim - B.ndim):]
    prod = int(_np.prod(oldshape))
    r = xp.linalg.solve(_float(A).reshape(prod, prod), _float(B).reshape(prod))
    return new(r.reshape(oldshape), dev)


@oom_guard
def tensorinv(a, ind=2):
    """Inverse of a tensor with respect to tensordot over its first ind axes."""
    x = to_array(a)
    d = x._data
    oldshape = d.shape
    prod = int(_np.prod(oldshape[:ind]))
    inv = x._device.xp.linalg.inv(_float(d).reshape(prod, -1))
    return new(inv.reshape(oldshape[ind:] + oldshape[:ind]), x._device)


_svd = std_fn("svd", _le)
_pinv = std_fn("pinv", _le)
_matrix_rank = std_fn("matrix_rank", _le)
_qr = std_fn("qr", _le)
_svdvals = std_fn("svdvals", _le)


@oom_guard
def svd(a, /, full_matrices=True, compute_uv=True, hermitian=False):
    """NumPy's ``svd`` (and the standard's): compute_uv=False gives the singular values alone."""
    if not compute_uv:
        return _svdvals(a)
    return _svd(a, full_matrices=full_matrices)


@oom_guard
def pinv(a, /, rcond=None, hermitian=False, *, rtol=None):
    """NumPy's ``pinv(a, rcond)`` (and the standard's ``pinv(x, rtol=)``)."""
    return _pinv(a, rtol=rtol if rcond is None else rcond)


@oom_guard
def matrix_rank(A, /, tol=None, hermitian=False, *, rtol=None):
    """NumPy's ``matrix_rank(A, tol)`` with an absolute tolerance (and the standard's, with ``rtol=``); a 0-d or
    1-D ``A`` has rank 1 unless all its entries are zero (a Python int, as NumPy's: read back from the device)."""
    if (A.ndim if A.__class__ is Array else _np.ndim(A)) < 2:
        x = to_array(A)
        return int(bool(x._device.xp.any(x._data != 0)))
    if tol is None:
        return _matrix_rank(A, rtol=rtol)
    x = to_array(A)
    xp = x._device.xp
    s = xp.linalg.svd(_float(x._data), compute_uv=False)
    t = data(tol, x._device) if not isinstance(tol, (int, float)) else tol
    return new(xp.count_nonzero(s > (t[..., None] if getattr(t, "ndim", 0) else t), axis=-1).astype(_dt.I64),
               x._device)


@oom_guard
def qr(a, /, mode="reduced"):
    """NumPy's ``qr(a, mode='reduced')`` (and the standard's); mode 'r' gives R alone."""
    if mode == "r":
        return _qr(a, mode="reduced").R
    return _qr(a, mode=mode)

