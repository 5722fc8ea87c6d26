"""``gpk_array.jit``: a kernel from CUDA C++ source, its argument checking and its launch.

A ``JitKernel`` holds a ``cache.Module`` (compiled on first launch or by ``warmup``) and the parameters read from
the source (``signature``). Each launch converts the arguments with one converter per parameter, made once when the
kernel is created: an array parameter takes a gpk_array Array on a CUDA device, a CuPy array, anything with
``__cuda_array_interface__`` or ``__dlpack__`` (passed as its device pointer, its dtype checked against the
pointee's), or None (a null pointer); a scalar parameter takes a Python int/float/bool or a NumPy scalar, converted
to the parameter's C type (a float for an int parameter, or a value out of the type's range, is refused). Where the
signature could not be read, arrays pass as pointers and scalars as CuPy would pass them. Launch sizes are checked
against CUDA's limits and the device's before the launch, so a bad launch raises and leaves nothing on the device.
"""
from __future__ import annotations

import threading

import numpy as np

from .._array import Array
from .._errors import DeviceError
from .launch import DTYPE_FORMAT, ParamBuffer, direct_call

_INT_KINDS = "iub"
_MAX_GRID = (2 ** 31 - 1, 65535, 65535)
_MAX_BLOCK = (1024, 1024, 64)
_DEFAULT_SHARED = 48 * 1024
_cp = None


def _cupy():
    global _cp
    if _cp is None:
        try:
            import cupy
        except ImportError as e:
            from .._errors import DeviceError as _DE
            raise _DE("gpk_array.jit kernels run on CUDA devices and need CuPy (pip install 'gpk_array[cuda13]'), "
                      "which is not installed") from e
        _cp = cupy
    return _cp


def _same_device(d, dev, label, kname):
    """DeviceError unless device d (None: no device) is the one the earlier arguments are on (dev[0], set here
    by the first)."""
    if d is None:
        return
    if dev[0] is not None and d != dev[0]:
        raise DeviceError(f"gpk_array: {kname}: parameter {label} is on cuda:{d}, other arguments on cuda:{dev[0]}")
    dev[0] = d


def _dims(v, what: str) -> tuple:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        t = (int(v),)
    elif isinstance(v, (tuple, list)) and 1 <= len(v) <= 3 and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in v):
        t = tuple(int(d) for d in v)
    else:
        raise TypeError(f"gpk_array: {what} must be an int or a tuple of 1 to 3 ints, got {v!r}")
    return t


def check_launch(grid, block, shared_mem=0, *, max_threads: int = 1024, max_shared: int | None = None) -> tuple:
    """Validated ``(grid, block, shared_mem)`` as 3-tuples and an int: every dimension at least 1 and within CUDA's
    limits (grid x < 2^31, y and z <= 65535; block x, y <= 1024, z <= 64, at most ``max_threads`` threads), shared
    memory from 0 to ``max_shared`` bytes. Raises ValueError naming the bad size (TypeError for a non-int)."""
    g, b = _dims(grid, "grid"), _dims(block, "block")
    g, b = g + (1,) * (3 - len(g)), b + (1,) * (3 - len(b))
    for i, (d, lim) in enumerate(zip(g, _MAX_GRID)):
        if not 1 <= d <= lim:
            raise ValueError(f"gpk_array: grid dimension {'xyz'[i]} = {d} is out of range (1 to {lim})")
    for i, (d, lim) in enumerate(zip(b, _MAX_BLOCK)):
        if not 1 <= d <= lim:
            raise ValueError(f"gpk_array: block dimension {'xyz'[i]} = {d} is out of range (1 to {lim})")
    if b[0] * b[1] * b[2] > max_threads:
        raise ValueError(f"gpk_array: a block of {b[0] * b[1] * b[2]} threads {b} is over this kernel's limit of "
                         f"{max_threads} threads per block")
    if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer)):
        raise TypeError(f"gpk_array: shared_mem must be an int (bytes), got {type(shared_mem).__name__}")
    shared_mem = int(shared_mem)
    if shared_mem < 0:
        raise ValueError(f"gpk_array: shared_mem = {shared_mem} is negative")
    if max_shared is not None and shared_mem > max_shared:
        raise ValueError(f"gpk_array: shared_mem = {shared_mem} bytes is over the device's limit of {max_shared} "
                         "bytes of dynamic shared memory per block")
    return g, b, shared_mem


# ----------------------------------------------------------------------------------------------
# argument conversion

def _device_pointer(a, p, kname):
    """(pointer, dtype or None, device id or None) of an array-like argument, or raise TypeError."""
    if type(a) is Array:
        dev = a._device
        if dev.kind != "cuda":
            raise TypeError(f"gpk_array: {kname}: argument {p} is an array on the CPU device; jit kernels run on "
                            "CUDA only (move it with x.to_device('cuda:0'))")
        d = a._data
        return d.data.ptr, d.dtype, dev.index
    data = getattr(a, "data", None)
    ptr = getattr(data, "ptr", None)
    if ptr is not None and hasattr(a, "dtype") and hasattr(a, "device") and type(a).__module__.startswith("cupy"):
        return ptr, a.dtype, a.device.id
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0]), np.dtype(cai["typestr"]), None
    if isinstance(ptr, int) or isinstance(getattr(a, "ptr", None), int) and not isinstance(a, np.generic):
        # raw device memory: a gpk_array.cuda.DeviceMemory, a cupy MemoryPointer
        return int(ptr if isinstance(ptr, int) else a.ptr), None, getattr(a, "device_id", None)
    if isinstance(a, np.ndarray):
        raise TypeError(f"gpk_array: {kname}: argument {p} is a NumPy array (host memory); jit kernels run on "
                        "CUDA only: pass a gpk_array array on a CUDA device")
    if hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__"):
        kind, dev = a.__dlpack_device__()
        if int(kind) not in (2, 13):  # kDLCUDA, kDLCUDAManaged
            raise TypeError(f"gpk_array: {kname}: argument {p} is in host memory (DLPack device {int(kind)}); jit "
                            "kernels run on CUDA only")
        c = _cupy().from_dlpack(a)
        return c.data.ptr, c.dtype, int(dev)
    raise TypeError(f"gpk_array: {kname}: argument {p} must be a CUDA array (gpk_array Array, CuPy array, "
                    f"__cuda_array_interface__ or DLPack object) or None, got {type(a).__name__}")


def _pointer_converter(param, kname, as_int=False):
    """The converter of a pointer parameter: its value for CuPy's launch (a CuPy array or a numpy.uint64), or with
    ``as_int`` the address as a Python int (for the packed launch)."""
    want = param.dtype
    label = param.describe()

    def conv(a, dev):
        if type(a) is Array and a._device.kind == "cuda":   # the common case: hand CuPy its own array
            d = a._data
            if want is not None and d.dtype != want:
                raise TypeError(f"gpk_array: {kname}: parameter {label} points to {want}, got an array of {d.dtype}")
            i = a._device.index
            if dev[0] is None:
                dev[0] = i
            elif dev[0] != i:
                raise DeviceError(f"gpk_array: {kname}: parameter {label} is on cuda:{i}, other arguments on "
                                  f"cuda:{dev[0]}")
            return d.data.ptr if as_int else d
        if a is None:
            return 0 if as_int else np.uint64(0)
        ptr, dt, d = _device_pointer(a, label, kname)
        if want is not None and dt is not None and dt != want:
            raise TypeError(f"gpk_array: {kname}: parameter {label} points to {want}, got an array of {dt}")
        _same_device(d, dev, label, kname)
        return int(ptr) if as_int else np.uint64(ptr)
    return conv


def _is_array(a) -> bool:
    return hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__") or isinstance(a, np.ndarray) or \
        type(a).__name__ == "Array"


def _scalar_converter(param, kname):
    dt = param.dtype
    label = param.describe()
    kind = dt.kind
    make = dt.type
    if dt.name == "bfloat16":  # CuPy packs no bfloat16 scalar: pass its bits (2 bytes, the same in the call)
        kind = "f"
        make = lambda v, _t=dt.type: np.array(v, dtype=_t).view(np.uint16)[()]  # noqa: E731

    def conv(a, dev):
        t = type(a)
        if t is int or t is bool:
            if kind in "iu":
                info = np.iinfo(dt)
                if not info.min <= a <= info.max:
                    raise OverflowError(f"gpk_array: {kname}: {a} is out of range for parameter {label} "
                                        f"({info.min} to {info.max})")
            elif kind == "b" and t is not bool:
                raise TypeError(f"gpk_array: {kname}: parameter {label} is a bool, got an int")
            return make(a)
        if t is float:
            if kind in _INT_KINDS:
                raise TypeError(f"gpk_array: {kname}: parameter {label} is an integer, got a float ({a!r})")
            return make(a)
        if t is complex:
            if kind != "c":
                raise TypeError(f"gpk_array: {kname}: parameter {label} is real, got a complex ({a!r})")
            return make(a)
        if isinstance(a, np.generic):
            if a.dtype == dt:
                return a if make is dt.type else make(a)
            if a.dtype.kind in "fc" and kind in _INT_KINDS or a.dtype.kind == "c" and kind != "c":
                raise TypeError(f"gpk_array: {kname}: parameter {label} is {dt}, got a NumPy {a.dtype} scalar")
            if a.dtype.kind in "iu" and kind in "iu":
                return conv(int(a), dev)
            return make(a)
        if _is_array(a):
            raise TypeError(f"gpk_array: {kname}: parameter {label} is a scalar ({dt}), got an array")
        raise TypeError(f"gpk_array: {kname}: parameter {label} takes a Python or NumPy scalar, got "
                        f"{type(a).__name__}")
    return conv


_held_type = None


def _held(buf: np.ndarray):
    """A CuPy kernel argument whose value is the bytes of ``buf`` (a struct passed by value): a
    ``cupy.cuda.function.CPointer`` to them that keeps ``buf`` alive through the launch (the driver copies the
    parameter bytes when the launch is queued)."""
    global _held_type
    if _held_type is None:
        base = _cupy().cuda.function.CPointer

        class Held(base):
            def __init__(self, b):
                base.__init__(self, b.ctypes.data)
                self.buf = b

        _held_type = Held
    return _held_type(buf)


def _struct_converter(param, kname):
    dt = param.dtype
    label = param.describe()

    def conv(a, dev):
        if isinstance(a, (np.void, np.ndarray)) and a.dtype == dt and np.ndim(a) == 0:
            buf = np.array(a, dtype=dt)
        elif isinstance(a, tuple):
            buf = np.zeros((), dt)
            buf[()] = a
        elif isinstance(a, dict):
            buf = np.zeros((), dt)
            for k, v in a.items():
                if k not in dt.names:
                    raise TypeError(f"gpk_array: {kname}: parameter {label} has no field {k!r} (fields: "
                                    f"{', '.join(dt.names)})")
                buf[k] = v
        else:
            raise TypeError(f"gpk_array: {kname}: parameter {label} is a struct; pass a NumPy scalar of its dtype "
                            f"{dt} (the .cu module's attribute), a tuple or a dict of its fields")
        return _held(buf)
    return conv


def _unknown_converter(param, kname):
    label = param.describe() if param is not None else "?"

    def conv(a, dev):
        if a is None:
            return np.uint64(0)
        if isinstance(a, np.generic):
            return a
        if isinstance(a, (int, float, complex)):
            raise TypeError(f"gpk_array: {kname}: the type of parameter {label} is not known here, so a Python "
                            f"{type(a).__name__} has no size: pass a NumPy scalar (numpy.int32(...), "
                            "numpy.float32(...))")
        ptr, dt, d = _device_pointer(a, label, kname)
        _same_device(d, dev, label, kname)
        return np.uint64(ptr)
    return conv


def packed_format(params):
    """The ``struct`` format of the parameter list for the packed launch (``launch.ParamBuffer``), or None where a
    parameter is not a pointer or a scalar of a dtype it packs (structs, complex numbers, unknown types)."""
    if params is None:
        return None
    fmt = ""
    for p in params:
        if p.kind == "pointer":
            fmt += "P"
        elif p.kind == "scalar" and p.dtype is not None and p.dtype.name in DTYPE_FORMAT:
            fmt += DTYPE_FORMAT[p.dtype.name]
        else:
            return None
    return fmt


def converters(params, kname, packed=False):
    """One converter per parameter (None when the parameter list is unknown); ``packed``: pointers as ints."""
    if params is None:
        return None
    out = []
    for p in params:
        if p.kind == "pointer":
            out.append(_pointer_converter(p, kname, packed))
        elif p.kind == "scalar":
            out.append(_scalar_converter(p, kname))
        elif p.kind == "struct":
            out.append(_struct_converter(p, kname))
        else:
            out.append(_unknown_converter(p, kname))
    return out


# ----------------------------------------------------------------------------------------------
# the kernel object

class JitKernel:
    """A CUDA kernel compiled from source (``gpk_array.jit``, or an attribute of a ``.cu`` module).

    ``k(grid, block, args, shared_mem=0, stream=None)`` launches it; ``k[total, block](*args)`` launches
    ``ceil(total / block)`` blocks of ``block`` threads (``k[total, block, shared_mem, stream]`` too). ``params``
    lists the parameters read from the source (None if they could not be read); ``name`` is the kernel's name or
    name expression; ``module`` the compiled source (``cache.Module``). CUDA only: arrays on the CPU device raise
    TypeError."""

    def __init__(self, module, name: str, params):
        self.module = module
        self.name = name
        self.params = params
        self._label = f"kernel {name!r}"
        fmt = packed_format(params)
        self._convs = converters(params, self._label, packed=fmt is not None)
        # the packed launch (one buffer, cuLaunchKernel) where every parameter is a pointer or a plain scalar:
        # lower host time per call than CuPy's Function call (benchmarks/diag/kernel_launch_diag.py)
        self._packed = None if fmt is None else ParamBuffer(fmt)
        self._lock = threading.Lock()
        self._fptr: dict = {}
        self._direct = None      # launch.direct_call's function, made at the first launch
        self._fns: dict = {}
        self._raw: dict = {}
        self._limits: dict = {}
        self._configs: dict = {}
        self._checked: dict = {}   # (grid, block, shared_mem, device) -> validated 3-tuples

    def __repr__(self):
        sig = "?" if self.params is None else ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f"<gpk_array.jit kernel {self.name}({sig})>"

    def compile(self, arch=None):
        """Compile (or find in the cache) the cubin for ``arch`` (the current device's when None; no GPU needed when
        given) and return its cache entry (``path``, ``key``, ``cached``, ``reason``)."""
        return self.module.entry(arch)

    def convert(self, args) -> tuple[list, int | None]:
        """(the launch values of ``args``, the CUDA device id of its arrays or None): checks count and types
        against the signature and raises TypeError / DeviceError / OverflowError naming the parameter."""
        convs = self._convs
        dev = [None]
        if convs is None:
            conv = _unknown_converter(None, self._label)
            return [conv(a, dev) for a in args], dev[0]
        if len(args) != len(convs):
            raise TypeError(f"gpk_array: {self._label} takes {len(convs)} argument(s) "
                            f"({', '.join(p.name for p in self.params)}), got {len(args)}")
        return [c(a, dev) for c, a in zip(convs, args)], dev[0]

    def _function(self, dev):
        fn = self._fns.get(dev)
        if fn is None:
            cupy = _cupy()
            with cupy.cuda.Device(dev):
                fn = self.module.get_function(self.name)
                attrs = cupy.cuda.Device(dev).attributes
                optin = int(attrs.get("MaxSharedMemoryPerBlockOptin", attrs.get("MaxSharedMemoryPerBlock",
                                                                                _DEFAULT_SHARED)))
                static = int(getattr(fn, "shared_size_bytes", 0) or 0)
                self._limits[dev] = (int(fn.max_threads_per_block), max(0, optin - static))
                self._raw[dev] = fn
                # launch through the loaded function itself (what RawKernel.__call__ does after a lookup per call)
                fn = getattr(fn, "kernel", fn)
                self._fptr[dev] = fn.ptr
            self._fns[dev] = fn
        return fn

    def __call__(self, grid, block, args=(), shared_mem=0, stream=None):
        """Launch on ``grid`` blocks of ``block`` threads (ints or 1-3 tuples) with ``args`` (a tuple), ``shared_mem``
        bytes of dynamic shared memory, on ``stream`` (a gpk_array.cuda.Stream, a CuPy stream, or None: the current
        stream, which gpk_array's own operations use too)."""
        d = self._direct
        if d and type(args) is tuple and d(grid, block, args, shared_mem, stream):
            return
        if type(args) is not tuple:
            if not isinstance(args, list):
                raise TypeError(f"gpk_array: {self._label}: args must be a tuple of arguments, got "
                                f"{type(args).__name__}")
            args = tuple(args)
        vals, dev = self.convert(args)
        cp = _cupy()
        cur = cp.cuda.runtime.getDevice()
        if dev is None:
            dev = cur
        fn = self._fns.get(dev) or self._function(dev)
        try:
            key = (grid, block, shared_mem, dev)
            checked = self._checked.get(key)
        except TypeError:  # lists: unhashable, checked every time
            key = checked = None
        if checked is None:
            max_threads, max_shared = self._limits[dev]
            checked = check_launch(grid, block, shared_mem, max_threads=max_threads, max_shared=max_shared)
            raw = self._raw[dev]
            if checked[2] > _DEFAULT_SHARED and raw.max_dynamic_shared_size_bytes < checked[2]:
                with cp.cuda.Device(dev):
                    raw.max_dynamic_shared_size_bytes = checked[2]
            if key is not None and len(self._checked) < 256:
                self._checked[key] = checked
        if stream is not None:
            stream = getattr(stream, "cupy_stream", stream)
        packed = self._packed
        if packed is not None:
            sptr = cp.cuda.get_current_stream().ptr if stream is None else stream.ptr
            (gx, gy, gz), (bx, by, bz), shm = checked
            with self._lock:
                packed.pack(packed.buf, 0, *vals)
                if dev != cur:
                    with cp.cuda.Device(dev):
                        cp.cuda.driver.launchKernel(self._fptr[dev], gx, gy, gz, bx, by, bz, shm, sptr, 0,
                                                    packed.addr)
                else:
                    cp.cuda.driver.launchKernel(self._fptr[dev], gx, gy, gz, bx, by, bz, shm, sptr, 0, packed.addr)
            if self._direct is None:
                self._direct = self._make_direct(cp)
            return
        if dev != cur:
            with cp.cuda.Device(dev):
                fn(checked[0], checked[1], tuple(vals), shared_mem=checked[2], stream=stream)
        else:
            fn(checked[0], checked[1], tuple(vals), shared_mem=checked[2], stream=stream)

    def _make_direct(self, cp):
        """launch.direct_call's function for this kernel (False where it has none)."""
        ns = {"Array": Array, "CHECKED": self._checked, "FPTR": self._fptr, "LOCK": self._lock,
              "GCS": cp.cuda.get_current_stream, "LAUNCH": cp.cuda.driver.launchKernel,
              "GETDEV": cp.cuda.runtime.getDevice, "MULTI": cp.cuda.runtime.getDeviceCount() > 1}
        src = direct_call(self.params, self._packed, ns)
        if src is None:
            return False
        exec(compile(src, f"<gpk_array.jit direct call {self.name}>", "exec"), ns)  # noqa: S102 - generated here
        fn = ns["call"]
        fn.source = src
        return fn

    def __getitem__(self, config):
        """``k[total, block]`` (or ``k[total, block, shared_mem]``, ``k[total, block, shared_mem, stream]``): a
        launcher of ``ceil(total / block)`` blocks."""
        try:
            launcher = self._configs.get(config)
        except TypeError:  # an unhashable part (a list, a CuPy stream)
            launcher = None
        if launcher is None:
            if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
                raise TypeError("gpk_array: use k[total, block] (optionally k[total, block, shared_mem, stream])")
            total, block = config[0], config[1]
            for v, what in ((total, "total"), (block, "block")):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise TypeError(f"gpk_array: k[total, block]: {what} must be an int, got {v!r}")
            if total < 1 or block < 1:
                raise ValueError(f"gpk_array: k[total, block]: total = {total} and block = {block} must be at least 1")
            grid = -(-int(total) // int(block))
            if grid > _MAX_GRID[0]:
                raise ValueError(f"gpk_array: k[total, block]: {grid} blocks is over CUDA's limit of {_MAX_GRID[0]}")
            launcher = _Launcher(self, grid, int(block), *config[2:])
            try:
                self._configs[config] = launcher
            except TypeError:  # an unhashable stream
                pass
        return launcher


class _Launcher:
    """``k[total, block]``: calling it launches the kernel with the arguments given."""

    __slots__ = ("kernel", "grid", "block", "shared_mem", "stream")

    def __init__(self, kernel, grid, block, shared_mem=0, stream=None):
        self.kernel, self.grid, self.block, self.shared_mem, self.stream = kernel, grid, block, shared_mem, stream

    def __call__(self, *args):
        """Launch with ``args``."""
        self.kernel(self.grid, self.block, args, self.shared_mem, self.stream)


def jit(source: str, name: str, *, options=(), name_expressions=None):
    """See ``gpk_array.jit``."""
    from . import cache
    if not isinstance(source, str):
        raise TypeError(f"gpk_array.jit: source must be a str of CUDA C++, got {type(source).__name__}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"gpk_array.jit: name must be a kernel name (str), got {name!r}")
    if isinstance(options, str):
        options = (options,)
    options = tuple(options)
    exprs = tuple(name_expressions or ())
    params = kernel_params(source, name)
    base = name.split("<", 1)[0].strip()
    mod = cache.load(source, (name,), options, name=f"{base}.cu", name_expressions=exprs, identity=f"jit:{base}")
    return JitKernel(mod, name, params)


def kernel_params(source: str, name: str, kernels=None):
    """The parameters of kernel ``name`` (or name expression) in ``source``; ValueError when the source declares
    no such ``__global__`` function (None when its parameter list cannot be read)."""
    from . import signature
    ks = kernels if kernels is not None else signature.kernels(source)
    base, args = signature.parse_expression(name)
    for k in ks:
        if "::".join(k.namespace + (k.name,)) == base.lstrip(":") or (k.name == base and not k.namespace):
            if args:
                return signature.instantiate(k, name, signature.structs(source))[1]
            if k.template:
                raise ValueError(f"gpk_array.jit: {name!r} is a template; name an instantiation, e.g. "
                                 f"{name}<float>")
            if not k.extern_c:
                raise ValueError(f"gpk_array.jit: {name!r} is not extern \"C\" (its symbol is C++-mangled); declare "
                                 f"it extern \"C\" __global__, or make it a template and name an instantiation")
            return k.params
    found = ", ".join(k.name for k in ks) or "none"
    raise ValueError(f"gpk_array.jit: the source declares no __global__ function {name!r} (found: {found})")
