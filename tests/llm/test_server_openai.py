"""The OpenAI parameters clients send, through the official ``openai`` client against the real server (uvicorn in a
thread, the tiny checkpoint on the CPU): logprobs / top_logprobs and echo (checked against the float64 NumPy GPT-2
of tests/llm/_oracle.py), n choices (each drawing as its own seed), penalties and logit_bias (the oracle's greedy
choice), min_p, stop strings across token boundaries, the chat default length, and bad parameters: a 400 naming
the parameter for that request alone, with the requests beside it untouched."""
import concurrent.futures
import itertools
import threading

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

from gpk_array.llm import GPT2, GPT2Config, generate, random_weights  # noqa: E402
from gpk_array.llm.server import DEFAULT_CHAT_MAX_TOKENS, ServerThread, create_app  # noqa: E402

from ._oracle import NumpyGPT2, top  # noqa: E402
from ._server_common import (NAME, TIMEOUT, greedy_text, model, post_completion, server,  # noqa: E402,F401
                             stream_text, tok, wait_until)

EOS = 1023  # the tiny tokenizer's <|endoftext|>


@pytest.fixture(scope="module")
def oracle():
    return NumpyGPT2()


def client_of(url):
    return openai.OpenAI(base_url=url + "/v1", api_key="unused", timeout=30, max_retries=0)


@pytest.fixture(scope="module")
def api(server):
    return client_of(server[0])


@pytest.fixture(scope="module")
def fast(model, tok):
    """A server that sends every step's tokens at once (stream_interval 0): streams split at token boundaries."""
    app = create_app(model, tok, model_name=NAME, max_batch=4, max_queue=16, stream_interval=0)
    with ServerThread(app) as url:
        yield client_of(url), app.state.server


def ids_of(names):
    assert all(n.startswith("token_id:") for n in names), names
    return [int(n.removeprefix("token_id:")) for n in names]


def assert_top(got, row, k, chosen=None):
    """A completions top_logprobs dict against the oracle's row: its k most likely, and the chosen token."""
    want = {f"token_id:{i}": v for i, v in top(row, k)}
    if chosen is not None:
        want.setdefault(f"token_id:{chosen}", row[chosen])
    assert set(got) == set(want)
    for name, v in want.items():
        assert got[name] == pytest.approx(v, abs=1e-4)


# --- logprobs and echo ----------------------------------------------------------------------------------------


def test_completion_logprobs_with_echo_match_the_float64_oracle(api, tok, oracle):
    prompt = "Once upon a time"
    pids = tok.encode(prompt)
    kw = dict(model=NAME, prompt=prompt, max_tokens=12, temperature=1.0, seed=5)
    c = api.completions.create(**kw, logprobs=5, echo=True, extra_body={"return_tokens_as_token_ids": True})
    ch, lp = c.choices[0], c.choices[0].logprobs
    ids = ids_of(lp.tokens)
    assert ids[:len(pids)] == pids and len(ids) == len(pids) + c.usage.completion_tokens
    plain = api.completions.create(**kw)  # asking for logprobs and echo changes nothing of the draw
    assert ch.text == prompt + plain.choices[0].text == tok.decode(ids)
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None  # nothing predicts the first token
    ref = oracle.log_softmax(ids)
    for t in range(1, len(ids)):
        assert lp.token_logprobs[t] == pytest.approx(ref[t - 1, ids[t]], abs=1e-4)
        assert_top(lp.top_logprobs[t], ref[t - 1], 5, ids[t])
    # offsets into the choice's text; the prompt's tokens are whole characters here
    assert lp.text_offset[:len(pids)] == list(itertools.accumulate([0] + [len(tok.decode([i])) for i in pids[:-1]]))
    assert lp.text_offset == sorted(lp.text_offset) and lp.text_offset[-1] < len(ch.text)
    # token strings: each token's text; without echo the offsets start at the completion
    s = api.completions.create(**kw, logprobs=2)
    assert s.choices[0].text == plain.choices[0].text
    assert s.choices[0].logprobs.tokens == [tok.decode([i]) for i in ids[len(pids):]]
    assert s.choices[0].logprobs.text_offset[0] == 0
    assert all(len(d) in (2, 3) for d in s.choices[0].logprobs.top_logprobs)  # top 2, and the chosen one


def test_logprobs_zero_gives_the_chosen_token_only(api, tok, oracle):
    prompt = "Hello, world"
    c = api.completions.create(model=NAME, prompt=prompt, max_tokens=8, temperature=0, logprobs=0,
                               extra_body={"return_tokens_as_token_ids": True, "ignore_eos": True})
    lp = c.choices[0].logprobs
    ids = ids_of(lp.tokens)
    ref = oracle.log_softmax(tok.encode(prompt) + ids)[len(tok.encode(prompt)) - 1:]
    assert ids == oracle.greedy(tok.encode(prompt), 8)
    assert [list(d) for d in lp.top_logprobs] == [[f"token_id:{i}"] for i in ids]
    assert lp.token_logprobs == pytest.approx([ref[j, i] for j, i in enumerate(ids)], abs=1e-4)


def test_streamed_completion_logprobs_add_up_to_the_whole(fast):
    api, _ = fast
    kw = dict(model=NAME, prompt="Hello, world", max_tokens=40, temperature=0.9, seed=2, logprobs=3, echo=True,
              extra_body={"ignore_eos": True})
    whole = api.completions.create(**kw).choices[0]
    chunks = [ch.choices[0] for ch in api.completions.create(**kw, stream=True) if ch.choices]
    assert len(chunks) >= 2  # the echoed prompt's chunk, then the tokens (how many per chunk depends on load)
    assert "".join(c.text for c in chunks) == whole.text
    assert chunks[-1].finish_reason == whole.finish_reason and whole.finish_reason in ("length", "stop")
    got = {f: sum((getattr(c.logprobs, f) for c in chunks if c.logprobs), []) for f in
           ("tokens", "token_logprobs", "top_logprobs", "text_offset")}
    assert got == {f: getattr(whole.logprobs, f) for f in got}
    for c in chunks:  # each chunk's tokens are where its text is
        if c.logprobs and c.text:
            assert c.logprobs.text_offset[0] <= sum(len(x.text) for x in chunks[:chunks.index(c)])


def test_echo_alone_scores_the_prompt(api, tok, oracle):
    """max_tokens 0 with echo: the prompt back with its log-likelihood, nothing generated (scoring)."""
    prompt = "The quick brown fox"
    pids = tok.encode(prompt)
    kw = dict(model=NAME, prompt=prompt, max_tokens=0, echo=True, logprobs=1)
    c = api.completions.create(**kw, n=2)
    assert [ch.text for ch in c.choices] == [prompt, prompt] and c.choices[0].finish_reason == "length"
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (len(pids), 0)
    lp = c.choices[0].logprobs
    assert lp.tokens == [tok.decode([i]) for i in pids]
    ref = oracle.log_softmax(pids)
    assert lp.token_logprobs[0] is None
    assert lp.token_logprobs[1:] == pytest.approx([ref[t - 1, pids[t]] for t in range(1, len(pids))], abs=1e-4)
    streamed = [ch.choices[0] for ch in api.completions.create(**kw, stream=True) if ch.choices]
    assert len(streamed) == 1 and streamed[0].text == prompt and streamed[0].logprobs.tokens == lp.tokens
    with pytest.raises(openai.BadRequestError) as e:
        api.completions.create(model=NAME, prompt=prompt, max_tokens=0)  # without echo: nothing to return
    assert e.value.body["param"] == "max_tokens"


def test_chat_logprobs_match_the_float64_oracle(api, fast, tok, oracle):
    msgs = [{"role": "user", "content": "Hi there"}]
    kw = dict(model=NAME, messages=msgs, max_tokens=10, temperature=0.8, seed=3, logprobs=True, top_logprobs=3)
    c = api.chat.completions.create(**kw, extra_body={"return_tokens_as_token_ids": True})
    content = c.choices[0].logprobs.content
    ids = ids_of([e.token for e in content])
    assert len(ids) == c.usage.completion_tokens
    prompt = tok.encode("User: Hi there\nAssistant:")
    ref = oracle.log_softmax(prompt + ids)[len(prompt) - 1:]
    for e, t, row in zip(content, ids, ref):
        assert e.logprob == pytest.approx(row[t], abs=1e-4)
        assert [x.token for x in e.top_logprobs] == [f"token_id:{i}" for i, _ in top(row, 3)]
        assert [x.logprob for x in e.top_logprobs] == pytest.approx([v for _, v in top(row, 3)], abs=1e-4)
        assert e.bytes == list(tok.token_bytes(t))
    text = c.choices[0].message.content
    assert b"".join(bytes(e.bytes) for e in content).decode("utf-8", "replace") == text
    s = api.chat.completions.create(**kw)
    assert s.choices[0].message.content == text
    assert [e.token for e in s.choices[0].logprobs.content] == [tok.decode([i]) for i in ids]
    chunks = [ch.choices[0] for ch in fast[0].chat.completions.create(**kw, stream=True) if ch.choices]
    assert "".join(ch.delta.content or "" for ch in chunks) == text
    streamed = [e for ch in chunks if ch.logprobs for e in ch.logprobs.content]
    assert [(e.token, e.logprob, e.bytes) for e in streamed] == \
        [(e.token, e.logprob, e.bytes) for e in s.choices[0].logprobs.content]
    bare = api.chat.completions.create(**{**kw, "top_logprobs": None})  # logprobs without top_logprobs
    assert [e.top_logprobs for e in bare.choices[0].logprobs.content] == [[]] * len(ids)
    assert api.chat.completions.create(**{**kw, "logprobs": False, "top_logprobs": None}).choices[0].logprobs is None


# --- n choices --------------------------------------------------------------------------------------------------


def test_n_choices_each_draw_as_their_own_seed(api, server, tok):
    _, srv = server
    kw = dict(model=NAME, max_tokens=16, temperature=1.0, extra_body={"ignore_eos": True})
    prompt = "Once upon a time"
    before = srv.metrics.prompt_tokens
    c = api.completions.create(**kw, prompt=prompt, n=3, seed=7)
    assert srv.metrics.prompt_tokens - before == len(tok.encode(prompt))  # one prefill for the three choices
    assert [ch.index for ch in c.choices] == [0, 1, 2]
    texts = [ch.text for ch in c.choices]
    assert texts == [api.completions.create(**kw, prompt=prompt, seed=7 + j).choices[0].text for j in range(3)]
    assert len(set(texts)) == 3
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (len(tok.encode(prompt)), 48)
    # two prompts, two choices each: choice i * n + j is prompt i's, drawing with seed + i * n + j
    prompts = ["Hello, world", "Dear Sir"]
    c = api.completions.create(**kw, prompt=prompts, n=2, seed=11)
    assert [ch.index for ch in c.choices] == [0, 1, 2, 3]
    for ch in c.choices:
        alone = api.completions.create(**kw, prompt=prompts[ch.index // 2], seed=11 + ch.index)
        assert ch.text == alone.choices[0].text
    assert c.usage.prompt_tokens == sum(len(tok.encode(p)) for p in prompts)


def test_n_choices_streamed_greedy_and_chat(fast, model, tok):
    api, _ = fast
    kw = dict(model=NAME, prompt="Hello, world", max_tokens=20, temperature=0.9, seed=21, n=3)
    whole = api.completions.create(**kw)
    texts = {}
    for ch in api.completions.create(**kw, stream=True):
        for c in ch.choices:
            texts[c.index] = texts.get(c.index, "") + c.text
    assert texts == {c.index: c.text for c in whole.choices}
    greedy = api.completions.create(**{**kw, "temperature": 0, "seed": None})
    assert [c.text for c in greedy.choices] == [greedy_text(model, tok, "Hello, world", 20)] * 3
    msgs = [{"role": "user", "content": "Hi"}]
    chat = api.chat.completions.create(model=NAME, messages=msgs, max_tokens=12, temperature=1.0, seed=5, n=2)
    assert [c.index for c in chat.choices] == [0, 1]
    for c in chat.choices:
        alone = api.chat.completions.create(model=NAME, messages=msgs, max_tokens=12, temperature=1.0,
                                            seed=5 + c.index)
        assert c.message.content == alone.choices[0].message.content
    roles = {}
    for ch in api.chat.completions.create(model=NAME, messages=msgs, max_tokens=12, temperature=1.0, seed=5, n=2,
                                          stream=True):
        for c in ch.choices:
            roles.setdefault(c.index, c.delta.role)
    assert roles == {0: "assistant", 1: "assistant"}  # each choice's first delta names the role


def test_n_waits_for_enough_free_slots(model, tok):
    """n = 2 on a 2-slot server while a long stream holds one slot: the request queues until both slots are free
    (it never runs half of its choices), then both choices complete."""
    app = create_app(model, tok, model_name=NAME, max_batch=2, max_queue=8, stream_interval=0)
    srv = app.state.server
    order = []  # what the engine thread did, in its order: ("add", n), ("shared", n), ("release", prompt length)
    engine = srv.engine
    real_add, real_shared, real_release = engine.add, engine.add_shared, engine.release

    def add(seqs):
        order.append(("add", len(seqs)))
        return real_add(seqs)

    def add_shared(seqs):
        order.append(("shared", len(seqs), engine.free))
        return real_shared(seqs)

    def release(seq, reason=None):
        if seq.slot is not None:
            order.append(("release", len(seq.prompt)))
        return real_release(seq, reason)
    engine.add, engine.add_shared, engine.release = add, add_shared, release
    with ServerThread(app) as url:
        api = client_of(url)
        started = threading.Event()

        def long_stream():
            return stream_text(api, "Hello", 150, started)

        def pair():
            assert started.wait(20)
            r = api.completions.create(model=NAME, prompt="Dear Sir", max_tokens=10, temperature=0, n=2,
                                       extra_body={"ignore_eos": True})
            return r
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            f_long, f_pair = pool.submit(long_stream), pool.submit(pair)
            long_text, r = f_long.result(), f_pair.result()
    hello = len(tok.encode("Hello"))
    shared = [i for i, e in enumerate(order) if e[0] == "shared"]
    assert len(shared) == 1 and order[shared[0]][1:] == (2, 2)  # both choices admitted together, into 2 free slots
    assert ("release", hello) in order[:shared[0]]  # after the long stream's sequence gave its slot back
    assert long_text == tok.decode(generate(model, tok.encode("Hello"), max_new_tokens=150))
    want = tok.decode(generate(model, tok.encode("Dear Sir"), max_new_tokens=10))
    assert [c.text for c in r.choices] == [want, want]
    assert srv.engine.max_active == 2


# --- penalties, logit_bias, min_p -----------------------------------------------------------------------------

PENALTIES = [  # (request fields, vLLM extensions, the oracle's arguments)
    (dict(presence_penalty=1.5), {}, dict(presence=1.5)),
    (dict(frequency_penalty=0.8), {}, dict(frequency=0.8)),
    (dict(presence_penalty=-1.0, frequency_penalty=2.0), {}, dict(presence=-1.0, frequency=2.0)),
    ({}, {"repetition_penalty": 1.7}, dict(repetition=1.7)),
    (dict(logit_bias={"78": 3.5, "11": -100}), {}, dict(bias={78: 3.5, 11: -100.0})),
]


@pytest.mark.parametrize("request_kw,extension,oracle_kw", PENALTIES,
                         ids=["presence", "frequency", "both", "repetition", "logit_bias"])
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_penalties_and_bias_match_the_oracles_greedy_choice(api, tok, oracle, request_kw, extension, oracle_kw,
                                                            endpoint):
    extra = {"ignore_eos": True, "return_tokens_as_token_ids": True, **extension}
    if endpoint == "completions":
        prompt = tok.encode("The quick brown fox")
        r = api.completions.create(model=NAME, prompt="The quick brown fox", max_tokens=20, temperature=0,
                                   logprobs=0, extra_body=extra, **request_kw)
        got = ids_of(r.choices[0].logprobs.tokens)
    else:
        prompt = tok.encode("User: Hi\nAssistant:")
        r = api.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Hi"}], max_tokens=20,
                                        temperature=0, logprobs=True, extra_body=extra, **request_kw)
        got = ids_of([e.token for e in r.choices[0].logprobs.content])
    want = oracle.greedy(prompt, 20, **oracle_kw)
    assert got == want and want != oracle.greedy(prompt, 20)  # the parameter changed the choice


def test_logit_bias_forces_a_token_when_sampling(api, tok):
    r = api.completions.create(model=NAME, prompt="Hello", max_tokens=10, temperature=1.0, seed=1,
                               logit_bias={"78": 100}, extra_body={"ignore_eos": True})
    assert r.choices[0].text == tok.decode([78] * 10)


def test_min_p_one_is_greedy(api, model, tok):
    r = api.completions.create(model=NAME, prompt="Hello, world", max_tokens=20, temperature=1.0, seed=4,
                               extra_body={"min_p": 1.0})
    assert r.choices[0].text == greedy_text(model, tok, "Hello, world", 20)


def test_user_is_accepted_and_ignored(api, model, tok):
    r = api.completions.create(model=NAME, prompt="Hello, world", max_tokens=10, temperature=0, user="someone")
    assert r.choices[0].text == greedy_text(model, tok, "Hello, world", 10)


# --- stop strings across token boundaries --------------------------------------------------------------------


def _spanning_stop(model, tok, prompt, n):
    """A two-character stop string made of the last character of greedy token j and the first of token j + 1 (both
    ASCII, token j of two characters or more), found nowhere earlier in the text; (stop, j, pieces)."""
    pieces = [tok.decode([i]) for i in generate(model, tok.encode(prompt), max_new_tokens=n, stop_tokens=[EOS])]
    for j in range(1, len(pieces) - 1):
        a, b = pieces[j], pieces[j + 1]
        if len(a) >= 2 and b and (a[-1] + b[0]).isascii() and (a[-1] + b[0]).isprintable():
            stop = a[-1] + b[0]
            if "".join(pieces).find(stop) == len("".join(pieces[:j + 1])) - 1:
                return stop, j, pieces
    pytest.skip("no token boundary to test in this greedy text")


@pytest.mark.parametrize("stream", [False, True])
def test_stop_string_across_a_token_boundary(fast, model, tok, stream):
    api, _ = fast
    stop, j, pieces = _spanning_stop(model, tok, "Hello, world", 60)
    full = "".join(pieces)
    want = full[:full.index(stop)]
    kw = dict(model=NAME, prompt="Hello, world", max_tokens=60, temperature=0, stop=[stop], logprobs=0)
    if stream:
        chunks = [ch.choices[0] for ch in api.completions.create(**kw, stream=True) if ch.choices]
        text, finish = "".join(c.text for c in chunks), chunks[-1].finish_reason
        tokens = sum((c.logprobs.tokens for c in chunks if c.logprobs), [])
        assert chunks  # how many tokens one chunk carries depends on the machine's load: not asserted
    else:
        c = api.completions.create(**kw).choices[0]
        text, finish, tokens = c.text, c.finish_reason, c.logprobs.tokens
    assert (text, finish) == (want, "stop")
    assert tokens == pieces[:j + 1]  # the tokens that hold the text (the last one begins the stop string)
    chat = api.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "x"}], max_tokens=30,
                                       temperature=0, stop=stop, stream=stream)
    text = "".join(ch.choices[0].delta.content or "" for ch in chat if ch.choices) if stream else \
        chat.choices[0].message.content
    assert stop not in text


# --- chat's default length ------------------------------------------------------------------------------------


def test_chat_without_max_tokens_stops_at_the_default(model, tok):
    cfg = GPT2Config(vocab_size=1024, n_positions=512, n_embd=32, n_layer=1, n_head=2)
    long_ctx = GPT2.from_weights(cfg, random_weights(cfg, seed=3), device="cpu")
    msgs = [{"role": "user", "content": "Hi"}]
    for m, limit, want in ((long_ctx, None, DEFAULT_CHAT_MAX_TOKENS), (model, 20, 20)):
        kw = {} if limit is None else {"chat_max_tokens": limit}
        app = create_app(m, tok, model_name=NAME, max_batch=2, **kw)
        with ServerThread(app) as url:
            api = client_of(url)
            r = api.chat.completions.create(model=NAME, messages=msgs, temperature=0, extra_body={"ignore_eos": True})
            assert r.usage.completion_tokens == want and r.choices[0].finish_reason == "length"
            c = api.completions.create(model=NAME, prompt="Hi", temperature=0, extra_body={"ignore_eos": True})
            assert c.usage.completion_tokens == 16  # completions keep OpenAI's 16
    assert DEFAULT_CHAT_MAX_TOKENS == 256
    app = create_app(model, tok, model_name=NAME, max_batch=2)  # the tiny model's 256-token context bounds it
    with ServerThread(app) as url:
        r = client_of(url).chat.completions.create(model=NAME, messages=msgs, temperature=0,
                                                   extra_body={"ignore_eos": True})
        assert r.usage.prompt_tokens + r.usage.completion_tokens == 256
    with pytest.raises(ValueError, match="chat_max_tokens"):
        create_app(model, tok, chat_max_tokens=0)


# --- bad input ------------------------------------------------------------------------------------------------

BAD = [  # (body fields, the param the 400 names); with the official client: (kwargs, extra_body)
    (dict(seed=-1), "seed"),
    (dict(seed=2 ** 63), "seed"),
    (dict(temperature=float("nan")), None),
    (dict(presence_penalty=3.0), "presence_penalty"),
    (dict(frequency_penalty=-2.5), "frequency_penalty"),
    (dict(logit_bias={"5": 1e300}), "logit_bias"),
    (dict(logit_bias={"5": -101}), "logit_bias"),
    (dict(logit_bias={"1024": 1}), "logit_bias"),
    (dict(logit_bias={"05": 1}), "logit_bias"),
    (dict(n=3), "n"),  # the isolation server has 2 slots
    (dict(n=0), "n"),
    (dict(logprobs=9), "logprobs"),
    (dict(top_p=0.0), "top_p"),
    (dict(max_tokens=100000), "max_tokens"),
    (dict(extra_body={"min_p": 2}), "min_p"),
    (dict(extra_body={"repetition_penalty": -1}), "repetition_penalty"),
    (dict(extra_body={"top_k": 1.5}), "top_k"),
]


def test_bad_parameters_leave_the_requests_beside_them_untouched(model, tok):
    """Bad requests (each a 400 naming its parameter, through the official client, plain and streaming) sent
    while a greedy stream and a seeded sampled request decode: those two get exactly what they get alone."""
    app = create_app(model, tok, model_name=NAME, max_batch=2, max_queue=8, stream_interval=0)
    want_stream = tok.decode(generate(model, tok.encode("Hello"), max_new_tokens=120))
    with ServerThread(app) as url:
        api = client_of(url)
        sampled_kw = dict(model=NAME, prompt="Dear Sir", max_tokens=60, temperature=1.0, seed=99,
                          extra_body={"ignore_eos": True})
        want_sampled = api.completions.create(**sampled_kw).choices[0].text
        started = threading.Event()

        def stream():
            return stream_text(api, "Hello", 120, started)

        def bad(item):
            (kw, param), streaming = item
            kw = dict(kw)
            extra = kw.pop("extra_body", {})
            if isinstance(kw.get("temperature"), float) and kw["temperature"] != kw["temperature"]:
                with httpx.Client(base_url=url, timeout=TIMEOUT) as c:  # NaN: not JSON, so sent raw
                    r = c.post("/v1/completions", content=b'{"model": "%s", "prompt": "hi", "temperature": NaN}'
                               % NAME.encode(), headers={"content-type": "application/json"})
                return r.status_code, r.json()["error"]["param"], param
            try:
                out = api.completions.create(model=NAME, prompt="hi", stream=streaming, extra_body=extra, **kw)
                if streaming:
                    list(out)
                return 200, None, param
            except openai.BadRequestError as e:
                return e.status_code, e.body["param"], param
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            f_stream = pool.submit(stream)
            assert started.wait(20)
            f_sampled = pool.submit(lambda: api.completions.create(**sampled_kw).choices[0].text)
            results = list(pool.map(bad, [(b, s) for b in BAD for s in (False, True)]))
            streamed, sampled_text = f_stream.result(), f_sampled.result()
    for status, got, param in results:
        assert (status, got) == (400, param)
    assert streamed == want_stream and sampled_text == want_sampled


def test_one_failing_choice_fails_its_request_only(model, tok, monkeypatch):
    """A choice whose token choice raises in the engine (choice 1 of an n = 2 request, by its seed) fails that
    request with a 500; a request decoded in the same steps completes with what it gets alone."""
    import importlib
    generate_mod = importlib.import_module("gpk_array.llm.generate")
    real = generate_mod.Sequence._push
    app = create_app(model, tok, model_name=NAME, max_batch=4, max_queue=8)
    srv = app.state.server
    hit = threading.Event()

    def flaky(self, token, logprobs=None):
        if self.params.seed == 501 and len(srv.engine.active) == 3:
            hit.set()
            raise RuntimeError("boom in choice 1")
        return real(self, token, logprobs)
    monkeypatch.setattr(generate_mod.Sequence, "_push", flaky)
    # the good request's decode steps wait (bounded) until the bad one is queued, so that both share steps
    # however loaded the machine is
    real_step, bad_queued = srv.engine.step, threading.Event()

    def step():
        bad_queued.wait(30.0)
        return real_step()
    monkeypatch.setattr(srv.engine, "step", step)
    good = {"model": NAME, "prompt": "Hello, world", "max_tokens": 60, "temperature": 0, "ignore_eos": True}
    bad = {"model": NAME, "prompt": "Dear Sir", "max_tokens": 200, "temperature": 1.0, "seed": 500, "n": 2,
           "ignore_eos": True}
    with ServerThread(app) as url:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            f_good = pool.submit(post_completion, url, good)
            wait_until(lambda: srv.engine.active)
            f_bad = pool.submit(post_completion, url, bad)
            wait_until(lambda: srv.loop.waiting or len(srv.engine.active) > 1)
            bad_queued.set()
            r_good, r_bad = f_good.result(), f_bad.result()
    assert hit.is_set()
    assert r_bad.status_code == 500 and "boom in choice 1" in r_bad.json()["error"]["message"]
    assert r_good.status_code == 200
    assert r_good.json()["choices"][0]["text"] == tok.decode(generate(model, tok.encode("Hello, world"),
                                                                      max_new_tokens=60))


def test_error_bodies_name_the_parameter(api):
    for kw, param in ((dict(logprobs=True), "logprobs"), (dict(logit_bias={"x": 1}), "logit_bias")):
        with pytest.raises(openai.BadRequestError) as e:
            api.completions.create(model=NAME, prompt="hi", **kw)
        assert e.value.body["param"] == param and e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        api.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "hi"}], top_logprobs=3)
    assert e.value.body["param"] == "top_logprobs" and "logprobs" in e.value.body["message"]


def test_token_offsets_point_at_each_tokens_first_character(tok):
    """TokenOffsets against an independent count: for valid UTF-8, the character holding byte p is
    len(bytes[:p].decode(errors="ignore")); tokens here split characters (byte tokens) and join them."""
    from gpk_array.llm.server.logprobs import TokenNames, TokenOffsets
    byte_id = {tok.token_bytes(i): i for i in range(tok.vocab_size) if len(tok.token_bytes(i)) == 1}
    for text in ["naïve café ☃ ok", "😀 x 😀😀", "plain ascii", "é" * 5]:
        ids = []
        for j, ch in enumerate(text):  # alternate: a character's own tokens, then its bytes one token each
            ids += tok.encode(ch) if j % 2 else [byte_id[bytes([b])] for b in ch.encode()]
        names = TokenNames(tok)
        offsets = TokenOffsets(names)
        data = b""
        for t in ids:
            start, end = offsets.push(t)
            assert start == len(data.decode("utf-8", errors="ignore"))
            data += tok.token_bytes(t)
            assert end == len(data.decode("utf-8", errors="ignore"))
        assert tok.decode(ids) == text
    # invalid bytes: each lone lead byte is one U+FFFD, and the token after it starts past it
    ids = [byte_id[b"\xe2"], byte_id[b"\xc3"], tok.encode("V")[0]]
    offsets = TokenOffsets(TokenNames(tok))
    assert [offsets.push(t)[0] for t in ids] == [0, 1, 2] and tok.decode(ids) == "\ufffd\ufffdV"


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:CUDA graph capture failed")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_openai_parameters_on_cuda(tok, oracle, dtype):
    """The server on a GPU (CUDA graphs, shared prefills): logprobs with echo against the float64 oracle (float16:
    to its precision), n choices each drawing as its own seed, and (float32) penalties choosing as the oracle."""
    from ..conftest import HAS_GPU
    if not HAS_GPU:
        pytest.skip("no CUDA GPU on this machine")
    import gpk_array as gp
    from ._oracle import TINY
    m = GPT2.from_pretrained(TINY, device="cuda:0", dtype=getattr(gp, dtype))
    tol = 1e-4 if dtype == "float32" else 0.05
    app = create_app(m, tok, model_name=NAME, max_batch=4, max_queue=16)
    with ServerThread(app) as url:
        api = client_of(url)
        prompt = "Once upon a time"
        c = api.completions.create(model=NAME, prompt=prompt, max_tokens=24, temperature=1.0, seed=5, logprobs=5,
                                   echo=True, extra_body={"return_tokens_as_token_ids": True, "ignore_eos": True})
        lp = c.choices[0].logprobs
        ids = ids_of(lp.tokens)
        ref = oracle.log_softmax(ids)
        assert lp.token_logprobs[0] is None
        assert lp.token_logprobs[1:] == pytest.approx([ref[t - 1, ids[t]] for t in range(1, len(ids))], abs=tol)
        kw = dict(model=NAME, prompt=prompt, max_tokens=16, temperature=1.0, extra_body={"ignore_eos": True})
        many = api.completions.create(**kw, n=3, seed=7)
        assert [ch.text for ch in many.choices] == \
            [api.completions.create(**kw, seed=7 + j).choices[0].text for j in range(3)]
        if dtype == "float32":
            for request_kw, extension, oracle_kw in PENALTIES:
                r = api.completions.create(model=NAME, prompt=prompt, max_tokens=20, temperature=0, logprobs=0,
                                           extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True,
                                                       **extension}, **request_kw)
                assert ids_of(r.choices[0].logprobs.tokens) == oracle.greedy(tok.encode(prompt), 20, **oracle_kw)
