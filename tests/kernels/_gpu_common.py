"""What the GPU test modules of the kernel layer share: their skip marks, the dtypes they sweep, tolerances.

Imported by absolute name (tests.kernels._gpu_common) because test_emulated.py also loads those modules from
their files; nothing here looks at the GPU at import, so each module asks for its marks when it is imported."""
import numpy as np
import pytest


def gpu_available():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def gpu_marks():
    """pytestmark for a module of GPU tests: marked gpu, skipped cleanly without a GPU."""
    return [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU")]


try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except Exception:  # pragma: no cover
    BF16 = None

FLOAT_DTYPES = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)] + ([BF16] if BF16 else [])
INT_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                     np.uint8, np.uint16, np.uint32, np.uint64)]
BOOL = np.dtype(np.bool_)
RTOL = {"float16": 5e-3, "bfloat16": 2e-2, "float32": 1e-5, "float64": 1e-12}
