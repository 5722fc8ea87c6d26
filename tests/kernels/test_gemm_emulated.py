"""gemm.linear_tn's plumbing without a GPU: CuPy is the numpy-backed stand-in of _emu.py, and the launch goes to an
emulator of the CUTLASS kernel that works from the Params bytes alone, as the kernel does. It decodes the problem
size, the four pointers, the leading dimensions (inverting the iterator words, which are affine in them) and
alpha/beta, checks the grid, block and shared memory against the instance, checks that every row it reads or writes
lies inside an allocation the test made, and computes D = alpha * A @ B^T + beta * C in float64 by raw address.

So pointers, views, strides, out / c handling and the _gpu routing are exercised end to end; the numerics are
NumPy's. The real kernels: test_cutlass_gpu.py on a GPU."""

import ctypes
import importlib.util
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from gpk_array._kernels import gemm, loader
from gpk_array._kernels.cutlass import params as P

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gpk_kernels_emu_gemm", HERE / "_emu.py")
_emu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_emu)

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    BF16 = None
DTYPES = [np.dtype(np.float16)] + ([BF16] if BF16 is not None else [])
TOL = {"float16": 1e-3, "bfloat16": 8e-3}   # the emulator rounds D once from float64


class CutlassEmulator:
    def __init__(self, fake):
        self.allocs = []      # (start, end) of every allocation made through the fake CuPy
        self.launches = []    # (key, m, n, k, lda, ldb, ldc, ldd, alpha, beta)
        for name in ("empty", "asarray", "zeros", "ones", "full", "empty_like"):
            orig = getattr(fake, name)

            def wrapped(*a, _orig=orig, **kw):
                arr = _orig(*a, **kw)
                root = _emu._root_of(arr._a)
                start = root.__array_interface__["data"][0]
                self.allocs.append((start, start + root.nbytes))
                return arr
            setattr(fake, name, wrapped)

    def function(self, key, entry):
        return key, 227 << 10

    def _view(self, ptr, rows, cols, ld, dtype):
        """The (rows, cols) matrix at ptr with row stride ld, checked to lie inside one allocation."""
        item = dtype.itemsize
        assert ptr % 16 == 0, "operands must be 16-byte aligned"
        span = ((rows - 1) * ld + cols) * item
        assert any(s <= ptr and ptr + span <= e for s, e in self.allocs), "access outside every allocation"
        buf = (ctypes.c_char * span).from_address(ptr)
        flat = np.frombuffer(buf, dtype=dtype)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (ld * item, item), writeable=True)

    def launch(self, fn, grid, block, args, shared_mem=0):
        key = fn
        e = gemm.REGISTRY[key]
        hp = e["host_params"]
        off = hp["offsets"]
        assert len(args) == 1 and isinstance(args[0], np.ndarray) and args[0].size == 1
        raw = args[0].tobytes()
        assert len(raw) == hp["params_size"]
        m, n, k = struct.unpack_from("<3i", raw, off["problem_size"])
        assert tuple(grid) == P.sm80_schedule(e, m, n, k)["grid"]
        assert tuple(block) == (e["threads"], 1, 1) and shared_mem == hp["smem_bytes"]
        lds = {}
        for member, coeffs in hp["iterator_affine_in_ld"].items():
            words = struct.unpack_from(f"<{len(coeffs)}q", raw, off[member])
            (a0, b0) = coeffs[0]
            ld, rem = divmod(words[0] - b0, a0)
            assert rem == 0 and all(w == a * ld + b for w, (a, b) in zip(words, coeffs)), member
            lds[member] = ld
        alpha, beta = struct.unpack_from("<2f", raw, off["output_op"])
        pa, pb, pc, pd = (struct.unpack_from("<Q", raw, off[f"ptr_{x}"])[0] for x in "ABCD")
        dt = np.dtype(np.float16) if e["dtype"] == "f16" else BF16
        a = self._view(pa, m, k, lds["params_A"], dt).astype(np.float64)
        b = self._view(pb, n, k, lds["params_B"], dt).astype(np.float64)
        acc = alpha * (a @ b.T)
        if beta != 0:
            acc += beta * self._view(pc, m, n, lds["params_C"], dt).astype(np.float64)
        self._view(pd, m, n, lds["params_D"], dt)[...] = acc.astype(dt)
        self.launches.append((key, m, n, k, lds["params_A"], lds["params_B"], lds["params_C"], lds["params_D"],
                              alpha, beta))


@pytest.fixture
def emu(monkeypatch):
    fake = _emu.make_fake_cupy()
    em = CutlassEmulator(fake)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(loader, "device_arch", lambda device_id=None: "90")
    monkeypatch.setattr(loader, "launch", em.launch)
    monkeypatch.setattr(gemm, "_function", em.function)
    em.cupy = fake
    return em


def _rand(rng, shape, dt):
    return rng.uniform(-1, 1, shape).astype(dt)


def _check(got, ref, dt):
    got = np.asarray(got.get()).astype(np.float64)
    assert got.shape == ref.shape
    err = float(np.abs(got - ref).max()) / max(float(np.abs(ref).max()), 1e-30)
    assert err <= TOL[dt.name], err


def _keys(dt):
    code = "f16" if dt.name == "float16" else "bf16"
    return [f"gemm/{code}/tn/{fam}/sm80" for fam in ("small", "large")]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(1, 8, 8), (3, 24, 1000), (17, 768, 24), (130, 264, 72)],
                         ids=lambda s: "x".join(map(str, s)))
def test_contiguous(emu, shape, dt):
    m, n, k = shape
    rng = np.random.default_rng(sum(shape))
    x, w = _rand(rng, (m, k), dt), _rand(rng, (n, k), dt)
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    for key in _keys(dt) + [None]:
        y = gemm.linear_tn(emu.cupy.asarray(x), emu.cupy.asarray(w), key=key)
        _check(y, ref, dt)
        assert emu.launches[-1][:8] == (key or gemm.select(dt, "tn", m, n, k, 90), m, n, k, k, k, n, n)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_views_strides_out_and_c(emu, dt):
    cp = emu.cupy
    rng = np.random.default_rng(1)
    m, n, k = 33, 40, 48
    xb, wb = cp.asarray(_rand(rng, (m, k + 16), dt)), cp.asarray(_rand(rng, (n, k + 8), dt))
    x, w = xb[:, 8:8 + k], wb[:, :k]
    ref = np.asarray(x.get()).astype(np.float64) @ np.asarray(w.get()).astype(np.float64).T
    ob = cp.asarray(np.zeros((m, n + 16), dtype=dt))
    cb = cp.asarray(_rand(rng, (m, n + 8), dt))
    c = cb[:, :n]
    cref = np.asarray(c.get()).astype(np.float64)
    for key in _keys(dt):
        y = gemm.linear_tn(x, w, out=ob[:, 8:8 + n], alpha=0.5, beta=-2.0, c=c, key=key)
        _check(y, 0.5 * ref - 2.0 * cref, dt)
        assert emu.launches[-1][4:] == (k + 16, k + 8, n + 8, n + 16, 0.5, -2.0)
        side = np.asarray(ob.get()).view(np.uint16)
        assert not side[:, :8].any() and not side[:, 8 + n:].any()
        d = cp.asarray(np.asarray(c.get()))               # in place: c is out
        assert gemm.linear_tn(x, w, out=d, beta=1.0, c=d, key=key) is d
        _check(d, ref + cref, dt)
        row = gemm.linear_tn(x[4:5], w, key=key)          # one row of a strided view: lda is irrelevant, K used
        _check(row, ref[4:5], dt)
        assert emu.launches[-1][4] == k


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_refused_before_any_launch(emu, dt):
    cp = emu.cupy
    rng = np.random.default_rng(2)
    x, w = cp.asarray(_rand(rng, (16, 72), dt)), cp.asarray(_rand(rng, (16, 72), dt))
    buf = cp.asarray(np.zeros((16, 32), dt))
    cases = [((x[:, 1:65], w[:, :64]), {}),                     # misaligned x
             ((x[:, :60], w[:, :60]), {}),                       # K = 60
             ((x, w[:12]), {}),                                  # N = 12
             ((x.T.copy().T, w), {}),                            # column-major x
             ((x, w), {"out": x[:, :16]}),                       # out overlaps x
             ((x, w), {"out": buf[:, :16], "c": buf[:, 8:24], "beta": 1.0})]  # c overlaps out, is not out
    for args, kw in cases:
        n = len(emu.launches)
        assert gemm.linear_tn(*args, **kw) is None
        with pytest.raises(ValueError):
            gemm.linear_tn(*args, key=_keys(dt)[0], **kw)
        assert len(emu.launches) == n
    y = gemm.linear_tn(x, w, c=x[:, :16], beta=1.0)            # c may overlap the inputs (all three are read)
    _check(y, x.get().astype(np.float64) @ w.get().astype(np.float64).T + x.get()[:, :16].astype(np.float64), dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_gpu_dispatch_routes_when_switched_on(emu, dt, monkeypatch):
    from gpk_array import _gpu
    monkeypatch.setattr(_gpu, "GEMM_CUTLASS", True)
    monkeypatch.setattr(_gpu, "_sm90_off", True)       # the SM80 instances, not the SM90 ones the arch would take
    cp = emu.cupy
    rng = np.random.default_rng(3)
    a = cp.asarray(_rand(rng, (2, 12, 64), dt))
    w = cp.asarray(_rand(rng, (24, 64), dt))
    y = _gpu.matmul(a, w.T)                                     # b.T is the row-major weight
    ref = np.asarray(a.get()).astype(np.float64) @ np.asarray(w.get()).astype(np.float64).T
    assert y.shape == (2, 12, 24) and emu.launches[-1][1:4] == (24, 24, 64)
    _check(y.reshape(24, 24), ref.reshape(24, 24), dt)
    bias = cp.asarray(_rand(rng, (24,), dt))
    x2 = a.reshape(24, 64)
    y = _gpu.linear(x2, w, bias, None)
    _check(y, ref.reshape(24, 24) + np.asarray(bias.get()).astype(np.float64), dt)
    n = len(emu.launches)
    assert _gpu._cutlass_tn(x2[:, :60], w[:, :60]) is None      # not covered: the caller's cuBLAS path runs
    assert _gpu._cutlass_tn(x2.astype(np.float32), w.astype(np.float32)) is None
    assert len(emu.launches) == n
