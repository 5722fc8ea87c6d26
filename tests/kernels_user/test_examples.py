"""The six example kernels of docs/kernels-python.md (issue 19, item 6) against NumPy oracles on every device;
on CUDA also against the CPU device's run of the same kernel (the reference the issue asks for)."""
import numpy as np
import pytest

import gpk_array as gk

from . import examples as E


def _on(a, device):
    return gk.asarray(a, device=device)


def _host(a):
    return np.asarray(a.to_device("cpu"))


def _rng():
    return np.random.default_rng(19)


def _cpu_run(kernel, args, geometry=None):
    """The same call on the CPU device (numpy copies of every array)."""
    args = [np.array(_host(a)) if isinstance(a, gk.Array) else a for a in args]
    (kernel if geometry is None else kernel[geometry])(*args)
    return args


def test_saxpy(device):
    r = _rng()
    x, y = (r.standard_normal(5000).astype(np.float32) for _ in range(2))
    out = _on(np.zeros_like(x), device)
    E.saxpy(1.5, _on(x, device), _on(y, device), out)
    got = _host(out)
    assert got.dtype == np.float32
    ref = np.float32(1.5) * x + y      # the kernel's float32 arithmetic (Python float: weak)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    if device.kind == "cpu":
        np.testing.assert_array_equal(got, ref)
        assert E.saxpy._cpu.vector is not None   # the NumPy-vectorized lowering
    else:
        cpu = _cpu_run(E.saxpy, [1.5, _on(x, device), _on(y, device), out])
        np.testing.assert_allclose(got, cpu[3], rtol=1e-6, atol=1e-6)


def test_stencil(device):
    u = _rng().standard_normal((37, 53))
    out = _on(np.zeros_like(u), device)
    E.stencil(_on(u, device), out)
    ref = u.copy()
    ref[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    np.testing.assert_allclose(_host(out), ref, rtol=1e-12, atol=1e-12)


def test_histogram(device):
    x = _rng().standard_normal(4000).astype(np.float32)
    counts = _on(np.zeros(16, np.int32), device)
    E.histogram(_on(x, device), -2.5, 2.5, counts)
    b = np.floor((x - np.float32(-2.5)) / np.float32(5.0) * np.float32(16)).astype(np.int64)
    ref = np.bincount(b[(b >= 0) & (b < 16)], minlength=16)
    np.testing.assert_array_equal(_host(counts), ref)
    assert E.histogram.effects == {"x": "R", "lo": "", "hi": "", "counts": "RW"}


@pytest.mark.parametrize("shape", [(70, 45), (32, 32), (1, 100)])
def test_transpose(device, shape):
    a = _rng().standard_normal(shape).astype(np.float32)
    out = _on(np.zeros(shape[::-1], np.float32), device)
    rows, cols = shape
    grid = (-(-cols // E.TILE) * E.TILE, -(-rows // E.TILE) * E.ROWS)
    E.transpose[(grid, (E.TILE, E.ROWS))](_on(a, device), out)
    np.testing.assert_array_equal(_host(out), a.T)


@pytest.mark.parametrize("n", [1, 255, 3000])
def test_block_sum(device, n):
    x = _rng().standard_normal(n).astype(np.float32)
    out = _on(np.zeros(1, np.float32), device)
    total = -(-n // E.BLOCK) * E.BLOCK
    E.block_sum[(total, E.BLOCK)](_on(x, device), out)
    np.testing.assert_allclose(_host(out)[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_gelu(device, dtype):
    r = _rng()
    x = r.standard_normal((33, 70)).astype(dtype)
    bias = r.standard_normal(70).astype(dtype)
    out = _on(np.zeros_like(x), device)
    E.bias_gelu(_on(x, device), _on(bias, device), out)
    v = x.astype(np.float64) + bias
    ref = 0.5 * v * (1 + np.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))
    got = _host(out)
    assert got.dtype == dtype
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_vectorized_and_loop_lowerings_agree():
    """The NumPy lowering of a straight-line loop computes what the Python loop computes, bit for bit."""
    r = _rng()
    x = r.standard_normal((9, 14)).astype(np.float32)
    bias = r.standard_normal(14).astype(np.float32)
    low = E.bias_gelu._cpu
    assert low.vector is not None
    a, b = np.zeros_like(x), np.zeros_like(x)
    low.vector(x, bias, a)
    low.scalar(x, bias, b)
    np.testing.assert_array_equal(a, b)
