"""What the OpenAI parameters need from the engine, against the float64 NumPy GPT-2 of tests/llm/_oracle.py: the
SamplingParams fields of issue 21 (checked), penalties and logit_bias in greedy choice, recorded log-probabilities
(``Sequence.token_logprobs``), min_p, and ``Engine.add_shared`` (n choices of one prompt, one prefill)."""
import numpy as np
import pytest

import gpk_array as gp
from gpk_array.llm import GPT2, Engine, SamplingParams, Sequence

from ._oracle import TINY, NumpyGPT2, top

PROMPT = [464, 2068, 7586, 21831, 11, 290, 788]  # ids below 1024 (the tiny vocabulary)
PROMPT = [p % 1000 for p in PROMPT]
_models = {}


@pytest.fixture(scope="module")
def oracle():
    return NumpyGPT2()


def model(device):
    key = str(device)
    if key not in _models:
        _models[key] = GPT2.from_pretrained(TINY, device=device, dtype=gp.float32)
    return _models[key]


def run(engine, seqs, shared=False):
    (engine.add_shared if shared else engine.add)(seqs)
    while engine.active:
        engine.step()
    for s in seqs:
        assert s.finish_reason in ("length", "stop"), s.error
    return [s.tokens for s in seqs]


def needs_token_logprobs():
    if not hasattr(Sequence([1], params=SamplingParams(logprobs=1)), "token_logprobs"):
        pytest.skip("Sequence has no token_logprobs (the device-sampling branch adds it)")


def test_oracle_matches_transformers():
    """The oracle itself against transformers' logits for the tiny checkpoint (tests/llm/data)."""
    ref = np.load(TINY.parent / "tiny_gpt2_reference.npz")
    o = NumpyGPT2()
    for i in range(4):
        want = ref[f"logits_{i}"].reshape(-1, ref[f"logits_{i}"].shape[-1])
        got = o.logits(ref[f"prompt_{i}"].reshape(-1))
        assert np.abs(got - want).max() < 1e-4


@pytest.mark.parametrize("bad", [
    dict(min_p=1.5), dict(min_p=-0.1), dict(min_p=float("nan")), dict(repetition_penalty=0),
    dict(repetition_penalty=-1.0), dict(repetition_penalty=float("inf")), dict(presence_penalty=float("nan")),
    dict(frequency_penalty=float("inf")), dict(logit_bias=[1, 2]), dict(logit_bias={-1: 1.0}),
    dict(logit_bias={"5": 1.0}), dict(logit_bias={5: float("nan")}), dict(logit_bias={True: 1.0}),
    dict(logprobs=-1), dict(logprobs=21), dict(logprobs=2.0), dict(seed=2 ** 64), dict(seed=-1),
    dict(temperature=True)])
def test_sampling_params_check_the_new_fields(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        SamplingParams(**{"temperature": 1.0, **bad})


def test_sampling_params_field_order():
    """The shared interface: these fields, in this order, with these defaults."""
    import dataclasses
    fields = [(f.name, f.default) for f in dataclasses.fields(SamplingParams)]
    assert fields == [("temperature", 0.0), ("top_k", None), ("top_p", None), ("min_p", None),
                      ("repetition_penalty", 1.0), ("presence_penalty", 0.0), ("frequency_penalty", 0.0),
                      ("logit_bias", None), ("seed", None), ("logprobs", None)]
    p = SamplingParams(0.5, 3, 0.9, 0.1, 1.2, 0.3, 0.4, {7: 1.0}, 11, 2)
    assert (p.min_p, p.repetition_penalty, p.logit_bias, p.seed, p.logprobs) == (0.1, 1.2, {7: 1.0}, 11, 2)
    assert SamplingParams(temperature=1e-310).greedy and SamplingParams(1.0, top_k=1).greedy


@pytest.mark.parametrize("kw", [dict(presence=1.5), dict(frequency=0.7), dict(presence=-1.0, frequency=0.5),
                                dict(repetition=1.8), dict(repetition=0.6), dict(bias={5: 4.0, 300: -50.0})],
                         ids=["presence", "frequency", "both", "repetition", "repetition<1", "bias"])
def test_penalties_and_bias_change_greedy_choice_as_the_oracle(device, oracle, kw):
    params = SamplingParams(presence_penalty=kw.get("presence", 0.0), frequency_penalty=kw.get("frequency", 0.0),
                            repetition_penalty=kw.get("repetition", 1.0), logit_bias=kw.get("bias"))
    engine = Engine(model(device), max_batch=2, max_len=64)
    plain, got = run(engine, [Sequence(PROMPT, max_new_tokens=24),
                              Sequence(PROMPT, max_new_tokens=24, params=params)])
    want = oracle.greedy(PROMPT, 24, **kw)
    assert got == want
    assert plain == oracle.greedy(PROMPT, 24) != want  # the penalty changed the choice; its neighbour is unaffected


def test_logit_bias_forces_and_forbids(device, oracle):
    engine = Engine(model(device), max_batch=3, max_len=64)
    greedy = oracle.greedy(PROMPT, 16)
    forced, banned, sampled = run(engine, [
        Sequence(PROMPT, max_new_tokens=16, params=SamplingParams(logit_bias={77: 100.0})),
        Sequence(PROMPT, max_new_tokens=16, params=SamplingParams(logit_bias={greedy[0]: -100.0})),
        Sequence(PROMPT, max_new_tokens=16, params=SamplingParams(1.0, logit_bias={77: 100.0}, seed=3))])
    assert forced == [77] * 16 and sampled == [77] * 16
    assert banned == oracle.greedy(PROMPT, 16, bias={greedy[0]: -100.0}) and greedy[0] not in banned


def test_min_p_one_keeps_only_the_most_likely(device):
    engine = Engine(model(device), max_batch=2, max_len=64)
    greedy, sampled = run(engine, [Sequence(PROMPT, max_new_tokens=20),
                                   Sequence(PROMPT, max_new_tokens=20, params=SamplingParams(1.0, min_p=1.0, seed=9))])
    assert sampled == greedy


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_token_logprobs_against_float64_log_softmax(device, oracle, temperature):
    needs_token_logprobs()
    engine = Engine(model(device), max_batch=2, max_len=64)
    s = Sequence(PROMPT, max_new_tokens=20, params=SamplingParams(temperature, logprobs=5, seed=4,
                                                                  presence_penalty=0.5, logit_bias={9: 3.0}))
    none = Sequence(PROMPT, max_new_tokens=4)
    run(engine, [s, none])
    assert none.token_logprobs is None
    assert len(s.token_logprobs) == len(s.tokens) == 20
    lp = oracle.log_softmax(PROMPT + s.tokens)[len(PROMPT) - 1:-1]  # raw logits: before penalty and bias
    for t, (chosen, tops), row in zip(s.tokens, s.token_logprobs, lp):
        assert chosen == pytest.approx(row[t], abs=1e-4)
        assert [i for i, _ in tops] == [i for i, _ in top(row, 5)]
        assert np.allclose([v for _, v in tops], [v for _, v in top(row, 5)], atol=1e-4)


def test_stop_token_has_no_logprobs_entry(oracle):
    needs_token_logprobs()
    greedy = oracle.greedy(PROMPT, 12)
    stop = greedy[5]
    engine = Engine(model("cpu"), max_batch=1, max_len=64)
    s = Sequence(PROMPT, max_new_tokens=12, params=SamplingParams(logprobs=0), stop_tokens=[stop])
    run(engine, [s])
    k = greedy.index(stop)
    assert s.finish_reason == "stop" and s.tokens == greedy[:k] and len(s.token_logprobs) == k
    assert all(tops == [] for _, tops in s.token_logprobs)


class CountingModel:
    """The model, counting its forward calls by token shape."""

    def __init__(self, m):
        self.m, self.calls = m, []

    def __getattr__(self, name):
        return getattr(self.m, name)

    def __call__(self, tokens, *a, **kw):
        self.calls.append(tuple(np.shape(tokens)) if not hasattr(tokens, "shape") else tuple(tokens.shape))
        return self.m(tokens, *a, **kw)


def test_add_shared_prefills_once_and_decodes_as_separate_prefills(device):
    m = CountingModel(model(device))
    kinds = [SamplingParams(), SamplingParams(1.0, seed=5), SamplingParams(0.8, top_k=20, seed=6)]
    engine = Engine(m, max_batch=4, max_len=64, cuda_graphs=False)
    shared = [Sequence(PROMPT, max_new_tokens=16, params=p) for p in kinds]
    engine.add_shared(shared)
    prefills = [c for c in m.calls if len(c) == 2 and c[1] > 1]
    assert prefills == [(1, len(PROMPT))]  # one prefill for three sequences
    rows = [np.asarray(layer[:, s.slot, :, :len(PROMPT)].to_device("cpu")) for layer in engine.cache.layers
            for s in shared]
    for i in range(0, len(rows), 3):
        assert np.array_equal(rows[i], rows[i + 1]) and np.array_equal(rows[i], rows[i + 2])
    while engine.active:
        engine.step()
    alone = Engine(model(device), max_batch=1, max_len=64, cuda_graphs=False)
    for s, p in zip(shared, kinds):
        assert s.tokens == run(alone, [Sequence(PROMPT, max_new_tokens=16, params=p)])[0]
    with pytest.raises(ValueError, match="one prompt"):
        engine.add_shared([Sequence(PROMPT), Sequence(PROMPT[:-1])])
    with pytest.raises(RuntimeError, match="free slots"):
        engine.add_shared([Sequence(PROMPT) for _ in range(5)])


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:CUDA graph capture failed")
def test_add_shared_with_cuda_graphs():
    from ..conftest import HAS_GPU
    if not HAS_GPU:
        pytest.skip("no CUDA GPU on this machine")
    m = model("cuda:0")
    engine = Engine(m, max_batch=4, max_len=128)
    seqs = [Sequence(PROMPT, max_new_tokens=24, params=SamplingParams(1.0, seed=i)) for i in range(3)]
    run(engine, seqs, shared=True)
    alone = Engine(m, max_batch=1, max_len=128)
    for i, s in enumerate(seqs):
        assert s.tokens == run(alone, [Sequence(PROMPT, max_new_tokens=24, params=SamplingParams(1.0, seed=i))])[0]


@pytest.mark.parametrize("k", [0, 5])
def test_prompt_logprobs_against_float64_log_softmax(device, oracle, k):
    """The server's echo logprobs (one plain forward on the engine thread): the first token has none, then each
    token's logprob and the top k under the float64 oracle."""
    pytest.importorskip("starlette")
    from gpk_array.llm.server.logprobs import prompt_logprobs
    ids = PROMPT + [3, 3, 900, 17]
    got = prompt_logprobs(model(device), ids, k)
    ref = oracle.log_softmax(ids)
    assert got[0] is None and len(got) == len(ids)
    for t in range(1, len(ids)):
        chosen, tops = got[t]
        assert chosen == pytest.approx(ref[t - 1, ids[t]], abs=1e-4)
        assert [i for i, _ in tops] == [i for i, _ in top(ref[t - 1], k)]
        assert np.allclose([v for _, v in tops], [v for _, v in top(ref[t - 1], k)], atol=1e-4)
    assert prompt_logprobs(model(device), [5], k) == [None]


def test_a_bias_outside_the_vocabulary_fails_its_sequence_only(oracle):
    """SamplingParams cannot know the vocabulary: a logit_bias id beyond it is refused by the engine for that
    sequence alone (at check time, or by finishing it with "error"); the sequence beside it decodes as alone."""
    engine = Engine(model("cpu"), max_batch=2, max_len=64)
    good = Sequence(PROMPT, max_new_tokens=12)
    bad = Sequence(PROMPT, max_new_tokens=12, params=SamplingParams(logit_bias={5000: 1.0}))
    try:
        engine.add([good, bad])
    except ValueError as e:
        assert "5000" in str(e)
        engine.add([good])
    while engine.active:
        engine.step()
    assert bad.finish_reason in (None, "error") and (bad.finish_reason is None or "5000" in bad.error)
    assert good.tokens == oracle.greedy(PROMPT, 12) and engine.free == 2
