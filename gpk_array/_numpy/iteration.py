"""Element-by-element iteration as NumPy's: ``nditer`` (one or more broadcast operands, ``multi_index``/``c_index``/
``f_index``, ``external_loop``, ``readwrite``/``writeonly`` operands written through ``x[...] = v``, ``allocate``d
outputs, ``op_axes`` mapping iterator axes to each operand's axes (-1: broadcast), ``iternext``/``finished``) and
``frompyfunc``.

nditer yields 0-d views of the operands' own memory (on a CUDA device, device views: reading a value as a Python
number copies it to the host, writing through a view stays on the device). frompyfunc calls a Python function on
Python objects, so it is host-only: on a CUDA device it raises a TypeError (``vectorize`` compiles for the device).
"""
import numpy as _np

from .. import _dtypes as _dt
from .._array import Array
from .._device import CPU
from ._util import data, dev_of, host, new

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


class nditer:
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
            if any(d is None and ax is not None for d, ax in zip(inputs, op_axes)):
                raise NotImplementedError("nditer: op_axes for an allocated operand is not supported; allocate "
                                          "the output and pass it")
        present = [d for d in inputs if d is not None]
        shape = tuple(itershape) if itershape is not None else _np.broadcast_shapes(*[d.shape for d in present])
        self.shape = shape
        arrays = []
        for i, (o, d) in enumerate(zip(ops, inputs)):
            f = set(op_flags[i])
            dt = _dt.to_dtype(op_dtypes[i]) if op_dtypes is not None and op_dtypes[i] is not None else None
            if d is None:
                if "allocate" not in f:
                    raise ValueError("Iterator operand was NULL, but automatic allocation as an output wasn't "
                                     "requested")
                if dt is None:
                    dt = _np.result_type(*[p.dtype for p in present]) if present else _dt.F64
                a = new(xp.empty(shape, dtype=dt), dev)
            else:
                writes = "readwrite" in f or "writeonly" in f
                if writes and d.shape != shape:
                    raise ValueError(f"non-broadcastable output operand with shape {d.shape} doesn't match the "
                                     f"broadcast shape {shape}")
                if dt is not None and dt != d.dtype:
                    if writes:
                        raise TypeError(f"nditer: operand {i} would need a cast from {d.dtype} to {dt} to be "
                                        "written; give it that dtype")
                    if "buffered" not in flags and "copy" not in f:
                        raise TypeError("Iterator operand required copying or buffering, but neither copying nor "
                                        "buffering was enabled")
                    if not _np.can_cast(d.dtype, dt, casting):
                        raise TypeError(f"Iterator operand {i} dtype could not be cast from dtype('{d.dtype}') to "
                                        f"dtype('{dt}') according to the rule '{casting}'")
                    d = d.astype(dt)
                a = o if (o.__class__ is Array and d is o._data) else new(d, dev)
            arrays.append(a)
        self.operands = tuple(arrays)
        self._views = []
        for i, a in enumerate(arrays):
            d = a._data if a._data.shape == shape else xp.broadcast_to(a._data, shape)
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

    # --- context (NumPy writes buffered copies back on exit; views here write through at once) ----------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Nothing to do: the values are views that write through at once (NumPy's buffered copies need this call;
        kept for code that makes it)."""
        pass

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
