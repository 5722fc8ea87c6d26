"""One specialization per argument signature (dtype, ndim, layout, scalar kind); the language's types follow
NumPy's (NEP 50 weak Python numbers) on the CPU device; helpers (undecorated, recursive, static methods)."""
import numpy as np
import pytest

import gpk_array as gk
from gpk_array._dtypes import BF16

from . import kernels as KS


def _fresh(k):
    return gk.kernel(k.__wrapped__)


def test_one_entry_per_signature():
    k = _fresh(KS.scale_add)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    k(x, 2.0, out)
    k(x, 3.0, out)                     # same signature: a cache hit
    assert len(k.specializations) == 1
    k(x, 2, out)                       # int instead of float
    k(x.astype(np.float64), 2.0, out.astype(np.float64))
    k(x[::2], 2.0, out[:4])            # strided
    k(gk.asarray(x, device="cpu"), 2.0, gk.asarray(out, device="cpu"))   # a gpk_array Array: same key as NumPy
    keys = list(k.specializations)
    assert len(keys) == 4, keys
    assert keys[3][0] == ("A", np.dtype(np.float32), 1, "S")
    assert k.specializations[keys[0]].calls == 3 and list(k.cache_info()["calls"].values())[0] == 3


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.int8, np.uint16, np.int64])
def test_small_and_integer_dtypes(dt):
    k = _fresh(KS.scale_add)
    x = (np.arange(10) - 3).astype(dt)
    out = np.ones(10, dt)
    k(x, 2, out)
    ref = x * 2 + np.ones(10, dt)       # NumPy's own arithmetic in that dtype
    assert out.dtype == np.dtype(dt)
    np.testing.assert_array_equal(out.astype(np.float64), ref.astype(np.float64))
    assert list(k.specializations)[0][0][1] == np.dtype(dt).name
    src = k.explain(x, 2, out, print_=False)
    assert {"float16": "__half", "bfloat16": "__nv_bfloat16"}.get(np.dtype(dt).name, "") in src


def test_float16_scalar_is_strong():
    """A NumPy float16 scalar is its own dtype (strong); a Python float is weak."""
    x = np.full(4, 1000.0, np.float32)
    out = np.zeros(4, np.float32)
    k = _fresh(KS.scale_add)
    k(x, np.float16(0.1), out)
    np.testing.assert_array_equal(out, x * np.float16(0.1))
    assert ("S", "float16") in list(k.specializations)[0]


def test_helpers_recursive_and_static_methods():
    x = np.array([3.0, 5.0], np.float32)
    y = np.array([4.0, 12.0], np.float32)
    out = np.zeros(2, np.float32)
    KS.hypot_k(x, y, out)
    np.testing.assert_array_equal(out, [5.0, 13.0])
    assert KS.hypot_k._cpu.vector is not None      # pure helpers keep the loop vectorizable


def test_bool_and_complex():
    m = np.array([True, False, True])
    x = np.array([1.0, 2.0, 3.0])
    out = np.zeros(3)
    KS.where_k(m, x, out)
    np.testing.assert_array_equal(out, [1.0, -2.0, 3.0])
    a = np.array([1 + 2j, 3 - 1j], np.complex64)
    o = np.zeros(2, np.complex64)
    KS.cmul(a, a, o)
    np.testing.assert_allclose(o, a * a + 1j)


def test_python_integer_semantics():
    a = np.array([7, -7, 7, -7, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    out = np.zeros((5, 3), np.int32)
    KS.intops(a, b, out)
    np.testing.assert_array_equal(out[:, 0], a // b)
    np.testing.assert_array_equal(out[:, 1], a % b)
    np.testing.assert_array_equal(out[:, 2], a ** 2 - (a << 1) + (a & 7))


def test_work_size_and_atomics():
    out = np.zeros(300, np.float64)
    KS.gid_fill(out, 0.5)
    np.testing.assert_array_equal(out, 0.5 + np.arange(300) * KS.SCALE)
    x = np.random.default_rng(1).integers(-1000, 1000, 700).astype(np.int32)
    acc = np.array([2**31 - 1, -2**31, 0], np.int32)
    KS.atomics(x, acc)
    np.testing.assert_array_equal(acc, [x.min(), x.max(), x.sum()])
    flags = np.zeros(50, np.int64)
    slot = np.array([-1], np.int64)
    KS.cas_first(flags, slot)
    assert flags.sum() == 1 and flags[slot[0]] == 1


def test_ndindex_3d_strided_input():
    a = np.random.default_rng(2).standard_normal((4, 5, 6))[:, ::-1, :]   # negative strides
    out = np.zeros((4, 5, 3))
    KS.strided_3d(a, out)
    ref = a.sum(axis=2)[:, :, None] * (np.arange(3) + 1)
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_shuffles_xor_and_broadcast():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    KS.xor_bcast[(64, 64)](x, out)
    lane = np.arange(64) % 32
    ref = x[(np.arange(64) // 32) * 32 + (lane ^ 1)] + x[(np.arange(64) // 32) * 32]
    np.testing.assert_array_equal(out, ref)


def test_annotations_honoured():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    KS.annotated(x, 4, out)
    np.testing.assert_array_equal(out, x + 1)
    with pytest.raises(TypeError, match="'x' is annotated float32 but got a 1-d float64 array"):
        KS.annotated(x.astype(np.float64), 4, out)
    with pytest.raises(TypeError, match="'n' is annotated int"):
        KS.annotated(x, 4.0, out)
    with pytest.raises(TypeError, match="'out' is annotated as an array"):
        KS.annotated(x, 4, 1.0)


def test_effects_through_aliases_and_helpers():
    assert KS.alias_writer.effects == {"src": "R", "dst": "W"}
    assert KS.helper_writer.effects == {"src": "R", "dst": "W"}
    src = np.arange(5.0)
    dst = np.zeros(5)
    KS.helper_writer(src, dst)
    np.testing.assert_array_equal(dst, src * 2)


def test_explain_shows_everything(capsys):
    x = np.arange(8, dtype=np.float32)
    text = KS.scale_add.explain(x, 2.0, np.zeros(8, np.float32))
    assert capsys.readouterr().out.strip() == text.strip()
    for part in ("cache key: (('A', 'float32', 1, 'C'), ('S', 'f'), ('A', 'float32', 1, 'C'))",
                 "launch geometry (CUDA): grid (1, 1, 1), block (256, 1, 1)", "x: array float32 1-d layout C  access R",
                 "out: array float32 1-d layout C  access RW", "s: number float  access -", 'extern "C" __global__',
                 "NumPy-vectorized"):
        assert part in text, part


def test_gpk_arrays_on_cpu_device():
    x = gk.asarray(np.arange(6, dtype=np.float32), device="cpu")
    out = gk.zeros(6, dtype=gk.float32, device="cpu")
    KS.scale_add(x, 2.0, out)
    np.testing.assert_array_equal(np.asarray(out), np.arange(6) * 2.0)


def _control_flow_ref(x):
    out = np.zeros_like(x)
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            v = x[i, j]
            if v < -1.0:
                out[i, j] = -1.0
            elif v < 0.0:
                out[i, j] = -v
            else:
                acc = sum(v / k for k in range(1, 8, 2))
                out[i, j] = max(acc, 0.25) if j != m - 1 else min(acc, v, 2.0)
    out[-1, -1] = 7.0
    return out


def test_control_flow():
    x = np.random.default_rng(3).standard_normal((6, 5)) * 2
    out = np.zeros_like(x)
    KS.control_flow[(1, 1)](x, out)   # no launch domain of its own (the statement after the loops)
    np.testing.assert_allclose(out, _control_flow_ref(x), rtol=1e-14)


def test_casts_and_math():
    x = np.array([-2.3, -0.4, 0.0, 0.6, 1.9, 5.5], np.float32)
    out = np.zeros((6, 4), np.float32)
    KS.casts(x, out)
    t = np.trunc(x.astype(np.float64) * 3.7).astype(np.int64)
    np.testing.assert_array_equal(out[:, 0], t)
    np.testing.assert_array_equal(out[:, 1], ((t & 1) == 1) & (t >= 0))
    np.testing.assert_array_equal(out[:, 2], t.astype(np.int8))
    np.testing.assert_allclose(out[:, 3], np.floor(x * np.float32(2.5)) + np.fmod(x, np.float32(0.75)), rtol=1e-6)


def test_negative_step_range():
    x = np.arange(7.0)
    out = np.zeros(7)
    KS.step_range(x, out)
    ref = np.zeros(7)
    ref[6::-2] = x[6::-2] * 2
    np.testing.assert_array_equal(out, ref)
    assert KS.step_range._cpu.vector is not None


def test_vector_lowering_keeps_loop_semantics():
    """Locals are values, not views of the inputs; overlapping in/out arrays run as the loop (sequentially)."""
    x = np.arange(5.0)
    out = np.zeros(5)
    KS.local_update(x, out)
    np.testing.assert_array_equal(x, np.arange(5.0))
    np.testing.assert_array_equal(out, (np.arange(5.0) + 1) * 2)
    assert KS.local_update._cpu.vector is not None
    a = np.zeros(6)
    KS.shift_copy(a[:-1], a[1:])          # dst[i] = src[i] + 1 with dst = src shifted by one: a running count
    np.testing.assert_array_equal(a, np.arange(6.0))
    b = np.arange(4.0)
    KS.shift_copy(b, b)                   # the very same view: elementwise in place
    np.testing.assert_array_equal(b, np.arange(4.0) + 1)


def test_cache_info_says_why_it_specialized():
    k = _fresh(KS.scale_add)
    x = np.arange(8, dtype=np.float32)
    k(x, 2.0, x.copy())
    k(x, 2.0, x.copy())
    k(x.astype(np.float64), 2.0, np.zeros(8))
    k(x, 2, np.zeros(8, np.float32))
    info = k.cache_info()
    assert (info["specializations"], info["hits"], info["misses"]) == (3, 1, 3)
    why = list(info["why"].values())
    assert why[0] == "first call"
    assert why[1] == "x: dtype float32 -> float64; out: dtype float32 -> float64"
    assert why[2] == "s: float number -> int number"
    total = gk.kernel.cache_info()
    assert total["specializations"] >= 3 and any(v is info or v == info for v in total["per_kernel"].values())


def test_warmup_enters_specializations():
    k = _fresh(KS.scale_add)
    x = np.zeros(4, np.float32)
    specs = gk.kernel.warmup(k, [(x, 1.0, x), (x.astype(np.float16), 1.0, x.astype(np.float16))])
    assert [s.key for s in specs] == list(k.specializations)
    assert all(s.calls == 0 for s in specs)
    with pytest.raises(TypeError, match="not a @gpk_array.kernel"):
        gk.kernel.warmup(KS.scale_add.__wrapped__, [])


def test_vector_types():
    r = np.random.default_rng(5)
    p = r.standard_normal((20, 4)).astype(np.float32)
    q = r.standard_normal((20, 4)).astype(np.float32)
    out = np.zeros((20, 5), np.float32)
    KS.vectors(p, q, out)
    f = np.float32
    c = (p + (q - p) * f(0.25)) * f(2.0) - p / f(4)
    s = c[:, ::-1] + -q
    d = s[:, :2] * np.array([1.5, 0.5], np.float32)
    np.testing.assert_array_equal(out[:, :4], s)
    np.testing.assert_array_equal(out[:, 4], d[:, 0] + d[:, 1])
    v = gk.kernel.float3(1, 2, 3)
    assert (v.z, v.zx.x) == (3.0, 3.0) and type(v.x) is np.float32
    with pytest.raises(AttributeError, match="no attribute 'w'"):
        v.w


def test_helper_defined_after_the_kernel():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    KS.uses_later(x, out)
    np.testing.assert_array_equal(out, x * 3 + 1)
    assert KS.uses_later.effects == {"x": "R", "out": "W"}


def test_closures_over_constants():
    """A kernel made inside a factory may capture numbers (and functions) of the enclosing scope."""
    def make(scale, offset):
        def shift(v):
            return v + offset

        @gk.kernel
        def k(x, out):
            for i in range(x.shape[0]):
                out[i] = shift(x[i] * scale)
        return k

    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    make(2.0, 1.0)(x, out)
    np.testing.assert_array_equal(out, x * 2 + 1)
    make(-1.0, 0.5)(x, out)
    np.testing.assert_array_equal(out, -x + 0.5)


def test_helper_from_another_module():
    x = np.linspace(-3, 3, 7)
    out = np.zeros(7)
    KS.imported_helper(x, out)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-x)) + 0.5, rtol=1e-15)


def test_tuple_unpacking_in_a_2d_domain():
    """Tuple unpacking's temporaries in a 2-D domain (their CUDA names collided with the loop counters: nvcc
    refused the source; tests/kernels_user/cases.py compiles it)."""
    r = np.random.default_rng(5)
    x, y = r.standard_normal((5, 7)).astype(np.float32), r.standard_normal((5, 7)).astype(np.float32)
    out = np.zeros((5, 7), np.float32)
    KS.unpack_2d(x, y, out)
    np.testing.assert_array_equal(out, y - x)


def test_why_names_a_python_float_becoming_a_numpy_scalar():
    """A dtype equals its character code in Python (dtype('float32') == 'f'), so the reason was empty."""
    k = gk.kernel(KS.scale_add.__wrapped__)
    x = np.arange(4, dtype=np.float32)
    k(x, 2.0, np.zeros(4, np.float32))
    k(x, np.float32(2.0), np.zeros(4, np.float32))
    why = list(k.cache_info()["why"].values())
    assert why[0] == "first call" and why[1] == "s: float number -> float32 number"


def _butterfly(vals):
    """The sum of 32 lanes in the order kernel.warp_sum documents (xor offsets 16, 8, 4, 2, 1)."""
    v = list(vals)
    for off in (16, 8, 4, 2, 1):
        v = [v[lane] + v[lane ^ off] for lane in range(32)]
    assert all(x == v[0] or (x != x and v[0] != v[0]) for x in v)
    return v[0]


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32, np.int8, bool])
def test_warp_sum(dt):
    """kernel.warp_sum on the CPU device against sums of each warp's 32 values: exact for integers (int8 wraps as
    NumPy's int8 does), the documented butterfly order for floats (float16 rounds after each addition), logical or
    for bool."""
    r = np.random.default_rng(11)
    n = 100
    if dt is bool:
        x = r.random(n) < 0.02
    elif np.dtype(dt).kind == "f":
        x = r.standard_normal(n).astype(dt)
    else:
        x = r.integers(-60, 60, n).astype(dt)
    out = np.zeros(4, dt)
    with np.errstate(over="ignore"):
        KS.warp_sums[(128, 64)](x, out)
        padded = np.concatenate([x, np.zeros(128 - n, dt)]).reshape(4, 32)
        for w in range(4):
            if dt is bool:
                assert out[w] == padded[w].any()
            elif np.dtype(dt).kind == "f":
                assert out[w] == _butterfly(padded[w]) and out[w].dtype == np.dtype(dt)
            else:
                assert out[w] == padded[w].sum(dtype=dt)
    assert KS.warp_sums.effects == {"x": "R", "out": "W"}


def test_warp_sum_is_refused_in_a_loop_domain():
    with pytest.raises(TypeError, match="shfl inside a loop-domain kernel"):
        @gk.kernel
        def bad(x, out):
            for i in range(x.shape[0]):
                out[i] = gk.kernel.warp_sum(x[i])


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, "bfloat16", np.int32, np.int8, bool])
def test_warp_min_and_max(dt):
    """kernel.warp_min / warp_max on the CPU device against NumPy's per-warp min / max, with a NaN (it wins, as in
    NumPy), a warp of signed zeros only (-0.0 is the lesser: min -0.0, max +0.0) and infinities."""
    from tests.kernels_user.cases import _special
    dt = np.dtype(dt) if dt != "bfloat16" else np.dtype(__import__("ml_dtypes").bfloat16)
    if dt.kind in "fV":
        x = _special(dt)
    elif dt.kind == "b":
        x = np.arange(128) % 37 != 0
    else:
        x = np.random.default_rng(2).integers(-100, 100, 128).astype(dt)
    lo, hi = np.zeros(4, dt), np.zeros(4, dt)
    KS.warp_extrema[(128, 64)](x, lo, hi)
    w = x.reshape(4, 32).astype(np.float64 if dt.kind in "fV" else dt)
    want_lo, want_hi = w.min(axis=1), w.max(axis=1)
    np.testing.assert_array_equal(lo.astype(w.dtype), want_lo)
    np.testing.assert_array_equal(hi.astype(w.dtype), want_hi)
    if dt.kind in "fV":
        assert np.isnan(lo[1]) and np.isnan(hi[1])
        assert np.signbit(lo[2]) and not np.signbit(hi[2])
