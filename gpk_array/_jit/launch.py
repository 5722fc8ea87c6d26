"""A kernel launch with its parameters in one packed buffer: ``cuLaunchKernel`` through CuPy's driver binding
(``cupy.cuda.driver.launchKernel``), the buffer handed over as ``CU_LAUNCH_PARAM_BUFFER_POINTER`` /
``CU_LAUNCH_PARAM_BUFFER_SIZE``. ``struct``'s native alignment lays the parameters out as the C ABI does for
scalars and pointers, which is the layout the driver copies from. Used by ``gpk_array.jit`` kernels and by the
direct call of ``@gpk_array.kernel`` specializations; both fall back to CuPy's own launch for parameters this
does not cover (structs, complex numbers)."""
from __future__ import annotations

import ctypes
import struct

# struct format of a scalar parameter by NumPy dtype name (bfloat16 travels as its 16 bits)
DTYPE_FORMAT = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
                "int64": "q", "uint64": "Q", "float16": "e", "bfloat16": "H", "float32": "f", "float64": "d"}


class ParamBuffer:
    """The packed parameters of one kernel (``fmt``: their ``struct`` format, native alignment) and the ``extra``
    array that hands them to cuLaunchKernel: ``pack(buf, 0, *values)`` then launch with ``extra=addr``."""

    __slots__ = ("pack", "buf", "size", "extra", "addr")

    def __init__(self, fmt: str):
        st = struct.Struct("@" + fmt)
        self.pack = st.pack_into
        self.buf = ctypes.create_string_buffer(max(st.size, 8))
        self.size = ctypes.c_size_t(st.size)
        # CU_LAUNCH_PARAM_BUFFER_POINTER (1), the buffer, CU_LAUNCH_PARAM_BUFFER_SIZE (2), &size, CU_LAUNCH_PARAM_END
        self.extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(self.buf), 2, ctypes.addressof(self.size), 0)
        self.addr = ctypes.addressof(self.extra)


_INT_RANGE = {"int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1),
              "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
              "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1)}


def direct_call(params, buffer, ns):
    """The source of ``call(grid, block, args, shared_mem, stream)`` for a jit kernel whose parameters all pack
    (``buffer``): for the common arguments only -- gpk_array Arrays on one CUDA device (pointee dtype as
    declared), Python numbers of the parameter's kind (ints in range) or NumPy scalars of its exact dtype, the
    current stream, a launch size the general path has checked before (``CHECKED``) -- it packs and launches and
    returns True; anything else returns None and takes the general path (whose checks and errors are the
    reference). None where a parameter has no direct form (bfloat16 scalars). ``ns`` receives the constants."""
    n = len(params)
    a = [f"a{i}" for i in range(n)]
    lines = ["def call(grid, block, args, shared_mem, stream):",
             "    if stream is not None or len(args) != %d:" % n,
             "        return None"]
    if n:
        lines.append(f"    {', '.join(a)}{',' if n == 1 else ''} = args")
    first = None
    vals = []
    for i, p in enumerate(params):
        x = a[i]
        if p.kind == "pointer":
            lines.append(f"    if type({x}) is not Array:")
            lines.append("        return None")
            lines.append(f"    d{i} = {x}._data")
            if first is None:
                first = i
                lines.append(f"    dev = {x}._device")
                lines.append("    if dev.kind != 'cuda':")
                lines.append("        return None")
            else:
                lines.append(f"    if {x}._device is not dev:")
                lines.append("        return None")
            if p.dtype is not None:
                ns[f"W{i}"] = p.dtype
                lines.append(f"    if not (d{i}.dtype is W{i} or d{i}.dtype == W{i}):")
                lines.append("        return None")
            vals.append(f"d{i}.data.ptr")
            continue
        name = p.dtype.name
        if name == "bfloat16":
            return None
        ns[f"T{i}"] = p.dtype.type
        kind = p.dtype.kind
        py = {"b": "bool", "f": "float", "i": "int", "u": "int"}[kind]
        cond = f"type({x}) is {py}"
        if kind in "iu":
            lo, hi = _INT_RANGE[name]
            cond = f"(type({x}) is int and {lo} <= {x} <= {hi})"
        lines.append(f"    if not ({cond} or type({x}) is T{i}):")
        lines.append("        return None")
        vals.append(x)
    if first is None:
        return None   # no array: the general path finds the device
    lines += ["    idx = dev.index",
              "    checked = CHECKED.get((grid, block, shared_mem, idx))",
              "    fptr = FPTR.get(idx)",
              "    if checked is None or fptr is None:",
              "        return None"]
    if ns["MULTI"]:
        lines += ["    if GETDEV() != idx:", "        return None"]
    lines += ["    (gx, gy, gz), (bx, by, bz), shm = checked",
              "    with LOCK:",
              "        try:",
              f"            PACK(BUF, 0, {', '.join(vals)})",
              "        except (OverflowError, error):",
              "            return None",
              "        LAUNCH(fptr, gx, gy, gz, bx, by, bz, shm, GCS().ptr, 0, XADDR)",
              "    return True"]
    ns.update(PACK=buffer.pack, BUF=buffer.buf, XADDR=buffer.addr, error=struct.error)
    return "\n".join(lines) + "\n"
