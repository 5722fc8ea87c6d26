"""Element-by-element iteration as NumPy's: ``nditer`` (one or more broadcast operands, ``multi_index``/``c_index``/
``f_index``, ``external_loop``, ``readwrite``/``writeonly`` operands written through ``x[...] = v``, ``allocate``d
outputs, ``op_axes`` mapping iterator axes to each operand's axes (-1: broadcast), ``reduce_ok`` reductions into
writable operands of length 1 along the reduced axes, ``iternext``/``finished``) and ``frompyfunc``.

nditer yields 0-d views of the operands' own memory (on a CUDA device, device views: reading a value as a Python
number copies it to the host, writing through a view stays on the device). frompyfunc calls a Python function on
Python objects, so it is host-only: on a CUDA device it raises a TypeError (``vectorize`` compiles for the device).
"""
import numpy as _np

from .. import _dtypes as _dt
from .._array import Array
from .._device import CPU
from ._util import data, data_or_scalar, dev_of, host, new

__all__ = ["nditer", "frompyfunc"]

_KNOWN_FLAGS = {"multi_index", "c_index", "f_index", "external_loop", "buffered", "refs_ok", "zerosize_ok",
                "reduce_ok", "grow_inner", "delay_bufalloc", "common_dtype", "copy_if_overlap", "ranged"}
_KNOWN_OP_FLAGS = {"readonly", "readwrite", "writeonly", "allocate", "no_broadcast", "copy", "updateifcopy",
                   "contig", "aligned", "nbo", "no_subtype", "arraymask", "writemasked", "overlap_assume_elementwise",
                   "virtual"}


def _iter_order(order, datas, shape):
    """The axes from outermost to innermost: C (last axis fastest), F (first fastest), K (memory order of the
    operands, as NumPy's: axes sorted by the first non-broadcast operand's strides), A (F if all are F-contiguous)."""
    nd = len(shape)
    if order == "C" or nd <= 1:
        return tuple(range(nd))
    if order == "F":
        return tuple(reversed(range(nd)))
    if order == "A":
        fortran = all(d.flags.f_contiguous and not d.flags.c_contiguous for d in datas if d.ndim > 1)
        return tuple(reversed(range(nd))) if fortran and datas else tuple(range(nd))
    if order != "K":
        raise ValueError("order must be one of 'C', 'F', 'A', or 'K'")
    for d in datas:
        st = d.strides
        if any(s != 0 for s in st):
            # stable: among equal strides the C order (earlier axis outer) is kept
            return tuple(sorted(range(nd), key=lambda ax: -abs(st[ax])))
    return tuple(range(nd))


def _mapped(xp, d, axes, i):
    """Operand i as the iterator sees it under ``op_axes[i]``: iterator axis j is d's axis ``axes[j]``, or a new
    length-1 (broadcast) axis where ``axes[j]`` is -1 (or None); d's axes not named must have length 1."""
    axes = [-1 if a is None else int(a) for a in axes]
    named = [a for a in axes if a != -1]
    for a in named:
        if not 0 <= a < d.ndim:
            raise ValueError(f"Iterator input op_axes[{i}][{axes.index(a)}] (=={a}) is not a valid axis of "
                             f"op[{i}], which has {d.ndim} dimensions")
    if len(set(named)) != len(named):
        dup = next(a for a in named if named.count(a) > 1)
        raise ValueError(f"The 'op_axes' provided to the iterator constructor for operand {i} contained duplicate "
                         f"value {dup}")
    rest = [a for a in range(d.ndim) if a not in named]
    if any(d.shape[a] != 1 for a in rest):
        raise ValueError(f"operand {i} has axes that op_axes[{i}] does not name: {rest}")
    v = xp.transpose(d, named + rest) if d.ndim else d
    return v.reshape(tuple(1 if a == -1 else d.shape[a] for a in axes))


def _writable_broadcast(xp, d, shape):
    """d broadcast to shape as a writable view (zero strides on the broadcast axes): every iterator position along
    them writes the same element, as NumPy's unbuffered reduction operands do."""
    st = tuple(0 if n == 1 and m != 1 else s for n, m, s in zip(d.shape, shape, d.strides))
    if xp is _np:
        return _np.lib.stride_tricks.as_strided(d, shape=shape, strides=st, writeable=True)
    return xp.lib.stride_tricks.as_strided(d, shape=shape, strides=st)


class IterProtocol:
    """The Python protocol of nditer and of nested_iters' levels, over their ``_value(i)``, ``value``, ``nop``,
    ``finished``, ``iternext()`` and ``close()``: ``it[i]`` (operand i's current value, a slice gives a tuple),
    ``len(it)`` (the operand count), ``next(it)`` (the first call gives the first element, each later one advances)
    and ``with it:`` (``close()`` on exit)."""

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self._value(k) for k in range(self.nop)[i])
        return self._value(i)

    def __len__(self):
        return self.nop

    def __iter__(self):
        return self

    def __next__(self):
        if self._started:
            self.iternext()
        else:
            self._started = True
        if self.finished:
            raise StopIteration
        return self.value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class nditer(IterProtocol):
    """NumPy's multi-dimensional iterator over one or more broadcast operands."""

    def __init__(self, op, flags=None, op_flags=None, op_dtypes=None, order="K", casting="safe", op_axes=None,
                 itershape=None, buffersize=0):
        single = not isinstance(op, (list, tuple))
        ops = [op] if single else list(op)
        self._single = single
        flags = set(flags or ())
        bad = flags - _KNOWN_FLAGS
        if bad:
            raise ValueError(f"Unexpected iterator flag {min(bad)!r}")
        nop = len(ops)
        if op_flags is None:
            op_flags = [["readonly"] if o is not None else ["writeonly", "allocate"] for o in ops]
        elif op_flags and isinstance(op_flags[0], str):
            op_flags = [list(op_flags)] * nop
        if len(op_flags) != nop:
            raise ValueError("op_flags must be a tuple/list matching the number of ops")
        for f in op_flags:
            bad = set(f) - _KNOWN_OP_FLAGS
            if bad:
                raise ValueError(f"Unexpected per-op iterator flag {min(bad)!r}")
        if op_dtypes is not None and not isinstance(op_dtypes, (list, tuple)):
            op_dtypes = [op_dtypes] * nop
        dev = dev_of(*[o for o in ops if o is not None])
        xp = dev.xp
        self._dev = dev
        inputs = [data(o, dev) if o is not None else None for o in ops]
        if op_axes is not None:
            if len(op_axes) != nop:
                raise ValueError("op_axes must be a tuple/list matching the number of ops")
            inputs = [d if d is None or ax is None else _mapped(xp, d, ax, i) for i, (d, ax) in
                      enumerate(zip(inputs, op_axes))]
        present = [d for d in inputs if d is not None]
        shape = tuple(itershape) if itershape is not None else _np.broadcast_shapes(*[d.shape for d in present])
        self.shape = shape
        arrays = []
        reduced = set()     # operands written through a broadcast view (reductions)
        writeback = []      # (operand data, its copy in op_dtypes) for written operands of another dtype
        mapped_views = {}   # operand index -> its view under op_axes (the operand itself stays in operands)
        for i, (o, d) in enumerate(zip(ops, inputs)):
            f = set(op_flags[i])
            dt = _dt.to_dtype(op_dtypes[i]) if op_dtypes is not None and op_dtypes[i] is not None else None
            if d is None:
                if "allocate" not in f:
                    raise ValueError("Iterator operand was NULL, but automatic allocation as an output wasn't "
                                     "requested")
                if dt is None:
                    dt = _np.result_type(*[p.dtype for p in present]) if present else _dt.F64
                ax = None if op_axes is None else op_axes[i]
                if ax is None:
                    a = new(xp.empty(shape, dtype=dt), dev)
                else:
                    # allocated with op_axes: its axis k is the iterator axis j with ax[j] == k (-1: not there)
                    ax = [-1 if v is None else int(v) for v in ax]
                    if len(ax) != len(shape):
                        raise ValueError(f"op_axes[{i}] has {len(ax)} entries, the iterator {len(shape)} axes")
                    named = sorted(v for v in ax if v != -1)
                    if named != list(range(len(named))):
                        raise ValueError(f"op_axes[{i}] must name the axes 0..n-1 of the allocated operand once")
                    oshape = [0] * len(named)
                    for j, v in enumerate(ax):
                        if v != -1:
                            oshape[v] = shape[j]
                    a = new(xp.empty(tuple(oshape), dtype=dt), dev)
                    mapped_views[i] = _mapped(xp, a._data, ax, i)
                    if -1 in ax:
                        reduced.add(i)
                    arrays.append(a)
                    continue
            else:
                writes = "readwrite" in f or "writeonly" in f
                if writes and d.shape != shape and "reduce_ok" in flags and len(d.shape) == len(shape) and \
                        all(n == m or n == 1 for n, m in zip(d.shape, shape)):
                    reduced.add(i)  # a reduction operand: written through its broadcast (zero-stride) view
                elif writes and d.shape != shape:
                    raise ValueError(f"non-broadcastable output operand with shape {d.shape} doesn't match the "
                                     f"broadcast shape {shape}")
                if dt is not None and dt != d.dtype:
                    if writes:   # a copy in op_dtypes[i], written back (cast) into the operand by close()
                        if "updateifcopy" not in f and "buffered" not in flags:
                            raise TypeError("Iterator operand required copying or buffering, but neither copying "
                                            "nor buffering was enabled")
                        if not _np.can_cast(dt, d.dtype, casting) or \
                                ("readwrite" in f and not _np.can_cast(d.dtype, dt, casting)):
                            raise TypeError(f"Iterator requested dtype could not be cast from dtype('{dt}') to "
                                            f"dtype('{d.dtype}'), the operand {i} dtype, according to the rule "
                                            f"'{casting}'")
                        copy = d.astype(dt)
                        writeback.append((d, copy))
                        d = copy
                    elif "buffered" not in flags and "copy" not in f:
                        raise TypeError("Iterator operand required copying or buffering, but neither copying nor "
                                        "buffering was enabled")
                    elif not _np.can_cast(d.dtype, dt, casting):
                        raise TypeError(f"Iterator operand {i} dtype could not be cast from dtype('{d.dtype}') to "
                                        f"dtype('{dt}') according to the rule '{casting}'")
                    else:
                        d = d.astype(dt)
                if op_axes is not None and op_axes[i] is not None:
                    mapped_views[i] = d  # the iterator's view; operands keeps the operand itself
                a = o if (o.__class__ is Array and d is o._data) or i in mapped_views else new(d, dev)
            arrays.append(a)
        self.operands = tuple(arrays)
        self._writeback = writeback
        self._views = []
        for i, a in enumerate(arrays):
            d = mapped_views.get(i, a._data)
            if i in reduced:
                if "reduce_ok" not in flags:
                    raise ValueError("output operand requires a reduction along dimension -1, but the reduction "
                                     "is not enabled. The dimension size of 1 does not match the expected output "
                                     "shape.")
                d = _writable_broadcast(xp, d, shape)
            elif d.shape != shape:
                d = xp.broadcast_to(d, shape)
            if dev is CPU and not ({"readwrite", "writeonly", "allocate"} & set(op_flags[i])):
                d = d.view()
                d.flags.writeable = False
            self._views.append(d)
        self._order = _iter_order(order, [d for d in self._views], shape)
        self._flags = flags
        self.nop = nop
        self.ndim = len(shape)
        self.itersize = int(_np.prod(shape, dtype=_np.int64))
        self._loop = "external_loop" in flags
        if self._loop and ({"multi_index", "c_index", "f_index"} & flags):
            raise ValueError("Iterator flag EXTERNAL_LOOP cannot be used if an index or multi-index is being "
                             "tracked")
        self._chunks = self._chunk_plan() if self._loop else None
        self.reset()

    # --- positions --------------------------------------------------------------------------------------------
    def _chunk_plan(self):
        """external_loop: the inner axes coalesced (as NumPy's: while every operand's outer stride equals the inner
        stride times the inner length), and the outer positions, each giving one 1-D chunk."""
        order = list(self._order)
        shape = self.shape
        if not order:
            return [((), ())]
        inner = [order.pop()]
        while order:
            ax = order[-1]
            ok = all(d.strides[ax] == d.strides[inner[0]] * shape[inner[0]] for d in self._views)
            if not ok:
                break
            inner.insert(0, order.pop())
        outer = order
        plan = [tuple(zip(outer, pos)) for pos in _np.ndindex(*[shape[a] for a in outer])]
        return [(dict(p), tuple(inner)) for p in plan]

    def reset(self):
        """Back to the first element."""
        self._pos = 0
        self._started = False
        self._idx = self._index_at(0)

    def _index_at(self, k):
        if self._loop or self.itersize == 0 or k >= self.itersize:
            return None
        idx = [0] * self.ndim
        for ax in reversed(self._order):
            n = self.shape[ax]
            idx[ax] = k % n
            k //= n
        return tuple(idx)

    @property
    def finished(self):
        """Whether the iteration is past the last element (or, with ``external_loop``, the last chunk)."""
        n = len(self._chunks) if self._loop else self.itersize
        return self._pos >= n

    def iternext(self):
        """Advance one element; False once past the last."""
        self._pos += 1
        self._started = True
        if not self._loop:
            self._idx = self._index_at(self._pos)
        return not self.finished

    @property
    def iterindex(self):
        """The position of the current element (or chunk) in iteration order, counting from 0."""
        return self._pos

    @property
    def multi_index(self):
        """The index tuple of the current element (needs the ``multi_index`` flag)."""
        if "multi_index" not in self._flags:
            raise ValueError("Iterator is not tracking a multi-index")
        if self.finished:
            raise ValueError("Iterator is past the end")
        return tuple(int(i) for i in self._idx)

    @property
    def index(self):
        """The flat index of the current element in C order (flag ``c_index``) or Fortran order (``f_index``)."""
        if "c_index" in self._flags:
            order = range(self.ndim)
        elif "f_index" in self._flags:
            order = reversed(range(self.ndim))
        else:
            raise ValueError("Iterator does not have an index")
        if self.finished:
            raise ValueError("Iterator is past the end")
        k = 0
        for ax in order:
            k = k * self.shape[ax] + self._idx[ax]
        return int(k)

    # --- values -----------------------------------------------------------------------------------------------
    def _value(self, i):
        d = self._views[i]
        if self._loop:
            sel, inner = self._chunks[self._pos]
            key = tuple(sel.get(ax, slice(None)) for ax in range(self.ndim))
            v = d[key]
            if self.ndim:
                kept = sorted(inner)  # the axes indexing left, in a's order; the chunk runs in iteration order
                v = v.transpose([kept.index(ax) for ax in inner])
                v = v.reshape(-1)
            else:
                v = v.reshape(1)
            return new(v, self._dev)
        return new(d[self._idx + (Ellipsis,)], self._dev)

    @property
    def value(self):
        """The current element as a 0-d Array (a 1-D chunk with ``external_loop``), or a tuple of them for several
        operands; views, so writing to a writable operand's value writes through."""
        if self.finished:
            raise StopIteration
        if self._single:
            return self._value(0)
        return tuple(self._value(i) for i in range(self.nop))

    def __setitem__(self, i, value):
        """``it[i] = v``: v written into operand i at the current element (the current chunk with
        ``external_loop``); ``it[i:j] = (v, ...)`` for several operands."""
        if isinstance(i, slice):
            for k, v in zip(range(self.nop)[i], value):
                self[k] = v
            return
        d = self._views[i]
        v = data_or_scalar(value, self._dev)
        if not self._loop:
            d[self._idx + (Ellipsis,)] = v
            return
        sel, inner = self._chunks[self._pos]
        target = d[tuple(sel.get(ax, slice(None)) for ax in range(self.ndim))]
        if self.ndim:  # the chunk's element order (iteration order) onto the operand's axes, views only
            kept = sorted(inner)
            target = target.transpose([kept.index(ax) for ax in inner])
            if getattr(v, "ndim", 0):
                v = v.reshape(target.shape)
        target[...] = v

    # --- context (copies in another dtype are written back on exit, as NumPy's; views write through at once) ----
    def close(self):
        """Write the copies of operands iterated in another dtype (``op_dtypes`` with ``updateifcopy`` or
        ``buffered``) back into them, cast; every other value is a view that wrote through at once."""
        for orig, copy in self._writeback:
            orig[...] = copy.astype(orig.dtype)
        self._writeback = []

    def __repr__(self):
        return f"<gpk_array nditer over {self.nop} operand(s), shape {self.shape}>"


class _pyufunc:
    """NumPy's ``frompyfunc`` result: a ufunc calling a Python function element by element (host-only)."""

    def __init__(self, func, nin, nout, identity=None):
        self._func = func
        self._uf = _np.frompyfunc(func, nin, nout, **({} if identity is None else {"identity": identity}))
        self.nin = nin
        self.nout = nout
        self.nargs = nin + nout
        self.identity = identity
        self.__name__ = f"{getattr(func, '__name__', 'func')} (vectorized)"

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def _host_args(self, args, what):
        dev = dev_of(*args)
        if dev is not CPU:
            raise TypeError(f"frompyfunc(...).{what} calls a Python function on Python objects, which only runs "
                            f"on the host: move the operands with x.to_device('cpu'), or use gpk_array.vectorize "
                            f"for a function that compiles for {dev}")
        return [host(a) if isinstance(a, Array) else a for a in args]

    def _wrap(self, r):
        if isinstance(r, tuple):
            return tuple(self._wrap(v) for v in r)
        if isinstance(r, _np.ndarray):
            from .._ops.creation import asarray
            return asarray(_np.array(r.tolist()) if r.dtype == object else r, device=CPU)
        return r

    def __call__(self, *args, **kwargs):
        return self._wrap(self._uf(*self._host_args(args, "__call__"), **kwargs))

    def outer(self, a, b, **kwargs):
        return self._wrap(self._uf.outer(*self._host_args((a, b), "outer"), **kwargs))

    def reduce(self, a, axis=0, **kwargs):
        return self._wrap(self._uf.reduce(*self._host_args((a,), "reduce"), axis=axis, **kwargs))

    def accumulate(self, a, axis=0, **kwargs):
        return self._wrap(self._uf.accumulate(*self._host_args((a,), "accumulate"), axis=axis, **kwargs))


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ufunc calling func (a Python function) element by element. NumPy's results are object arrays; gpk_array has
    no object dtype, so results are arrays of the dtype their Python values take (int64, float64, bool, ...)."""
    return _pyufunc(func, nin, nout, identity)
