"""Bad input to the namespace gets the exception NumPy (the oracle) or the standard gives, naming the problem;
never a silent wrong value, a hang, a RecursionError or a bare MemoryError."""
import numpy as np
import pytest

import gpk_array as xp


def test_broadcast_shapes_refuses_negative_dimensions():
    for shapes in [((1,), (-5,)), ((-1,),), ((2, -3), (1,))]:
        with pytest.raises(ValueError):
            np.broadcast_shapes(*shapes)
        with pytest.raises(ValueError, match="negative"):
            xp.broadcast_shapes(*shapes)
    assert xp.broadcast_shapes((1,), (3,)) == np.broadcast_shapes((1,), (3,))


@pytest.mark.parametrize("obj", [{1: 2, 3: 4}, b"ab", "ab"], ids=["dict", "bytes", "str"])
def test_asarray_refuses_mappings_and_strings(device, obj):
    for fn in (xp.asarray, xp.array):
        with pytest.raises(TypeError, match=type(obj).__name__):
            fn(obj, device=device)


@pytest.mark.parametrize("obj", [bytearray(b"ab\xff"), memoryview(b"ab\xff"), memoryview(np.arange(3.0))],
                         ids=["bytearray", "memoryview", "memoryview-f8"])
def test_asarray_of_buffers_matches_numpy(device, obj):
    want = np.asarray(obj)
    got = xp.asarray(obj, device=device)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)


def test_add_refuses_bytes(device):
    with pytest.raises(TypeError):
        np.add(np.asarray([1]), b"ab")
    with pytest.raises(TypeError):
        xp.add(xp.asarray([1], device=device), b"ab")


def test_none_is_not_a_dtype():
    with pytest.raises(TypeError):
        xp.isdtype(None, "real floating")
    with pytest.raises(TypeError):
        xp.can_cast(xp.int8, None)
    with pytest.raises(TypeError):
        xp.can_cast(None, xp.int8)
    assert xp.isdtype(xp.float64, "real floating") and xp.can_cast(xp.int8, xp.int16)


def test_two_array_functions_refuse_scalars_clearly(device):
    A = xp.ones((3, 3), dtype=xp.float32, device=device)
    A3 = xp.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="axis"):
        xp.vecdot(A, 2.0)
    with pytest.raises(ValueError, match="axis"):
        xp.linalg.cross(A3, 2.0)
    with pytest.raises(ValueError):
        xp.linalg.outer(xp.ones(3, device=device), 2.0)
    with pytest.raises(ValueError):
        xp.linalg.solve(A, 2.0)
    # tensordot with axes=0 of a scalar is NumPy's outer product, in the array's dtype (weak scalar)
    got = xp.tensordot(A, 2.0, axes=0)
    want = np.tensordot(np.ones((3, 3), dtype=np.float32), 2.0, axes=0)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)
    for axes in (1.5, "x", (1, 2, 3)):
        with pytest.raises(TypeError, match="axes"):
            xp.tensordot(A, A, axes=axes)


def test_deeply_nested_list_is_a_value_error(device):
    nested = [1.0]
    for _ in range(3000):
        nested = [nested]
    with pytest.raises(ValueError):
        np.asarray(nested)
    for fn in (xp.asarray, xp.array):
        with pytest.raises(ValueError):
            fn(nested, device=device)


@pytest.mark.parametrize("n", [10, 11, 10**9])
def test_diff_with_n_past_the_axis_is_empty_and_returns(device, n):
    for a, kw in [(np.arange(10), {}), (np.array([True, False, True]), {}), (np.ones((2, 3)), {"axis": 0}),
                  (np.arange(4.0), {"prepend": 0.0, "append": np.array([1.0, 2.0])})]:
        want = np.diff(a, n=min(n, 20), **kw)
        kw_x = {k: (xp.asarray(v, device=device) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        got = xp.diff(xp.asarray(a, device=device), n=n, **kw_x)
        assert got.shape == want.shape and got.dtype == want.dtype


def test_huge_requests_raise_out_of_memory_error():
    """Results too large for memory raise gpk_array.OutOfMemoryError. Each request is 2^48 bytes, past a 4-level
    page table's whole user address space, so the allocation fails even where the kernel overcommits memory (a
    smaller one, 256 GiB, was granted on the GPU machine and its first touch killed the process)."""
    big = xp.broadcast_to(xp.asarray(1.5, device="cpu"), (2**45,))
    bigc = xp.broadcast_to(xp.asarray(1.5 + 1j, device="cpu"), (2**44,))
    calls = {
        "floor_divide": lambda: xp.floor_divide(big, 2.0), "remainder": lambda: xp.remainder(big, 2.0),
        "//": lambda: big // 2.0, "%": lambda: big % 2.0, "complex expm1": lambda: xp.expm1(bigc),
        "random.random": lambda: xp.random.random((2**45,), device="cpu"),
        "random.normal": lambda: xp.random.normal(size=2**45, device="cpu"),
        "random.permutation": lambda: xp.random.permutation(2**45, device="cpu"),
        "default_rng.random": lambda: xp.random.default_rng(0, device="cpu").random(2**45),
    }
    for name, call in calls.items():
        with pytest.raises(xp.OutOfMemoryError):
            call()
    assert float(xp.sum(xp.ones(3, device="cpu"))) == 3.0  # and the process goes on working


@pytest.mark.parametrize("how", ["getitem", "tuple", "setitem", "take", "take_along_axis", "uint"])
def test_integer_array_index_out_of_bounds_raises(device, how):
    n = 1 << 12
    x = xp.arange(n, device=device)
    ref = np.arange(n)
    bad = [0, 5, n]
    idx = xp.asarray(bad, device=device)
    cases = {
        "getitem": (lambda a, i: a[i], np.asarray(bad)),
        "tuple": (lambda a, i: a.reshape((1, n))[0, i], np.asarray(bad)),
        "setitem": (lambda a, i: a.__setitem__(i, 0), np.asarray(bad)),
        "take": (lambda a, i: (np if a is ref else xp).take(a, i, axis=0), np.asarray(bad)),
        "take_along_axis": (lambda a, i: (np if a is ref else xp).take_along_axis(a, i, axis=0), np.asarray(bad)),
        "uint": (lambda a, i: a[i], np.asarray(bad, dtype=np.uint32)),
    }
    fn, np_idx = cases[how]
    with pytest.raises(IndexError):
        fn(ref, np_idx)
    with pytest.raises(IndexError, match=str(n)):
        fn(x, xp.asarray(np_idx, device=device) if how == "uint" else idx)
    good = xp.asarray([0, 5, -1, n - 1], device=device)
    np.testing.assert_array_equal(np.asarray(x[good].to_device("cpu")), ref[[0, 5, -1, n - 1]])
    neg = xp.asarray([-n - 1], device=device)
    with pytest.raises(IndexError):
        x[neg]


def test_functions_without_a_complex_loop_raise_type_error(device):
    """atan2 of a complex operand, nextafter of two complex arrays of one dtype: NumPy's TypeError on both devices
    (CuPy's compiler failed on a Python complex, and on two complex64 arrays on the H200)."""
    with pytest.raises(TypeError):
        np.arctan2(True, 1j)
    with pytest.raises(TypeError):
        np.nextafter(np.zeros(2, np.complex64), np.zeros(2, np.complex64))
    x = xp.asarray([True, False], device=device)
    z = xp.zeros(3, dtype=xp.complex64, device=device)
    for call in (lambda: xp.atan2(x, 1j), lambda: xp.atan2(xp.asarray(1.0, device=device), 1j),
                 lambda: xp.nextafter(z, z), lambda: xp.nextafter(z[0], z[0]), lambda: xp.atan2(z, z)):
        with pytest.raises(TypeError):
            call()


def test_isin_of_mixed_kinds_matches_numpy(device):
    """isin compares values across dtypes (on cuda:0 CuPy's kernel for bool against complex did not compile)."""
    cases = [(np.asarray(False), np.asarray(0j, dtype=np.complex64)), (np.asarray([1, 2, 3]), np.asarray([2.0])),
             (np.asarray([True, False]), np.asarray([1.5, 0.0]))]
    for a, b in cases:
        got = xp.isin(xp.asarray(a, device=device), xp.asarray(b, device=device))
        np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), np.isin(a, b))
