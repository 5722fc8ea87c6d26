"""The ufunc methods CuPy lacks (gpk_array/_numpy/ufuncs.py calls them for CUDA arrays), computed with the
device's array operations: ``reduce`` (max/min/all/any where the standard has the reduction, else pairwise halving
for an associative ufunc and in order for the others), ``accumulate`` (log-step scans), ``reduceat`` (one
reduction per index range) and ``at`` (one pass per repeat of an index)."""
import numpy as _np

from ._util import PY_SCALARS

# CuPy's ufuncs implement reduce/accumulate only for add and multiply, reduceat only for add, and ``at`` only as
# atomic scatters for a few (ufunc, dtype) pairs; everything else raises NotImplementedError/TypeError there.
_DEV_REDUCE = frozenset({"add", "multiply"})
_DEV_ACCUMULATE = frozenset({"add", "multiply"})
_DEV_REDUCEAT = frozenset({"add"})
_DEV_AT = {"add": tuple(_np.dtype(t) for t in ("int32", "uint32", "uint64", "float16", "float32", "float64")),
           "subtract": (_np.dtype("int32"), _np.dtype("uint32"))}
# reductions the device has as whole-array functions (axis tuples, keepdims, NaN propagation as NumPy's ufuncs)
_DEV_REDUCE_FN = {"maximum": "max", "minimum": "min", "logical_and": "all", "logical_or": "any"}
# associative ufuncs: a reduction may combine pairs in any grouping and a scan may use log-step doubling
_ASSOCIATIVE = frozenset({"add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
                          "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm", "logaddexp",
                          "logaddexp2", "hypot"})


def _no_identity(uf):
    return ValueError(f"zero-size array to reduction operation {uf.__name__} which has no identity")


def _reduce_last(uf, u, xp, d):
    """Reduce d along its last axis with the backend ufunc u (associative: pairwise halving; else in order)."""
    n = d.shape[-1]
    if n == 0:
        if uf.identity is None:
            raise _no_identity(uf)
        return xp.full(d.shape[:-1], uf.identity, dtype=d.dtype)
    if uf._bname == "subtract":
        # a0 - a1 - ... - an == a0 - (a1 + ... + an), exactly for integers (modular) and to rounding for floats
        return u(d[..., 0], xp.sum(d[..., 1:], axis=-1, dtype=d.dtype)).astype(d.dtype, copy=False)
    if uf._bname in _ASSOCIATIVE:
        while n > 1:
            h = n // 2
            head = u(d[..., :h], d[..., h:2 * h])
            d = xp.concatenate([head, d[..., 2 * h:]], axis=-1) if n % 2 else head
            n = d.shape[-1]
        return d[..., 0]
    r = d[..., 0]
    for i in range(1, n):
        r = u(r, d[..., i])
    return r


def _dev_reduce(uf, u, xp, d, axis, keepdims, dtype):
    if dtype is not None:
        d = d.astype(dtype, copy=False)
    fn = _DEV_REDUCE_FN.get(uf._bname)
    ax = _axis_tuple(axis, d.ndim)
    if fn is not None and (d.size or fn in ("all", "any")):
        return getattr(xp, fn)(d, axis=ax, keepdims=keepdims)
    if len(ax) > 1 and uf._bname not in _ASSOCIATIVE and uf._bname != "subtract":
        raise ValueError(f"reduction operation '{uf.__name__}' is not reorderable, so at most one axis may be "
                         "specified")
    rest = [i for i in range(d.ndim) if i not in ax]
    t = xp.transpose(d, rest + list(ax)) if d.ndim else d
    lead = tuple(d.shape[i] for i in rest)
    r = _reduce_last(uf, u, xp, t.reshape(lead + (int(_np.prod([d.shape[i] for i in ax], dtype=_np.int64)),)))
    if keepdims:
        r = r.reshape(tuple(1 if i in ax else d.shape[i] for i in range(d.ndim)))
    return r


def _axis_tuple(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise _np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(out)


def _dev_accumulate(uf, u, xp, d, axis, dtype):
    if d.ndim == 0:
        raise ValueError("cannot accumulate on a scalar")
    if dtype is not None:
        d = d.astype(dtype, copy=False)
    (ax,) = _axis_tuple(axis, d.ndim)
    t = xp.moveaxis(d, ax, -1)
    n = t.shape[-1]
    if uf._bname == "subtract":
        # r_i = a_0 - (a_1 + ... + a_i): a running sum of (a_0, -a_1, -a_2, ...)
        neg = u(xp.zeros((), dtype=t.dtype), t)
        neg[..., :1] = t[..., :1]
        r = xp.cumsum(neg, axis=-1, dtype=t.dtype)
    elif uf._bname in _ASSOCIATIVE:
        # Hillis-Steele inclusive scan: log2(n) passes, each combining every element with the one s before it
        r = t.astype(u(t[..., :1], t[..., :1]).dtype, copy=True)
        s = 1
        while s < n:
            nxt = r.copy()
            nxt[..., s:] = u(r[..., :-s], r[..., s:])
            r = nxt
            s *= 2
    else:
        parts = [t[..., :1]]
        for i in range(1, n):
            parts.append(u(parts[-1], t[..., i:i + 1]))
        r = xp.concatenate(parts, axis=-1) if parts else t.copy()
    return xp.moveaxis(r, -1, ax)


def _dev_reduceat(uf, u, xp, d, idx, axis, dtype):
    if dtype is not None:
        d = d.astype(dtype, copy=False)
    (ax,) = _axis_tuple(axis, d.ndim)
    t = xp.moveaxis(d, ax, -1)
    n = t.shape[-1]
    starts = [int(i) for i in (idx.get() if hasattr(idx, "get") else _np.asarray(idx)).reshape(-1)]
    parts = []
    for k, i in enumerate(starts):
        if not 0 <= i < n:
            raise IndexError(f"index {i} out-of-bounds in {uf.__name__}.reduceat [0, {n})")
        j = starts[k + 1] if k + 1 < len(starts) else n
        if j <= i:
            parts.append(t[..., i])
        else:
            parts.append(_reduce_last(uf, u, xp, t[..., i:j]))
    if not parts:
        return xp.moveaxis(t[..., :0], -1, ax)
    return xp.moveaxis(xp.stack(parts, axis=-1), -1, ax)


def _dev_at(u, xp, a, key, b):
    """``u.at`` as NumPy's, unbuffered: repeated indices are applied one after another, in index order.

    The positions a[key] names are gathered as flat indices; occurrences are ranked within each position (stable
    sort), and pass r applies every r-th occurrence at once (no position twice in one pass)."""
    work = a if a.flags.c_contiguous else a.copy()
    flat = work.reshape(-1)
    pos = xp.arange(a.size, dtype=_np.int64).reshape(a.shape)[key]
    if b is not None:
        bv = xp.asarray(b) if b.__class__ in PY_SCALARS else b
        pos, bv = xp.broadcast_arrays(pos, bv)
        bv = bv.reshape(-1)
    pos = pos.reshape(-1)
    if pos.size:
        order = xp.argsort(pos)  # CuPy's sorts are stable: equal positions keep their order
        ps = pos[order]
        first = xp.concatenate([xp.ones((1,), dtype=bool), ps[1:] != ps[:-1]])
        start = _scan_max(xp, xp.where(first, xp.arange(ps.size), 0))
        rank = xp.arange(ps.size) - start
        bs = None if b is None else bv[order]
        for r in range(int(rank.max()) + 1):
            sel = xp.nonzero(rank == r)[0]
            p = ps[sel]
            cur = flat[p]
            res = u(cur) if bs is None else u(cur, bs[sel])
            flat[p] = res.astype(flat.dtype, copy=False)
    if work is not a:
        a[...] = work


def _scan_max(xp, v):
    r = v.copy()
    s = 1
    while s < v.shape[0]:
        nxt = r.copy()
        nxt[s:] = xp.maximum(r[:-s], r[s:])
        r = nxt
        s *= 2
    return r
