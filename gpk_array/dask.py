"""Dask arrays whose chunks are gpk_array Arrays, on the CPU device or on a CUDA device.

``import gpk_array.dask`` registers gpk_array with Dask (idempotent; ``register()`` does it again explicitly):

- ``Array`` as a Dask chunk type (``dask.array.register_chunk_type``), so a Dask array and an Array combine
  (``d + x``) into a Dask array instead of refusing each other;
- Dask's array dispatch hooks for Array chunks: concatenate, tensordot, einsum, take (``concat``/``tensordot``/
  ``einsum``/``take`` of gpk_array on the chunks' device, with a device check that names the operation and the
  chunk), numel (the element counts of ``mean``/``var``/``std`` made on the chunk's device, not in NumPy memory),
  empty, and ``to_numpy_dispatch``/``to_cupy_dispatch`` for ``x.to_backend("numpy")`` / ``"cupy"``;
- tokenizing: a CPU chunk by its data (as NumPy's), a CUDA chunk by identity (its data is never read back to hash it);
- the ``"gpk_array"`` array backend (``dask.config.set({"array.backend": "gpk_array"})``: ``da.ones``, ``da.zeros``,
  ``da.random.default_rng(seed)``, ... with gpk_array chunks on the default device); the same backend is declared
  as a ``dask.array.backends`` entry point, so Dask finds it by name without this import;
- where distributed is installed, its serializers for Array (``dask_serialize``: a CPU chunk's memory as a frame,
  a CUDA chunk through host frames as CuPy's; ``cuda_serialize``: a CUDA chunk's device memory as a device frame,
  no host copy, for transports that carry device frames, UCX in dask-cuda).

Dask's meta (the empty array that stands for a chunk) is an Array on the chunks' device: Dask builds it by slicing
a chunk (``x[0:0, 0:0]``) and by calling NumPy's functions on it, which gpk_array's protocols
(``__array_function__``, ``__array_ufunc__``) run on the device.

``import gpk_array`` does not import Dask; it imports this module (and so registers) by itself only where Dask is
already imported, so a Dask worker that unpickles an Array has the hooks and deserializers before it uses them.
Code that imports gpk_array before Dask imports this module itself.
"""
import numpy as _np

try:
    import dask
    import dask.array as _da
    from dask.array import dispatch as _dispatch
    from dask.array.backends import ArrayBackendEntrypoint as _Entrypoint
    from dask.array.backends import array_creation_dispatch as _creation
except ImportError as e:   # pragma: no cover (the tests skip without Dask)
    raise ImportError("gpk_array.dask needs Dask: pip install 'gpk_array[dask]' (dask[array] and distributed)") from e

from ._array import Array
from ._device import CPU, Device, default_device
from ._errors import DeviceError, HostOnlyError

_registered = False


# --- device checks ---------------------------------------------------------------------------------------------
def _one_device(arrays, op):
    """The device of the Arrays among ``arrays`` (chunks handed to one Dask operation); DeviceError naming the
    operation and the first chunk on another device, HostOnlyError for NumPy chunks beside CUDA chunks."""
    dev = None
    first = None
    host = None
    for i, a in enumerate(arrays):
        if isinstance(a, Array):
            if dev is None:
                dev, first = a._device, i
            elif a._device is not dev:
                raise DeviceError(
                    f"dask.array {op}: chunk {i} (shape {a.shape}) is on {a._device} but chunk {first} is on {dev}; "
                    "a Dask array's chunks must share one device: move them with x.to_device(...) or "
                    "d.map_blocks(lambda b: b.to_device(...)) before combining (nothing is moved implicitly)")
        elif isinstance(a, _np.ndarray) and host is None:
            host = i
    if dev is not None and dev is not CPU and host is not None:
        raise HostOnlyError(
            f"dask.array {op}: chunk {host} is a NumPy array (host memory) but chunk {first} is a gpk_array Array "
            f"on {dev}; nothing is copied implicitly: make the NumPy chunks gpk_array Arrays on {dev} first "
            f"(d.map_blocks(gpk_array.asarray, device=\"{dev}\"))")
    return dev or CPU


def _as_chunks(arrays, dev):
    """NumPy chunks among ``arrays`` (only on the CPU device: _one_device refused them beside CUDA ones) as Arrays."""
    from ._ops.creation import asarray
    return [a if isinstance(a, Array) else asarray(a, device=dev) for a in arrays]


# --- the dispatch hooks --------------------------------------------------------------------------------------------
def concatenate(arrays, axis=0):
    """Dask's ``concatenate_lookup`` for Array chunks: ``gpk_array.concat`` on their device (they must share it)."""
    from ._ops.manipulation import concat
    arrays = list(arrays)
    dev = _one_device(arrays, "concatenate")
    return concat(_as_chunks(arrays, dev), axis=axis)


def tensordot(a, b, axes=2):
    """Dask's ``tensordot_lookup`` for Array chunks (matmul, dot, tensordot): ``gpk_array.tensordot`` on their
    device; NumPy's ``axes=`` forms (an int, a pair of ints or of sequences)."""
    from ._ops.linalg_basic import tensordot as _td
    dev = _one_device((a, b), "tensordot")
    a, b = _as_chunks((a, b), dev)
    if not isinstance(axes, int):
        left, right = axes
        axes = (tuple(left) if isinstance(left, (tuple, list)) else (left,),
                tuple(right) if isinstance(right, (tuple, list)) else (right,))
    return _td(a, b, axes=axes)


def einsum(subscripts, *operands, **kwargs):
    """Dask's ``einsum_lookup`` for Array chunks: ``gpk_array.einsum`` on their device (Dask's ``casting=`` and
    ``order=`` are NumPy memory-layout choices that gpk_array does not take: dropped, as for CuPy)."""
    import gpk_array
    kwargs.pop("casting", None)
    kwargs.pop("order", None)
    dev = _one_device(operands, "einsum")
    return gpk_array.einsum(subscripts, *_as_chunks(operands, dev), **kwargs)


def take(a, indices, axis=None):
    """Dask's ``take_lookup`` for Array chunks (shuffles, ``da.take``): ``gpk_array.take`` on a's device (the
    indices are graph data: NumPy indices go to the device, as gpk_array's functions take array-likes)."""
    import gpk_array
    if isinstance(indices, Array) and indices._device is not a._device:
        _one_device((a, indices), "take")
    return gpk_array.take(a, indices, axis=axis)


def numel(x, **kwargs):
    """Dask's ``numel_lookup`` for Array chunks: the number of elements of x reduced over ``axis`` (all when None),
    as an Array of ``dtype`` (float64 by default) on x's device, shaped as the reduction with ``keepdims``."""
    from ._ops.creation import full
    shape = x.shape
    axis = kwargs.get("axis")
    keepdims = kwargs.get("keepdims", False)
    dtype = kwargs.get("dtype") or _np.float64
    if axis is None:
        axis = range(len(shape))
    elif not isinstance(axis, (tuple, list)):
        axis = (axis,)
    axis = {a % len(shape) for a in axis} if shape else set()
    count = 1
    for a in axis:
        count *= shape[a]
    out = tuple(1 if i in axis else n for i, n in enumerate(shape)) if keepdims else \
        tuple(n for i, n in enumerate(shape) if i not in axis)
    return full(out, count, dtype=_np.dtype(dtype), device=x._device)


def empty(shape, dtype=None, **kwargs):
    """Dask's ``empty_lookup`` for Array metas (da.percentile's scratch arrays): ``gpk_array.empty`` on the default
    device (Dask gives the hook no array to take the device from)."""
    from ._ops.creation import empty as _empty
    return _empty(shape, dtype=None if dtype is None else _np.dtype(dtype))


def percentile(a, q, method="linear"):
    """Dask's ``percentile_lookup`` for Array chunks: (the chunk's percentiles q, its length), as Dask's for NumPy
    chunks; Dask merges them (merge_percentiles) with NumPy's functions, which gpk_array runs on the device."""
    import gpk_array
    n = len(a)
    if n == 0:
        return None, 0
    return gpk_array.percentile(a, q, method=method), n


def to_numpy(x, **kwargs):
    """``to_numpy_dispatch`` for Array chunks (``d.to_backend("numpy")``): the chunk copied to host memory, asked
    for explicitly."""
    return _np.asarray(x.to_device("cpu"))


def to_cupy(x, **kwargs):
    """``to_cupy_dispatch`` for Array chunks (``d.to_backend("cupy")``): a CUDA chunk's CuPy memory, shared (no
    copy); a CPU chunk copied to the current CUDA device (asked for explicitly)."""
    import cupy
    return x._data if x._device is not CPU else cupy.asarray(x._data)


def _normalize_token(x):
    """dask.base.tokenize for Arrays: a CPU chunk by its data (NumPy's normalizer); a CUDA chunk by identity and
    layout, never by reading its memory back to the host."""
    from dask.tokenize import normalize_token
    if x._device is CPU:
        return ("gpk_array.Array", "cpu", normalize_token(x._data))
    d = x._data
    return ("gpk_array.Array", str(x._device), id(x), d.shape, d.strides, str(d.dtype))


# --- the "gpk_array" array backend -----------------------------------------------------------------------------------
to_gpk_dispatch = dask.utils.Dispatch("to_gpk_dispatch")


@to_gpk_dispatch.register(object)
def _to_gpk(data, device=None, **kwargs):
    """A chunk of another library (NumPy, CuPy) as an Array on ``device`` (the default device when None)."""
    from ._ops.creation import asarray
    return asarray(data, device=device)


class RandomState:
    """A picklable factory of gpk_array RandomStates on one device, for ``dask.array.random.RandomState``:
    ``da.random.RandomState(seed, RandomState=gpk_array.dask.RandomState("cuda:0"))`` draws NumPy's Mersenne
    Twister numbers (the same as Dask's NumPy chunks for the same seed) into chunks on that device."""

    def __init__(self, device=None):
        self.device = None if device is None else str(Device(str(device)))   # checked now, sent as its name

    def __call__(self, seed=None):
        import gpk_array.random
        return gpk_array.random.RandomState(seed, device=None if self.device is None else Device(self.device))

    def __repr__(self):
        return f"gpk_array.dask.RandomState(device={self.device!r})"


class PCG64(_np.random.PCG64):
    """NumPy's PCG64 bit generator, named from gpk_array so that ``dask.array.random.Generator(PCG64(seed))``
    draws its chunks with ``gpk_array.random.default_rng`` (the same numbers as NumPy's, as Arrays on each worker's
    default device)."""


class GpkArrayBackendEntrypoint(_Entrypoint):
    """Dask's array backend "gpk_array": creation functions and ``da.random`` make gpk_array chunks on the default
    device (``dask.config.set({"array.backend": "gpk_array"})``)."""

    def __init__(self):
        register()

    @classmethod
    def to_backend_dispatch(cls):
        """The dispatch that turns another library's chunk into an Array."""
        return to_gpk_dispatch

    @classmethod
    def to_backend(cls, data, **kwargs):
        """``d.to_backend("gpk_array")``: d itself when its chunks are Arrays already, else each chunk converted."""
        if isinstance(data._meta, Array):
            return data
        return data.map_blocks(to_gpk_dispatch, **kwargs)

    @property
    def RandomState(self):
        """The RandomState factory for the default device."""
        return RandomState()

    @property
    def default_bit_generator(self):
        """PCG64, named from gpk_array (see ``PCG64``)."""
        return PCG64

    @staticmethod
    def ones(*args, meta=None, **kwargs):
        """``da.ones`` with gpk_array chunks."""
        return _with_meta("ones", args, meta, kwargs)

    @staticmethod
    def zeros(*args, meta=None, **kwargs):
        """``da.zeros`` with gpk_array chunks."""
        return _with_meta("zeros", args, meta, kwargs)

    @staticmethod
    def empty(*args, meta=None, **kwargs):
        """``da.empty`` with gpk_array chunks."""
        return _with_meta("empty", args, meta, kwargs)

    @staticmethod
    def full(*args, meta=None, **kwargs):
        """``da.full`` with gpk_array chunks."""
        return _with_meta("full", args, meta, kwargs)

    @staticmethod
    def arange(*args, like=None, **kwargs):
        """``da.arange`` with gpk_array chunks."""
        with dask.config.set({"array.backend": "numpy"}):
            return _da.arange(*args, like=_meta() if like is None else like, **kwargs)


def _meta():
    from ._ops.creation import empty as _empty
    return _empty((0,), device=default_device())


def _with_meta(name, args, meta, kwargs):
    with dask.config.set({"array.backend": "numpy"}):
        return getattr(_da, name)(*args, meta=_meta() if meta is None else meta, **kwargs)


# --- distributed's serializers ---------------------------------------------------------------------------------------
def _cuda_index(header):
    from ._device import cuda_device_count
    if cuda_device_count() == 0:
        raise DeviceError(f"gpk_array.dask: a chunk (shape {tuple(header['shape'])}, dtype {header['dtype']}) was "
                          f"sent from {header['device']}, but this worker has no CUDA device to receive it; run "
                          "CUDA chunks on CUDA workers (dask_cuda.LocalCUDACluster) or move them to the host "
                          "first (d.map_blocks(lambda b: b.to_device(\"cpu\")))")
    import cupy
    return cupy.cuda.runtime.getDevice()


def _dtype(name):
    """A dtype from its name (bfloat16 included: ml_dtypes' dtype, whose ``str`` is only ``<V2``)."""
    import gpk_array
    t = getattr(gpk_array, name, None)
    return _np.dtype(t if t is not None else name)


def _cuda_layout(x):
    """(header, the chunk's CuPy memory as one contiguous uint8 device array): no copy unless the chunk is
    neither C- nor F-contiguous (then one device copy)."""
    import cupy
    d = x._data
    if not (d.flags.c_contiguous or d.flags.f_contiguous):
        d = cupy.ascontiguousarray(d)
    header = {"device": str(x._device), "shape": tuple(d.shape), "dtype": d.dtype.name,
              "strides": tuple(d.strides)}
    return header, cupy.ndarray((d.nbytes,), dtype=cupy.uint8, memptr=d.data)


def _cuda_rebuild(header, buf):
    """The chunk on this worker's current CUDA device from its bytes there (a device uint8 buffer)."""
    import cupy
    data = cupy.ndarray(tuple(header["shape"]), dtype=_dtype(header["dtype"]), memptr=buf.data,
                        strides=tuple(header["strides"]))
    return Array._new(data, Device(f"cuda:{_cuda_index(header)}"))


def _register_serialization():
    try:
        from distributed.protocol import cuda as _cuda
        from distributed.protocol.serialize import dask_deserialize, dask_serialize
    except ImportError:
        return

    @dask_serialize.register(Array)
    def _dask_serialize(x):
        """A chunk as host frames: a CPU chunk's memory (no copy, distributed's NumPy serializer); a CUDA chunk
        copied to the host (the transport carries host memory only, as for CuPy's chunks over TCP)."""
        if x._device is CPU:
            inner, frames = dask_serialize.dispatch(_np.ndarray)(x._data)
            return {"device": "cpu", "shape": tuple(x.shape), "dtype": x.dtype.name, "inner": inner}, frames
        header, buf = _cuda_layout(x)
        return header, [memoryview(buf.get())]

    @dask_deserialize.register(Array)
    def _dask_deserialize(header, frames):
        if header["device"] == "cpu":
            return Array._new(dask_deserialize.dispatch(_np.ndarray)(header["inner"], frames), CPU)
        _cuda_index(header)
        import cupy
        host = _np.frombuffer(b"".join(frames) if len(frames) != 1 else frames[0], dtype=_np.uint8)
        return _cuda_rebuild(header, cupy.asarray(host))

    @_cuda.cuda_serialize.register(Array)
    def _cuda_serialize(x):
        """A CUDA chunk's device memory as one device frame (no host copy); a CPU chunk goes to the next
        serializer."""
        if x._device is CPU:
            raise NotImplementedError("a CPU chunk is not a CUDA buffer")
        header, buf = _cuda_layout(x)
        return header, [buf]

    @_cuda.cuda_deserialize.register(Array)
    def _cuda_deserialize(header, frames):
        """The chunk on this worker's current CUDA device (dask-cuda gives each worker one GPU)."""
        _cuda_index(header)
        import cupy
        (frame,) = frames
        return _cuda_rebuild(header, cupy.asarray(frame))   # any __cuda_array_interface__ buffer, no copy


# --- registration -----------------------------------------------------------------------------------------------------
def register():
    """Register gpk_array's Array with Dask (chunk type, dispatch hooks, tokenizing, the "gpk_array" backend,
    distributed's serializers); idempotent. ``import gpk_array.dask`` calls it."""
    global _registered
    if _registered:
        return
    _registered = True
    from dask.tokenize import normalize_token
    _da.register_chunk_type(Array)
    _dispatch.concatenate_lookup.register(Array, concatenate)
    _dispatch.tensordot_lookup.register(Array, tensordot)
    _dispatch.einsum_lookup.register(Array, einsum)
    _dispatch.take_lookup.register(Array, take)
    _dispatch.numel_lookup.register(Array, numel)
    _dispatch.empty_lookup.register(Array, empty)
    _dispatch.percentile_lookup.register(Array, percentile)
    _dispatch.to_numpy_dispatch.register(Array, to_numpy)
    _dispatch.to_cupy_dispatch.register(Array, to_cupy)
    normalize_token.register(Array, _normalize_token)
    if "gpk_array" not in _creation._lookup:
        _creation.register_backend("gpk_array", GpkArrayBackendEntrypoint.__new__(GpkArrayBackendEntrypoint))
    _register_serialization()


register()

__all__ = ["register", "concatenate", "tensordot", "einsum", "take", "numel", "empty", "percentile", "to_numpy",
           "to_cupy", "RandomState", "PCG64", "GpkArrayBackendEntrypoint", "to_gpk_dispatch"]
