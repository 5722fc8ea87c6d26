"""The token sampler on the host (gpk_array/llm/sampling.py) against independent float64 references: the
distribution it draws from (chi-square), which tokens min-p / top-k / top-p keep, the penalties' formulas, logprobs
against a float64 log-softmax, the documented Philox stream, numerical safety, the penalty state."""
import numpy as np
import pytest

from gpk_array.llm.sampling import (GREEDY, MIN_TEMPERATURE, SamplingParams, exp_fixed, filter_mask, pack_slot,
                                    penalized, quantize, run_numpy, sample)

from .test_philox import philox_scalar

scipy_stats = pytest.importorskip("scipy.stats")


def softmax64(x, t=1.0):
    z = (np.asarray(x, dtype=np.float64) - np.max(x)) / t
    e = np.exp(z)
    return e / e.sum()


def reference_kept(x, params):
    """The kept set by the documented definitions, in float64: min-p (p >= min_p * max p), top-k (the k largest),
    then top-p over those (the smallest head whose mass reaches top_p of theirs). None when some probability sits
    within 1e-6 (relative) of a boundary, where float64 and 40-bit fixed point may disagree. Tokens below 2**-40
    of the largest probability are never drawn (their fixed-point weight is 0)."""
    p = softmax64(x, params.temperature)
    tiny = 2.0 ** -40 * p.max()
    if np.any(np.abs(p - tiny) <= 1e-6 * tiny):
        return None
    keep = p >= tiny
    if params.min_p:
        edge = params.min_p * p.max()
        if np.any(np.abs(p - edge) <= 1e-6 * edge):
            return None
        keep &= p >= edge
    if params.top_k and params.top_k < p.size:
        keep &= p >= np.sort(p)[-params.top_k]
    if params.top_p is not None and params.top_p < 1:
        idx = np.nonzero(keep)[0]
        order = idx[np.argsort(-p[idx], kind="stable")]
        cum = np.cumsum(p[order]) / p[order].sum()
        n = int(np.searchsorted(cum, params.top_p, side="left"))
        if np.any(np.abs(cum - params.top_p) <= 1e-6):
            return None
        keep[:] = False
        keep[order[:n + 1]] = True
    return keep


SETTINGS = [
    dict(temperature=1.0),
    dict(temperature=0.6),
    dict(temperature=1.7, top_k=5),
    dict(temperature=1.0, top_p=0.8),
    dict(temperature=0.9, top_k=8, top_p=0.7),
    dict(temperature=1.0, min_p=0.1),
    dict(temperature=1.3, min_p=0.05, top_k=10, top_p=0.9),
]


@pytest.mark.parametrize("kw", SETTINGS)
def test_filters_keep_exactly_the_reference_tokens(kw):
    rng = np.random.default_rng(0)
    params = SamplingParams(**kw)
    checked = 0
    for _ in range(60):
        x = (rng.standard_normal(200) * 2.5).astype(np.float32)
        want = reference_kept(x, params)
        if want is None:
            continue
        assert np.array_equal(filter_mask(x, params), want)
        checked += 1
    assert checked >= 50


def test_top_k_keeps_ties_at_the_threshold():
    x = np.array([3.0, 1.0, 2.0, 2.0, 0.5, 2.0], dtype=np.float32)
    assert filter_mask(x, SamplingParams(1.0, top_k=2)).tolist() == [True, False, True, True, False, True]
    assert filter_mask(x, SamplingParams(1.0, top_k=6)).all() and filter_mask(x, SamplingParams(1.0, top_k=60)).all()
    assert filter_mask(x, SamplingParams(1.0, min_p=1.0)).tolist() == [True] + [False] * 5
    # top-p keeps the head reaching top_p, with the tokens tied at its last probability
    assert filter_mask(x, SamplingParams(1.0, top_p=0.5)).tolist() == [True, False, True, True, False, True]
    assert filter_mask(x, SamplingParams(1.0, top_p=1e-9)).tolist() == [True] + [False] * 5


@pytest.mark.parametrize("kw", SETTINGS)
def test_draws_follow_the_renormalized_distribution(kw):
    """20,000 tokens of one sequence (steps 0..19999) from fixed logits: chi-square against the float64
    softmax at the temperature, restricted to the reference's kept set and renormalized. (It fails for a
    sampler without the temperature, without renormalizing after a filter, or with a biased draw.)"""
    rng = np.random.default_rng(1)
    params = SamplingParams(**kw, seed=77)
    while True:
        x = (rng.standard_normal(12) * 1.2).astype(np.float32)
        kept = reference_kept(x, params)
        if kept is not None:
            break
    p = softmax64(x, params.temperature) * kept
    p /= p.sum()
    n = 20000
    draws = draw_steps(x, params, n)
    assert set(np.unique(draws)) <= set(np.nonzero(kept)[0])
    counts = np.bincount(draws, minlength=x.size)[kept]
    assert scipy_stats.chisquare(counts, p[kept] * n).pvalue > 1e-4


def draw_steps(x, params, n, generated=()):
    """Tokens 0..n-1 of a sequence with logits x at every step (and these generated tokens counted), in one
    run_numpy call of n rows (each row its own slot, all with params)."""
    V = x.size
    table = np.stack([pack_slot(params, params.seed, 1, V)] * n)
    counts = np.zeros((n, V), np.int32)
    counts[:] = np.bincount(np.asarray(generated, dtype=np.int64), minlength=V)
    out = run_numpy(np.broadcast_to(x, (n, V)), table, counts, np.zeros((n, V), np.uint8),
                    np.zeros((n, V), np.float32), np.full(n, 2 ** 62), tok=np.zeros(n), pos=np.arange(n))
    assert out[:5].tolist() == [sample(x, params, i, generated=generated) for i in range(5)]
    return out


def test_draws_are_a_function_of_seed_and_step():
    x = np.random.default_rng(2).standard_normal(50).astype(np.float32)
    params = SamplingParams(1.0, seed=5)
    a = [sample(x, params, i) for i in range(64)]
    assert a == [sample(x, params, i) for i in range(64)]
    assert a != [sample(x, SamplingParams(1.0, seed=6), i) for i in range(64)]
    assert sample(x, params, 3, seed=6) == sample(x, SamplingParams(1.0, seed=6), 3)


def test_the_documented_stream():
    """Token `step` of seed s, temperature 1, no filters: q = floor(exp_fixed(x - max) * 2**40), 64 bits R from
    Philox4x32-10 (counter (step, 0, 0, 0), key s), u = floor(R * sum(q) / 2**64), the first token whose
    running sum of q exceeds u. Recomputed here with Python integers."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(30) * 2).astype(np.float32)
    q = [int(v) for v in quantize(exp_fixed(x - x.max()))]
    for seed, step in ((0, 0), (1, 5), (2 ** 63 + 11, 2 ** 32 + 1), (123456789, 99)):
        w = philox_scalar((step & 0xFFFFFFFF, step >> 32, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))
        u = ((w[0] | w[1] << 32) * sum(q)) >> 64
        want = int(np.searchsorted(np.cumsum(q), u, side="right"))
        assert sample(x, SamplingParams(1.0, seed=seed), step) == want


def test_exp_fixed_against_float64_exp():
    z = np.concatenate([np.linspace(-28, 0, 200001, dtype=np.float32), -np.logspace(-8, 1, 1000).astype(np.float32)])
    got = exp_fixed(z).astype(np.float64)
    want = np.exp(z.astype(np.float64))
    assert np.max(np.abs(got - want) / want) < 3e-7  # within about 2.5 ulp of float32
    assert exp_fixed(np.float32(0)) == 1 and exp_fixed(np.float32(-0.0)) == 1
    assert exp_fixed(np.array([-28.5, -1e30, -np.inf, np.nan], dtype=np.float32)).tolist() == [0, 0, 0, 0]
    assert quantize(np.float32(1)) == 2 ** 40 and quantize(np.float32(2 ** -41)) == 0


def penalty_reference(x, prompt, generated, rep=1.0, pres=0.0, freq=0.0, bias=None):
    """Hugging Face's repetition penalty over prompt + generated, OpenAI's presence / frequency penalties over the
    generated tokens, then the logit bias: float64."""
    y = np.asarray(x, dtype=np.float64).copy()
    seen = sorted(set(prompt) | set(generated))
    y[seen] = np.where(y[seen] > 0, y[seen] / rep, y[seen] * rep)
    counts = np.bincount(np.asarray(generated, dtype=np.int64), minlength=y.size)
    y -= freq * counts + pres * (counts > 0)
    for k, v in (bias or {}).items():
        y[k] += v
    return y


@pytest.mark.parametrize("kw", [dict(repetition_penalty=1.3), dict(presence_penalty=0.7),
                                dict(frequency_penalty=0.45), dict(logit_bias={3: 2.5, 9: -40.0}),
                                dict(repetition_penalty=0.8, presence_penalty=-0.3, frequency_penalty=0.2,
                                     logit_bias={0: 1.0})])
def test_penalties_follow_their_formulas(kw):
    rng = np.random.default_rng(4)
    V = 40
    x = (rng.standard_normal(V) * 3).astype(np.float32)
    prompt, generated = [1, 2, 2, 5], [5, 7, 7, 7, 9, 1]
    params = SamplingParams(0.0, **kw)
    table = pack_slot(params, 0, len(prompt), V)[None]
    counts = np.bincount(generated, minlength=V).astype(np.int32)[None]
    seen = np.zeros((1, V), dtype=np.uint8)
    seen[0, prompt] = 1
    bias = np.zeros((1, V), dtype=np.float32)
    for k, v in (params.logit_bias or {}).items():
        bias[0, k] = v
    got = penalized(x[None].copy(), np.array([0]), table, counts, seen, bias)[0]
    want = penalty_reference(x, prompt, generated, kw.get("repetition_penalty", 1.0), kw.get("presence_penalty", 0.0),
                             kw.get("frequency_penalty", 0.0), kw.get("logit_bias"))
    assert np.allclose(got, want, rtol=3e-7, atol=1e-6)
    # greedy choice sees them: the argmax of the penalized logits
    assert sample(x, params, prompt=prompt, generated=generated) == int(np.argmax(want))
    assert (table[0, 6] >> np.uint64(32)) & np.uint64(GREEDY)


def test_penalties_change_sampled_choice_like_the_reference():
    """A sampled sequence with penalties draws from softmax(penalized logits): chi-square."""
    x = np.log(np.array([0.4, 0.3, 0.2, 0.1])).astype(np.float32)
    params = SamplingParams(1.0, frequency_penalty=0.5, presence_penalty=0.25, seed=9)
    generated = [0, 0, 1]
    want = softmax64(penalty_reference(x, [], generated, pres=0.25, freq=0.5))
    n = 20000
    draws = draw_steps(x, params, n, generated=generated)
    assert scipy_stats.chisquare(np.bincount(draws, minlength=4), want * n).pvalue > 1e-4


def _logprob_run(x, k, params=None):
    params = params or SamplingParams(0.0, logprobs=k)
    R, V = x.shape
    table = np.stack([pack_slot(params, 0, 1, V)] * R)
    out = np.zeros(R, dtype=np.int64)
    lp = np.zeros((R, 21), dtype=np.float32)
    ids = np.zeros((R, 20), dtype=np.int32)
    run_numpy(x, table, np.zeros((R, V), np.int32), np.zeros((R, V), np.uint8), np.zeros((R, V), np.float32),
              np.zeros(R, np.int64), tok=np.zeros(R), pos=np.zeros(R), out=out, logprobs=lp, logprob_ids=ids)
    return out, lp, ids


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_logprobs_against_a_float64_log_softmax(dtype):
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 500)) * 4).astype(dt)
    out, lp, ids = _logprob_run(x, 7)
    x64 = x.astype(np.float64)
    ref = x64 - x64.max(1, keepdims=True) - np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1, keepdims=True))
    for r in range(3):
        top = np.argsort(-x64[r], kind="stable")[:7]
        assert out[r] == top[0]
        assert ids[r, :7].tolist() == top.tolist()
        assert np.allclose(lp[r, 1:8], ref[r, top], atol=2e-5, rtol=0)
        assert abs(lp[r, 0] - ref[r, out[r]]) < 2e-5


def test_logprobs_ties_and_special_values():
    x = np.array([[1.0, 3.0, 3.0, -0.0, 0.0, np.nan, 3.0, -np.inf]], dtype=np.float32)
    out, lp, ids = _logprob_run(x, 6)
    assert out[0] == 1 and ids[0, :6].tolist() == [1, 2, 6, 0, 3, 4]  # ties: lower id first; -0 ties +0
    x64 = np.array([1, 3, 3, 0, 0, -np.inf, 3, -np.inf])
    ref = x64 - np.log(np.exp(x64).sum())
    assert np.allclose(lp[0, 1:7], ref[[1, 2, 6, 0, 3, 4]], atol=1e-6)
    inf = np.array([[1.0, np.inf, 2.0, np.inf]], dtype=np.float32)
    out, lp, ids = _logprob_run(inf, 3)
    assert out[0] == 1 and ids[0, :3].tolist() == [1, 3, 2]
    assert np.allclose(lp[0, :3], [np.log(0.5)] * 3) and lp[0, 3] == -np.inf


@pytest.mark.parametrize("t", [1e-310, 5e-324, 1e-30, MIN_TEMPERATURE / 2])
def test_tiny_temperatures_are_greedy(t):
    x = np.array([0.5, 4.0, 3.9999, -1.0], dtype=np.float32)
    assert SamplingParams(t).greedy and sample(x, SamplingParams(t, seed=1), 5) == 1
    assert not SamplingParams(MIN_TEMPERATURE).greedy


def test_one_hopeless_row_fails_alone():
    """In a batch, a row of NaN / -inf gets -1; the others are chosen as alone."""
    V = 16
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, V)).astype(np.float32)
    x[1] = np.nan
    x[2, :] = -np.inf
    params = [SamplingParams(1.0, seed=i) for i in range(4)]
    table = np.stack([pack_slot(p, p.seed, 1, V) for p in params])
    args = (np.zeros((4, V), np.int32), np.zeros((4, V), np.uint8), np.zeros((4, V), np.float32), np.zeros(4, np.int64))
    out = run_numpy(x, table, *args, tok=np.zeros(4), pos=np.zeros(4))
    assert out[1] == -1 and out[2] == -1
    assert out[0] == sample(x[0], params[0]) and out[3] == sample(x[3], params[3])
    huge = np.array([-3e38, 3e38, 3e38, 1.0], dtype=np.float32)
    assert {sample(huge, SamplingParams(0.5, top_p=0.9, seed=2), i) for i in range(100)} == {1, 2}


def test_penalty_state_counts_each_fed_token_once():
    """A step run twice (a graph's warm-up, a step launched ahead and discarded) counts its token once; the first
    row of a sequence resets its slot's counts and prompt mask."""
    V = 10
    params = SamplingParams(1.0, repetition_penalty=1.5, frequency_penalty=0.1, seed=3)
    table = pack_slot(params, 3, 3, V)[None]
    counts = np.full((1, V), 9, np.int32)
    seen = np.ones((1, V), np.uint8)
    bias = np.zeros((1, V), np.float32)
    counted = np.zeros(1, np.int64)
    x = np.zeros((1, V), np.float32)
    prompt = np.array([[4, 4, 6]])
    run_numpy(x, table, counts, seen, bias, counted, tok=[6], pos=[2], prompt=prompt)  # the prefill's row
    assert counts.sum() == 0 and np.nonzero(seen[0])[0].tolist() == [4, 6] and counted[0] == 2
    for _ in range(2):
        run_numpy(x, table, counts, seen, bias, counted, tok=[7], pos=[3])
    assert counts[0].tolist() == [0] * 7 + [1, 0, 0] and counted[0] == 3
    run_numpy(x, table, counts, seen, bias, counted, tok=[7], pos=[4])
    run_numpy(x, table, counts, seen, bias, counted, tok=[-1], pos=[5])  # a failed row's token: not counted
    assert counts[0, 7] == 2 and counts.sum() == 2


def test_next_inputs_and_slots():
    V = 8
    x = np.zeros((2, V), np.float32)
    x[0, 3] = x[1, 5] = 9
    x[1, :] = np.nan
    table = np.stack([pack_slot(SamplingParams(), 0, 1, V)] * 4)
    nt, npos = np.full(4, 7), np.full(4, 7)
    out = run_numpy(x, table, np.zeros((4, V), np.int32), np.zeros((4, V), np.uint8), np.zeros((4, V), np.float32),
                    np.zeros(4, np.int64), slots=[2, 0], tok=[0, 0], pos=[10, 30], next_tok=nt, next_pos=npos,
                    max_pos=20)
    assert out.tolist() == [3, -1] and nt.tolist() == [0, 7, 3, 7] and npos.tolist() == [20, 7, 11, 7]


def test_bad_parameters_name_the_field():
    for field, bad in (("temperature", -1), ("temperature", float("nan")), ("top_k", -1), ("top_k", 1.5),
                       ("top_p", 0), ("top_p", 1.01), ("min_p", -0.1), ("min_p", 2), ("repetition_penalty", 0),
                       ("repetition_penalty", float("inf")), ("presence_penalty", float("nan")),
                       ("frequency_penalty", "1"), ("logit_bias", [1]), ("logit_bias", {-1: 1.0}),
                       ("logit_bias", {1: float("inf")}), ("logit_bias", {True: 1.0}), ("seed", -1),
                       ("seed", 2 ** 64), ("seed", "1"), ("logprobs", 21), ("logprobs", -1), ("logprobs", True)):
        with pytest.raises(ValueError, match=field):
            SamplingParams(**{field: bad})
    SamplingParams(1.0, top_k=0, top_p=1.0, min_p=0.0, logit_bias={}, seed=2 ** 64 - 1, logprobs=20)
    assert [f for f in SamplingParams.__dataclass_fields__] == [
        "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty",
        "logit_bias", "seed", "logprobs"]
    with pytest.raises(ValueError, match="vocabulary"):
        sample(np.zeros(4), SamplingParams(logit_bias={4: 1.0}))
