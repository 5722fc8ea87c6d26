"""Bad input to Dask on gpk_array chunks: chunks on different devices, NumPy chunks beside CUDA chunks, a function
gpk_array lacks, a CUDA chunk sent to a worker without CUDA. Each raises an error naming what went wrong, at graph
construction or compute time; none moves data to the host (on a CUDA device, gpk_array refuses every implicit
conversion to NumPy, so a silent host copy would raise HostOnlyError instead of giving a result)."""
import numpy
import pytest

import dask.array as da

import gpk_array as gp
import gpk_array.dask as gd


def _pair(cuda_device):
    a = numpy.arange(16.0).reshape(4, 4)
    c = da.from_array(gp.asarray(a, device="cpu"), chunks=2)
    g = da.from_array(gp.asarray(a, device=cuda_device), chunks=2)
    return c, g


def test_concatenate_of_mixed_devices_names_chunk_and_operation(cuda_device):
    c, g = _pair(cuda_device)
    with pytest.raises(gp.DeviceError, match=r"dask.array concatenate: chunk 1 .* is on cuda:0 but chunk 0 is on cpu"):
        da.concatenate([c, g])   # at graph construction: Dask concatenates the metas through the hook
    with pytest.raises(gp.DeviceError, match="dask.array concatenate"):
        da.block([[c[:2], g[:2]]])
    with pytest.raises(gp.DeviceError, match="dask.array concatenate: chunk 1"):
        gd.concatenate([gp.ones(2, device="cpu"), gp.ones(2, device=cuda_device)])
    with pytest.raises(gp.DeviceError, match="dask.array tensordot: chunk 1"):
        gd.tensordot(gp.ones((2, 2), device="cpu"), gp.ones((2, 2), device=cuda_device), axes=1)


def test_elementwise_and_matmul_of_mixed_devices_raise(cuda_device):
    """Dask builds these (its meta inference swallows the error and falls back to a NumPy meta: a Dask
    limitation); computing them raises gpk_array's DeviceError naming both devices, nothing is copied."""
    c, g = _pair(cuda_device)
    for r in (c + g, c @ g, c * g):
        with pytest.raises(gp.DeviceError, match="different devices: cpu and cuda:0"):
            r.compute()
    with pytest.raises(gp.DeviceError, match="different devices"):
        da.stack([c, g])


def test_numpy_chunks_beside_cuda_chunks(cuda_device):
    _, g = _pair(cuda_device)
    n = da.from_array(numpy.ones((4, 4)), chunks=2)
    with pytest.raises(gp.HostOnlyError, match=r"dask.array concatenate: chunk 1 is a NumPy array \(host memory\)"):
        da.concatenate([g, n])
    with pytest.raises(gp.HostOnlyError, match="concatenate: chunk 1 is a NumPy array"):
        gd.concatenate([gp.ones(2, device=cuda_device), numpy.ones(2)])


def test_a_function_gpk_array_lacks(cuda_device):
    """numpy.nanmean(where=) has no gpk_array implementation: on a CUDA chunk it raises HostOnlyError naming it
    (Dask's dtype inference reports it at graph construction; with dtype= given, at compute time)."""
    _, g = _pair(cuda_device)
    fn = lambda b: numpy.nanmean(b[0], where=b[0] > 0)[None]   # noqa: E731
    msg = r"numpy.nanmean is implemented by gpk_array without the argument\(s\) where for arrays on cuda:0"
    with pytest.raises(ValueError, match=msg):
        g.map_blocks(fn, drop_axis=1)
    r = g.map_blocks(fn, drop_axis=1, dtype=numpy.float64, meta=gp.empty((0,), device=cuda_device))
    with pytest.raises(gp.HostOnlyError, match=msg):
        r.compute()


def test_the_same_function_works_on_cpu_chunks():
    """The CPU counterpart of the test above: NumPy computes what gpk_array lacks on CPU chunks (zero-copy)."""
    a = numpy.arange(1.0, 17.0).reshape(4, 4)
    g = da.from_array(gp.asarray(a, device="cpu"), chunks=(2, 4))
    r = g.map_blocks(lambda b: numpy.nanmean(b[0], where=b[0] > 0)[None][None], chunks=(1, 1), dtype=numpy.float64)
    numpy.testing.assert_allclose(numpy.asarray(r.compute()), [[2.5], [10.5]])


@pytest.mark.skipif(any(d.kind == "cuda" for d in gp.__array_namespace_info__().devices()),
                    reason="needs a machine without a CUDA device")
def test_cuda_chunk_received_without_cuda_raises():
    pytest.importorskip("distributed")
    from distributed.protocol.serialize import dask_deserialize
    header = {"device": "cuda:0", "shape": (4,), "dtype": "float32", "inner": {}}
    with pytest.raises(gp.DeviceError, match=r"sent from cuda:0, but this worker has no CUDA device"):
        dask_deserialize.dispatch(gp.Array)(header, [])


def test_dask_routines_that_make_host_data_raise_on_cuda(cuda_device):
    """Dask routines that build NumPy chunks of their own beside the data (argwhere, nonzero, isin's test
    elements) cannot run on CUDA chunks: HostOnlyError, as they fail for CuPy chunks; those that call SciPy on the
    chunks (linalg.solve, inv, lu) fail in SciPy (HostOnlyError, or SciPy's own TypeError/ValueError for mixed
    namespaces under SCIPY_ARRAY_API=1). No result comes back: nothing was copied to the host."""
    a = numpy.random.default_rng(0).standard_normal((4, 4)) + 4 * numpy.eye(4)
    g = da.from_array(gp.asarray(a, device=cuda_device), chunks=4)
    for build in (lambda: da.argwhere(g > 4), lambda: da.nonzero(g > 4)[0], lambda: da.isin(g, [1.0])):
        with pytest.raises(gp.HostOnlyError):
            build().compute()
    for build in (lambda: da.linalg.solve(g, g[:, 0]), lambda: da.linalg.inv(g), lambda: da.linalg.lu(g)[1]):
        with pytest.raises((TypeError, ValueError)):
            build().compute()
