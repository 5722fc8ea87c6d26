"""The fused attention kernel (cuda/attention.cu) without a GPU: its algorithm (tests/kernels/_attention_emu.py's
tile-by-tile emulation, with the kernel's roundings) against float64 softmax attention; its warp-level index
arithmetic (swizzled shared memory, ldmatrix and mma fragments driven by the kernel's lane formulas) against plain
matrix products; shared-memory bank conflicts; and the launcher's layout arithmetic (plan(), and attention() run
on a fake CuPy whose kernel reads and writes memory by the addresses and strides the launcher passes)."""
import sys

import numpy as np
import pytest

from gpk_array._kernels import attention as attn
from gpk_array._kernels import loader
from tests.kernels import _attention_emu as emu
from tests.kernels import _emu

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    BF16 = None

DTYPES = [np.dtype(np.float16)] + ([BF16] if BF16 is not None else [])
# max |emulated - float64| over max |float64|: float16 P and V roundings ~1e-3, bfloat16's ~8x larger
TOL = {"float16": 2e-3, "bfloat16": 1e-2}


def _rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _check(got, want, dtype, what):
    got = got.astype(np.float64)
    assert np.all(np.isfinite(got)), f"{what}: non-finite output at {np.argwhere(~np.isfinite(got))[:5].tolist()}"
    err = np.abs(got - want)
    rel = err.max() / max(np.abs(want).max(), 1e-30)
    where = np.unravel_index(err.argmax(), err.shape)
    assert rel <= TOL[dtype.name], f"{what}: max abs error {err.max():.3g} at {where} (relative {rel:.3g})"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("D,bm", [(64, 64), (64, 128), (128, 64)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("T", [1, 7, 64, 65, 127, 200])
def test_emulation_matches_float64(dtype, D, bm, causal, T):
    rng = np.random.default_rng(T * 7 + D)
    q, k, v = (_rand(rng, (2, 2, T, D), dtype) for _ in range(3))
    scale = D ** -0.5
    _check(emu.emulate(q, k, v, causal, scale, bm), emu.reference(q, k, v, causal, scale), dtype,
           f"T={T} D={D} bm={bm} causal={causal}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_emulation_long_sequence(dtype):
    rng = np.random.default_rng(5)
    T, D = 1031, 64   # 17 query tiles, a tail of 7 rows and keys
    q, k, v = (_rand(rng, (1, 1, T, D), dtype) for _ in range(3))
    _check(emu.emulate(q, k, v, True, D ** -0.5), emu.reference(q, k, v, True, D ** -0.5), dtype, "T=1031")


@pytest.mark.parametrize("Lq,Lk", [(1, 300), (7, 64), (65, 130), (64, 65), (100, 1000), (129, 200)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("bm", [64, 128])
def test_emulation_fewer_queries_than_keys(Lq, Lk, causal, bm):
    """Queries are the last Lq positions of the keys (a continued prefill): the diagonal sits at j = i + Lk - Lq,
    crossing tile boundaries at every offset."""
    rng = np.random.default_rng(Lq * 1000 + Lk)
    dt = np.dtype(np.float16)
    q = _rand(rng, (1, 2, Lq, 64), dt)
    k, v = (_rand(rng, (1, 2, Lk, 64), dt) for _ in range(2))
    _check(emu.emulate(q, k, v, causal, 0.125, bm), emu.reference(q, k, v, causal, 0.125), dt,
           f"Lq={Lq} Lk={Lk} bm={bm}")


def test_emulation_online_softmax_rescales():
    """Scores that grow by hundreds from one key tile to the next (old maxima's weights underflow to 0) and that
    fall (later tiles contribute nothing): the running max, the rescaling and the -inf guard at work."""
    dt = np.dtype(np.float16)
    rng = np.random.default_rng(11)
    T, D = 256, 64
    q = _rand(rng, (1, 1, T, D), dt)
    k = _rand(rng, (1, 1, T, D), dt)
    v = _rand(rng, (1, 1, T, D), dt)
    ramp = np.linspace(-30, 30, T).astype(np.float32)
    k = (k.astype(np.float32) * 0.1 + ramp[None, None, :, None] * np.sign(q.astype(np.float32).mean(
        axis=2, keepdims=True))).astype(dt)
    for scale in (1.0, -1.0, 4.0):
        _check(emu.emulate(q, k, v, True, scale), emu.reference(q, k, v, True, scale), dt, f"scale={scale}")


def test_emulation_scale_zero_is_the_running_mean():
    dt = np.dtype(np.float16)
    rng = np.random.default_rng(2)
    q, k, v = (_rand(rng, (1, 1, 130, 64), dt) for _ in range(3))
    got = emu.emulate(q, k, v, True, 0.0).astype(np.float64)
    want = np.cumsum(v[0, 0].astype(np.float64), axis=0) / np.arange(1, 131)[:, None]
    assert np.abs(got[0, 0] - want).max() < 3e-3


# --- the warp level ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("D,mt,t", [(64, 1, 0), (128, 1, 0), (64, 2, 0), (64, 2, 1)])
@pytest.mark.parametrize("warp", [0, 3])
def test_fragments_compute_the_products(D, mt, t, warp):
    """S = Q K^T and O = P V of one key tile as the kernel's ldmatrix / mma sequence computes them (m-tile t of a
    warp with mt of them), and the output staged through shared memory, against NumPy's products (on exactly
    representable half-precision values)."""
    rng = np.random.default_rng(D + warp + 10 * mt + t)
    dt = np.float16
    q = rng.integers(-4, 5, (64 * mt, D)).astype(dt)
    k = rng.integers(-4, 5, (emu.BN, D)).astype(dt)
    v = rng.integers(-4, 5, (emu.BN, D)).astype(dt)
    p = (rng.integers(0, 9, (16, emu.BN)) / 8).astype(dt)
    S, O, staged = emu.warp_tile(q, k, v, p, warp, D, mt, t)
    r0 = 16 * mt * warp + 16 * t
    rows = slice(r0, r0 + 16)
    np.testing.assert_array_equal(S, q[rows].astype(np.float64) @ k.astype(np.float64).T)
    np.testing.assert_array_equal(O, p.astype(np.float64) @ v.astype(np.float64))
    np.testing.assert_array_equal(staged, O)


def test_fragments_catch_a_wrong_formula(monkeypatch):
    """The warp-level check can fail: a swizzle that forgets the XOR on reads (writes keep it) breaks S."""
    rng = np.random.default_rng(0)
    q = rng.integers(-4, 5, (64, 64)).astype(np.float16)
    k = rng.integers(-4, 5, (64, 64)).astype(np.float16)
    S_ok, _, _ = emu.warp_tile(q, k, k, np.ones((16, 64), np.float16), 0, 64)
    real = emu.swz
    calls = {"n": 0}

    def skewed(row, chunk, D):
        calls["n"] += 1
        return real(row, chunk, D) if calls["n"] <= 3 * 512 else row * D + (chunk << 3)
    monkeypatch.setattr(emu, "swz", skewed)
    S_bad, _, _ = emu.warp_tile(q, k, k, np.ones((16, 64), np.float16), 0, 64)
    assert not np.array_equal(S_bad, S_ok)


@pytest.mark.parametrize("D,mt", [(64, 1), (128, 1), (64, 2)])
def test_no_bank_conflicts(D, mt):
    for t in range(mt):
        for kk in range(D // 16):
            for warp in range(4):
                assert emu.phase_conflicts(emu.ldmatrix_phase_addrs("q", D, warp, kk, 0, mt, t)) == 0
    for kind, steps in (
                        ("k", [(kk, jj) for kk in range(D // 16) for jj in range(emu.BN // 16)]),
                        ("v", [(kk, dd) for kk in range(emu.BN // 16) for dd in range(D // 16)])):
        for kk, jj in steps:
            for warp in range(4):
                addrs = emu.ldmatrix_phase_addrs(kind, D, warp, kk, jj)
                assert emu.phase_conflicts(addrs) == 0, (kind, kk, jj, warp)
    _, writes = emu.load_tile(np.zeros((64 * mt, D), np.float16), 64 * mt, D)
    for addrs in writes:                       # cp.async: each warp's 32 16-byte writes, 8 lanes per phase
        for w in range(4):
            assert emu.phase_conflicts(addrs[32 * w:32 * w + 32]) == 0
    for n in range(D // 8):                    # the output staging: 4-byte stores, all 32 lanes in one phase
        for half in (0, 8):
            banks = {((emu.swz(lane // 4 + half, n, D) + 2 * (lane % 4)) * 2 // 4) % 32 for lane in range(32)}
            assert len(banks) == 32


# --- the launcher's layout arithmetic ----------------------------------------------------------------------------


def _strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def test_plan_fused_qkv_views():
    B, T, H, D = 2, 100, 12, 64
    base = _strides((B, T, 3, H, D))                       # (B, T, 3, H, D) contiguous
    qkv = (base[0], base[3], base[1], 1)                   # q/k/v as (B, H, T, D) views
    out = (T * H * D, D, H * D, 1)                         # the (B, T, H, D) result viewed as (B, H, T, D)
    ptr = 1 << 20
    p = attn.plan((B, H, T, D), (B, H, T, D), (B, H, T, D), [qkv, qkv, qkv, out],
                  (ptr, ptr + 2 * H * D, ptr + 4 * H * D, 4 * ptr), 2, True)
    assert p["grid"] == (B * H, 2) and p["block"] == 128 and p["d"] == 64
    assert (p["B"], p["H"], p["Lq"], p["Lk"]) == (B, H, T, T)
    assert p["strides"] == [T * 3 * H * D, D, 3 * H * D] * 3 + [T * H * D, D, H * D]


def test_plan_pads_and_collapses_leading_axes():
    c = _strides((5, 64))
    p = attn.plan((5, 64), (7, 64), (7, 64), [c, _strides((7, 64)), _strides((7, 64)), c], (0, 0, 0, 0), 2, True)
    assert p["grid"] == (1, 1) and p["strides"][:3] == [0, 0, 64]
    s5 = _strides((2, 3, 4, 9, 128))                         # (2, 3, 4) leading axes collapse to (24,)
    p = attn.plan((2, 3, 4, 9, 128), (2, 3, 4, 9, 128), (2, 3, 4, 9, 128), [s5] * 4, (0,) * 4, 2, False)
    assert p["grid"] == (24, 1) and p["H"] == 24 and p["B"] == 1
    q = (2 * 12 * 9 * 128, 4 * 9 * 128, 9 * 128, 128, 1)      # axis 0 strided by 2: (2,) and (3, 4) -> B 2, H 12
    p = attn.plan((2, 3, 4, 9, 128), (2, 3, 4, 9, 128), (2, 3, 4, 9, 128), [q, q, q, s5], (0,) * 4, 2, False)
    assert (p["B"], p["H"]) == (2, 12) and p["strides"][:3] == [2 * 12 * 9 * 128, 9 * 128, 128]
    odd = (1000, 7 * 96, 96 * 2, 96, 1)                       # three axes that cannot merge
    assert attn.plan((2, 3, 4, 9, 128), (2, 3, 4, 9, 128), (2, 3, 4, 9, 128), [odd, s5, s5, s5], (0,) * 4, 2,
                     False) is None


@pytest.mark.parametrize("why,args", [
    ("head dim 32", dict(shape=(1, 1, 8, 32))),
    ("head dim 96", dict(shape=(1, 1, 8, 96))),
    ("float32", dict(itemsize=4)),
    ("causal with more queries than keys", dict(k_len=4)),
    ("no queries", dict(shape=(1, 1, 0, 64))),
    ("row stride not a multiple of 8", dict(row_stride=68)),
    ("last axis strided", dict(last=2)),
    ("misaligned pointer", dict(ptr=8)),
])
def test_plan_declines(why, args):
    shape = args.get("shape", (1, 2, 8, 64))
    kshape = shape[:2] + (args.get("k_len", shape[2]), shape[3])
    st = list(_strides(shape))
    if "row_stride" in args:
        st[2] = args["row_stride"]
    if "last" in args:
        st[3] = args["last"]
    kst = _strides(kshape)
    p = attn.plan(shape, kshape, kshape, [tuple(st), kst, kst, _strides(shape)], (args.get("ptr", 0), 0, 0, 0),
                  args.get("itemsize", 2), True)
    assert p is None, why


def test_block_m_rule():
    assert attn.choose_block_m(64, 8 * 12, 1024, 132) == 128      # 768 CTAs of 128 queries
    assert attn.choose_block_m(64, 12, 1024, 132) == 64           # 96 would leave SMs idle
    assert attn.choose_block_m(128, 8 * 12, 1024, 132) == 64      # no 128-query kernel for D = 128
    s = _strides((1, 2, 8, 128))
    assert attn.plan((1, 2, 8, 128), (1, 2, 8, 128), (1, 2, 8, 128), [s] * 4, (0,) * 4, 2, True, 128) is None
    assert attn.smem_bytes(64, 128) == 48 * 1024 and attn.smem_bytes(128) == 80 * 1024


def test_plan_drops_strides_of_extent_one_axes():
    """An axis of extent 1 may carry any stride (CuPy keeps whatever the view had): it must not decline."""
    shape = (1, 1, 1, 64)
    st = (12345, 77, 3, 1)
    p = attn.plan(shape, (1, 1, 5, 64), (1, 1, 5, 64), [st, _strides((1, 1, 5, 64)), _strides((1, 1, 5, 64)),
                                                         _strides(shape)], (0,) * 4, 2, True)
    assert p is not None and p["strides"][:3] == [0, 0, 0]


# --- attention() on a fake CuPy: the kernel reads what the launcher's pointers and strides address --------------


class _FakeKernel:
    def __init__(self, name):
        self.name = name
        self.max_dynamic_shared_size_bytes = 48 * 1024


class _Launches:
    """loader.get_function / loader.launch stand-ins: the launch reads q, k, v by raw address with the strides it is
    given (exactly as attention.cu forms its addresses), runs the emulation, and writes o the same way."""

    def __init__(self):
        self.calls = []

    def get_function(self, cu_file, name, options=()):
        assert cu_file == attn.ATTN_FILE and name in attn.expected_kernels()[cu_file]
        return _FakeKernel(name)

    def launch(self, fn, grid, block, args, shared_mem=0, pdl=False):
        q, k, v, o = args[:4]
        H, Lq, Lk = (int(a) for a in args[4:7])
        st = [int(a) for a in args[7:19]]
        sl2, causal = float(args[19]), int(args[20])
        d, _, m = fn.name.rsplit("_d", 1)[1].partition("_m")
        d, bm = int(d), int(m or 64)
        assert block == 128 and shared_mem == attn.smem_bytes(d, bm)
        assert shared_mem <= 48 * 1024 or fn.max_dynamic_shared_size_bytes >= shared_mem
        assert pdl
        for a in (q, k, v, o):
            assert a.data.ptr % 16 == 0
        assert all(s % 8 == 0 for s in st)
        BH, nq = grid
        assert nq == -(-Lq // bm) and BH % H == 0
        B = BH // H
        self.calls.append((fn.name, grid))
        self.bm = bm

        def offsets(L, sb, sh, sr):  # element offsets from each base, as attention.cu forms them
            b, h, r, c = np.meshgrid(np.arange(B), np.arange(H), np.arange(L), np.arange(d), indexing="ij")
            return b * sb + h * sh + r * sr + c

        offs = [offsets(L, *st[3 * i:3 * i + 3]) for i, L in enumerate((Lq, Lk, Lk, Lq))]
        qv, kv, vv = (_emu.Memory(a).read(off) for a, off in zip((q, k, v), offs[:3]))
        res = emu.emulate(qv, kv, vv, bool(causal), sl2 / 1.4426950408889634, bm)
        _emu.Memory(o).write(offs[3], res)


@pytest.fixture
def fake_gpu(monkeypatch):
    fake = _emu.make_fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)

    def install():
        lx = _Launches()
        monkeypatch.setattr(loader, "get_function", lx.get_function)
        monkeypatch.setattr(loader, "launch", lx.launch)
        monkeypatch.setattr(loader, "current_device_id", lambda: 0)
        monkeypatch.setattr(loader, "sm_count", lambda device_id=None: 132)
        monkeypatch.setattr(attn, "_ready", {})
        return lx
    return fake, install


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("D,bm", [(64, 64), (64, 128), (128, 64)])
def test_attention_on_fused_qkv_views(fake_gpu, dtype, D, bm):
    """GPT-2's layout: q, k, v are (B, H, T, D) views of one (B, T, 3, H, D) projection, and the result comes back
    as a (B, H, T, D) view of a (B, T, H, D) array."""
    fake, install = fake_gpu
    rng = np.random.default_rng(D)
    B, T, H = 2, 70, 3
    qkv = fake.asarray(_rand(rng, (B, T, 3, H, D), dtype))
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    lx = install()
    y = attn.attention(q, k, v, True, D ** -0.5, block_m=bm)
    assert y is not None and lx.calls and lx.calls[0][1] == (B * H, -(-T // bm)) and lx.bm == bm
    assert y.shape == (B, H, T, D) and y.strides == (T * H * D * 2, D * 2, H * D * 2, 2)
    host = np.asarray(qkv._a)
    want = emu.reference(*(host[:, :, i].transpose(0, 2, 1, 3) for i in range(3)), True, D ** -0.5)
    _check(np.asarray(y._a), want, dtype, "fused qkv")


def test_attention_contiguous_and_cross_lengths(fake_gpu):
    fake, install = fake_gpu
    rng = np.random.default_rng(1)
    dt = np.dtype(np.float16)
    q = fake.asarray(_rand(rng, (3, 5, 64), dt))
    k = fake.asarray(_rand(rng, (3, 40, 64), dt))
    v = fake.asarray(_rand(rng, (3, 40, 64), dt))
    install()
    y = attn.attention(q, k, v, True, 0.3)
    assert y.flags.c_contiguous and y.shape == (3, 5, 64)
    want = emu.reference(*(np.asarray(a._a)[None] for a in (q, k, v)), True, 0.3)[0]
    _check(np.asarray(y._a), want, dt, "Lq < Lk")
    assert attn.attention(k, q, q, True, 0.3) is None          # causal, more queries than keys: not covered
    y = attn.attention(k, q, q, False, 0.3)                    # but without the mask it is
    want = emu.reference(*(np.asarray(a._a)[None] for a in (k, q, q)), False, 0.3)[0]
    _check(np.asarray(y._a), want, dt, "Lq > Lk, full")


def test_attention_declines_other_dtypes_and_dims(fake_gpu):
    fake, install = fake_gpu
    install()
    f32 = fake.asarray(np.zeros((1, 2, 8, 64), np.float32))
    assert attn.attention(f32, f32, f32, True, 1.0) is None
    h32 = fake.asarray(np.zeros((1, 2, 8, 32), np.float16))
    assert attn.attention(h32, h32, h32, True, 1.0) is None
    h = fake.asarray(np.zeros((1, 2, 8, 64), np.float16))
    assert attn.attention(h, h, h, True, float("nan")) is None


def test_sdpa_routes_to_the_fused_kernel_first(monkeypatch):
    """_gpu.scaled_dot_product_attention asks the fused kernel first for 16-bit inputs without a mask, never with a
    mask or for float32, and not at all with GPK_FLASH_ATTENTION=0."""
    from gpk_array import _gpu
    seen = []
    monkeypatch.setattr(_gpu._attn, "attention", lambda q, k, v, causal, scale: seen.append(q.dtype) or "fused")
    monkeypatch.setattr(_gpu, "_get_blas", lambda: False)
    h = np.zeros((1, 2, 8, 64), np.float16)
    assert _gpu.scaled_dot_product_attention(h, h, h, None, True, 0.125) == "fused"
    assert _gpu.scaled_dot_product_attention(h, h, h, np.ones((8, 8), bool), True, 0.125) is None
    f = np.zeros((1, 2, 8, 64), np.float32)
    assert _gpu.scaled_dot_product_attention(f, f, f, None, True, 0.125) is None
    monkeypatch.setattr(_gpu, "FLASH_ATTENTION", False)
    assert _gpu.scaled_dot_product_attention(h, h, h, None, True, 0.125) is None
    assert seen == [np.float16]
