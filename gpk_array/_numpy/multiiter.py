"""Iterators over several operands at once, as NumPy's: the ``broadcast`` object (the broadcast shape of its
arguments, iteration over tuples of their elements) and ``nested_iters`` (linked iterators, each over a group of
axes, inner ones restarting as an outer one advances).

Elements are 0-d views of the operands on their device, as ``nditer``'s (reading one as a Python number copies it
to the host; writing through a view of a writable operand stays on the device).
"""
import numpy as _np

from ._util import PY_SCALARS, data, dev_of, new
from .iteration import IterProtocol, nditer

__all__ = ["broadcast", "nested_iters"]


class broadcast:
    """NumPy's ``broadcast(*args)``: the arguments broadcast against each other, without computing anything.

    ``shape``, ``ndim``, ``size``, ``numiter``, ``index``; iterating yields tuples of the arguments' elements
    (0-d Arrays) in C order; ``iters`` are flat iterators over the broadcast arguments; ``reset()`` starts over.
    Arguments may be Arrays, array-likes, Python scalars or other ``broadcast`` objects (whose arguments join)."""

    def __init__(self, *args):
        flat = []
        for a in args:
            flat.extend(a._args if isinstance(a, broadcast) else (a,))
        if len(flat) > 64:
            raise ValueError(f"Need at most 64 array objects, got {len(flat)}")
        dev = dev_of(*flat)
        self._dev = dev
        self._args = flat
        ds = [data(a, dev) if a.__class__ not in PY_SCALARS else dev.xp.asarray(a) for a in flat]
        self.shape = _np.broadcast_shapes(*[d.shape for d in ds])
        self._views = [dev.xp.broadcast_to(d, self.shape) for d in ds]
        self.index = 0

    @property
    def ndim(self):
        """The number of dimensions of the broadcast result."""
        return len(self.shape)

    nd = ndim

    @property
    def size(self):
        """The number of elements of the broadcast result."""
        return int(_np.prod(self.shape, dtype=_np.int64))

    @property
    def numiter(self):
        """The number of arguments broadcast."""
        return len(self._views)

    @property
    def iters(self):
        """One flat iterator per argument over its broadcast values (``x.flat`` of each, broadcast)."""
        from .methods import flatiter
        return tuple(flatiter(new(v, self._dev)) for v in self._views)

    def reset(self):
        """Back to the first element."""
        self.index = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.index >= self.size:
            raise StopIteration
        idx = _np.unravel_index(self.index, self.shape) if self.shape else ()
        self.index += 1
        return tuple(new(v[idx], self._dev) for v in self._views)

    def __repr__(self):
        return f"<gpk_array broadcast of {self.numiter} operand(s), shape {self.shape}>"


class _Level(IterProtocol):
    """One of the linked iterators ``nested_iters`` returns: it runs over its axes (C order of the list given);
    the values are the operands' elements at the current position of every level."""

    def __init__(self, shared, k):
        self._s = shared
        self._k = k
        self._axes = shared.axes[k]
        full = shared.base.shape
        self.shape = tuple(full[a] for a in self._axes)
        self.ndim = len(self.shape)
        self.itersize = int(_np.prod(self.shape, dtype=_np.int64))
        self.operands = shared.base.operands
        self.nop = shared.base.nop
        self._pos = 0
        self._started = False

    def _set(self):
        pos = self._pos if self._pos < self.itersize else max(self.itersize - 1, 0)
        self._s.idx[self._k] = _np.unravel_index(pos, self.shape) if self.shape and self.itersize else \
            (0,) * self.ndim

    def reset(self):
        """Back to this level's first position (the levels inside it restart too)."""
        self._pos = 0
        self._started = False
        self._set()
        for lv in self._s.levels[self._k + 1:]:
            lv._pos, lv._started = 0, False
            lv._set()

    @property
    def finished(self):
        """Whether this level is past its last position."""
        return self._pos >= self.itersize

    def iternext(self):
        """Advance this level one position (the levels inside it restart); False once past the last."""
        self._pos += 1
        self._started = True
        if not self.finished:
            self._set()
            for lv in self._s.levels[self._k + 1:]:
                lv._pos, lv._started = 0, False
                lv._set()
        return not self.finished

    @property
    def iterindex(self):
        """This level's position, counting from 0."""
        return self._pos

    @property
    def multi_index(self):
        """This level's index tuple over its axes (needs the ``multi_index`` flag)."""
        if "multi_index" not in self._s.flags:
            raise ValueError("Iterator is not tracking a multi-index")
        if self.finished:
            raise ValueError("Iterator is past the end")
        return tuple(int(i) for i in self._s.idx[self._k])

    def _value(self, i):
        key = [0] * len(self._s.base.shape)
        for axes, idx in zip(self._s.axes, self._s.idx):
            for a, v in zip(axes, idx):
                key[a] = int(v)
        return new(self._s.base._views[i][tuple(key) + (Ellipsis,)], self._s.base._dev)

    @property
    def value(self):
        """The current element (a 0-d view), or a tuple of them for several operands."""
        if self.finished:
            raise StopIteration
        if self._s.base._single:
            return self._value(0)
        return tuple(self._value(i) for i in range(self.nop))

    def close(self):
        """Nothing to do: values are views that write through at once."""
        pass


class _Shared:
    __slots__ = ("base", "axes", "idx", "levels", "flags")


def nested_iters(op, axes, flags=None, op_flags=None, op_dtypes=None, order="K", casting="safe", buffersize=0):
    """NumPy's ``nested_iters``: one iterator per group in ``axes`` (which together name every axis of the
    broadcast operands once), linked so that advancing an outer one restarts the inner ones; each yields the
    operands' elements at the current position of all of them. Iteration within a group follows the order its
    axes are listed in (the last fastest)."""
    flags = list(flags or ())
    if "external_loop" in flags:
        raise NotImplementedError("nested_iters: external_loop is not supported (iterate the innermost level)")
    base = nditer(op, flags=flags, op_flags=op_flags, op_dtypes=op_dtypes, order="C", casting=casting)
    nd = len(base.shape)
    groups = []
    seen = []
    for g in axes:
        g = [int(a) for a in (g if isinstance(g, (list, tuple)) else (g,))]
        for a in g:
            if not 0 <= a < nd:
                raise ValueError(f"axis {a} out of bounds in nested iterator construction")
        groups.append(tuple(g))
        seen.extend(g)
    if sorted(seen) != list(range(nd)):
        raise ValueError("axes in nested iterators must name every axis of the operands exactly once")
    s = _Shared()
    s.base, s.axes, s.flags = base, groups, set(flags)
    s.idx = [(0,) * len(g) for g in groups]
    s.levels = [_Level(s, k) for k in range(len(groups))]
    for lv in s.levels:
        lv._set()
    return tuple(s.levels)

