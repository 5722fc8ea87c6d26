"""The CUDA sampler kernel (gpk_array/_kernels/cuda/sampling.cu) against the NumPy sampler (run_numpy), token for
token: on the CPU through a host build of the kernel's own source against a thread emulator (tests/llm/cuda_emu:
every branch, reduction, radix select and state update of the kernel, without a GPU), and on the GPU (marked gpu)
through the real kernel, 256 sampled steps at several settings from the same logits."""
import numpy as np
import pytest

from gpk_array.llm.sampling import SamplingParams, bias_row, exp_fixed, pack_slot, penalized, run_numpy

from ..conftest import requires_gpu
from . import cuda_emu

SETTINGS = {
    "greedy": SamplingParams(),
    "t1": SamplingParams(1.0),
    "t0.7-k50": SamplingParams(0.7, top_k=50),
    "p0.9": SamplingParams(1.0, top_p=0.9),
    "k50-p0.95": SamplingParams(1.0, top_k=50, top_p=0.95),
    "minp": SamplingParams(1.0, min_p=0.05),
    "k600-p0.8": SamplingParams(1.2, top_k=600, top_p=0.8),
    "penalties": SamplingParams(1.0, repetition_penalty=1.3, presence_penalty=0.5, frequency_penalty=0.4),
    "greedy-pen-bias-lp": SamplingParams(0.0, repetition_penalty=1.3, logit_bias={5: 10.0, 7: -3.0}, logprobs=5),
    "lp20": SamplingParams(1.0, logprobs=20),
    "k3-lp0": SamplingParams(0.5, top_k=3, logprobs=0),
    "all": SamplingParams(0.9, top_k=40, top_p=0.9, min_p=0.01, repetition_penalty=1.1, presence_penalty=0.2,
                          frequency_penalty=0.1, logit_bias={1: 2.0}, logprobs=3),
}


def scenario(run, params, V, steps, *, logits_fn, slots_perm=None, prompt_len=5, seed=0):
    """A prefill row per sequence (slot i: params[i]), then decode steps over every slot feeding back the chosen
    tokens, with logits_fn(step, rng) (B, V) float32 each step; returns every output and the final state."""
    B = len(params)
    rng = np.random.default_rng(seed)
    table = np.stack([pack_slot(p, 1000 + i, prompt_len, V) for i, p in enumerate(params)])
    counts = np.full((B, V), 3, np.int32)  # stale state of an earlier sequence: the prefill resets it
    seen = np.ones((B, V), np.uint8)
    bias = np.zeros((B, V), np.float32)
    for i, p in enumerate(params):
        b = bias_row(p, V)
        if b is not None:
            bias[i] = b
    counted = np.full(B, 99, np.int64)
    prompt = rng.integers(0, V, (B, prompt_len))
    order = np.arange(B) if slots_perm is None else np.asarray(slots_perm)
    res = {"tokens": [], "lp": [], "ids": []}
    next_tok, next_pos = np.zeros(B, np.int64), np.zeros(B, np.int64)
    for step in range(steps):
        x = np.ascontiguousarray(logits_fn(step, rng), dtype=np.float32)
        out = np.zeros(B, np.int64)
        lp = np.zeros((B, 21), np.float32)
        ids = np.zeros((B, 20), np.int32)
        if step == 0:  # the prefill: rows in order's slots
            run(x[order], table, counts, seen, bias, counted, slots=order, tok=prompt[order, -1],
                pos=np.full(B, prompt_len - 1), prompt=prompt[order], out=out, logprobs=lp, logprob_ids=ids)
            tok = np.empty(B, np.int64)
            tok[order] = np.maximum(out, 0)
            pos = np.full(B, prompt_len, np.int64)
        else:
            for _ in range(2 if step == 1 else 1):  # step 1 twice: a repeated step counts nothing twice
                run(x, table, counts, seen, bias, counted, tok=tok, pos=pos, out=out, logprobs=lp, logprob_ids=ids,
                    next_tok=next_tok, next_pos=next_pos, max_pos=prompt_len + steps - 3)
            tok, pos = next_tok.copy(), next_pos.copy()
        res["tokens"].append(out)
        res["lp"].append(lp)
        res["ids"].append(ids)
    res.update(counts=counts, seen=seen, counted=counted, next_tok=next_tok, next_pos=next_pos)
    return {k: np.array(v) for k, v in res.items()}


def assert_same(a, b, lp_atol=2e-5):
    for k in ("tokens", "ids", "counts", "seen", "counted", "next_tok", "next_pos"):
        assert np.array_equal(a[k], b[k]), (k, a[k], b[k])
    assert np.allclose(a["lp"], b["lp"], atol=lp_atol, rtol=1e-6, equal_nan=True)


def normal_logits(V, scale=3.0):
    return lambda step, rng: rng.standard_normal((len(SETTINGS), V)) * scale


@pytest.fixture(scope="module")
def emu():
    if cuda_emu.compiler() is None:
        pytest.skip("no C++ compiler for the emulated kernel")
    return cuda_emu.build()


def _emu_run(emu, threads, kernel="block"):
    """The emulated kernel as a run_numpy stand-in: the one-block kernel ("block", `threads` per block), or the
    cluster kernel ("cluster": at least `threads` per block, more where the row needs them: V <= 8 blocks * 8
    elements * threads)."""
    if kernel == "block":
        return lambda *a, **kw: emu.run(*a, threads=threads, **kw)

    def run(logits, *a, **kw):
        need = -(-logits.shape[1] // (CLUSTER * CLUSTER_E * 32)) * 32
        return emu.run(logits, *a, threads=max(threads, need), cluster=True, **kw)
    return run


KERNELS = pytest.mark.parametrize("kernel", ["block", "cluster"])
CLUSTER, CLUSTER_E = 8, 8  # sampling_cluster.cuh: blocks per row, elements per thread at most


@KERNELS
@pytest.mark.parametrize("V,threads", [(3001, 32), (1000, 64), (257, 96)])
def test_emulated_kernel_matches_numpy(emu, kernel, V, threads):
    params = list(SETTINGS.values())
    kw = dict(logits_fn=normal_logits(V), slots_perm=np.roll(np.arange(len(params)), 3))
    want = scenario(run_numpy, params, V, 5, **kw)
    got = scenario(_emu_run(emu, threads, kernel), params, V, 5, **kw)
    assert_same(want, got)
    assert (want["tokens"] >= 0).all() and len(np.unique(want["tokens"][:, 1])) > 1  # it did sample


def test_emulated_kernel_with_a_full_block(emu):
    params = [SETTINGS[k] for k in ("t1", "k50-p0.95", "lp20", "penalties")]
    kw = dict(logits_fn=lambda step, rng: rng.standard_normal((4, 2500)) * 2)
    assert_same(scenario(run_numpy, params, 2500, 3, **kw), scenario(_emu_run(emu, 1024), params, 2500, 3, **kw))


@KERNELS
def test_emulated_kernel_many_rows_of_small_top_k(emu, kernel):
    """Flat logits, where the (k+1)-th token is about as likely as the k-th: 48 rows of small top-k (with and
    without top-p) over 6 steps choose only what NumPy's thresholds allow."""
    params = [SamplingParams(1.0, top_k=k, top_p=p) for k in (2, 3, 5, 9) for p in (None, 0.6, 0.3)] * 4
    kw = dict(logits_fn=lambda step, rng: rng.standard_normal((len(params), 64)) * 0.05)
    assert_same(scenario(run_numpy, params, 64, 6, **kw), scenario(_emu_run(emu, 32, kernel), params, 64, 6, **kw))


def probability_keys(x, params):
    """What a sampled row leaves in the kernel's work buffer: the float32 bits of exp_fixed((y - max) / T), y the
    penalized logits (no state: nothing seen or counted), by NumPy."""
    V = x.shape[1]
    table = np.stack([pack_slot(p, 0, 1, V) for p in params])
    zeros = np.zeros(x.shape, np.int32)
    y = penalized(x.copy(), np.arange(len(params)), table, zeros, zeros.astype(np.uint8), zeros.astype(np.float32))
    t = np.array([np.float32(max(p.temperature, 1e-5)) for p in params], dtype=np.float32)[:, None]
    with np.errstate(invalid="ignore"):
        return exp_fixed((y - y.max(1, keepdims=True)) / t).view(np.uint32), table


def test_emulated_kernel_probabilities_are_bit_exact(emu):
    """The kernel's probabilities, every bit, as NumPy's exp_fixed: no library exp, no fused multiply-add."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 3000)) * [[1], [3], [10], [30], [0.1], [5]]).astype(np.float32)
    params = [SamplingParams(t) for t in (1.0, 0.7, 1.3, 2.0, 0.05, 1e-4)]
    want, table = probability_keys(x, params)
    V = x.shape[1]
    work = np.zeros((6, V + 4), dtype=np.float32)
    emu.run(x, table, np.zeros((6, V), np.int32), np.zeros((6, V), np.uint8), np.zeros((6, V), np.float32),
            np.zeros(6, np.int64), tok=np.zeros(6), pos=np.zeros(6), threads=32, work=work)
    assert np.array_equal(work[:, :V].view(np.uint32), want)


ADVERSARIAL = {
    # every logit equal: top-k's survivors are all V (more than the shared-memory candidates), top-p by ties
    "all-equal": lambda step, rng: np.zeros((len(SETTINGS), 700)),
    # few distinct values: ties at every threshold
    "integers": lambda step, rng: rng.integers(-3, 4, (len(SETTINGS), 700)).astype(np.float32),
    # a row of NaN, one of -inf, one with +inf entries, one of huge values
    "special": lambda step, rng: _special_rows(rng),
    "wide": lambda step, rng: rng.standard_normal((len(SETTINGS), 700)) * 40,  # most probabilities below 2**-40
}


def _special_rows(rng):
    x = rng.standard_normal((len(SETTINGS), 700)).astype(np.float32)
    x[0, :] = np.nan
    x[1, :] = -np.inf
    x[2, [3, 300, 301]] = np.inf
    x[3] = np.where(rng.random(700) < 0.5, 3e38, -3e38)
    x[4, ::2] = np.nan
    x[5] = -0.0
    x[5, ::3] = 0.0
    return x


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
@KERNELS
def test_emulated_kernel_on_ties_and_special_values(emu, kernel, case):
    params = list(SETTINGS.values())
    kw = dict(logits_fn=ADVERSARIAL[case])
    want = scenario(run_numpy, params, 700, 3, **kw)
    assert_same(want, scenario(_emu_run(emu, 64, kernel), params, 700, 3, **kw))
    if case == "special":
        assert (want["tokens"][:, :2] == -1).all() and set(want["tokens"][:, 2]) <= {3, 300, 301}


@pytest.mark.parametrize("V", [1, 5, 33])
@KERNELS
def test_emulated_kernel_on_tiny_vocabularies(emu, kernel, V):
    params = [SamplingParams(1.0, top_k=3, top_p=0.5, logprobs=20), SamplingParams(1.0, logprobs=2),
              SamplingParams(0.0, logprobs=1), SamplingParams(2.0, top_k=V, min_p=0.5)]
    kw = dict(logits_fn=lambda step, rng: rng.standard_normal((4, V)), prompt_len=2)
    assert_same(scenario(run_numpy, params, V, 4, **kw), scenario(_emu_run(emu, 32, kernel), params, V, 4, **kw))


# --- the real kernel -------------------------------------------------------------------------------------------

def _cuda_run(dtype):
    import cupy

    from gpk_array._kernels.sampling import sample as kernel

    def run(x, table, counts, seen, bias, counted, *, slots=None, tok=None, pos=None, prompt=None, out=None,
            logprobs=None, logprob_ids=None, next_tok=None, next_pos=None, max_pos=0):
        d = {k: cupy.asarray(v) for k, v in dict(table=table, counts=counts, seen=seen, bias=bias,
                                                  counted=counted).items()}
        def i64(a):
            return None if a is None else cupy.asarray(np.asarray(a, dtype=np.int64))

        nt, npos = i64(next_tok), i64(next_pos)
        o, lp, ids = cupy.asarray(out), cupy.asarray(logprobs), cupy.asarray(logprob_ids)
        work = cupy.zeros((x.shape[0], -(-x.shape[1] // 4) * 4), dtype=cupy.float32)
        kernel(cupy.asarray(x.astype(dtype)), d["table"], d["counts"], d["seen"], d["bias"], d["counted"], work, o,
               lp, ids, tok=i64(tok), pos=i64(pos), slots=i64(slots), prompt=i64(prompt), next_tok=nt,
               next_pos=npos, max_pos=max_pos)
        for host, dev in ((counts, d["counts"]), (seen, d["seen"]), (counted, d["counted"]), (out, o),
                          (logprobs, lp), (logprob_ids, ids)):
            host[...] = dev.get()
        if next_tok is not None:
            next_tok[...], next_pos[...] = nt.get(), npos.get()
    return run


def _force(monkeypatch, kernel):
    """Route the launcher to one kernel: the one-block kernel, or the cluster kernel (which this GPU must have)."""
    from gpk_array._kernels import sampling as launcher
    if kernel == "cluster":
        assert launcher.use_cluster(50257, 1), "the cluster kernel needs SM90 or later"
    monkeypatch.setattr(launcher, "use_cluster", lambda V, rows=1: kernel == "cluster")


@pytest.mark.gpu
@requires_gpu
@KERNELS
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cuda_kernel_matches_numpy_for_256_tokens(dtype, kernel, monkeypatch):
    """Every setting, GPT-2's vocabulary, 256 steps (a prefill and 255 decode steps feeding the chosen tokens
    back): the same tokens, state and logprob ids as NumPy, logprobs to float32 accuracy; both kernels."""
    _force(monkeypatch, kernel)
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    V = 50257
    params = list(SETTINGS.values())

    def logits(step, rng):  # rounded to the dtype first, so both sides see the same values
        return (rng.standard_normal((len(params), V)) * 3).astype(dt).astype(np.float32)
    want = scenario(run_numpy, params, V, 256, logits_fn=logits, slots_perm=np.roll(np.arange(len(params)), 5))
    got = scenario(_cuda_run(dt), params, V, 256, logits_fn=logits, slots_perm=np.roll(np.arange(len(params)), 5))
    assert_same(want, got, lp_atol=5e-5)


@pytest.mark.gpu
@requires_gpu
@KERNELS
def test_cuda_kernel_on_flat_logits(kernel, monkeypatch):
    """GPT-2's vocabulary with logits of a random-weight model's spread (s = 0.5: most tokens within a factor of
    e**2 of the likeliest, so top-p keeps most of the row and its threshold falls among thousands of tokens),
    float16, 64 steps: NumPy's tokens."""
    _force(monkeypatch, kernel)
    V = 50257
    params = list(SETTINGS.values())

    def logits(step, rng):
        return (rng.standard_normal((len(params), V)) * 0.5).astype(np.float16).astype(np.float32)
    want = scenario(run_numpy, params, V, 64, logits_fn=logits)
    assert_same(want, scenario(_cuda_run(np.dtype(np.float16)), params, V, 64, logits_fn=logits), lp_atol=5e-5)


@pytest.mark.gpu
@requires_gpu
def test_cuda_kernel_probabilities_are_bit_exact(monkeypatch):
    """The real kernel's probabilities, every bit, as NumPy's (GPT-2's vocabulary, temperatures from 1e-4 to 2):
    the one-block kernel, which leaves them in its work buffer (the cluster kernel keeps them in registers; its
    tokens are checked above)."""
    _force(monkeypatch, "block")
    import cupy

    from gpk_array._kernels.sampling import sample as kernel
    rng = np.random.default_rng(8)
    V = 50257
    x = (rng.standard_normal((6, V)) * [[1], [3], [10], [30], [0.1], [5]]).astype(np.float32)
    params = [SamplingParams(t) for t in (1.0, 0.7, 1.3, 2.0, 0.05, 1e-4)]
    want, table = probability_keys(x, params)
    c = cupy.asarray
    work = cupy.zeros((6, V + 3), dtype=cupy.float32)  # rows of a multiple of 4
    kernel(c(x), c(table), cupy.zeros((6, V), cupy.int32), cupy.zeros((6, V), cupy.uint8),
           cupy.zeros((6, V), cupy.float32), cupy.zeros(6, cupy.int64), work, cupy.zeros(6, cupy.int64),
           cupy.zeros((6, 21), cupy.float32), cupy.zeros((6, 20), cupy.int32), tok=cupy.zeros(6, cupy.int64),
           pos=cupy.zeros(6, cupy.int64))
    assert np.array_equal(work.get()[:, :V].view(np.uint32), want)


@pytest.mark.gpu
@requires_gpu
@KERNELS
@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_cuda_kernel_on_ties_and_special_values(case, kernel, monkeypatch):
    _force(monkeypatch, kernel)
    params = list(SETTINGS.values())
    want = scenario(run_numpy, params, 700, 8, logits_fn=ADVERSARIAL[case])
    assert_same(want, scenario(_cuda_run(np.float32), params, 700, 8, logits_fn=ADVERSARIAL[case]))


@KERNELS
def test_the_launcher_passes_what_the_kernel_takes(emu, monkeypatch, kernel):
    """gpk_array._kernels.sampling.sample (the launcher the engine calls on CUDA) with numpy-backed stand-ins for
    CuPy arrays, its launch routed to the emulated kernel (driver.cpp's emu_sample / emu_sample_cl take the
    kernels' parameters in the kernels' order): the outputs of run_numpy, so the launcher's argument order, strides
    and scalars are right, for the one-block kernel and for the cluster kernel."""
    import ctypes
    import importlib.util
    import pathlib

    from gpk_array._kernels import loader
    from gpk_array._kernels import sampling as launcher
    spec = importlib.util.spec_from_file_location("gpk_kernels_emu",
                                                  pathlib.Path(__file__).parents[1] / "kernels" / "_emu.py")
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    launches = []

    def launch(fn, grid, block, args, shared_mem=0, pdl=False):
        assert fn == ("gpk_sample_f32" if kernel == "block" else "gpk_sample_cl_f32")
        assert block == launcher.THREADS and pdl
        launches.append(grid)
        c = []
        for a in args:
            if a is None:
                c.append(None)
            elif isinstance(a, fake.FakeArray):
                c.append(ctypes.c_void_p(a.data.ptr))
            elif a.dtype == np.int32:
                c.append(ctypes.c_int(int(a)))
            else:
                assert a.dtype == np.int64, a.dtype
                c.append(ctypes.c_longlong(int(a)))
        if kernel == "block":
            emu.fn(ctypes.c_int(32), ctypes.c_int(grid), *c)
        else:
            emu.fn_cl(ctypes.c_int(32), ctypes.c_int(grid // launcher.CLUSTER), *c)
    monkeypatch.setattr(loader, "get_function", lambda cu_file, name, options=(): name)
    monkeypatch.setattr(launcher, "use_cluster", lambda V, rows=1: kernel == "cluster")
    monkeypatch.setattr(loader, "launch", launch)
    rng = np.random.default_rng(9)
    B, V, R = 4, 301, 3
    params = [SETTINGS[k] for k in ("k50-p0.95", "penalties", "lp20", "greedy-pen-bias-lp")]
    table = np.stack([pack_slot(p, 5 + i, 4, V) for i, p in enumerate(params)])
    x = rng.standard_normal((R, V + 7)).astype(np.float32)[:, :V]  # rows with a stride beyond V
    slots, prompt = np.array([3, 0, 2]), rng.integers(0, V, (R, 4))
    state = lambda: [np.zeros((B, V), np.int32), np.zeros((B, V), np.uint8), np.zeros((B, V), np.float32),  # noqa
                     np.zeros(B, np.int64)]
    outs = lambda: [np.zeros(R, np.int64), np.zeros((R, 21), np.float32), np.zeros((R, 20), np.int32)]  # noqa
    want_state, want = state(), outs()
    nt, npos = np.zeros(B, np.int64), np.zeros(B, np.int64)
    run_numpy(np.ascontiguousarray(x), table, *want_state, slots=slots, tok=prompt[:, -1], pos=np.full(R, 3),
              prompt=prompt, out=want[0], logprobs=want[1], logprob_ids=want[2], next_tok=nt, next_pos=npos,
              max_pos=9)
    got_state, got = state(), outs()
    gt, gpos = np.zeros(B, np.int64), np.zeros(B, np.int64)
    F = fake.FakeArray
    launcher.sample(F(x), F(table), *map(F, got_state), F(np.zeros((B, V + 3), np.float32)), *map(F, got),
                    tok=F(prompt[:, -1].copy()), pos=F(np.full(R, 3)), slots=F(slots), prompt=F(prompt),
                    next_tok=F(gt), next_pos=F(gpos), max_pos=9)
    assert launches == [R if kernel == "block" else R * launcher.CLUSTER]
    for a, b in zip(want_state + want[:1] + want[2:] + [nt, npos], got_state + got[:1] + got[2:] + [gt, gpos]):
        assert np.array_equal(a, b)
    assert np.allclose(want[1], got[1], atol=2e-5, equal_nan=True)
    with pytest.raises(ValueError, match="work"):
        launcher.sample(F(x), F(table), *map(F, got_state), F(np.zeros((B, V), np.float32)), *map(F, got),
                        tok=F(prompt[:, -1].copy()), pos=F(np.full(R, 3)))
