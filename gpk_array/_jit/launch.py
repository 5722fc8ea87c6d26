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
