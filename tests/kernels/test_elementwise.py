"""GPU tests of gpk_array._kernels.elementwise against float64 NumPy references.

Sweeps every dtype over shapes with odd sizes, one element, empty arrays, broadcasting,
non-contiguous and misaligned views, scalar operands, ``out=``, and a non-default stream."""

import zlib

import numpy as np
import pytest


from tests.kernels._gpu_common import BF16, BOOL, FLOAT_DTYPES, INT_DTYPES, RTOL, gpu_marks  # noqa: E402,F401

pytestmark = gpu_marks()
ATOL = {"float16": 5e-3, "bfloat16": 2e-2, "float32": 1e-6, "float64": 1e-12}

SHAPES = [(), (1,), (7,), (33,), (1000,), (4099,), (3, 5, 7), (64, 33), (1 << 17,), (2, 1, 3)]
BCAST = [((5, 1, 3), (4, 3)), ((1,), (17,)), ((17,), (1,)), ((), (9,)), ((9,), ()), ((6, 1), (1, 7)),
         ((0,), (0,)), ((0, 3), (1, 3)), ((2, 3, 4, 5), (5,)), ((1000, 1), (1, 257))]


def _ew():
    from gpk_array._kernels import elementwise
    return elementwise


def _seed(*parts):
    return zlib.crc32(repr(parts).encode())


def _rand(shape, dtype, rng, lo=-4.0, hi=4.0, nonzero=False):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True))
    x = np.asarray(rng.uniform(lo, hi, size=shape))
    if nonzero:
        x = np.where(np.abs(x) < 0.25, 0.25 + np.abs(x), x)
    return np.asarray(x.astype(dtype))


def _to_gpu(x):
    import cupy
    return cupy.asarray(np.array(x, order="C"))  # (np.ascontiguousarray would make 0-d arrays 1-d)


def _host(x):
    return np.asarray(x.get())


def _as64(x):
    x = np.asarray(x)
    if x.dtype == BOOL or x.dtype.kind in "iu":
        return x
    return x.astype(np.float64)


def _check_float(got, ref, dtype):
    name = np.dtype(dtype).name
    np.testing.assert_allclose(_as64(got), ref, rtol=RTOL[name], atol=ATOL[name], equal_nan=True)


# ---------------------------------------------------------------------------------------------
# references

def _ref_binary(op, a, b):
    """float64 (floats) or same-dtype wrap-around (ints) NumPy reference."""
    a64, b64 = _as64(a), _as64(b)
    with np.errstate(all="ignore"):
        if op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            return getattr(np, op)(a64, b64)
        if op == "pow":
            return np.power(a64, b64)
        if op in ("maximum", "minimum"):
            return getattr(np, op)(a64, b64)
        return getattr(np, op)(a64, b64)


def _ref_unary(op, x):
    x64 = _as64(x)
    from math import erf
    with np.errstate(all="ignore"):
        if op == "relu":
            return np.maximum(x64, x64.dtype.type(0)) if x64.dtype != BOOL else x64
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
            verf = np.vectorize(erf, otypes=[np.float64])
            return 0.5 * x64 * (1.0 + verf(x64 / np.sqrt(2.0)))
        if op == "gelu_tanh":
            return 0.5 * x64 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
        if op == "bitwise_invert":
            return np.invert(x64)
        return getattr(np, op)(x64)


BIN_FLOAT_OPS = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow",
                 "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
BIN_INT_OPS = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "less",
               "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor"]
BIN_BOOL_OPS = ["maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
                "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor"]
UN_FLOAT_OPS = ["negative", "abs", "square", "relu", "exp", "log", "sqrt", "sin", "cos", "tanh",
                "log1p", "expm1", "reciprocal", "rsqrt", "sigmoid", "silu", "gelu", "gelu_tanh"]
UN_INT_OPS = ["negative", "abs", "square", "relu", "bitwise_invert"]


def _float_inputs(op, shape, dtype, rng):
    if op == "pow":
        return _rand(shape, dtype, rng, 0.5, 2.0), _rand(shape, dtype, rng, -2.0, 2.0)
    if op == "divide":
        return _rand(shape, dtype, rng), _rand(shape, dtype, rng, nonzero=True)
    a = _rand(shape, dtype, rng)
    b = _rand(shape, dtype, rng)
    if op in ("equal", "not_equal", "less_equal", "greater_equal", "maximum", "minimum") and a.size:
        # some ties
        flat_a, flat_b = a.reshape(-1), b.reshape(-1)
        flat_b[::3] = flat_a[::3]
    return a, b


def _unary_input(op, shape, dtype, rng):
    if op in ("log", "sqrt", "rsqrt", "reciprocal"):
        return _rand(shape, dtype, rng, 0.1, 4.0)
    if op == "log1p":
        return _rand(shape, dtype, rng, -0.5, 4.0)
    return _rand(shape, dtype, rng)


def _compare(op, got, ref, dtype):
    if np.asarray(got).dtype == BOOL or np.dtype(dtype).kind in "iub":
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref).astype(np.asarray(got).dtype))
    else:
        _check_float(got, ref, dtype)


# ---------------------------------------------------------------------------------------------
# binary

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", BIN_FLOAT_OPS)
def test_binary_float(op, dtype):
    ew = _ew()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape in SHAPES:
        a, b = _float_inputs(op, shape, dtype, rng)
        got = ew.binary(op, _to_gpu(a), _to_gpu(b))
        assert got.shape == np.broadcast_shapes(a.shape, b.shape)
        _compare(op, _host(got), _ref_binary(op, a, b), dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", BIN_INT_OPS)
def test_binary_int(op, dtype):
    ew = _ew()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape in SHAPES:
        a, b = _rand(shape, dtype, rng), _rand(shape, dtype, rng)
        if a.size:
            b.reshape(-1)[::4] = a.reshape(-1)[::4]
        got = _host(ew.binary(op, _to_gpu(a), _to_gpu(b)))
        with np.errstate(all="ignore"):
            ref = getattr(np, op)(a, b)
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("op", BIN_BOOL_OPS)
def test_binary_bool(op):
    ew = _ew()
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        a, b = _rand(shape, BOOL, rng), _rand(shape, BOOL, rng)
        got = _host(ew.binary(op, _to_gpu(a), _to_gpu(b)))
        np.testing.assert_array_equal(got, getattr(np, op)(a, b))
    for alias, np_name in [("logical_and", "logical_and"), ("logical_or", "logical_or"),
                           ("logical_xor", "logical_xor")]:
        a, b = _rand((100,), BOOL, rng), _rand((100,), BOOL, rng)
        np.testing.assert_array_equal(_host(ew.binary(alias, _to_gpu(a), _to_gpu(b))),
                                      getattr(np, np_name)(a, b))


def _broadcast_ref(op, a, b, dtype):
    if dtype.kind == "f" or dtype == BF16:
        return _ref_binary(op, a, b)
    with np.errstate(all="ignore"):
        return getattr(np, op)(a, b)


def _broadcast_operands(op, sa, sb, dtype, rng, ref=True):
    """Operands of shapes sa and sb (float ones in op's domain) and their reference result (None: ref=False)."""
    if dtype.kind == "f" or dtype == BF16:
        a, b = _float_inputs(op, sa, dtype, rng)[0], _float_inputs(op, sb, dtype, rng)[1]
    else:
        a, b = _rand(sa, dtype, rng), _rand(sb, dtype, rng)
    return a, b, (_broadcast_ref(op, a, b, dtype) if ref else None)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int32), np.dtype(np.uint8), BOOL],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["add", "subtract", "divide", "pow", "maximum", "less", "greater_equal",
                                "bitwise_xor"])
def test_binary_broadcast(op, dtype):
    ew = _ew()
    if not ew.supports_binary(op, dtype):
        pytest.skip("unsupported pair")
    rng = np.random.default_rng(3)
    for sa, sb in BCAST:
        a, b, ref = _broadcast_operands(op, sa, sb, dtype, rng)
        got = ew.binary(op, _to_gpu(a), _to_gpu(b))
        assert got.shape == ref.shape
        _compare(op, _host(got), ref, dtype)


# (a's shape, b's shape, whether the _b2 kernel (a row or a column broadcast over the last axis) takes it)
BCAST2 = [((64, 48), (48,), True), ((48,), (64, 48), True), ((64, 48), (64, 1), True), ((64, 1), (64, 48), True),
          ((3, 5, 64), (3, 5, 1), True), ((3, 5, 64), (1, 1, 64), True), ((1, 64), (7, 64), True),
          ((1000, 32), (32,), True), ((3, 5, 64), (5, 1), False), ((64, 40), (40,), None), ((64, 1), (1, 48), False)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int32), np.dtype(np.uint8), BOOL],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["add", "subtract", "divide", "pow", "maximum", "less", "greater_equal",
                                "bitwise_xor"])
def test_binary_row_and_column_broadcast(op, dtype):
    """A row (C,) or a column (R, 1) broadcast over a contiguous operand, either side: the _b2 kernel where the
    last extent is a multiple of the vector width (40: not for 1-byte types), else the strided kernel."""
    ew = _ew()
    if not ew.supports_binary(op, dtype):
        pytest.skip("unsupported pair")
    rng = np.random.default_rng(_seed(op, dtype.name))
    vec = 16 // dtype.itemsize
    for sa, sb, b2 in BCAST2:
        a, b, ref = _broadcast_operands(op, sa, sb, dtype, rng)
        ga, gb = _to_gpu(a), _to_gpu(b)
        shape = np.broadcast_shapes(a.shape, b.shape)
        if b2 is None:
            b2 = shape[-1] % vec == 0
        assert (ew._bcast2(ga, gb, shape, int(np.prod(shape)), vec) is not None) == b2, (sa, sb)
        got = ew.binary(op, ga, gb)
        assert got.shape == ref.shape
        _compare(op, _host(got), ref, dtype)
    # a misaligned row (an offset view) takes the strided kernel, and gives the same result
    a, b, _ = _broadcast_operands(op, (16, 64), (65,), dtype, rng, ref=False)
    gb = _to_gpu(b)[1:]
    assert ew._bcast2(_to_gpu(a), gb, (16, 64), 16 * 64, vec) is None
    _compare(op, _host(ew.binary(op, _to_gpu(a), gb)), _broadcast_ref(op, a, b[1:], dtype), dtype)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int64)] +
                         ([BF16] if BF16 else []), ids=lambda d: d.name)
def test_binary_views(dtype):
    """Non-contiguous, transposed, negative-stride and misaligned (offset) operands."""
    import cupy
    ew = _ew()
    rng = np.random.default_rng(11)
    base_a = _rand((64, 130), dtype, rng)
    base_b = _rand((64, 130), dtype, rng)
    ga, gb = _to_gpu(base_a), _to_gpu(base_b)
    cases = [
        (ga[:, ::2], gb[:, 1::2], base_a[:, ::2], base_b[:, 1::2]),
        (ga[:32, :32].T, gb[:32, :32], base_a[:32, :32].T, base_b[:32, :32]),
        (ga[::-1], gb, base_a[::-1], base_b),
        (ga.reshape(-1)[1:], gb.reshape(-1)[:-1], base_a.reshape(-1)[1:], base_b.reshape(-1)[:-1]),
        (ga.reshape(-1)[3:1003], gb.reshape(-1)[5:1005], base_a.reshape(-1)[3:1003],
         base_b.reshape(-1)[5:1005]),
        (cupy.broadcast_to(ga[0], (64, 130)), gb, np.broadcast_to(base_a[0], (64, 130)), base_b),
    ]
    for op in ("add", "subtract", "less"):
        for x, y, hx, hy in cases:
            got = _host(ew.binary(op, x, y))
            if dtype.kind in "iu":
                with np.errstate(all="ignore"):
                    ref = getattr(np, op)(hx, hy)
                np.testing.assert_array_equal(got, ref)
            else:
                _compare(op, got, _ref_binary(op, hx, hy), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.dtype(np.int16)], ids=lambda d: d.name)
def test_binary_scalar_operands(dtype):
    """A single-element operand on either side (the _vs / _sv kernels, and the swapped ones)."""
    ew = _ew()
    rng = np.random.default_rng(5)
    x = _rand((1001,), dtype, rng, nonzero=True)
    for sshape in [(), (1,)]:
        s = _rand(sshape, dtype, rng, 0.5, 2.0)
        for op in ("add", "subtract", "multiply", "divide", "pow", "maximum", "less", "less_equal",
                   "greater", "greater_equal", "equal"):
            if not ew.supports_binary(op, dtype):
                continue
            xx = np.abs(x) + 1 if op == "pow" and dtype.kind == "f" else x
            xx = xx.astype(dtype)
            for a, b in ((xx, s), (s, xx)):
                got = _host(ew.binary(op, _to_gpu(a), _to_gpu(b)))
                if dtype.kind in "iu":
                    with np.errstate(all="ignore"):
                        ref = getattr(np, op)(a, b)
                    np.testing.assert_array_equal(got, ref)
                else:
                    _compare(op, got, _ref_binary(op, a, b), dtype)


def test_binary_nan_semantics():
    ew = _ew()
    nan = np.nan
    a = np.array([nan, 1.0, nan, -0.0, np.inf, 2.0, -np.inf], dtype=np.float32)
    b = np.array([1.0, nan, nan, 0.0, 1.0, 2.0, -np.inf], dtype=np.float32)
    for op in ("maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
               "greater_equal"):
        for dt in FLOAT_DTYPES:
            got = _host(ew.binary(op, _to_gpu(a.astype(dt)), _to_gpu(b.astype(dt))))
            ref = getattr(np, op)(a.astype(np.float64), b.astype(np.float64))
            np.testing.assert_array_equal(_as64(got), ref)


def test_binary_out_and_errors():
    import cupy
    ew = _ew()
    a = cupy.arange(10, dtype=cupy.float32)
    out = cupy.empty(10, dtype=cupy.float32)
    r = ew.binary("add", a, a, out=out)
    assert r is out
    np.testing.assert_array_equal(_host(out), np.arange(10, dtype=np.float32) * 2)
    ew.binary("multiply", a, a, out=a)  # in place
    np.testing.assert_array_equal(_host(a), np.arange(10, dtype=np.float32) ** 2)
    outb = cupy.empty(10, dtype=cupy.bool_)
    ew.binary("less", a, a, out=outb)
    assert not bool(outb.any())
    with pytest.raises(ValueError):
        ew.binary("add", a, a, out=cupy.empty(9, dtype=cupy.float32))
    with pytest.raises(ValueError):
        ew.binary("add", a, a, out=cupy.empty(10, dtype=cupy.float64))
    with pytest.raises(ValueError):
        ew.binary("less", a, a, out=cupy.empty(10, dtype=cupy.float32))
    with pytest.raises(TypeError):
        ew.binary("add", a, a.astype(cupy.float64))
    with pytest.raises(NotImplementedError):
        ew.binary("divide", cupy.ones(3, cupy.int32), cupy.ones(3, cupy.int32))
    with pytest.raises(NotImplementedError):
        ew.binary("add", cupy.ones(3, cupy.complex64), cupy.ones(3, cupy.complex64))
    with pytest.raises(NotImplementedError):
        ew.binary("no_such_op", a, a)
    with pytest.raises(ValueError):
        ew.binary("add", cupy.ones(3, cupy.float32), cupy.ones(4, cupy.float32))


# ---------------------------------------------------------------------------------------------
# unary

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", UN_FLOAT_OPS)
def test_unary_float(op, dtype):
    ew = _ew()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape in SHAPES:
        x = _unary_input(op, shape, dtype, rng)
        got = ew.unary(op, _to_gpu(x))
        assert got.shape == x.shape and got.dtype == x.dtype
        _check_float(_host(got), _ref_unary(op, x), dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", UN_INT_OPS)
def test_unary_int(op, dtype):
    ew = _ew()
    rng = np.random.default_rng(_seed(op, dtype.name))
    for shape in SHAPES:
        x = _rand(shape, dtype, rng)
        if x.size:
            info = np.iinfo(dtype)
            x.reshape(-1)[0] = info.min
            x.reshape(-1)[-1] = info.max
        got = _host(ew.unary(op, _to_gpu(x)))
        with np.errstate(all="ignore"):
            ref = {"negative": np.negative, "abs": np.abs, "square": lambda v: v * v,
                   "relu": lambda v: np.maximum(v, dtype.type(0)), "bitwise_invert": np.invert}[op](x)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, ref.astype(dtype))


def test_unary_bool_and_special_values():
    ew = _ew()
    rng = np.random.default_rng(9)
    x = _rand((77,), BOOL, rng)
    np.testing.assert_array_equal(_host(ew.unary("bitwise_invert", _to_gpu(x))), ~x)
    np.testing.assert_array_equal(_host(ew.unary("logical_not", _to_gpu(x))), ~x)
    sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -50.0, 50.0], dtype=np.float32)
    for op in ("relu", "exp", "tanh", "sigmoid", "abs", "negative", "sqrt", "log"):
        with np.errstate(all="ignore"):
            ref = _ref_unary(op, sp)
        got = _as64(_host(ew.unary(op, _to_gpu(sp))))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int8)] +
                         ([BF16] if BF16 else []), ids=lambda d: d.name)
def test_unary_views_and_out(dtype):
    import cupy
    ew = _ew()
    rng = np.random.default_rng(13)
    base = _rand((40, 70), dtype, rng)
    g = _to_gpu(base)
    op = "negative"
    for gx, hx in [(g[:, ::3], base[:, ::3]), (g.T, base.T), (g.reshape(-1)[1:], base.reshape(-1)[1:]),
                   (g[::-2, 5:], base[::-2, 5:])]:
        got = _host(ew.unary(op, gx))
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, np.negative(hx))
    out = cupy.empty((70, 40), dtype=dtype).T  # non-contiguous out
    ew.unary(op, g, out=out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_host(out), np.negative(base))
    with pytest.raises(NotImplementedError):
        ew.unary("exp", cupy.ones(3, cupy.int32))
    assert ew.unary("exp", cupy.empty((0, 4), cupy.float32)).shape == (0, 4)


@pytest.mark.parametrize("op", ["gelu", "silu", "gelu_tanh", "exp"])
def test_unary_in_place(op):
    """out=x (what gpk_array._gpu.linear does after cuBLASLt's bias GEMM): the vector path with a tail, and the
    strided path on a non-contiguous view, give what the out-of-place call gives."""
    ew = _ew()
    rng = np.random.default_rng(_seed("inplace", op))
    for dtype in (np.float16, np.float32):
        for shape in ((4099,), (1 << 17,), (64, 33)):
            g = _to_gpu(_rand(shape, dtype, rng))
            want = _host(ew.unary(op, g))
            same = ew.unary(op, g, out=g)
            assert same is g
            np.testing.assert_array_equal(_host(g), want)
        g = _to_gpu(_rand((40, 70), dtype, rng))
        view = g[:, ::3]
        want = _host(ew.unary(op, view))
        ew.unary(op, view, out=view)
        np.testing.assert_array_equal(_host(view), want)


# ---------------------------------------------------------------------------------------------
# streams, large sizes

def test_runs_on_current_stream():
    import cupy
    ew = _ew()
    n = 1 << 22
    x = cupy.arange(n, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = ew.binary("add", x, x)
        z = ew.unary("negative", y)
        assert cupy.cuda.get_current_stream() == s
    s.synchronize()
    np.testing.assert_array_equal(_host(z), -2 * np.arange(n, dtype=np.float32))


def test_sizes_around_vector_boundaries():
    ew = _ew()
    import cupy
    for n in list(range(0, 70)) + [255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 65537]:
        for dt in (np.float32, np.float16, np.int8, np.float64):
            with np.errstate(all="ignore"):
                a = (np.arange(n, dtype=np.int64) % 1000).astype(dt)
                ref = (a + a).astype(dt)
            got = _host(ew.binary("add", cupy.asarray(a), cupy.asarray(a)))
            np.testing.assert_array_equal(got, ref)


def _vector_kernel_calls(ew, gx, gy, gs, rows, cols):
    """One call of each vector kernel kind: contiguous, scalar operand, row and column broadcast, cheap and math
    unary."""
    g2 = gx[: rows * cols].reshape(rows, cols)
    return {"add": _host(ew.binary("add", gx, gy)), "mul": _host(ew.binary("multiply", gx, gs)),
            "row": _host(ew.binary("add", g2, gy[:cols])),
            "col": _host(ew.binary("subtract", g2, gy[:rows].reshape(rows, 1))),
            "neg": _host(ew.unary("negative", gx)), "exp": _host(ew.unary("exp", gx))}


@pytest.mark.parametrize("cfg", [{"waves": 1, "threads": 256, "blocks_per_sm": 2}, {"waves": 3, "threads": 64},
                                 {"waves": 0, "threads": 1024}])
def test_launch_settings_agree(cfg, monkeypatch):
    """The default launch (one block per tile) and grid-stride grids with many tiles per block give the same
    bits, and NumPy's values, for every vector kernel kind; sizes with a scalar tail."""
    import cupy
    ew = _ew()
    rng = np.random.default_rng(_seed("launch", sorted(cfg.items())))
    rows, cols = 1531, 1024
    for dt in (np.float32, np.float16, BF16):
        name = np.dtype(dt).name
        x = _rand((rows * cols + 5,), dt, rng)
        y = _rand((rows * cols + 5,), dt, rng)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        x2 = x64[: rows * cols].reshape(rows, cols)
        refs = {"add": x64 + y64, "mul": x64 * 1.5, "row": x2 + y64[:cols], "col": x2 - y64[:rows].reshape(rows, 1),
                "neg": -x64, "exp": np.exp(x64)}
        args = (ew, cupy.asarray(x), cupy.asarray(y), cupy.asarray(np.asarray(1.5, dtype=dt)), rows, cols)
        base = _vector_kernel_calls(*args)
        with monkeypatch.context() as m:
            for k, v in cfg.items():
                m.setitem(ew.CONFIG, k, v)
            got = _vector_kernel_calls(*args)
        for kind, ref in refs.items():
            np.testing.assert_array_equal(got[kind].view(np.uint8), base[kind].view(np.uint8), err_msg=f"{kind} {name}")
            np.testing.assert_allclose(got[kind].astype(np.float64), ref, rtol=RTOL[name], atol=ATOL[name],
                                       err_msg=f"{kind} {name}")


@pytest.mark.skipif(True, reason="enable by hand: needs ~12 GB of GPU memory")
def test_more_than_2_31_elements():  # pragma: no cover
    import cupy
    ew = _ew()
    n = (1 << 31) + 17
    a = cupy.ones(n, dtype=cupy.int8)
    out = ew.binary("add", a, a)
    assert int(out[-1]) == 2 and int(out[0]) == 2
    out2 = ew.binary("add", a[1:], a[:-1])  # misaligned: chunked strided path
    assert int(out2[-1]) == 2
