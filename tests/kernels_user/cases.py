"""Calls of every test and example kernel over the signatures the tests use (and the small dtypes): the nvcc
compile check and the GPU comparison run each. ``CASES``: (id, kernel, args factory, geometry or None); a factory
returns fresh NumPy arrays (and numbers), deterministic."""
import numpy as np

from gpk_array._dtypes import BF16

from . import examples as E
from . import kernels as KS


def _r(seed=0):
    return np.random.default_rng(seed)


def _special(dt):
    """128 values, warp 0 random, warp 1 with a NaN, warp 2 only signed zeros, warp 3 with infinities."""
    v = _r(4).standard_normal(128)
    v[40] = np.nan
    v[64:96] = np.where(np.arange(32) % 3, 0.0, -0.0)
    v[100], v[101] = np.inf, -np.inf
    return v.astype(dt)


def _f(shape, dt=np.float32, seed=0):
    return _r(seed).standard_normal(shape).astype(dt)


CASES = [
    ("saxpy_f32", E.saxpy, lambda: (2.5, _f(3000), _f(3000, seed=1), np.zeros(3000, np.float32)), None),
    ("saxpy_f64", E.saxpy, lambda: (2.5, _f(1000, np.float64), _f(1000, np.float64, 1), np.zeros(1000)), None),
    ("saxpy_f16", E.saxpy, lambda: (0.5, _f(999, np.float16), _f(999, np.float16, 1), np.zeros(999, np.float16)),
     None),
    ("saxpy_bf16", E.saxpy, lambda: (0.5, _f(999, BF16), _f(999, BF16, 1), np.zeros(999, BF16)), None),
    ("saxpy_strided", E.saxpy, lambda: (np.float32(2), _f(2000)[::2], _f(1000, seed=1), np.zeros(1000, np.float32)),
     None),
    ("stencil", E.stencil, lambda: (_f((37, 53), np.float64), np.zeros((37, 53))), None),
    ("histogram", E.histogram, lambda: (_f(4000), -2.5, 2.5, np.zeros(16, np.int32)), None),
    ("transpose", E.transpose, lambda: (_f((70, 45)), np.zeros((45, 70), np.float32)),
     ((64, 24), (E.TILE, E.ROWS))),
    ("block_sum", E.block_sum, lambda: (_f(3000), np.zeros(1, np.float32)), (3072, E.BLOCK)),
    ("bias_gelu_f32", E.bias_gelu, lambda: (_f((33, 70)), _f(70, seed=1), np.zeros((33, 70), np.float32)), None),
    ("bias_gelu_bf16", E.bias_gelu, lambda: (_f((33, 70), BF16), _f(70, BF16, 1), np.zeros((33, 70), BF16)), None),
    ("scale_add_i8", KS.scale_add, lambda: ((np.arange(10) - 3).astype(np.int8), 2, np.ones(10, np.int8)), None),
    ("scale_add_u16", KS.scale_add, lambda: (np.arange(10, dtype=np.uint16), 2, np.ones(10, np.uint16)), None),
    ("scale_add_f16_scalar", KS.scale_add, lambda: (np.full(4, 1000.0, np.float32), np.float16(0.1),
                                                    np.zeros(4, np.float32)), None),
    ("hypot", KS.hypot_k, lambda: (_f(100), _f(100, seed=1), np.zeros(100, np.float32)), None),
    ("where_bool", KS.where_k, lambda: (_f(50) > 0, _f(50, np.float64), np.zeros(50)), None),
    ("complex", KS.cmul, lambda: ((_f(20) + 1j * _f(20, seed=1)).astype(np.complex64),
                                  (_f(20, seed=2) + 0j).astype(np.complex64), np.zeros(20, np.complex64)), None),
    ("intops", KS.intops, lambda: (np.array([7, -7, 7, -7, 0], np.int32), np.array([2, 2, -2, -2, 3], np.int32),
                                   np.zeros((5, 3), np.int32)), None),
    ("gid_fill", KS.gid_fill, lambda: (np.zeros(300), 0.5), None),
    ("atomics_i32", KS.atomics, lambda: (_r(1).integers(-1000, 1000, 700).astype(np.int32),
                                         np.array([2**31 - 1, -2**31, 0], np.int32)), None),
    ("atomics_f32", KS.atomics, lambda: (_r(1).integers(-1000, 1000, 700).astype(np.float32),
                                         np.array([1e30, -1e30, 0], np.float32)), None),
    ("cas", KS.cas_first, lambda: (np.zeros(50, np.int64), np.array([-1], np.int64)), None),
    ("strided_3d", KS.strided_3d, lambda: (_f((4, 5, 6), np.float64)[:, ::-1, :], np.zeros((4, 5, 3))), None),
    ("annotated", KS.annotated, lambda: (np.arange(4, dtype=np.float32), 4, np.zeros(4, np.float32)), None),
    ("alias", KS.alias_writer, lambda: (np.arange(5.0), np.zeros(5)), None),
    ("helper_writer", KS.helper_writer, lambda: (np.arange(5.0), np.zeros(5)), None),
    ("shuffles", KS.xor_bcast, lambda: (np.arange(64, dtype=np.float32), np.zeros(64, np.float32)), (64, 64)),
    ("control_flow", KS.control_flow, lambda: (_f((6, 5), np.float64, 3) * 2, np.zeros((6, 5))), ((1, 1), (1, 1))),
    ("casts", KS.casts, lambda: (np.array([-2.3, -0.4, 0.0, 0.6, 1.9, 5.5], np.float32), np.zeros((6, 4), np.float32)),
     None),
    ("step_range", KS.step_range, lambda: (np.arange(7.0), np.zeros(7)), None),
    ("control_flow_f16", KS.control_flow, lambda: (_f((6, 5), np.float16, 3) * 2, np.zeros((6, 5), np.float16)),
     ((1, 1), (1, 1))),
    ("control_flow_bf16", KS.control_flow, lambda: (_f((6, 5), BF16, 3) * 2, np.zeros((6, 5), BF16)),
     ((1, 1), (1, 1))),
    ("block_sum_f16", E.block_sum, lambda: (_f(256, np.float16), np.zeros(1, np.float16)), (256, E.BLOCK)),
    ("histogram_f16", E.histogram, lambda: (_f(2000, np.float16), -2.5, 2.5, np.zeros(16, np.int32)), None),
    ("vectors", KS.vectors, lambda: (_f((20, 4)), _f((20, 4), seed=1), np.zeros((20, 5), np.float32)), None),
    ("imported_helper", KS.imported_helper, lambda: (np.linspace(-3, 3, 7), np.zeros(7)), None),
    ("closure_factory", KS.affine_2_1, lambda: (np.arange(5, dtype=np.float32), np.zeros(5, np.float32)), None),
    ("warp_sum_f32", KS.warp_sums, lambda: (_f(100), np.zeros(4, np.float32)), (128, 64)),
    ("warp_sum_i32", KS.warp_sums, lambda: (_r(2).integers(-9, 9, 100).astype(np.int32), np.zeros(4, np.int32)),
     (128, 64)),
    ("warp_sum_f16", KS.warp_sums, lambda: (_f(64, np.float16), np.zeros(2, np.float16)), (64, 64)),
    ("warp_sum_bool", KS.warp_sums, lambda: (np.arange(64) % 40 == 3, np.zeros(2, bool)), (64, 32)),
    ("warp_extrema_f32", KS.warp_extrema, lambda: (_special(np.float32), np.zeros(4, np.float32),
                                                    np.zeros(4, np.float32)), (128, 64)),
    ("warp_extrema_bf16", KS.warp_extrema, lambda: (_special(BF16), np.zeros(4, BF16), np.zeros(4, BF16)),
     (128, 64)),
    ("warp_extrema_i8", KS.warp_extrema, lambda: (_r(3).integers(-100, 100, 128).astype(np.int8),
                                                   np.zeros(4, np.int8), np.zeros(4, np.int8)), (128, 128)),
    ("unpack_2d", KS.unpack_2d, lambda: (_f((5, 7)), _f((5, 7), seed=1), np.zeros((5, 7), np.float32)), None),
    ("casts_f64", KS.casts, lambda: (np.array([-2.3, -0.4, 0.0, 0.6, 1.9, 5.5]), np.zeros((6, 4))), None),
]

# the exact (bitwise) comparison of a GPU run with the CPU run, where both compute one correctly rounded
# operation per result; elsewhere (FMA contraction, tanhf/sqrtf ulps, atomics order) a tolerance
EXACT = {"stencil", "histogram", "transpose", "where_bool", "intops", "gid_fill", "atomics_i32", "annotated",
         "alias", "helper_writer", "shuffles", "scale_add_i8", "scale_add_u16", "casts", "step_range",
         "closure_factory", "unpack_2d", "warp_sum_i32", "warp_sum_f16", "warp_sum_bool", "warp_extrema_f32",
         "warp_extrema_bf16", "warp_extrema_i8"}
