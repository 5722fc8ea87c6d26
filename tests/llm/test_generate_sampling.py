"""Sampling through the Engine and generate(): the batched step chooses what sample() chooses from the same logits
row by row (penalty state, joins, steps launched ahead), logprobs against a float64 log-softmax, penalties and bias
as their definitions say, a failing row fails its sequence alone, engines kept across generate() calls; on a GPU
(marked gpu) the same tokens as the CPU, end to end."""
import pathlib
import threading

import numpy as np
import pytest

import gpk_array as gp
from gpk_array.llm import GPT2, GPT2Config, Engine, SamplingParams, Sequence, generate, generate_stream, random_weights
from gpk_array.llm import generate as generate_fn
from gpk_array.llm.generate import clear_engines
from gpk_array.llm.sampling import sample

from ..conftest import requires_gpu
from .test_generate import ReplayGraphs

TINY = pathlib.Path(__file__).parent / "data" / "tiny-gpt2"
_models = {}


def tiny(device="cpu"):
    key = ("tiny", str(device))
    if key not in _models:
        _models[key] = GPT2.from_pretrained(TINY, device=device, dtype=gp.float32)
    return _models[key]


def wide(device="cpu"):
    """A random float32 GPT-2 with GPT-2's vocabulary (50,257) and 512 positions, tiny layers, peaked logits."""
    key = ("wide", str(device))
    if key not in _models:
        config = GPT2Config(vocab_size=50257, n_positions=512, n_embd=64, n_layer=2, n_head=4)
        _models[key] = GPT2.from_weights(config, random_weights(config, seed=3, std=0.3), device=device,
                                         dtype=gp.float32)
    return _models[key]


class Recording:
    """The model, recording the logits row of each (cache row, fed position) it computes for a sequence (rows of
    free slots, which decode placeholders, are left out: set ``engine``)."""

    def __init__(self, model):
        self.model, self.config, self.device, self.dtype = model, model.config, model.device, model.dtype
        self.rows = {}
        self.engine = None

    def new_cache(self, *a, **kw):
        return self.model.new_cache(*a, **kw)

    def __call__(self, tokens, positions=None, **kw):
        out = self.model(tokens, positions, **kw)
        host = np.asarray(out.to_device("cpu"))
        if kw.get("rows") is not None:  # a prefill: rows (cache rows) and last (positions)
            for r, (row, last) in enumerate(zip(np.asarray(kw["rows"].to_device("cpu")).reshape(-1),
                                                np.asarray(kw["last"].to_device("cpu")).reshape(-1))):
                self.rows[(int(row), int(last))] = host[r].copy()
        else:
            pos = np.asarray(positions.to_device("cpu")).reshape(-1)
            for b, p in enumerate(pos):
                if self.engine.slots[b] is not None:
                    self.rows[(b, int(p))] = host[b, 0].copy()
        return out


def replay(rec, seq, slot):
    """The tokens sample() chooses for seq from the logits the engine computed, one token at a time."""
    out = []
    n = len(seq.prompt)
    for i in range(len(seq.tokens)):
        x = rec.rows[(slot, n - 1 + i)]
        out.append(sample(x, seq.params, i, seed=seq.seed, prompt=seq.prompt, generated=out))
    return out


PARAMS = [SamplingParams(1.0, seed=1), SamplingParams(0.8, top_k=20, top_p=0.9, seed=2),
          SamplingParams(1.1, min_p=0.05, repetition_penalty=1.4, presence_penalty=0.6, frequency_penalty=0.3,
                         seed=3),
          SamplingParams(0.0, frequency_penalty=2.0, logit_bias={7: 3.0}, seed=4)]


@pytest.mark.parametrize("graphs", [False, "replay"])
def test_engine_chooses_what_sample_chooses(graphs):
    """Four sequences with different parameters, two joining later in other slots, steps launched ahead (the
    replayed-graph stand-in): every token is sample()'s from the logits the engine computed."""
    rec = Recording(tiny())
    engine = rec.engine = Engine(rec, max_batch=4, max_len=96, cuda_graphs=ReplayGraphs() if graphs else False,
                                 kv_block=16)
    rng = np.random.default_rng(0)
    seqs = [Sequence(rng.integers(0, 1023, 3 + 4 * i), max_new_tokens=40, params=p) for i, p in enumerate(PARAMS)]
    engine.add(seqs[:2])
    ahead = 0
    for _ in range(6):
        engine.step()
        ahead += engine._ahead is not None
    engine.add(seqs[2:3])
    engine.add(seqs[3:])
    slots = {id(s): s.slot for s in seqs}
    while engine.active:
        engine.step()
        ahead += engine._ahead is not None
    for s in seqs:
        assert s.finish_reason == "length" and s.tokens == replay(rec, s, slots[id(s)])
    assert (ahead > 20) == bool(graphs)  # sampled steps were launched ahead with the graph stand-in
    assert len(set(seqs[0].tokens)) > 5  # it sampled
    assert len(set(seqs[3].tokens)) == len(seqs[3].tokens) or seqs[3].tokens.count(7) > 1


def test_penalties_and_bias_through_generate():
    m = tiny()
    prompt = [5, 6, 7, 8]
    plain = generate(m, prompt, max_new_tokens=30)
    assert len(set(plain)) < len(plain)  # greedy repeats itself on this model
    fresh = generate(m, prompt, max_new_tokens=30, presence_penalty=100.0)
    assert len(set(fresh)) == 30  # a presence penalty beyond the logits' range: no token twice
    assert not set(generate(m, prompt, max_new_tokens=30, repetition_penalty=1e6)) & set(prompt)
    assert generate(m, prompt, max_new_tokens=5, logit_bias={9: 1000.0}) == [9] * 5
    banned = generate(m, prompt, max_new_tokens=30, temperature=1.0, seed=0, logit_bias={t: -1e9 for t in plain})
    assert not set(banned) & set(plain)
    with pytest.raises(ValueError, match="logit_bias"):
        generate(m, prompt, max_new_tokens=3, logit_bias={5000: 1.0})


def test_logprobs_through_generate_against_float64():
    rec = Recording(tiny())
    engine = rec.engine = Engine(rec, max_batch=1, max_len=64, cuda_graphs=False)
    seq = Sequence([1, 2, 3], max_new_tokens=12, params=SamplingParams(0.9, top_k=30, seed=5, logprobs=4))
    engine.add([seq])
    while engine.active:
        engine.step()
    assert len(seq.token_logprobs) == len(seq.tokens) == 12
    for i, (t, (lp, top)) in enumerate(zip(seq.tokens, seq.token_logprobs)):
        x = rec.rows[(0, 2 + i)].astype(np.float64)
        ref = x - x.max() - np.log(np.exp(x - x.max()).sum())
        assert abs(lp - ref[t]) < 1e-5
        want = np.argsort(-x, kind="stable")[:4]
        assert [j for j, _ in top] == want.tolist()
        assert np.allclose([v for _, v in top], ref[want], atol=1e-5)
    ids, entries = generate(tiny(), [1, 2, 3], max_new_tokens=12, temperature=0.9, top_k=30, seed=5, logprobs=4)
    assert ids == seq.tokens and entries == seq.token_logprobs
    # a stop token is not appended and has no entry
    stop = seq.tokens[3]
    ids, entries = generate(tiny(), [1, 2, 3], max_new_tokens=12, temperature=0.9, top_k=30, seed=5, logprobs=0,
                            stop_tokens=[stop])
    assert ids == seq.tokens[:seq.tokens.index(stop)] and len(entries) == len(ids) and all(e[1] == [] for e in entries)
    pieces = list(generate_stream(tiny(), [1, 2, 3], max_new_tokens=12, temperature=0.9, top_k=30, seed=5, logprobs=4))
    assert [p for p, _ in pieces] == seq.tokens and [e for _, es in pieces for e in es] == seq.token_logprobs


class NaNForSlot:
    """The model, with every logit of one cache row NaN from a given position on."""

    def __init__(self, model, slot, from_pos):
        self.model, self.config, self.device, self.dtype = model, model.config, model.device, model.dtype
        self.slot, self.from_pos = slot, from_pos

    def new_cache(self, *a, **kw):
        return self.model.new_cache(*a, **kw)

    def __call__(self, tokens, positions=None, **kw):
        out = self.model(tokens, positions, **kw)
        if kw.get("rows") is None and positions is not None:
            pos = np.asarray(positions.to_device("cpu")).reshape(-1)
            if pos[self.slot] >= self.from_pos:
                host = np.asarray(out.to_device("cpu")).copy()
                host[self.slot] = np.nan
                out = gp.asarray(host, device=out.device)
        return out


@pytest.mark.parametrize("graphs", [False, "replay"])
def test_a_row_without_finite_logits_fails_its_sequence_alone(graphs):
    m = tiny()
    good_alone = generate(m, [1, 2, 3], max_new_tokens=20, temperature=1.0, seed=9)
    engine = Engine(NaNForSlot(m, 1, 8), max_batch=2, max_len=64, cuda_graphs=ReplayGraphs() if graphs else False)
    good = Sequence([1, 2, 3], max_new_tokens=20, params=SamplingParams(1.0, seed=9))
    bad = Sequence([4, 5, 6], max_new_tokens=20, params=SamplingParams(0.7, seed=1))
    engine.add([good, bad])
    while engine.active:
        engine.step()
    assert bad.finish_reason == "error" and "no finite logit" in bad.error and isinstance(bad.exception, ValueError)
    assert len(bad.tokens) == 8 - 3 + 1  # the tokens before its logits went NaN
    assert good.finish_reason == "length" and good.tokens == good_alone


def test_generate_keeps_its_engine():
    m = tiny()
    clear_engines(m)
    a = generate(m, [1, 2, 3], max_new_tokens=16, temperature=0.8, seed=1)
    kept = dict(m._generate_engines)
    assert len(kept) == 1
    (engine,) = kept.values()
    steps = engine.steps
    assert generate(m, [1, 2, 3], max_new_tokens=16, temperature=0.8, seed=1) == a
    assert m._generate_engines == kept and engine.steps > steps and not engine._busy and not engine.active
    generate(m, [[1, 2], [3, 4]], max_new_tokens=4)  # another batch size: another engine
    assert len(m._generate_engines) == 2
    assert list(generate_stream(m, [1, 2, 3], max_new_tokens=16, temperature=0.8, seed=1)) == a
    long_prompt = list(range(1, 200))
    assert len(generate(m, long_prompt, max_new_tokens=8)) == 8  # longer than the kept engine: a bigger one
    assert m._generate_engines[(1, True, id(None))].max_len >= 206
    with pytest.raises(ValueError):
        generate(m, [1, 2], max_new_tokens=4, temperature=1.0, logit_bias={99999: 1.0})
    assert not any(e._busy or e.active for e in m._generate_engines.values())
    clear_engines(m)
    assert "_generate_engines" not in m.__dict__


def test_generate_from_two_threads():
    """Two threads generating with one model at once each get an engine of their own (the kept one is lent to
    one caller at a time) and the tokens they would get alone."""
    m = tiny()
    want = [generate(m, [i + 1, 2, 3], max_new_tokens=24, temperature=1.0, seed=i) for i in range(4)]
    got = [None] * 4
    barrier = threading.Barrier(4)

    def run(i):
        barrier.wait()
        got[i] = generate(m, [i + 1, 2, 3], max_new_tokens=24, temperature=1.0, seed=i)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


def test_fresh_seeds_differ_per_sequence():
    a, b = Sequence([1], params=SamplingParams(1.0)), Sequence([1], params=SamplingParams(1.0))
    assert a.seed != b.seed and 0 <= a.seed < 2 ** 64
    assert Sequence([1], params=SamplingParams(1.0, seed=7)).seed == 7
    assert generate_fn is generate


SETTINGS = [dict(temperature=1.0), dict(temperature=0.8, top_k=50, top_p=0.95),
            dict(temperature=1.2, min_p=0.02, repetition_penalty=1.2, presence_penalty=0.4, frequency_penalty=0.2),
            dict(temperature=0.7, top_p=0.5, logit_bias={11: 2.0})]


def near_tie(x, params, step, seed, prompt, generated, token):
    """Whether sample() picks ``token`` from logits x rescaled by 1 -+ eps for some eps up to 1e-4: the draw lies
    within float32-rounding reach of the boundary between two tokens' shares."""
    return any(sample(x * np.float32(1 + sign * eps), params, step, seed=seed, prompt=prompt,
                      generated=generated) == token for eps in (1e-6, 3e-6, 1e-5, 3e-5, 1e-4) for sign in (-1, 1))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("kw", SETTINGS)
def test_cpu_and_gpu_generate_the_same_256_tokens(kw):
    """A float32 random GPT-2 with GPT-2's vocabulary on both devices, four prompts in a batch, 256 sampled tokens
    each, with and without CUDA graphs (which give the same tokens). Every GPU token is the one the CPU's sampler
    chooses from the CPU model's logits of the GPU's own prefix, except where the draw falls within float32
    rounding of a boundary between two tokens (the two devices' logits agree to rounding, not bit for bit; with
    50,257 tokens in the running sum a few such draws in 1,024 are expected): those must be near ties (the CPU picks
    the GPU's token from its logits rescaled by 1 -+ eps, eps <= 1e-4) and at most 1% of the tokens."""
    prompts = [[1, 2, 3], [40, 41], [7] * 9, [300, 5000, 20000, 11]]
    got = generate(wide("cuda:0"), prompts, max_new_tokens=256, seed=21, **kw)
    assert generate(wide("cuda:0"), prompts, max_new_tokens=256, seed=21, cuda_graphs=False, **kw) == got
    cpu = wide("cpu")
    params = SamplingParams(**kw)
    flips = 0
    for i, (prompt, toks) in enumerate(zip(prompts, got)):
        assert len(toks) == 256 and len(set(toks)) > 20
        seed = 21 + i                      # generate's rule: prompt i of a batch draws with seed + i
        logits = np.asarray(cpu(gp.asarray([prompt + toks[:-1]], dtype=gp.int64)).to_device("cpu"))[0]
        for j, t in enumerate(toks):
            x = logits[len(prompt) - 1 + j]
            c = sample(x, params, j, seed=seed, prompt=prompt, generated=toks[:j])
            if c != t:
                assert near_tie(x, params, j, seed, prompt, toks[:j], t), (i, j, c, t)
                flips += 1
    assert flips <= 10, flips


@pytest.mark.gpu
@requires_gpu
def test_gpu_logprobs_and_failures_match_the_cpu():
    kw = dict(max_new_tokens=40, temperature=0.9, top_k=40, seed=3, logprobs=5)
    ids_c, lp_c = generate(wide("cpu"), [1, 2, 3], **kw)
    ids_g, lp_g = generate(wide("cuda:0"), [1, 2, 3], **kw)
    assert ids_g == ids_c
    for (a, ta), (b, tb) in zip(lp_c, lp_g):
        assert abs(a - b) < 1e-4 and [i for i, _ in ta] == [i for i, _ in tb]
        assert np.allclose([v for _, v in ta], [v for _, v in tb], atol=1e-4)
    m = wide("cuda:0")
    engine = Engine(NaNForSlot(m, 0, 6), max_batch=2, max_len=64, cuda_graphs=False)  # the wrapper copies to host
    bad = Sequence([1, 2, 3], max_new_tokens=20, params=SamplingParams(1.0, seed=1))
    good = Sequence([4, 5], max_new_tokens=20, params=SamplingParams(1.0, seed=2))
    engine.add([bad, good])
    while engine.active:
        engine.step()
    assert bad.finish_reason == "error" and good.tokens == generate(m, [4, 5], max_new_tokens=20, temperature=1.0,
                                                                    seed=2)
