"""Products and diagonals with NumPy's signatures: dot, vdot, inner, outer, einsum, tensordot with positional
axes, kron, trace/diagonal over the first two axes, cross with axisa/axisb/axisc, matmul with ``out=``."""
import numpy as _np

from .. import _dtypes as _dt
from .._ops import elementwise as _ew
from .._ops import linalg_basic as _lb
from ._util import PY_SCALARS, acc_dtype, data, dev_of, finish, new, oom_guard, std_fn, to_array

__all__ = ["dot", "vdot", "inner", "outer", "einsum", "einsum_path", "tensordot", "kron", "trace", "diagonal",
           "cross", "matmul", "matvec", "vecmat"]

_matmul = std_fn("matmul", _lb)
_tensordot = std_fn("tensordot", _lb)


@oom_guard
def dot(a, b, out=None):
    """NumPy's ``dot``: inner product of vectors, matrix product, or sum-product over the last axis of a and the
    second-to-last of b; scalars multiply."""
    if a.__class__ in PY_SCALARS or b.__class__ in PY_SCALARS:
        dev = dev_of(a, b)  # dot converts scalars to arrays: they take part in promotion (int64, float64)
        r = _ew.multiply(to_array(a, dev), to_array(b, dev))
        return r if out is None else finish(r._data, r._device, out)
    x, y, dev = _ew.binary_operands(a, b)
    return finish(dev.xp.dot(x, y), dev, out)


@oom_guard
def vdot(a, b, /):
    """Dot product of the flattened arrays, conjugating the first."""
    x, y, dev = _ew.binary_operands(to_array(a, dev_of(a, b)), to_array(b, dev_of(a, b)))
    return new(dev.xp.asarray(dev.xp.vdot(x, y)), dev)


@oom_guard
def inner(a, b, /):
    """Sum-product over the last axes."""
    x, y, dev = _ew.binary_operands(to_array(a, dev_of(a, b)), to_array(b, dev_of(a, b)))
    return new(dev.xp.asarray(dev.xp.inner(x, y)), dev)


@oom_guard
def outer(a, b, out=None):
    """Outer product of the flattened arrays."""
    x, y, dev = _ew.binary_operands(to_array(a, dev_of(a, b)), to_array(b, dev_of(a, b)))
    return finish(x.reshape(-1)[:, None] * y.reshape(-1)[None, :], dev, out)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist(sub):
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sub)


def _einsum_operands(operands, dev):
    """Backing arrays and one subscript string (the interleaved ``a, [0, 1], b, [1, 2], [0, 2]`` form is
    rewritten as ``"ab,bc->ac"``, which every backend takes)."""
    if operands and isinstance(operands[0], str):
        return [operands[0]] + [data(o, dev) for o in operands[1:]]
    ops = list(operands)
    out_sub = ops.pop() if len(ops) % 2 == 1 else None
    arrays = [data(o, dev) for o in ops[0::2]]
    spec = ",".join(_sublist(s) for s in ops[1::2])
    if out_sub is not None:
        spec += "->" + _sublist(out_sub)
    return [spec] + arrays


@oom_guard
def einsum(*operands, out=None, optimize=False, **kwargs):
    """Einstein summation (subscript-string or interleaved form)."""
    dev = dev_of(*operands)
    ops = _einsum_operands(operands, dev)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    kwargs.pop("order", None)
    if kwargs:
        raise TypeError(f"einsum() got unexpected keyword arguments {sorted(kwargs)}")
    kw = {"optimize": optimize}
    if dt is not None:
        kw["dtype"] = _dt.to_dtype(dt)
    r = dev.xp.einsum(*ops, **kw)
    return finish(dev.xp.asarray(r), dev, out)


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """NumPy's contraction order for an einsum; only the operands' shapes are used (no data is read)."""
    shaped = []
    for o in operands:
        if isinstance(o, str) or isinstance(o, list):
            shaped.append(o)
        else:
            x = to_array(o)
            shaped.append(_np.broadcast_to(_np.zeros((), dtype=x._data.dtype), x.shape))
    return _np.einsum_path(*shaped, optimize=optimize, einsum_call=einsum_call)


@oom_guard
def tensordot(a, b, /, axes=2):
    """NumPy's ``tensordot(a, b, axes=2)`` (and the standard's); axes may also be a pair of ints."""
    if not isinstance(axes, int) and not hasattr(axes, "__index__"):
        if not isinstance(axes, (tuple, list)) or len(axes) != 2:
            raise TypeError(f"axes must be an integer or a pair of axes or sequences of axes, got {axes!r}")
        a0, a1 = axes
        axes = ([a0] if isinstance(a0, int) else list(a0), [a1] if isinstance(a1, int) else list(a1))
    return _tensordot(a, b, axes=axes)


@oom_guard
def kron(a, b):
    """Kronecker product."""
    x, y, dev = _ew.binary_operands(to_array(a, dev_of(a, b)), to_array(b, dev_of(a, b)))
    return new(dev.xp.kron(x, y), dev)


@oom_guard
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal of the axis1/axis2 planes (the first two axes by default, as NumPy)."""
    x = to_array(a)
    d = x._data
    r = x._device.xp.trace(d, offset=offset, axis1=axis1, axis2=axis2, dtype=acc_dtype(d.dtype, dtype))
    return finish(x._device.xp.asarray(r), x._device, out)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """A diagonal of the axis1/axis2 planes (the first two axes by default, as NumPy), as a view."""
    x = to_array(a)
    return new(x._device.xp.diagonal(x._data, offset, axis1, axis2), x._device)


@oom_guard
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (and 2-vectors, as NumPy), along the given axes."""
    x, y, dev = _ew.binary_operands(to_array(a, dev_of(a, b)), to_array(b, dev_of(a, b)))
    if axis is not None:
        axisa = axisb = axisc = axis
    return new(dev.xp.cross(x, y, axisa=axisa, axisb=axisb, axisc=axisc), dev)


def _cast_operands(x1, x2, dtype):
    """x1 and x2 as Arrays of dtype (NumPy's ``dtype=`` of matmul and friends selects the loop: the operands are
    cast first and the product computed in dtype, not computed in their own dtype and cast after)."""
    dev = dev_of(x1, x2)
    dt = _dt.to_dtype(dtype)
    a, b = to_array(x1, dev), to_array(x2, dev)
    if a._data.dtype != dt:
        a = new(a._data.astype(dt), dev)
    if b._data.dtype != dt:
        b = new(b._data.astype(dt), dev)
    return a, b


def _no_kwargs(name, kwargs):
    """NumPy's ufunc keywords that change nothing here (casting=, order=, subok=, signature=) are accepted; any
    other (axes=, a misspelling) raises TypeError instead of being ignored."""
    for k in ("casting", "order", "subok", "signature"):
        kwargs.pop(k, None)
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")


@oom_guard
def matmul(x1, x2, /, out=None, *, dtype=None, **kwargs):
    """NumPy's ``matmul`` with ``out=`` and ``dtype=`` (and the standard's); ``dtype=`` casts the operands and
    multiplies in that dtype, as NumPy's loop selection does."""
    _no_kwargs("matmul", kwargs)
    if dtype is not None:
        x1, x2 = _cast_operands(x1, x2, dtype)
    r = _matmul(x1, x2)
    return r if out is None else finish(r._data, r._device, out)


@oom_guard
def matvec(x1, x2, /, out=None, *, dtype=None, **kwargs):
    """Matrix-vector products over stacks: ``(x1 @ x2[..., None])[..., 0]`` (NumPy 2.2's matvec)."""
    _no_kwargs("matvec", kwargs)
    if dtype is not None:
        x1, x2 = _cast_operands(x1, x2, dtype)
    dev = dev_of(x1, x2)
    a, v = data(x1, dev), data(x2, dev)
    r = dev.xp.matmul(a, v[..., None])[..., 0]
    return finish(r, dev, out)


@oom_guard
def vecmat(x1, x2, /, out=None, *, dtype=None, **kwargs):
    """Vector-matrix products over stacks, the vector conjugated: ``(conj(x1)[..., None, :] @ x2)[..., 0, :]``."""
    _no_kwargs("vecmat", kwargs)
    if dtype is not None:
        x1, x2 = _cast_operands(x1, x2, dtype)
    dev = dev_of(x1, x2)
    v, a = data(x1, dev), data(x2, dev)
    if v.dtype.kind == "c":
        v = v.conj()
    r = dev.xp.matmul(v[..., None, :], a)[..., 0, :]
    return finish(r, dev, out)
