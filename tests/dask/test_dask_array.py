"""dask.array on gpk_array chunks against dask.array on NumPy chunks (the oracle), on each device.

Every case checks three things: the Dask array's meta is a gpk_array Array on the input's device (Dask falls back to
a NumPy meta without saying so when building one fails), every computed chunk is an Array on that device, and the
value equals Dask's with NumPy chunks.
"""
import itertools

import numpy
import pytest

import dask
import dask.array as da

import gpk_array as gp
import gpk_array.dask as gd

from .cases import CASES, CHUNKS_A, CHUNKS_B, data


def on(x, device, chunks):
    """A Dask array of gpk_array chunks on device, from NumPy data."""
    return da.from_array(gp.asarray(x, device=device), chunks=chunks)


def host(v):
    """A computed result as NumPy (an explicit copy from the device)."""
    return numpy.asarray(v.to_device("cpu")) if isinstance(v, gp.Array) else numpy.asarray(v)


def assert_on_device(r, device):
    """r's meta and each of its computed chunks are gpk_array Arrays on device."""
    assert type(r._meta) is gp.Array, f"meta is {type(r._meta).__name__}, not a gpk_array Array"
    assert r._meta.device == device
    parts = [r] if r.ndim == 0 else [r.blocks[i] for i in itertools.product(*map(range, r.numblocks))]
    blocks = dask.compute(*parts)
    for blk in blocks:
        assert type(blk) is gp.Array, f"a chunk is {type(blk).__name__}"
        assert blk.device == device


@pytest.mark.parametrize("fn", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_case_matches_numpy_chunks(device, fn):
    a, b = data()
    want = fn(da.from_array(a, chunks=CHUNKS_A), da.from_array(b, chunks=CHUNKS_B)).compute()
    r = fn(on(a, device, CHUNKS_A), on(b, device, CHUNKS_B))
    assert_on_device(r, device)
    got = r.compute()
    assert type(got) is gp.Array and got.device == device
    assert got.shape == want.shape and host(got).dtype == want.dtype
    # float32 reductions on the GPU sum in another order than NumPy's pairwise sum: float32 rounding, not 1e-12
    tol = 1e-12 if want.dtype != numpy.float32 or str(device) == "cpu" else 2e-6
    numpy.testing.assert_allclose(host(got), want, rtol=tol, atol=tol)


def test_from_array_meta(device):
    x = gp.asarray(numpy.arange(24.0).reshape(4, 6), device=device)
    d = da.from_array(x, chunks=(2, 3))
    assert type(d._meta) is gp.Array and d._meta.device == device and d._meta.shape == (0, 0)
    assert d.dtype == numpy.float64 and d.chunks == ((2, 2), (3, 3))
    s = d.sum()   # a 0-d result: Dask's meta for it is a 0-d Array, not a NumPy scalar
    assert type(s._meta) is gp.Array and s._meta.ndim == 0
    assert float(s.compute()) == 276.0


@pytest.mark.parametrize("shape,chunks", [((40, 4), (10, 4)), ((30, 3), (7, 3))])
def test_tall_skinny_qr_and_svd(device, shape, chunks):
    a = numpy.random.default_rng(7).standard_normal(shape)
    d = on(a, device, chunks)
    q, r = da.linalg.qr(d)
    assert_on_device(q, device)
    assert_on_device(r, device)
    qh, rh = host(q.compute()), host(r.compute())
    numpy.testing.assert_allclose(qh @ rh, a, atol=1e-12)
    numpy.testing.assert_allclose(qh.T @ qh, numpy.eye(shape[1]), atol=1e-12)
    # the oracle: Dask's QR of the same data with NumPy chunks (same algorithm, same signs)
    q0, r0 = da.linalg.qr(da.from_array(a, chunks=chunks))
    numpy.testing.assert_allclose(rh, r0.compute(), atol=1e-12)
    u, s, vt = da.linalg.svd(d)
    for part in (u, s, vt):
        assert_on_device(part, device)
    uh, sh, vth = host(u.compute()), host(s.compute()), host(vt.compute())
    numpy.testing.assert_allclose(sh, numpy.linalg.svd(a, compute_uv=False), rtol=1e-12)
    numpy.testing.assert_allclose((uh * sh) @ vth, a, atol=1e-12)


def test_random_state_same_numbers_as_numpy_chunks(device):
    """da.random.RandomState with gpk_array's RandomState: NumPy's Mersenne Twister numbers, chunk by chunk."""
    ours = da.random.RandomState(42, RandomState=gd.RandomState(device))
    want = da.random.RandomState(42).normal(1.0, 2.0, size=(10, 6), chunks=(4, 3)).compute()
    r = ours.normal(1.0, 2.0, size=(10, 6), chunks=(4, 3))
    assert_on_device(r, device)
    numpy.testing.assert_array_equal(host(r.compute()), want)
    u = ours.uniform(size=(7,), chunks=3)
    assert_on_device(u, device)


def test_generator_pcg64_same_numbers_as_numpy_chunks(device):
    """da.random.Generator on gpk_array's PCG64: NumPy's numbers, as Arrays on the default device."""
    old = gp._device._default
    gp.set_default_device(device)
    try:
        r = da.random.Generator(gd.PCG64(5)).standard_normal(size=(9, 4), chunks=(3, 2))
        assert_on_device(r, device)
        want = da.random.Generator(numpy.random.PCG64(5)).standard_normal(size=(9, 4), chunks=(3, 2)).compute()
        numpy.testing.assert_array_equal(host(r.compute()), want)
    finally:
        gp._device._default = old


def test_backend_creation_and_random(device):
    old = gp._device._default
    gp.set_default_device(device)
    try:
        with dask.config.set({"array.backend": "gpk_array"}):
            for d in (da.ones((6, 4), chunks=(3, 2)), da.zeros((5,), chunks=2), da.full((4,), 2.5, chunks=3),
                      da.arange(10, chunks=4), da.random.default_rng(3).random((6, 2), chunks=(3, 2))):
                assert_on_device(d, device)
            numpy.testing.assert_array_equal(host(da.arange(10, chunks=4).compute()), numpy.arange(10))
            assert float(da.ones((6, 4), chunks=(3, 2)).sum().compute()) == 24.0
        n = da.from_array(numpy.arange(6.0), chunks=3)
        g = n.to_backend("gpk_array")
        assert_on_device(g, device)
        back = g.to_backend("numpy")
        assert isinstance(back._meta, numpy.ndarray)
        numpy.testing.assert_array_equal(back.compute(), numpy.arange(6.0))
    finally:
        gp._device._default = old


def test_dask_array_combines_with_gpk_array(device):
    """A registered chunk type: d + x and x + d are Dask arrays (Dask handles the Array)."""
    a = numpy.arange(12.0).reshape(3, 4)
    x = gp.asarray(a, device=device)
    d = da.from_array(x, chunks=(2, 2))
    for r in (d + x, x + d, d * x[0], x @ d.T):
        assert isinstance(r, da.Array)
        assert_on_device(r, device)
    numpy.testing.assert_array_equal(host((x + d).compute()), a + a)
    numpy.testing.assert_array_equal(host((x @ d.T).compute()), a @ a.T)


def test_tokenize(device):
    """CPU chunks are tokenized by their data (as NumPy's); CUDA chunks by identity, their memory never read back
    (from_array copies its input, so its names then differ per call, as with name=False)."""
    x = gp.asarray(numpy.arange(6.0), device=device)
    y = gp.asarray(numpy.arange(6.0), device=device)
    assert dask.base.tokenize(x) == dask.base.tokenize(x)
    if device == gp.Device("cpu"):
        assert dask.base.tokenize(x) == dask.base.tokenize(y)
        assert dask.base.tokenize(x) != dask.base.tokenize(gp.asarray(numpy.arange(1.0, 7.0), device="cpu"))
        assert da.from_array(x, chunks=3).name == da.from_array(x, chunks=3).name
    else:
        assert dask.base.tokenize(x) != dask.base.tokenize(y)


def test_numel_hook_on_device(device):
    """The element counts of mean/var reductions are Arrays on the chunk's device (Dask's default makes NumPy
    arrays, which a CUDA chunk refuses to mix with)."""
    x = gp.ones((3, 4, 2), device=device)
    for kw, shape, count in [({}, (), 24), ({"axis": 1}, (3, 2), 4), ({"axis": (0, 2), "keepdims": True}, (1, 4, 1), 6),
                             ({"keepdims": True}, (1, 1, 1), 24)]:
        n = gd.numel(x, **kw)
        assert type(n) is gp.Array and n.device == device and n.shape == shape
        assert numpy.all(host(n) == count) and host(n).dtype == numpy.float64
    assert host(gd.numel(x, axis=-1, dtype=numpy.int64)).dtype == numpy.int64


def test_register_is_idempotent():
    gd.register()
    gd.register()
    from dask.array.chunk_types import _HANDLED_CHUNK_TYPES
    assert _HANDLED_CHUNK_TYPES.count(gp.Array) == 1
    from dask.array.dispatch import concatenate_lookup, tensordot_lookup
    assert concatenate_lookup.dispatch(gp.Array) is gd.concatenate
    assert tensordot_lookup.dispatch(gp.Array) is gd.tensordot


def test_percentile(device):
    """da.percentile: the chunks' percentiles through the percentile hook, merged by Dask; Dask's scratch arrays
    come from the empty hook on the default device (here made the chunks' device, as on a dask-cuda worker)."""
    old = gp._device._default
    gp.set_default_device(device)
    try:
        a = numpy.random.default_rng(3).standard_normal(40)
        r = da.percentile(on(a, device, 10), [5, 50, 95])
        assert type(r._meta) is gp.Array
        want = da.percentile(da.from_array(a, chunks=10), [5, 50, 95]).compute()
        got = r.compute()
        assert type(got) is gp.Array and got.device == device
        numpy.testing.assert_allclose(host(got), want, rtol=1e-12)
    finally:
        gp._device._default = old
