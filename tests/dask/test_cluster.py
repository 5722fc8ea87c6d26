"""The cases of cases.py on a distributed LocalCluster of two worker processes (CPU device), and on the GPU machine
on a dask-cuda LocalCUDACluster (one worker per GPU, cuda:0 in each): chunks travel between processes through
gpk_array's serializers and stay gpk_array Arrays on their device; values equal Dask's on NumPy chunks.

One cluster per module (starting one takes seconds); a representative subset of the cases (each through the
cluster's scheduler and workers), since every case already runs on the synchronous scheduler in
test_dask_array.py.
"""
import sys

import numpy
import pytest

distributed = pytest.importorskip("distributed")

import cloudpickle  # noqa: E402  (distributed's dependency)
import dask  # noqa: E402
import dask.array as da  # noqa: E402

import gpk_array as gp  # noqa: E402

from . import cases  # noqa: E402
from .cases import CASES, CHUNKS_A, CHUNKS_B, data  # noqa: E402

# the cases' map_blocks functions are shipped to the workers by value (the workers cannot import tests.dask)
cloudpickle.register_pickle_by_value(cases)

SUBSET = ["add-scalar", "numpy-sin", "where", "broadcast-row", "matmul", "matmul-T", "tensordot", "einsum",
          "rechunk", "rechunk-rows", "slice", "fancy", "bool-mask-rows", "transpose", "reshape", "concatenate",
          "stack", "map_blocks", "map_blocks-sum", "take", "sum-axisNone-keepFalse", "mean-axis0-keepTrue",
          "var-axis1-keepFalse", "std-axis(0, 1)-keepTrue", "max-axis0-keepFalse", "argmax-axis1", "cumsum-axis0",
          "nanmean"]
_BY_NAME = dict(CASES)


def _registered():
    return "gpk_array.dask" in sys.modules


@pytest.fixture(scope="module")
def cpu_client():
    from distributed import Client, LocalCluster
    with dask.config.set({"distributed.worker.daemon": False}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               worker_dashboard_address=None, env={"GPK_DEVICE": "cpu"})
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def _run_cases(client, device):
    a, b = data()
    x, y = gp.asarray(a, device=device), gp.asarray(b, device=device)
    # scattered to the workers: the chunks leave this process through gpk_array's serializers
    da_x = da.from_array(x, chunks=CHUNKS_A)
    da_y = da.from_array(y, chunks=CHUNKS_B)
    da_x, da_y = client.persist([da_x, da_y])
    for name in SUBSET:
        fn = _BY_NAME[name]
        want = fn(da.from_array(a, chunks=CHUNKS_A), da.from_array(b, chunks=CHUNKS_B)).compute(scheduler="sync")
        r = fn(da_x, da_y)
        assert type(r._meta) is gp.Array, name
        # every chunk computed on a worker and sent back: Arrays on the device
        futures = client.compute(r.to_delayed().ravel().tolist())
        for blk in client.gather(futures):
            assert type(blk) is gp.Array and blk.device == device, name
        got = client.compute(r).result()
        assert type(got) is gp.Array and got.device == device, name
        numpy.testing.assert_allclose(numpy.asarray(got.to_device("cpu")), want, rtol=1e-12, atol=1e-12,
                                      err_msg=name)


def test_local_cluster_cpu(cpu_client):
    _run_cases(cpu_client, gp.Device("cpu"))
    # the workers registered gpk_array with Dask by themselves, on unpickling their first Array
    assert all(cpu_client.run(_registered).values())


def test_local_cluster_random_and_qr(cpu_client):
    rs = da.random.RandomState(11, RandomState=__import__("gpk_array.dask").dask.RandomState("cpu"))
    r = rs.standard_normal(size=(40, 3), chunks=(10, 3))
    want = da.random.RandomState(11).standard_normal(size=(40, 3), chunks=(10, 3)).compute(scheduler="sync")
    got = cpu_client.compute(r).result()
    assert type(got) is gp.Array
    numpy.testing.assert_array_equal(numpy.asarray(got), want)
    q, rr = da.linalg.qr(r)
    qh, rh = cpu_client.compute([q, rr], sync=True)
    assert type(qh) is gp.Array and type(rh) is gp.Array
    numpy.testing.assert_allclose(numpy.asarray(qh) @ numpy.asarray(rh), want, atol=1e-12)


def test_serialize_round_trip_cpu():
    from distributed.protocol import deserialize, serialize
    x = gp.asarray(numpy.arange(12, dtype=numpy.float32).reshape(3, 4), device="cpu")
    for v in (x, x.T, x[:, ::2], gp.asarray([1.5, 2.5], dtype=gp.bfloat16, device="cpu")):
        header, frames = serialize(v, serializers=("dask",))
        assert header["serializer"] == "dask"
        back = deserialize(header, frames)
        assert type(back) is gp.Array and back.device == gp.Device("cpu") and back.dtype == v.dtype
        numpy.testing.assert_array_equal(numpy.asarray(back).astype(numpy.float64),
                                         numpy.asarray(v).astype(numpy.float64))
    # a CPU chunk is not a CUDA buffer: the cuda serializer passes it to the next one
    header, frames = serialize(x, serializers=("cuda", "dask"))
    assert header["serializer"] == "dask"


@pytest.mark.gpu
def test_serialize_cuda_chunk_without_host_copy():
    """cuda_serialize hands the chunk's device memory over as a device frame (no host copy); dask_serialize goes
    through host frames (TCP), as CuPy's does."""
    if not any(d.kind == "cuda" for d in gp.__array_namespace_info__().devices()):
        pytest.skip("no CUDA GPU")
    cupy = pytest.importorskip("cupy")
    from distributed.protocol import deserialize, serialize
    x = gp.asarray(numpy.arange(24, dtype=numpy.float32).reshape(4, 6), device="cuda:0")
    for v in (x, x.T, x[::2]):
        header, frames = serialize(v, serializers=("cuda",))
        assert header["serializer"] == "cuda"
        assert all(hasattr(f, "__cuda_array_interface__") for f in frames)
        back = deserialize(header, frames)
        assert type(back) is gp.Array and back.device == gp.Device("cuda:0")
        assert isinstance(back._data, cupy.ndarray)
        numpy.testing.assert_array_equal(numpy.asarray(back.to_device("cpu")), numpy.asarray(v.to_device("cpu")))
        header, frames = serialize(v, serializers=("dask",))
        back = deserialize(header, frames)
        assert type(back) is gp.Array and back.device == gp.Device("cuda:0")
        numpy.testing.assert_array_equal(numpy.asarray(back.to_device("cpu")), numpy.asarray(v.to_device("cpu")))


@pytest.mark.gpu
@pytest.mark.parametrize("protocol", ["tcp", "ucx"])
def test_local_cuda_cluster(protocol):
    """dask-cuda: one worker per GPU; the same cases with chunks on cuda:0 of each worker. Over TCP CUDA chunks
    travel as host frames (dask_serialize); over UCX as device frames (cuda_serialize, no host copy)."""
    if not any(d.kind == "cuda" for d in gp.__array_namespace_info__().devices()):
        pytest.skip("no CUDA GPU")
    dask_cuda = pytest.importorskip("dask_cuda")
    if protocol == "ucx":
        import importlib.util
        if importlib.util.find_spec("ucxx") is None and importlib.util.find_spec("ucp") is None:
            pytest.skip("UCX (ucxx / ucx-py) is not installed")
    from distributed import Client
    with dask_cuda.LocalCUDACluster(dashboard_address=None, protocol=protocol) as cluster, \
            Client(cluster) as client:
        _run_cases(client, gp.Device("cuda:0"))
        assert all(client.run(_registered).values())
