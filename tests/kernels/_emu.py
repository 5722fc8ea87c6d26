"""A CPU stand-in for the GPU, for testing the kernel layer's Python front ends without one.

``FakeCupy`` is a tiny numpy-backed imitation of the parts of CuPy that the front ends and the GPU
tests use. ``Emulator`` replaces ``loader.get_function`` / ``loader.launch``: it checks each launch
the way the driver and the kernel's preconditions would (the kernel name exists in the front end's
own table, argument types and order match the .cu signatures, block shapes, alignment of vector
operands) and then computes what the kernel computes, reading and writing memory by raw address
(data pointer + element offsets) inside the arrays' allocations. So the front ends' address and
layout arithmetic (strides, NdParams, transposes, splits and partials) is really exercised; the
numerics are NumPy's, not the GPU's.
"""

from __future__ import annotations

import contextlib
import ctypes
import types

import numpy as np

from gpk_array._kernels import _common, elementwise, reduction

# ---------------------------------------------------------------------------------------------
# fake CuPy


class _Flags:
    def __init__(self, a):
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)


class _Data:
    def __init__(self, ptr):
        self.ptr = ptr
        self.device_id = 0


def _root_of(a):
    r = a
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


class FakeArray:
    """A numpy array posing as a cupy.ndarray (device 0)."""

    __array_priority__ = 100

    def __init__(self, a):
        self._a = a

    # attributes the front ends use
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    data = property(lambda self: _Data(self._a.__array_interface__["data"][0]))
    T = property(lambda self: FakeArray(self._a.T))

    def get(self):
        return self._a.copy()

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)

    def __getattr__(self, name):
        attr = getattr(self._a, name)
        if callable(attr):
            def call(*args, **kwargs):
                return _wrap(attr(*_unwrap(args), **_unwrap(kwargs)))
            return call
        return _wrap(attr)

    def __getitem__(self, idx):
        return _wrap(self._a[_unwrap(idx)])

    def __setitem__(self, idx, value):
        self._a[_unwrap(idx)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __bool__(self):
        return bool(self._a)

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __repr__(self):
        return f"FakeArray({self._a!r})"


def _binop(name):
    def f(self, other):
        return _wrap(getattr(np.ndarray, name)(self._a, _unwrap(other)))
    return f


for _n in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__sub__", "__mul__",
           "__truediv__", "__radd__", "__rmul__", "__rsub__", "__and__", "__or__", "__xor__"):
    setattr(FakeArray, _n, _binop(_n))
FakeArray.__neg__ = lambda self: _wrap(-self._a)
FakeArray.__hash__ = None


def _wrap(x):
    if isinstance(x, np.ndarray):
        return FakeArray(x)
    return x


def _unwrap(x):
    if isinstance(x, FakeArray):
        return x._a
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _aligned_empty(shape, dtype):
    """A fresh allocation 256-byte aligned, like CuPy's."""
    dtype = np.dtype(dtype)
    n = 1
    for s in shape:
        n *= int(s)
    raw = np.empty(n * dtype.itemsize + 256, dtype=np.uint8)
    off = (-raw.__array_interface__["data"][0]) % 256
    return raw[off:off + n * dtype.itemsize].view(dtype).reshape(shape)


class _Stream:
    def __init__(self, non_blocking=False):
        self.ptr = 1

    def __enter__(self):
        _state["stream"].append(self)
        return self

    def __exit__(self, *exc):
        _state["stream"].pop()

    def synchronize(self):
        pass


_NULL_STREAM = _Stream()
_state = {"stream": [_NULL_STREAM]}


def make_fake_cupy():
    m = types.ModuleType("cupy")
    m.__gpk_fake__ = True
    m.ndarray = FakeArray
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "bool_", "complex64", "complex128"):
        setattr(m, name, getattr(np, name))

    def empty(shape, dtype=np.float64):
        if isinstance(shape, int):
            shape = (shape,)
        return FakeArray(_aligned_empty(tuple(shape), dtype))

    def asarray(x, dtype=None):
        if isinstance(x, FakeArray) and dtype is None:
            return x
        src = np.asarray(_unwrap(x), dtype=dtype)
        out = _aligned_empty(src.shape, src.dtype)
        out[...] = src
        return FakeArray(out)

    def full(shape, value, dtype=None):
        a = empty(shape if not isinstance(shape, int) else (shape,), dtype)
        a._a[...] = value
        return a

    m.empty = empty
    m.asarray = asarray
    m.array = asarray
    m.full = full
    m.zeros = lambda shape, dtype=np.float64: full(shape, 0, dtype)
    m.ones = lambda shape, dtype=np.float64: full(shape, 1, dtype)
    m.empty_like = lambda a, dtype=None: empty(a.shape, dtype or a.dtype)
    m.arange = lambda *args, dtype=None: asarray(np.arange(*args, dtype=dtype))
    m.broadcast_to = lambda a, shape: FakeArray(np.broadcast_to(_unwrap(a), shape))
    m.ascontiguousarray = lambda a: a if a.flags.c_contiguous else asarray(np.ascontiguousarray(_unwrap(a)))
    m.asfortranarray = lambda a: FakeArray(np.asfortranarray(_unwrap(a)))
    m.asnumpy = lambda a: np.asarray(_unwrap(a)).copy()

    # what benchmarks/kernels_bench.py uses
    def _ufunc(name):
        def f(*args, out=None, **kw):
            r = getattr(np, name)(*_unwrap(args), **kw)
            if out is not None:
                out._a[...] = r
                return out
            return asarray(r)
        return f

    for name in ("add", "multiply", "exp", "negative", "maximum"):
        setattr(m, name, _ufunc(name))
    def _reduction(nm):
        def f(a, axis=None, **kw):
            a = _unwrap(a)
            if nm in ("sum", "mean", "var", "std", "prod") and a.dtype.kind not in "biu":
                # CuPy accumulates 16-bit floats in float32; NumPy would in float16
                return asarray(getattr(np, nm)(a.astype(np.float64), axis=axis, **kw).astype(a.dtype))
            return asarray(getattr(np, nm)(a, axis=axis, **kw))
        return f

    for name in ("sum", "max", "min", "mean", "var", "argmax", "argmin", "prod", "std"):
        setattr(m, name, _reduction(name))
    m.random = types.SimpleNamespace(uniform=lambda lo, hi, size=None, dtype=np.float64: asarray(
        np.random.default_rng(0).uniform(lo, hi, size).astype(dtype)))
    m.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)

    class _Event:
        def record(self, stream=None):
            pass

        def synchronize(self):
            pass

    cuda = types.SimpleNamespace()
    cuda.Stream = _Stream
    cuda.Event = _Event
    cuda.get_elapsed_time = lambda a, b: 10.0  # ms: one call per timed batch
    cuda.get_current_stream = lambda: _state["stream"][-1]

    @contextlib.contextmanager
    def device(dev=0):
        yield

    cuda.Device = device
    cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0,
                                         runtimeGetVersion=lambda: 13000, streamIsCapturing=lambda ptr: False)
    m.cuda = cuda
    m.__version__ = "fake"
    return m


# ---------------------------------------------------------------------------------------------
# memory by address


class Memory:
    """Element access by raw address inside one argument's allocation (bounds-checked)."""

    def __init__(self, arr: FakeArray, dtype=None):
        a = arr._a
        self.dtype = np.dtype(dtype or a.dtype)
        root = _root_of(a)
        assert root.flags.c_contiguous or root.flags.f_contiguous, "allocations are contiguous"
        self.root = root  # keeps the memory alive
        self.lo = root.__array_interface__["data"][0]
        self.nbytes = root.nbytes
        self.buf = np.ctypeslib.as_array((ctypes.c_uint8 * max(1, self.nbytes)).from_address(self.lo))
        self.ptr = a.__array_interface__["data"][0]
        assert (self.ptr - self.lo) % self.dtype.itemsize == 0

    def _index(self, elem_offsets):
        off = np.asarray(elem_offsets, dtype=np.int64)
        byte = (self.ptr - self.lo) + off * self.dtype.itemsize
        assert off.size == 0 or (byte.min() >= 0 and byte.max() + self.dtype.itemsize <= self.nbytes), \
            "kernel would touch memory outside the allocation"
        return byte // self.dtype.itemsize, (self.ptr - self.lo) % self.dtype.itemsize

    def read(self, elem_offsets):
        idx, rem = self._index(elem_offsets)
        assert rem == 0
        return self.buf.view(self.dtype)[idx]

    def write(self, elem_offsets, values):
        idx, rem = self._index(elem_offsets)
        assert rem == 0
        self.buf.view(self.dtype)[idx] = values


# ---------------------------------------------------------------------------------------------
# kernels


def _f64(x):
    x = np.asarray(x)
    return x if x.dtype.kind in "biu" else x.astype(np.float64)


def _binary_ref(op, a, b):
    a64, b64 = _f64(a), _f64(b)
    with np.errstate(all="ignore"):
        f = {"pow": np.power, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
             "bitwise_xor": np.bitwise_xor}.get(op) or getattr(np, op)
        if op in ("maximum", "minimum") and a64.dtype == np.bool_:
            return getattr(np, "logical_or" if op == "maximum" else "logical_and")(a64, b64)
        return f(a64, b64)


def _unary_ref(op, x):
    x64 = _f64(x)
    from math import erf
    with np.errstate(all="ignore"):
        if op == "relu":
            return np.maximum(x64, x64.dtype.type(0))
        if op == "square":
            return x64 * x64
        if op == "reciprocal":
            return 1.0 / x64
        if op == "rsqrt":
            return 1.0 / np.sqrt(x64)
        if op == "sigmoid":
            return 1.0 / (1.0 + np.exp(-x64))
        if op == "silu":
            return x64 / (1.0 + np.exp(-x64))
        if op == "gelu":
            return 0.5 * x64 * (1.0 + np.vectorize(erf, otypes=[np.float64])(x64 / np.sqrt(2.0)))
        if op == "gelu_tanh":
            return 0.5 * x64 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
        if op == "bitwise_invert":
            return np.invert(x64)
        return getattr(np, op)(x64)


def _cast(values, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(values).astype(dtype)


def _nd_offsets(params, count):
    p = params[0]
    n = int(p["n"])
    assert n == count and n < 2 ** 31
    nd = int(p["ndim"])
    i = np.arange(n, dtype=np.uint64)
    offs = [np.zeros(n, dtype=np.int64) for _ in range(3)]
    r = i
    for d in range(7, -1, -1):
        if d < nd:
            m, sh, ext = int(p["magic"][d]), int(p["shift"][d]), int(p["shape"][d])
            q = (((r * np.uint64(m)) >> np.uint64(32)) + r) >> np.uint64(sh)
            assert np.array_equal(q, r // np.uint64(ext)), "fast division disagrees"
            idx = (r - q * np.uint64(ext)).astype(np.int64)
            for k in range(3):
                offs[k] += idx * int(p["stride"][k][d])
            r = q
    return offs


def _selection(options):
    """Module options without the build settings (unroll, ...): which kernels a module holds."""
    return tuple(o for o in options if not o.startswith(("-DGPK_EW_UNROLL", "-DGPK_RED_", "-DGPK_MIN_BLOCKS",
                                                         "-DGPK_EW_LOAD", "-DGPK_EW_STORE")))


class Kernel:
    def __init__(self, emu, cu_file, name, options):
        self.emu, self.cu_file, self.name, self.options = emu, cu_file, name, tuple(options)


class Emulator:
    def __init__(self):
        self.launches = []
        self.modules = {}
        for table in (elementwise.expected_by_module(), reduction.expected_by_module()):
            for (f, opts), names in table.items():
                self.modules[(f, opts)] = names
                self.modules.setdefault((f, _selection(opts)), set()).update(names)

    # loader replacements
    def get_function(self, cu_file, name, options=()):
        options = tuple(options)
        names = self.modules.get((cu_file, options))
        if names is None:
            # build options may carry extra -D settings (unroll, ...) after the selection
            names = self.modules.get((cu_file, _selection(options)))
        assert names is not None, f"no module {cu_file} {options}"
        assert name in names, f"{name} is not in module {cu_file} {options}"
        return Kernel(self, cu_file, name, options)

    def launch(self, fn, grid, block, args, shared_mem=0):
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        block = (block,) if isinstance(block, int) else tuple(block)
        assert all(isinstance(g, int) and g >= 1 for g in grid) and grid[0] < 2 ** 31
        threads = int(np.prod(block))
        assert 1 <= threads <= 1024
        self.launches.append((fn.name, grid, block))
        name = fn.name
        if name.startswith("gpk_red_"):
            self._reduce(name, block, args)
        elif fn.cu_file == elementwise.BINARY_FILE:
            self._binary(name, threads, args)
        else:
            self._unary(name, threads, args)

    # elementwise
    def _binary(self, name, threads, args):
        _, rest = name.split("_", 1)
        op, dt, mode = rest.rsplit("_", 2)
        if mode == "b2":
            return self._binary_b2(op, dt, args)
        a, b, out, last = args
        assert isinstance(a, FakeArray) and isinstance(b, FakeArray) and isinstance(out, FakeArray)
        assert a.dtype == b.dtype and _common.dtype_code(a.dtype) == dt
        ma, mb, mo = Memory(a), Memory(b), Memory(out)
        if mode == "nd":
            assert isinstance(last, np.ndarray) and last.dtype == _common.ND_PARAMS_DTYPE and last.size == 1
            n = int(last[0]["n"])
            oo, oa, ob = _nd_offsets(last, n)
        else:
            assert isinstance(last, np.int64)
            n = int(last)
            N = 16 // a.dtype.itemsize
            assert mo.ptr % (N * out.dtype.itemsize) == 0
            idx = np.arange(n, dtype=np.int64)
            oo = idx
            oa = idx if mode != "sv" else np.zeros(n, np.int64)
            ob = idx if mode != "vs" else np.zeros(n, np.int64)
            if mode != "sv":
                assert ma.ptr % 16 == 0
            if mode != "vs":
                assert mb.ptr % 16 == 0
        res = _binary_ref(op, ma.read(oa), mb.read(ob))
        mo.write(oo, _cast(res, out.dtype))

    def _binary_b2(self, op, dt, args):
        """The _b2 kernel: vector v of x in row q = fast_div(v, magic, shift); y's vector v - q * cvec (kind 0) or
        element q (kind 1); op(y, x) when swap."""
        x, y, out, nvec, cvec, magic, shift, kind, swap = args
        assert all(isinstance(v, np.uint32) for v in (nvec, cvec, magic, shift))
        assert isinstance(kind, np.int32) and isinstance(swap, np.int32) and int(kind) in (0, 1)
        assert x.dtype == y.dtype and _common.dtype_code(x.dtype) == dt and int(nvec) < 2 ** 31
        mx, my, mo = Memory(x), Memory(y), Memory(out)
        N = 16 // x.dtype.itemsize
        assert mx.ptr % 16 == 0 and mo.ptr % (N * out.dtype.itemsize) == 0
        v = np.arange(int(nvec), dtype=np.int64)
        q = ((((v * int(magic)) >> 32) + v) & 0xFFFFFFFF) >> int(shift)  # emulate_fast_div, vectorized (v < 2^31)
        e = (v[:, None] * N + np.arange(N)).reshape(-1)
        if int(kind) == 0:
            assert my.ptr % 16 == 0
            oy = ((v - q * int(cvec))[:, None] * N + np.arange(N)).reshape(-1)
        else:
            oy = np.repeat(q, N)
        vx, vy = mx.read(e), my.read(oy)
        res = _binary_ref(op, vy, vx) if int(swap) else _binary_ref(op, vx, vy)
        mo.write(e, _cast(res, out.dtype))

    def _unary(self, name, threads, args):
        _, rest = name.split("_", 1)
        op, dt, mode = rest.rsplit("_", 2)
        x, out, last = args
        assert x.dtype == out.dtype and _common.dtype_code(x.dtype) == dt
        mx, mo = Memory(x), Memory(out)
        if mode == "nd":
            n = int(last[0]["n"])
            oo, ox, _ = _nd_offsets(last, n)
        else:
            assert mode == "v" and isinstance(last, np.int64)
            n = int(last)
            assert mx.ptr % 16 == 0 and mo.ptr % 16 == 0
            oo = ox = np.arange(n, dtype=np.int64)
        mo.write(oo, _cast(_unary_ref(op, mx.read(ox)), out.dtype))

    # reductions
    def _reduce(self, name, block, args):
        rest = name[len("gpk_red_"):]
        op, dt, kind = rest.rsplit("_", 2)
        if kind == "fin":
            partial, nout, splits, out, n, ddof = args
            assert isinstance(nout, np.int64) and isinstance(splits, np.int64)
            assert isinstance(n, np.float64) and isinstance(ddof, np.float64)
            tx, ty = block
            assert tx * ty <= 256 and ty & (ty - 1) == 0
            store = partial.__dict__.setdefault("_emu_partials", {})
            for j in range(int(nout)):
                acc = None
                for s in range(int(splits)):
                    acc = _combine(op, acc, store.pop(s * int(nout) + j))
                Memory(out).write([j], _cast([_finish(op, acc, float(n), float(ddof))], out.dtype))
            assert not store, "partials left over"
            return
        if kind == "row":
            x, outer, K, splits, seg_len, warp_mode, partial, out, center, n, ddof, counters = args
            assert isinstance(warp_mode, np.int32) and block[0] % 32 == 0
            assert block[0] == reduction.CONFIG["threads"], "the row kernel is built for CONFIG['threads']"
            assert not (warp_mode and int(splits) > 1), "warp mode never splits"
            for v in (outer, K, splits, seg_len):
                assert isinstance(v, np.int64)
            inner, kchunk = 1, int(seg_len)
            units = int(outer)
        else:
            x, outer, K, inner, splits, kchunk, partial, out, center, n, ddof, counters = args
            for v in (outer, K, inner, splits, kchunk):
                assert isinstance(v, np.int64)
            tx, ty = block
            assert tx * ty <= 256 and ty & (ty - 1) == 0
            vec = 1
            if kind == "colv":
                vec = reduction.col_vec_width(x.dtype.itemsize)
                assert int(inner) % vec == 0 and Memory(x).ptr % (vec * x.dtype.itemsize) == 0
            units = -(-(int(outer) * int(inner) // vec) // tx)
        assert isinstance(n, np.float64) and isinstance(ddof, np.float64)
        assert _common.dtype_code(x.dtype) == dt
        outer, K, inner, splits, kchunk = int(outer), int(K), int(inner), int(splits), int(kchunk)
        assert (splits > 1) == (partial is not None)
        assert counters is None or splits > 1
        assert kchunk * splits >= K and kchunk * (splits - 1) < K
        if counters is not None:
            # the last block of each unit combines its partials in this launch and leaves the counter at 0
            assert counters.dtype == np.uint32 and counters.size >= units
            assert not Memory(counters).read(np.arange(units)).any(), "counters not zeroed"
        mx = Memory(x)
        mc = Memory(center) if center is not None else None
        nout = outer * inner
        j = np.arange(nout, dtype=np.int64)
        o, i = j // inner, j % inner
        cen = _f64(mc.read(j)) if mc is not None else np.zeros(nout)
        if partial is not None:
            assert partial.nbytes >= splits * nout * 16
            store = partial.__dict__.setdefault("_emu_partials", {})
        for s in range(splits):
            k = np.arange(s * kchunk, min(K, (s + 1) * kchunk), dtype=np.int64)
            offs = (o * K * inner + i)[:, None] + k[None, :] * inner
            vals = mx.read(offs.reshape(-1)).reshape(offs.shape)
            accs = _accumulate(op, vals, k, cen)
            if splits == 1:
                res = [_finish(op, acc, float(n), float(ddof)) for acc in accs]
                Memory(out).write(j, _cast(res, out.dtype))
            else:
                for jj in range(nout):
                    key = s * nout + jj
                    assert key not in store
                    store[key] = accs[jj]
        if partial is not None and counters is not None:
            for jj in range(nout):
                acc = None
                for s in range(splits):
                    acc = _combine(op, acc, store.pop(s * nout + jj))
                Memory(out).write([jj], _cast([_finish(op, acc, float(n), float(ddof))], out.dtype))
            assert not store, "partials left over"


def _accumulate(op, vals, k, cen):
    """Per-output accumulators of a (nout, chunk) block of values whose reduction indices are k."""
    v = _f64(vals)
    nout = v.shape[0]
    if op in ("sum", "mean"):
        if v.dtype.kind in "biu":
            acc_t = np.uint64 if v.dtype.kind == "u" else np.int64
            with np.errstate(all="ignore"):
                return list(v.astype(acc_t).sum(axis=1, dtype=acc_t))
        return list(v.sum(axis=1))
    if op == "prod":
        if v.dtype.kind in "biu":
            acc_t = np.uint64 if v.dtype.kind == "u" else np.int64
            with np.errstate(all="ignore"):
                return list(v.astype(acc_t).prod(axis=1, dtype=acc_t))
        return list(v.prod(axis=1))
    if op in ("max", "min"):
        if v.shape[1] == 0:
            return [None] * nout
        return list(np.max(v, axis=1) if op == "max" else np.min(v, axis=1))
    if op in ("argmax", "argmin"):
        if v.shape[1] == 0:
            return [None] * nout
        f = np.argmax if op == "argmax" else np.argmin
        pos = f(v, axis=1)
        return [(v[r, pos[r]], int(k[pos[r]])) for r in range(nout)]
    if op in ("var", "std"):
        d = v - cen[:, None]
        return [(float(a), float(b)) for a, b in zip(d.sum(axis=1), (d * d).sum(axis=1))]
    raise AssertionError(op)


def _combine(op, a, b):
    if a is None:
        return b
    if b is None:
        return a
    if op in ("sum", "mean"):
        with np.errstate(all="ignore"):
            return a + b
    if op == "prod":
        with np.errstate(all="ignore"):
            return a * b
    if op in ("max", "min"):
        if a != a:
            return a
        if b != b:
            return b
        return max(a, b) if op == "max" else min(a, b)
    if op in ("argmax", "argmin"):
        an, bn = a[0] != a[0], b[0] != b[0]
        if an or bn:
            if an and bn:
                return b if b[1] < a[1] else a
            return a if an else b
        better = b[0] > a[0] if op == "argmax" else b[0] < a[0]
        return b if (better or (b[0] == a[0] and b[1] < a[1])) else a
    if op in ("var", "std"):
        return (a[0] + b[0], a[1] + b[1])
    raise AssertionError(op)


def _finish(op, acc, n, ddof):
    assert acc is not None
    if op == "mean":
        return acc / n
    if op in ("argmax", "argmin"):
        return acc[1]
    if op in ("var", "std"):
        s1, s2 = acc
        m2 = max(s2 - s1 * s1 / n, 0.0)
        den = max(n - ddof, 0.0)
        with np.errstate(all="ignore"):
            v = np.float64(m2) / np.float64(den)
        return np.sqrt(v) if op == "std" else v
    return acc
