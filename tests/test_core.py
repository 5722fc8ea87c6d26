"""Unit tests of the semantic layer: promotion, indexing, devices, errors, copy semantics and DLPack."""
import numpy as np
import pytest

import gpk_array as xp

from .conftest import requires_gpu


# --- promotion: the standard's table, checked against array-api-strict ---------------------------------------
def test_promotion_table_matches_array_api_strict():
    strict = pytest.importorskip("array_api_strict")
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
             "float64", "complex64", "complex128"]
    for a in names:
        for b in names:
            try:
                want = strict.result_type(getattr(strict, a), getattr(strict, b))
            except TypeError:
                continue  # no promotion in the standard: NumPy's rule applies (unspecified)
            got = xp.result_type(getattr(xp, a), getattr(xp, b))
            assert np.dtype(got).name == str(want).split(".")[-1].strip("'>"), (a, b)


def test_python_scalars_are_weak():
    x = xp.ones(3, dtype=xp.float32)
    assert (x + 1).dtype == xp.float32
    assert (x * 2.5).dtype == xp.float32
    assert (1j + x).dtype == xp.complex64
    assert (xp.ones(2, dtype=xp.int8) + 100).dtype == xp.int8
    assert xp.result_type(xp.int16, 1, 2.0) == xp.float64  # NumPy's rule where the standard is silent


def test_bfloat16_float16_promotion_and_arithmetic(device):
    b = xp.ones(4, dtype=xp.bfloat16, device=device)
    h = xp.ones(4, dtype=xp.float16, device=device)
    assert (b + h).dtype == xp.float32
    assert (b + 1.5).dtype == xp.bfloat16
    assert (b * b).dtype == xp.bfloat16
    m = xp.ones((3, 3), dtype=xp.bfloat16, device=device)
    assert (m @ m).dtype == xp.bfloat16
    np.testing.assert_array_equal(np.asarray(xp.astype(m @ m, xp.float32).to_device("cpu")), np.full((3, 3), 3))


def test_negative_zero_survives_creation(device):
    for x in (xp.full((2,), -0.0, device=device), xp.asarray([-0.0], device=device),
              xp.full_like(xp.ones(2, device=device), -0.0)):
        assert np.all(np.signbit(np.asarray(x.to_device("cpu"))))


# --- indexing ------------------------------------------------------------------------------------------------
def test_indexing_matches_numpy():
    a = np.arange(60).reshape(3, 4, 5)
    x = xp.asarray(a, device="cpu")
    keys = [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (slice(1, None, 2), Ellipsis, None),
            (0, slice(None, None, -1)), ()]
    for k in keys:
        np.testing.assert_array_equal(np.asarray(x[k]), a[k], err_msg=str(k))
    mask = a % 3 == 0
    np.testing.assert_array_equal(np.asarray(x[xp.asarray(mask, device="cpu")]), a[mask])
    idx = np.array([2, 0, 1])
    i = xp.asarray(idx, device="cpu")
    np.testing.assert_array_equal(np.asarray(x[i]), a[idx])
    np.testing.assert_array_equal(np.asarray(x[i, :, i]), a[idx, :, idx])


def test_setitem(device):
    x = xp.zeros((3, 4), device=device)
    x[1] = 5
    x[:, 2] = xp.asarray([1.0, 2.0, 3.0], device=device)
    x[x > 4] = -1
    ref = np.zeros((3, 4))
    ref[1] = 5
    ref[:, 2] = [1, 2, 3]
    ref[ref > 4] = -1
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), ref)
    x[0, 0] = -0.0
    assert np.signbit(np.asarray(x.to_device("cpu"))[0, 0])


@pytest.mark.parametrize("key, err", [(3, IndexError), ((0, 0, 0), IndexError), (1.5, IndexError),
                                      ("a", IndexError), ((Ellipsis, Ellipsis), IndexError)])
def test_bad_indices_raise(key, err):
    x = xp.zeros((3, 4))
    with pytest.raises(err):
        x[key]


# --- devices -------------------------------------------------------------------------------------------------
def test_devices_and_default():
    info = xp.__array_namespace_info__()
    assert xp.Device("cpu") in info.devices()
    assert info.default_device() in info.devices()
    x = xp.zeros(3, device="cpu")
    assert x.device == xp.Device("cpu")
    assert xp.asarray([1, 2]).device == info.default_device()
    with pytest.raises(ValueError, match="unknown device"):
        xp.Device("tpu:0")


@requires_gpu
@pytest.mark.gpu
def test_mixing_devices_raises_naming_both():
    a = xp.zeros(3, device="cpu")
    b = xp.zeros(3, device="cuda:0")
    with pytest.raises(ValueError, match="cpu.*cuda:0"):
        a + b
    c = b.to_device("cpu")
    assert c.device == xp.Device("cpu")
    np.testing.assert_array_equal(np.asarray(c), np.zeros(3))


def test_device_errors_without_gpu():
    if any(d.kind == "cuda" for d in xp.__array_namespace_info__().devices()):
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="cuda:0 is not available"):
        xp.zeros(3, device="cuda:0")


# --- errors --------------------------------------------------------------------------------------------------
def test_error_types():
    with pytest.raises(ValueError):
        xp.reshape(xp.zeros(6), (4, 2))
    with pytest.raises(ValueError):
        xp.zeros((2, 3)) + xp.zeros((4, 3))
    # the standard's functions take the standard's dtypes only; the namespace's NumPy-facing names make strings,
    # dates and records on the CPU device (tests/numpy_compat/test_hostdtypes.py)
    from gpk_array._ops import creation as std
    with pytest.raises(TypeError):
        std.zeros(3, dtype="str")
    with pytest.raises(TypeError):
        std.asarray(["a", "b"])
    with pytest.raises(TypeError):
        xp.zeros(3, dtype=object)
    with pytest.raises(TypeError):
        xp.astype(xp.asarray([1j]), xp.float64)
    with pytest.raises(ValueError):
        xp.squeeze(xp.zeros((2, 3)), axis=0)
    with pytest.raises(IndexError):
        xp.sum(xp.zeros((2, 3)), axis=2)
    with pytest.raises(TypeError):
        xp.Array()
    x = xp.zeros(3, dtype=xp.int32)
    with pytest.raises(TypeError):
        x += 1.5  # in-place ops keep the dtype


# --- copy semantics ------------------------------------------------------------------------------------------
def test_asarray_copy_semantics():
    a = np.arange(4.0)
    x = xp.asarray(a, device="cpu", copy=False)
    a[0] = 10
    assert float(x[0]) == 10  # shared
    y = xp.asarray(a, device="cpu", copy=True)
    a[1] = 20
    assert float(y[1]) == 1
    with pytest.raises(ValueError):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError):
        xp.asarray(a, dtype=xp.float32, device="cpu", copy=False)
    z = xp.asarray(x)
    assert z is x or np.shares_memory(np.asarray(z), np.asarray(x))


def test_reshape_copy_false_raises_when_copy_needed():
    x = xp.permute_dims(xp.reshape(xp.arange(6), (2, 3)), (1, 0))
    with pytest.raises(ValueError):
        xp.reshape(x, (6,), copy=False)


# --- DLPack --------------------------------------------------------------------------------------------------
def test_dlpack_numpy_zero_copy_both_ways():
    a = np.arange(6.0)
    x = xp.from_dlpack(a)
    a[0] = 7
    assert float(x[0]) == 7
    b = np.from_dlpack(x)
    b[1] = 9
    assert float(x[1]) == 9
    assert x.__dlpack_device__()[0] == 1


@requires_gpu
@pytest.mark.gpu
def test_dlpack_cupy_and_torch_zero_copy():
    import cupy
    c = cupy.arange(6.0)
    x = xp.from_dlpack(c)
    c[0] = 5
    assert float(x[0]) == 5
    back = cupy.from_dlpack(x)
    back[1] = 8
    assert float(x[1]) == 8
    assert x.__cuda_array_interface__["data"][0] == c.data.ptr
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.float32, device="cuda")
    y = xp.from_dlpack(t)
    t[0] = 3
    assert float(y[0]) == 3
    t2 = torch.from_dlpack(y)
    assert t2.data_ptr() == t.data_ptr()


def test_array_protocol_on_cpu():
    x = xp.asarray([1.0, 2.0], device="cpu")
    assert np.asarray(x).tolist() == [1.0, 2.0]


@requires_gpu
@pytest.mark.gpu
def test_array_protocol_on_gpu_raises():
    x = xp.asarray([1.0, 2.0], device="cuda:0")
    with pytest.raises(TypeError, match="to_device"):
        np.asarray(x)


@requires_gpu
@pytest.mark.gpu
def test_out_of_memory_raises_and_recovers():
    with pytest.raises(xp.OutOfMemoryError):
        xp.empty((1 << 45,), dtype=xp.uint8, device="cuda:0")  # 32 TiB
    assert isinstance(xp.OutOfMemoryError(), MemoryError)
    y = xp.ones(1000, device="cuda:0")
    assert float(xp.sum(y)) == 1000.0


@requires_gpu
@pytest.mark.gpu
def test_gpu_work_runs_on_the_current_cupy_stream():
    import cupy
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = xp.ones((256, 256), device="cuda:0")
        y = x @ x + 1
        assert cupy.cuda.get_current_stream() == s
    s.synchronize()
    assert float(y[0, 0]) == 257.0


def test_every_standard_name_exists():
    names = """abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert
    bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1 floor
    floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 log10
    logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative nextafter not_equal
    positive pow real reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc
    arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like tril triu zeros
    zeros_like astype can_cast finfo iinfo isdtype result_type take take_along_axis matmul matrix_transpose
    tensordot vecdot broadcast_arrays broadcast_shapes broadcast_to concat expand_dims flip moveaxis permute_dims
    repeat reshape roll squeeze stack tile unstack argmax argmin count_nonzero nonzero searchsorted where isin
    unique_all unique_counts unique_inverse unique_values argsort sort cumulative_sum cumulative_prod max mean min
    prod std sum var all any diff __array_namespace_info__ e inf nan newaxis pi bool int8 int16 int32 int64 uint8
    uint16 uint32 uint64 float32 float64 complex64 complex128 float16 bfloat16""".split()
    missing = [n for n in names if not hasattr(xp, n)]
    assert not missing


@pytest.mark.parametrize("axes", [(1, 0), (2, 0, 1), (0, 2)])
@pytest.mark.parametrize("s", [None, 6])
def test_real_fftn_with_axes_in_any_order(device, axes, s):
    """rfftn/irfftn: the real transform is on axes[-1] whatever the order (CuPy's plans got the shape wrong)."""
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    s = None if s is None else (s,) * len(axes)
    want = np.fft.rfftn(x, s=s, axes=axes)
    got = xp.fft.rfftn(xp.asarray(x, device=device), s=s, axes=axes)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got.to_device("cpu")), want, rtol=1e-10, atol=1e-10)
    s_back = s if s is not None else tuple(x.shape[a] for a in axes)
    back = xp.fft.irfftn(got, s=s_back, axes=axes)
    np.testing.assert_allclose(np.asarray(back.to_device("cpu")), np.fft.irfftn(want, s=s_back, axes=axes),
                               rtol=1e-10, atol=1e-10)


def test_float32_matmul_precision_switch(device):
    """Full FP32 by default; "high" lets CUDA use TF32 (10-bit mantissa: visibly less exact, within 5e-3). "high"
    permits TF32 without requiring it (cuBLASLt's candidates are timed, and a plain FP32 kernel may win a small
    product), so the product is large enough that TF32's tensor cores always win it."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1024, 1024)), rng.standard_normal((1024, 1024))
    ref = a @ b
    A, B = (xp.asarray(v.astype(np.float32), device=device) for v in (a, b))

    def err(out):
        return float(np.abs(np.asarray(out.to_device("cpu")) - ref).max() / np.abs(ref).max())
    assert xp.get_float32_matmul_precision() == "highest"
    assert err(A @ B) < 1e-5
    with xp.float32_matmul_precision("high"):
        assert xp.get_float32_matmul_precision() == "high"
        e = err(A @ B)
        assert e < 5e-3
        if device.kind == "cuda":
            assert e > 1e-5  # TF32 really ran
    assert xp.get_float32_matmul_precision() == "highest"
    with pytest.raises(ValueError, match="precision"):
        xp.set_float32_matmul_precision("medium")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_argmax_long_rows(device, dtype):
    """Rows of a vocabulary's length (the CUDA kernel's case): first index of the max, ties, -inf, first NaN."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5003)).astype(np.float32)
    x[1, [17, 4000]] = 9.0                     # a tie: the first wins
    x[2, :] = -np.inf                          # all -inf: index 0
    x[3, [10, 2000]] = np.nan                  # NaNs: the first NaN wins
    x[4, 5002] = 50.0                          # the last element
    x[5, [0, 7]] = [np.nan, 1e4]
    dt = getattr(xp, dtype)
    a = xp.astype(xp.asarray(x, device=device), dt)
    ref = np.asarray(xp.astype(a, xp.float32).to_device("cpu"))
    assert np.array_equal(np.asarray(xp.argmax(a, axis=-1).to_device("cpu")), np.argmax(ref, axis=-1))
    assert np.array_equal(np.asarray(xp.argmax(a, axis=1, keepdims=True).to_device("cpu")),
                          np.argmax(ref, axis=1, keepdims=True))


def test_float32_matmul_precision_block_is_per_thread():
    """A block forcing a precision holds in its own thread only; the process-wide setting stays as it was."""
    import threading
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def a():
        with xp.float32_matmul_precision("high"):
            inside.set()
            release.wait(10)
            seen["a"] = xp.get_float32_matmul_precision()

    t = threading.Thread(target=a)
    t.start()
    inside.wait(10)
    seen["b"] = xp.get_float32_matmul_precision()  # while a's block is open
    release.set()
    t.join(10)
    assert seen == {"a": "high", "b": "highest"}
    old = xp.get_float32_matmul_precision()
    try:
        xp.set_float32_matmul_precision("high")
        with xp.float32_matmul_precision("highest"):
            assert xp.get_float32_matmul_precision() == "highest"
        assert xp.get_float32_matmul_precision() == "high"
    finally:
        xp.set_float32_matmul_precision(old)


def test_gpu_dispatch_offers_the_fused_ops_by_name():
    """gpk_array/_ops/nn.py looks these names up in gpk_array._gpu; the module imports without touching a GPU."""
    import gpk_array._gpu as g
    for name in ("matmul", "linear", "layer_norm", "add_layer_norm", "add_layer_norm_linear",
                 "scaled_dot_product_attention", "self_attention", "kv_cache_attention", "argmax_last_axis", "gelu"):
        assert callable(getattr(g, name)), name
    assert g._sm_target() == 0  # outside any scheduler context: every SM


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int64", "float32", "float64", "bool"])
def test_sum_prod_dtype_argument(device, dtype):
    """sum/prod with dtype= the input's own: that dtype (wrapping like NumPy); without: the standard's accumulator
    (narrow integers widen to (u)int64)."""
    rng = np.random.default_rng(5)
    v = rng.integers(0, 200, size=(7, 33))
    own = getattr(xp, dtype)
    # prod of 1s and 2s: exact in every dtype (a float product that overflows depends on the order of the
    # multiplications: inf * 0 is NaN in one order, 0 in another)
    for name, x in (("sum", v.astype(dtype)), ("prod", (v % 2 + 1)[:, :20].astype(dtype))):
        a = xp.asarray(x, device=device)
        f, nf = getattr(xp, name), getattr(np, name)
        for axis in (None, 0, 1):
            if dtype != "bool":
                r = f(a, axis=axis, dtype=own)
                assert r.dtype == own, (name, axis, r.dtype)
                with np.errstate(all="ignore"):
                    ref = nf(x, axis=axis, dtype=dtype)
                np.testing.assert_allclose(np.asarray(r.to_device("cpu")), ref, rtol=1e-6)
            r = f(a, axis=axis)
            wide = {"uint8": "uint64", "int16": "int64", "bool": "int64"}.get(dtype, dtype)
            assert r.dtype == getattr(xp, wide), (name, axis, r.dtype)
            with np.errstate(all="ignore"):
                ref = nf(x, axis=axis, dtype=wide)
            np.testing.assert_allclose(np.asarray(r.to_device("cpu")), ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "bool"])
@pytest.mark.parametrize("fname", ["argmax", "argmin"])
def test_argmax_argmin_small(device, dtype, fname):
    """Small arrays (on CUDA our reduction kernels take argmax/argmin over all elements at every size):
    NumPy's index of the first extreme, the first NaN, over all elements, each axis, keepdims, 0-d."""
    rng = np.random.default_rng(9)
    x = rng.integers(-3, 4, size=(5, 37)).astype(np.float64)   # many ties
    if dtype in ("float32", "float16", "bfloat16", "float64"):
        x[3, [4, 30]] = np.nan
        x[1, 2] = -np.inf
    x = x.astype(np.float32) if dtype == "bfloat16" else x.astype(dtype)
    a = xp.astype(xp.asarray(x, device=device), getattr(xp, dtype))
    nf = getattr(np, fname)
    f = getattr(xp, fname)
    for sub in (x, x[:3]):  # with and without NaNs
        s = a if sub is x else a[:3]
        for axis in (None, 0, 1, -1):
            for keepdims in (False, True):
                r = f(s, axis=axis, keepdims=keepdims)
                assert r.dtype == xp.int64
                np.testing.assert_array_equal(np.asarray(r.to_device("cpu")), nf(sub, axis=axis, keepdims=keepdims))
    z = xp.asarray(x[0, 0], device=device)
    assert int(f(z)) == 0 and f(z, keepdims=True).shape == ()
    assert int(f(z, axis=0)) == 0 and f(z, axis=0, keepdims=True).shape == ()  # as NumPy
