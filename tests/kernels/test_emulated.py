"""The GPU test suites (test_elementwise.py, test_reduction.py) run on the CPU against an emulated GPU
(tests/kernels/_emu.py): a numpy-backed stand-in for CuPy, and an emulator in place of the loader
that checks every launch (kernel name in the module the front end asked for, argument types and
order, block shapes, alignment of vector operands, memory bounds) and computes the kernel's result
by raw address. This exercises the front ends' layout and dispatch logic and the GPU tests
themselves without a GPU; the GPU runs of those suites check the real kernels."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gpk_kernels_emu", HERE / "_emu.py")
_emu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_emu)

FAKE = _emu.make_fake_cupy()
# too big for the emulator, or about the real device only
SKIP = {"test_more_than_2_31_elements", "test_large_full_sum"}


@pytest.fixture(autouse=True)
def emulated_gpu(monkeypatch):
    from gpk_array._kernels import elementwise, loader, reduction
    emu = _emu.Emulator()
    monkeypatch.setitem(sys.modules, "cupy", FAKE)
    monkeypatch.setattr(loader, "get_function", emu.get_function)
    monkeypatch.setattr(loader, "launch", emu.launch)
    monkeypatch.setattr(loader, "current_device_id", lambda: 0)
    monkeypatch.setattr(loader, "sm_count", lambda device_id=None: 3)
    monkeypatch.setattr(loader, "occupancy", lambda fn, threads, shared_mem=0, device_id=None: 2)
    monkeypatch.setattr(reduction, "_plans", {})  # launch plans hold kernels: the emulator's stay here
    monkeypatch.setattr(reduction, "_prepared", {})
    monkeypatch.setattr(elementwise, "_prepared", {})
    yield emu


def _load(name):
    real = sys.modules.get("cupy")
    sys.modules["cupy"] = FAKE
    try:
        spec = importlib.util.spec_from_file_location(f"gpk_emulated_{name}", HERE / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if real is not None:
            sys.modules["cupy"] = real
        else:
            sys.modules.pop("cupy", None)
    return mod


for _name in ("test_elementwise", "test_reduction"):
    _mod = _load(_name)
    for _attr, _fn in vars(_mod).items():
        if _attr.startswith("test_") and callable(_fn) and _attr not in SKIP:
            globals()[f"{_attr}__emulated_{_name[5:]}"] = _fn


def test_emulator_sees_every_path(emulated_gpu):
    """The emulated launches cover the vector, scalar, swapped-scalar and strided elementwise
    kernels and the row (warp and block, split) / column (split) / final reduction kernels."""
    import cupy
    import numpy as np

    from gpk_array._kernels import elementwise as ew
    from gpk_array._kernels import reduction as red
    x = cupy.asarray(np.arange(5000, dtype=np.float32))
    s = cupy.asarray(np.float32(2))
    ew.binary("add", x, x)
    ew.binary("subtract", x, s)
    ew.binary("subtract", s, x)
    ew.binary("less", s, x)
    ew.binary("add", x[1:], x[:-1])
    ew.unary("exp", x)
    for fin in ("last", "kernel"):
        red.CONFIG["fin"] = fin
        try:
            red.reduce("sum", x)
            red.reduce("sum", x.reshape(50, 100), 1)
            red.reduce("sum", x.reshape(2, 2500), 1)
            red.reduce("sum", x.reshape(1000, 5), 0)
            red.reduce("sum", x.reshape(50, 100), 0)
        finally:
            red.CONFIG["fin"] = "last"
    names = [n for n, _, _ in emulated_gpu.launches]
    for expect in ("gpk_add_f32_vv", "gpk_subtract_f32_vs", "gpk_subtract_f32_sv", "gpk_greater_f32_vs",
                   "gpk_add_f32_nd", "gpk_exp_f32_v", "gpk_red_sum_f32_row", "gpk_red_sum_f32_fin",
                   "gpk_red_sum_f32_col", "gpk_red_sum_f32_colv"):
        assert expect in names, (expect, names)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("cfg", [dict(fin="kernel"), dict(col_vec=False), dict(waves=3, warp_waves=0, col_waves=2),
                                 dict(unroll=8, min_blocks=2, load=1, async_=3), dict(col_tx=8, vcol_unroll=2)],
                         ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_reduction_settings(emulated_gpu, monkeypatch, cfg):
    """The GPU suite's reductions under other launch and build settings (CONFIG; GPK_RED_CONFIG)."""
    from gpk_array._kernels import reduction as red
    for k, v in cfg.items():
        monkeypatch.setitem(red.CONFIG, k.rstrip("_"), v)
    mod = _load("test_reduction")
    mod.test_float_sum_mean_prod("sum", np.dtype(np.float32))
    mod.test_float_var_std("var", np.dtype(np.float16))
    mod.test_argmax_argmin("argmax", np.dtype(np.int8))
    mod.test_max_min("max", np.dtype(np.float64))
    mod.test_layouts(np.dtype(np.float32))


def test_config_from_env(monkeypatch):
    from gpk_array._kernels import reduction as red
    for k in ("unroll", "fin", "blocks_per_sm", "col_vec"):
        monkeypatch.setitem(red.CONFIG, k, red.CONFIG[k])
    red._config_from_env("unroll=16, fin=kernel,blocks_per_sm=None,col_vec=False")
    assert (red.CONFIG["unroll"], red.CONFIG["fin"], red.CONFIG["blocks_per_sm"]) == (16, "kernel", None)
    assert red.CONFIG["col_vec"] is False
    assert "-DGPK_RED_UNROLL=16" in red.module_options("f32", "basic")
    with pytest.raises(ValueError):
        red._config_from_env("nonsense=1")


def test_chunked_strided_launches(emulated_gpu, monkeypatch):
    """Strided launches larger than the 32-bit index limit are cut into chunks."""
    import cupy
    import numpy as np

    from gpk_array._kernels import elementwise as ew
    monkeypatch.setattr(ew, "ND_LIMIT", 1000)
    import gpk_array._kernels._common as c
    h = np.arange(7 * 600, dtype=np.float64).reshape(7, 600)
    x = cupy.asarray(h)
    got = ew.binary("add", x[:, 1:], x[:, :-1]).get()
    np.testing.assert_array_equal(got, h[:, 1:] + h[:, :-1])
    got = ew.unary("negative", x.T).get()
    np.testing.assert_array_equal(got, -h.T)
    nd_launches = [ln for ln in emulated_gpu.launches if ln[0].endswith("_nd")]
    assert len(nd_launches) >= 5
    assert c.ND_LIMIT == (1 << 31) - 1


def test_b2_falls_back_where_its_32_bit_stride_would_wrap(emulated_gpu, monkeypatch):
    """A row broadcast whose _b2 grid-stride loop would wrap its 32-bit index takes the strided kernel, with the
    same values; where it fits (the default launch at the largest size _b2 admits) _b2 runs."""
    import cupy
    import numpy as np

    from gpk_array._kernels import elementwise as ew
    h = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    bias = np.arange(32, dtype=np.float32)
    x, b = cupy.asarray(h), cupy.asarray(bias)
    np.testing.assert_array_equal(ew.binary("add", x, b).get(), h + bias)
    assert emulated_gpu.launches[-1][0] == "gpk_add_f32_b2"
    monkeypatch.setattr(ew, "stride_fits_u32", lambda nvec, grid, tile: False)
    out = cupy.empty((64, 32), np.float32)   # out=: not a prepared launch
    np.testing.assert_array_equal(ew.binary("add", x, b, out=out).get(), h + bias)
    assert emulated_gpu.launches[-1][0] == "gpk_add_f32_nd"


@pytest.mark.parametrize("threads", [64, 128, 256, 384, 512, 1024])
def test_b2_stride_bound(monkeypatch, threads):
    """stride_fits_u32 against the kernel's loop: the largest base a thread computes (the one past its last vector)
    is below nvec + grid * tile; power-of-two tiles always fit at the largest nvec _b2 admits (2^31 - 1 vectors),
    others can wrap there (threads 384: a review's finding), and are then declined."""
    from gpk_array._kernels import elementwise as ew
    from gpk_array._kernels._common import unroll_for
    monkeypatch.setitem(ew.CONFIG, "threads", threads)
    for waves in (0, 1):
        monkeypatch.setitem(ew.CONFIG, "waves", waves)
        monkeypatch.setitem(ew.CONFIG, "blocks_per_sm", 8)
        monkeypatch.setattr(ew.loader, "sm_count", lambda device_id=None: 132)
        for unroll in (2, 4, 8):
            for nvec in ((1 << 31) - 1, (1 << 31) - 256, 12345):
                grid, block = ew._vec_grid(None, nvec * 4, 4, unroll, 0)
                tile = block * unroll_for(unroll, 4)
                # the largest base of the loop (first bases s < grid * tile, step grid * tile, stop at nvec)
                step = grid * tile
                worst = max(s + step * ((nvec - 1 - s) // step + 1) for s in
                            {min(step, nvec) - 1, (nvec - 1) % step, 0} if s < nvec)
                assert worst < nvec + step
                fits = ew.stride_fits_u32(nvec, grid, tile)
                if threads & (threads - 1) == 0:
                    assert fits, (threads, waves, unroll, nvec)
                if not fits:
                    assert nvec > 1 << 30
                if (threads, waves, nvec) == (384, 0, (1 << 31) - 256):
                    assert not fits   # 1398102 blocks of 1536 vectors (unroll 4): the last ones would wrap


def test_benchmark_code_runs(emulated_gpu):
    """benchmarks/kernels_bench.py end to end on the emulated GPU (times are fake; the code paths,
    the result checks against "CuPy" and the row format are real)."""
    spec = importlib.util.spec_from_file_location("gpk_kernels_bench", HERE.parents[1] / "benchmarks" /
                                                  "kernels_bench.py")
    kb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kb)
    for kind in ("elementwise", "reduction"):
        rows = kb.run(kind, sizes=(12, 14), reps=20, warmup=1)
        assert rows and all("error" not in r for r in rows), [r for r in rows if "error" in r]
        assert all(r["ok"] in (True, None) for r in rows), [r for r in rows if r["ok"] is False]
        assert {"kind", "op", "dtype", "n", "ours_gbs", "cupy_gbs", "ratio"} <= set(rows[0])
    for kind in ("elementwise_tune", "reduction_tune"):
        rows = kb.run(kind, sizes=(11,), reps=20, warmup=0)
        assert rows and all("config" in r for r in rows)
    with pytest.raises(ValueError):
        kb.run("nonsense")


def test_split_counters_per_thread_on_the_per_thread_default_stream(emulated_gpu, monkeypatch):
    """The last-block-done counters are per stream; cudaStreamPerThread (handle 2) is a different stream in every
    thread, so there they are per thread too (two threads' split reductions must not count into one buffer)."""
    import threading
    from gpk_array._kernels import reduction as red
    monkeypatch.setattr(red, "_counter_bufs", {})
    s = FAKE.cuda.get_current_stream()
    monkeypatch.setattr(s, "ptr", red._PER_THREAD_STREAM)
    mine = red._counters(8)
    assert red._counters(8) is mine                      # reused within the thread
    other = []
    t = threading.Thread(target=lambda: other.append(red._counters(8)))
    t.start()
    t.join()
    assert other[0] is not mine
    monkeypatch.setattr(s, "ptr", 1)
    assert red._counters(8) is not mine                  # an ordinary stream: its own buffer, shared by threads


def test_prepared_reductions_reused_and_keyed(emulated_gpu, monkeypatch):
    """A repeated reduction reuses its prepared launches (one entry per call signature, the same launches as the
    first call) and gives NumPy's answer every time; what changes the launches (alignment of a vector column
    input, CONFIG, the current device) is part of the key or sends the call down the full path."""
    import cupy
    import numpy as np

    from gpk_array._kernels import reduction as red
    rng = np.random.default_rng(7)
    h = rng.standard_normal(6000).astype(np.float32)
    x = cupy.asarray(h)
    cases = [("sum", h, x, None), ("sum", h.reshape(60, 100), x.reshape(60, 100), 0),
             ("max", h.reshape(60, 100), x.reshape(60, 100), 1),
             ("sum", h.reshape(60, 100).T, x.reshape(60, 100).T, 1),          # F order: the transpose's kernel
             ("var", h.reshape(20, 30, 10), x.reshape(20, 30, 10), (0, 2)),   # a reordered copy, and the mean
             ("argmax", h.reshape(60, 100), x.reshape(60, 100), None),
             ("sum", h[1:4997].reshape(1249, 4), x[1:4997].reshape(1249, 4), 0)]  # misaligned for 16-byte loads
    ref = {"sum": np.sum, "max": np.max, "var": np.var, "argmax": lambda a, axis: np.argmax(a, axis)}
    for op, hv, xv, axis in cases:
        want = ref[op](hv.astype(np.float64), axis=axis)
        n0 = len(emulated_gpu.launches)
        first = red.reduce(op, xv, axis)
        kernels = [k for k, _, _ in emulated_gpu.launches[n0:]]
        size = len(red._prepared)
        for _ in range(2):
            n0 = len(emulated_gpu.launches)
            again = red.reduce(op, xv, axis)
            assert [k for k, _, _ in emulated_gpu.launches[n0:]] == kernels
            assert len(red._prepared) == size
            np.testing.assert_allclose(cupy.asnumpy(again), cupy.asnumpy(first), rtol=0, atol=0)
        np.testing.assert_allclose(cupy.asnumpy(again).astype(np.float64), want, rtol=1e-5, atol=1e-4)
    # 16-byte aligned columns take the vector kernel, the same shape one element off the scalar one
    y = cupy.asarray(h)
    names = []
    for view in (y[:4000].reshape(1000, 4), y[1:4001].reshape(1000, 4)):
        n0 = len(emulated_gpu.launches)
        got = red.reduce("sum", view, 0)
        names.append([k for k, _, _ in emulated_gpu.launches[n0:]][0])
        np.testing.assert_allclose(cupy.asnumpy(got), cupy.asnumpy(view).astype(np.float64).sum(0), rtol=1e-5)
    assert names == ["gpk_red_sum_f32_colv", "gpk_red_sum_f32_col"]
    # a CONFIG change is a new key: split rows (shorter segments), then the fin kernel instead of the last block
    monkeypatch.setitem(red.CONFIG, "block_min_seg", 512)
    n0 = len(emulated_gpu.launches)
    red.reduce("sum", x)
    assert "gpk_red_sum_f32_fin" not in [k for k, _, _ in emulated_gpu.launches[n0:]]
    monkeypatch.setitem(red.CONFIG, "fin", "kernel")
    n0 = len(emulated_gpu.launches)
    got = red.reduce("sum", x)
    assert "gpk_red_sum_f32_fin" in [k for k, _, _ in emulated_gpu.launches[n0:]]
    np.testing.assert_allclose(float(cupy.asnumpy(got)), h.astype(np.float64).sum(), rtol=1e-5)
    # another current device than the array's: the full path (which switches devices), never the prepared one
    from gpk_array._kernels import loader
    calls = []
    monkeypatch.setattr(red, "_reduce_slow", lambda *a: calls.append(a) or "slow")
    monkeypatch.setattr(loader, "current_device_id", lambda: 1)
    assert red.reduce("sum", x) == "slow" and len(calls) == 1


def test_prepared_reductions_do_not_change_what_is_refused(emulated_gpu, monkeypatch):
    """A float axis raises TypeError whether or not an integer axis of equal value ran before (1.0 == 1 and hashes
    alike); a settings change through ``|=`` is a change (a new key)."""
    import cupy
    import numpy as np

    from gpk_array._kernels import reduction as red
    x = cupy.asarray(np.ones((40, 50), np.float32))
    red.reduce("sum", x, 1)
    with pytest.raises(TypeError):
        red.reduce("sum", x, 1.0)
    monkeypatch.setattr(red, "CONFIG", red.CONFIG.__class__(red.CONFIG))
    v = red.CONFIG.version
    red.CONFIG |= {"col_tx": 32}
    assert red.CONFIG.version != v and red.CONFIG["col_tx"] == 32


def test_namespace_reductions_through_our_kernels(emulated_gpu, monkeypatch):
    """The namespace's sum/prod/max/min/mean/var/std/argmax/argmin on a stand-in CUDA device (NumPy dressed as CuPy,
    tests/numpy_compat/fakegpu.py) with every route to our reduction kernels on (the checking mode), the kernels
    emulated: the CPU device's results (dtype, shape, values) or the same exception type, for 0-d, empty and
    n-d inputs, each axis form and keepdims."""
    import collections

    import gpk_array as xp
    from gpk_array import _gpu
    from gpk_array._kernels import reduction
    from tests.numpy_compat import fakegpu

    real = reduction.reduce
    seen = collections.Counter()

    def through_emulator(op, x, axis=None, keepdims=False, ddof=0):
        seen[op] += 1
        r = real(op, _emu.FakeArray(np.asarray(x).view(np.ndarray)), axis=axis, keepdims=keepdims, ddof=ddof)
        return np.asarray(r.get()).view(fakegpu.FakeCudaArray)

    def outcome(f, x, **kw):
        try:
            r = f(x, **kw)
        except Exception as e:  # noqa: BLE001 - the exception type is compared
            return type(e).__name__, None, None
        return str(r.dtype), tuple(r.shape), np.asarray(r.to_device("cpu")).astype(np.float64)

    monkeypatch.setattr(reduction, "reduce", through_emulator)
    monkeypatch.setattr(_gpu, "OWN_KERNELS_MIN", 0)
    cpu = xp.Device("cpu")
    rng = np.random.default_rng(4)
    fns = [(xp.sum, {}), (xp.prod, {}), (xp.max, {}), (xp.min, {}), (xp.mean, {}), (xp.var, {}),
           (xp.std, {"correction": 1}), (xp.sum, {"dtype": xp.float64}), (xp.argmax, {}), (xp.argmin, {})]
    compared = 0
    real_gpu_reduce = _gpu.reduce
    with fakegpu.fake_cuda_device() as gdev:
        _gpu.reduce = real_gpu_reduce  # the stand-in device stubs it out (its exit puts the real one back)
        for dt in ("bool", "int8", "uint8", "int64", "float16", "float32", "float64", "bfloat16"):
            for shape in ((), (0,), (5,), (3, 4), (2, 3, 4), (2, 0)):
                v = rng.integers(-3, 4, shape).astype(np.float64)
                if dt in ("float16", "float32", "float64", "bfloat16") and v.size > 3:
                    v.flat[2] = np.nan
                    v.flat[-1] = -np.inf
                host = v.astype(np.float32 if dt == "bfloat16" else dt)
                xc = xp.astype(xp.asarray(host, device=cpu), getattr(xp, dt))
                xg = xp.astype(xp.asarray(host, device=gdev), getattr(xp, dt))
                for axis in (None, 0, -1, (0, 1), (1, 0)):
                    for keepdims in (False, True):
                        for f, kw in fns:
                            if f in (xp.argmax, xp.argmin) and isinstance(axis, tuple):
                                continue
                            if dt == "bool" and f in (xp.mean, xp.var, xp.std):
                                continue
                            p = outcome(f, xc, axis=axis, keepdims=keepdims, **kw)
                            q = outcome(f, xg, axis=axis, keepdims=keepdims, **kw)
                            what = (f.__name__, kw, dt, shape, axis, keepdims)
                            assert p[:2] == q[:2], (what, p[:2], q[:2])
                            if p[2] is not None:
                                tol = 2e-2 if dt in ("float16", "bfloat16") else 1e-6
                                np.testing.assert_allclose(q[2], p[2], rtol=tol, atol=tol, equal_nan=True,
                                                           err_msg=str(what))
                            compared += 1
    assert compared > 3000
    assert all(seen[op] > 50 for op in ("sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin")), seen



def test_prepared_binary_launches_reused_and_keyed(emulated_gpu, monkeypatch):
    """binary() without out= reuses an earlier call's launch for the same signature (vector, swapped scalar-first,
    row/column broadcast and strided paths), with this call's data; other alignments, shapes, strides and CONFIG
    versions take the full path; results always NumPy's."""
    from gpk_array._kernels import elementwise as ew
    rng = np.random.default_rng(2)

    def arr(shape, offset=0):
        h = rng.standard_normal(int(np.prod(shape)) + offset).astype(np.float32)
        g = FAKE.asarray(h)[offset:].reshape(shape)
        return g, h[offset:].reshape(shape)

    full = []
    real = ew._binary
    monkeypatch.setattr(ew, "_binary", lambda *a: full.append(a[0]) or real(*a))
    cases = [("add", (64, 32), (64, 32), 0), ("subtract", (), (64, 32), 0), ("subtract", (64, 32), (32,), 0),
             ("divide", (64, 1), (64, 32), 0), ("add", (64, 32), (64, 32), 1), ("maximum", (5, 1, 3), (4, 3), 0)]
    for op, sa, sb, off in cases:
        for rep in range(3):
            ga, ha = arr(sa, off)
            gb, hb = arr(sb)
            got = np.asarray(ew.binary(op, ga, gb).get())
            with np.errstate(all="ignore"):
                ref = getattr(np, op)(ha.astype(np.float64), hb.astype(np.float64))
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    n_full = len(full)
    assert n_full == len(cases), full  # one full path per signature, the repeats reused it
    ga, _ = arr((64, 32))
    gb, _ = arr((64, 32))
    ew.binary("add", ga, gb)
    assert len(full) == n_full
    monkeypatch.setitem(ew.CONFIG, "threads", 64)  # a new CONFIG version: the full path again
    ew.binary("add", ga, gb)
    assert len(full) == n_full + 1
    ew.binary("add", ga, gb)
    ew.binary("add", ga.T, gb.T)  # other strides
    ew.binary("add", ga, gb, out=FAKE.empty((64, 32), np.float32))  # out= never caches
    assert len(full) == n_full + 3
