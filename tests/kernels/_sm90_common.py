"""What the GPU test modules of the SM90 CUTLASS instances share (test_cutlass_sm90_gpu.py for the 'tn' layout,
test_cutlass_sm90_nn_gpu.py for 'nn'): the dtypes and tolerances, random operands, the float64 oracle's check,
and loading the instances (skipping cleanly where they cannot run)."""
import math

import numpy as np
import pytest

from tests.kernels._gpu_common import BF16

DTYPES = [np.dtype(np.float16)] + ([BF16] if BF16 else [])
# relative to max|ref|: the output rounding is 2^-11 resp. 2^-8 of the value; the accumulator is float32
TOL = {"float16": 5e-3, "bfloat16": 2e-2}
M_ODD = [1, 3, 17, 1000]
BIG = [(2048, 2048, 2048), (4096, 4096, 4096)]


def load_instances(keys):
    """launch_sm90 with every instance of ``keys`` loaded; skips the module off SM90 or without the cubins."""
    import cupy
    from gpk_array._kernels import loader
    from gpk_array._kernels.cutlass import launch_sm90
    if loader.device_arch() != "90":
        pytest.skip(f"the SM90 instances are sm_90a; this GPU is sm_{loader.device_arch()}")
    try:
        for key in keys:
            launch_sm90.get_function(key)
    except launch_sm90.CutlassUnavailable as e:
        pytest.skip(str(e))
    cupy.cuda.Device().synchronize()
    return launch_sm90


def rand(rng, shape, dtype, scale=1.0):
    import cupy
    return cupy.asarray((rng.uniform(-1, 1, shape) * scale).astype(dtype))


def f64(a):
    if not a.flags.c_contiguous:    # CuPy's copy kernels do not know bfloat16: copy the bits
        import cupy
        a = cupy.ascontiguousarray(a.view(cupy.uint16)).view(a.dtype)
    return a.get().astype(np.float64)


def check(got, ref, dtype):
    got = f64(got)
    assert np.isfinite(got).all()
    scale = max(np.abs(ref).max(), 1e-30)
    err = np.abs(got - ref).max() / scale
    assert err <= TOL[dtype.name], f"max rel err {err:.3g} > {TOL[dtype.name]}"
    return err


def _erfc(a):
    try:
        from scipy.special import erfc
        return erfc(a)
    except ImportError:
        return np.vectorize(math.erfc, otypes=[np.float64])(a)


def act_ref(a, activation):
    """float64 reference of the fused epilogues' activations (torch's definitions); None: a itself. gelu as
    0.5 a erfc(-a / sqrt 2) (no cancellation for negative a, where 1 + erf(a / sqrt 2) loses every digit below
    about -8); gelu and silu of -inf are their limits, -0 (a * 0 would be NaN)."""
    if activation is None:
        return a
    if activation == "gelu":
        with np.errstate(invalid="ignore"):
            return np.where(a == -np.inf, -0.0, 0.5 * a * _erfc(-a / math.sqrt(2.0)))
    if activation == "gelu_tanh":
        return 0.5 * a * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a ** 3)))
    if activation == "relu":
        return np.maximum(a, 0.0)
    if activation == "silu":
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(a == -np.inf, -0.0, a / (1.0 + np.exp(-a)))
    raise ValueError(activation)
