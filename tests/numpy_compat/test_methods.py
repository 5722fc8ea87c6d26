"""numpy.ndarray's methods and attributes on gpk_array.Array, against NumPy's."""
import pickle
import warnings

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(x=hnp.arrays(st.sampled_from([numpy.float64, numpy.int32, numpy.float32, numpy.uint8]),
                    hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.integers(0, 9)))
def test_reduction_methods(x, device):
    g = gp.asarray(x, device=device)
    for name in ("sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "all", "any", "cumsum",
                 "cumprod"):
        assert_match(getattr(g, name)(), getattr(x, name)(), device, what=name)
        assert_match(getattr(g, name)(0), getattr(x, name)(0), device, what=f"{name}(0)")
        assert_match(getattr(g, name)(axis=-1), getattr(x, name)(axis=-1), device, what=f"{name}(axis=-1)")
    assert_match(g.sum(0, keepdims=True), x.sum(0, keepdims=True))
    assert_match(g.sum(dtype=numpy.float32), x.sum(dtype=numpy.float32))
    assert_match(g.std(ddof=1) if x.size > 1 else g.std(), x.std(ddof=1) if x.size > 1 else x.std())
    assert_match(g.mean(axis=0, dtype=numpy.float64), x.mean(axis=0, dtype=numpy.float64))
    assert_match(g.ptp(), numpy.ptp(x))


def test_shape_methods(device):
    x = numpy.arange(24.0).reshape(2, 3, 4)
    g = gp.asarray(x, device=device)
    assert_match(g.reshape(4, 6), x.reshape(4, 6))
    assert_match(g.reshape((4, -1)), x.reshape((4, -1)))
    assert_match(g.reshape([24]), x.reshape([24]))
    assert_match(g.reshape(6, 4, order="F"), x.reshape(6, 4, order="F"))
    assert_match(g.T, x.T)
    assert_match(g[0, 0].T, x[0, 0].T)
    assert_match(g.transpose(), x.transpose())
    assert_match(g.transpose(1, 0, 2), x.transpose(1, 0, 2))
    assert_match(g.swapaxes(0, 2), x.swapaxes(0, 2))
    assert_match(g[:, :1].squeeze(), x[:, :1].squeeze())
    assert_match(g[:, :1].squeeze(1), x[:, :1].squeeze(1))
    assert_match(g.flatten(), x.flatten())
    assert_match(g.flatten("F"), x.flatten("F"))
    assert_match(g.ravel(), x.ravel())
    assert_match(g.repeat(2), x.repeat(2))
    assert_match(g.repeat(2, axis=1), x.repeat(2, axis=1))
    assert_match(g.diagonal(), x.diagonal())
    assert_match(g.trace(), x.trace())
    assert_match(g.take([0, 5]), x.take([0, 5]))
    assert_match(g.compress([True, False, True], axis=1), x.compress([True, False, True], axis=1))
    assert_match(g.nonzero(), x.nonzero())
    assert_match(g.clip(3, 10), x.clip(3, 10))
    assert_match((g / 7).round(2), (x / 7).round(2))
    assert_match(g[0].dot(g[1].T), x[0].dot(x[1].T))
    assert_match(g.conj(), x.conj())
    assert_match(g.conjugate(), x.conjugate())
    g2 = gp.asarray(x.copy(), device=device)
    g2.shape = (6, 4)
    assert g2.shape == (6, 4)
    with pytest.raises(AttributeError):
        gp.asarray(x, device=device).T.shape = (24,)


def test_attributes(device):
    x = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    g = gp.asarray(x, device=device)
    assert g.nbytes == x.nbytes and g.itemsize == x.itemsize and g.strides == x.strides
    assert g.ndim == 2 and g.size == 12 and g.shape == (3, 4) and g.dtype == x.dtype
    assert g.flags["C_CONTIGUOUS"] and g.flags.c_contiguous
    assert g.item(5) == x.item(5) and g.item(1, 2) == x.item(1, 2) and g.item((2, 3)) == x.item((2, 3))
    assert g[1, 1].item() == 5.0 and isinstance(g[1, 1].item(), float)
    assert g.tolist() == x.tolist()
    assert g.tobytes() == x.tobytes()
    assert len(g) == 3
    assert 5.0 in g and 100.0 not in g
    z = numpy.array([1 + 2j, 3 - 4j])
    gz = gp.asarray(z, device=device)
    assert_match(gz.real, z.real)
    assert_match(gz.imag, z.imag)
    assert_match(g.real, x.real)
    assert_match(g.imag, x.imag)
    gz.real = gp.asarray([9.0, 8.0], device=device)
    z.real = [9.0, 8.0]
    gz.imag = 0.5
    z.imag = 0.5
    assert_match(gz, z)


def test_flat(device):
    x = numpy.arange(12.0).reshape(3, 4)
    g = gp.asarray(x.copy(), device=device)
    assert_match(g.flat[5], x.flat[5])
    assert_match(g.flat[2:7], x.flat[2:7])
    assert_match(g.flat[[0, 11]], x.flat[[0, 11]])
    assert [float(v) for v in g.flat] == list(x.flat)
    g.flat[3] = -1.0
    x.flat[3] = -1.0
    g.flat[[0, 1]] = 7.0
    x.flat[[0, 1]] = 7.0
    assert_match(g, x)
    gt = gp.asarray(x.copy(), device=device).T
    xt = x.copy().T
    gt.flat[1] = 100.0
    xt.flat[1] = 100.0
    assert_match(gt, xt)
    assert len(g.flat) == 12
    assert_match(g.flat.copy(), x.flat.copy())


def test_inplace_methods(device):
    x = numpy.array([[3.0, 1.0, 2.0], [0.5, -1.0, 9.0]])
    g = gp.asarray(x.copy(), device=device)
    g.sort()
    x2 = x.copy()
    x2.sort()
    assert_match(g, x2)
    g = gp.asarray(x.copy(), device=device)
    g.sort(axis=0)
    x2 = x.copy()
    x2.sort(axis=0)
    assert_match(g, x2)
    assert_match(gp.asarray(x, device=device).argsort(), x.argsort())
    assert_match(gp.asarray(x, device=device).argsort(axis=0), x.argsort(axis=0))
    g.fill(3.5)
    assert_match(g, numpy.full((2, 3), 3.5))
    g.fill(gp.asarray(2.0, device=device))
    assert_match(g, numpy.full((2, 3), 2.0))
    g.put([0, 4], [7.0, 8.0])
    x3 = numpy.full((2, 3), 2.0)
    x3.put([0, 4], [7.0, 8.0])
    assert_match(g, x3)
    v = numpy.sort(x.ravel())
    assert_match(gp.asarray(v, device=device).searchsorted([0.0, 2.5]), v.searchsorted([0.0, 2.5]))


def test_copy_view_astype(device):
    x = numpy.arange(6, dtype=numpy.int32)
    g = gp.asarray(x.copy(), device=device)
    c = g.copy()
    c[0] = 100
    assert int(g[0]) == 0
    v = g.view()
    v[1] = 50
    assert int(g[1]) == 50
    assert_match(g.view(numpy.uint32), x.copy().view(numpy.uint32) + numpy.array([0, 50, 0, 0, 0, 0], numpy.uint32)
                 - numpy.array([0, 1, 0, 0, 0, 0], numpy.uint32))
    assert_match(g.view(numpy.float32).shape, x.view(numpy.float32).shape)
    f = gp.asarray(numpy.arange(4.0), device=device)
    assert_match(f.view(numpy.int64), numpy.arange(4.0).view(numpy.int64))
    assert_match(f.view(numpy.int32), numpy.arange(4.0).view(numpy.int32))
    assert_match(g.astype(float), x.astype(float) + numpy.array([0, 49, 0, 0, 0, 0]))
    assert_match(g.astype("float32"), (x + numpy.array([0, 49, 0, 0, 0, 0])).astype("float32"))
    assert g.astype(numpy.int32, copy=False) is g
    z = gp.asarray([1.5 + 2j], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_match(z.astype(float), numpy.array([1.5 + 2j]).astype(float))
    with pytest.raises(TypeError):
        g.astype(numpy.uint8, casting="safe")


def test_python_protocols(device):
    s = gp.asarray(2.5, device=device)
    assert round(s) == 2 and isinstance(round(s), int)
    assert_match(round(s, 1), numpy.round(2.5, 1))
    assert_match(round(gp.asarray([1.26, 2.5], device=device), 1), numpy.round([1.26, 2.5], 1))
    assert float(s) == 2.5 and int(gp.asarray(3, device=device)) == 3
    q, r = divmod(gp.asarray([7, -7], device=device), 3)
    assert_match((q, r), divmod(numpy.array([7, -7]), 3))
    q, r = divmod(10, gp.asarray([3, 4], device=device))
    assert_match((q, r), divmod(10, numpy.array([3, 4])))
    idx = gp.argmax(gp.asarray([1, 5, 2], device=device))
    assert [10, 20, 30][idx] == 20
    assert list(range(gp.sum(gp.asarray([1, 2], device=device)))) == [0, 1, 2]
    assert f"{gp.max(gp.asarray([1.0, 2.345], device=device)):.2f}" == "2.35"
    g = gp.asarray(numpy.arange(6).reshape(2, 3), device=device)
    assert_match(pickle.loads(pickle.dumps(g)), numpy.arange(6).reshape(2, 3))


def test_tofile(tmp_path, device):
    x = numpy.arange(5.0)
    g = gp.asarray(x, device=device)
    g.tofile(tmp_path / "a.bin")
    assert_match(gp.fromfile(tmp_path / "a.bin", device="cpu"), numpy.fromfile(tmp_path / "a.bin"))
    g.tofile(str(tmp_path / "a.txt"), sep=",")
    assert_match(gp.fromfile(tmp_path / "a.txt", sep=",", device="cpu"), x)
    g.dump(str(tmp_path / "a.pkl"))
    with open(tmp_path / "a.pkl", "rb") as f:
        assert_match(pickle.load(f), x)
