"""The server's reliability: no client input makes a 5xx, one failing sequence fails only its request, long prompts
and large bodies do not block other clients, connections stay usable after an error, errors are counted under their
route, tiny temperatures decode greedily. Real HTTP on 127.0.0.1 (uvicorn in a thread) or the in-process ASGI client;
the tiny model on the CPU; no wall-clock asserts (waits are bounded, and only order the steps)."""
import concurrent.futures
import importlib
import json
import re
import threading

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from gpk_array.llm import Engine, SamplingParams, Sequence, Tokenizer, generate, sample  # noqa: E402
from gpk_array.llm import server as server_mod  # noqa: E402
from gpk_array.llm.server import ServerThread, create_app  # noqa: E402

generate_mod = importlib.import_module("gpk_array.llm.generate")  # the module (the package exports the function)

from ._server_common import (NAME, TIMEOUT, TINY, client, greedy_text, model, post_completion,  # noqa: E402,F401
                             server, tok, wait_until)


def assert_openai_error(r, status, param="any"):
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"], err
    assert err["type"] == ("invalid_request_error" if status < 500 else "server_error")
    if param != "any":
        assert err["param"] == param, err
    return err


def post_raw(client, path, raw):
    return client.post(path, content=raw, headers={"content-type": "application/json"})


# --- 1. one client cannot fail everyone ------------------------------------------------------------------------

BAD_FIELDS = [
    (b'{"model": "%s", "prompt": "hi", "seed": -1}', "seed"),  # seed -1 alone (default temperature 1: sampling)
    (b'{"model": "%s", "prompt": "hi", "seed": -1, "temperature": 0.8}', "seed"),
    (b'{"model": "%s", "prompt": "hi", "seed": 18446744073709551616}', "seed"),
    (b'{"model": "%s", "prompt": "hi", "seed": true}', "seed"),
    (b'{"model": "%s", "prompt": "hi", "temperature": NaN}', None),
    (b'{"model": "%s", "prompt": "hi", "temperature": Infinity}', None),
    (b'{"model": "%s", "prompt": "hi", "temperature": -Infinity}', None),
    (b'{"model": "%s", "prompt": "hi", "top_p": NaN}', None),
    (b'{"model": "%s", "prompt": "hi", "temperature": 1e400}', None),
    (b'{"model": "%s", "prompt": "hi", "temperature": -0.5}', "temperature"),
    (b'{"model": "%s", "prompt": "hi", "top_p": 1.5}', "top_p"),
    (b'{"model": "%s", "prompt": "hi", "top_k": 2.5}', "top_k"),
    (b'{"model": "%s", "prompt": "hi", "top_k": -3}', "top_k"),
    (b'{"model": "%s", "prompt": "hi", "max_tokens": -1}', "max_tokens"),
    (b'{"model": "%s", "prompt": "hi", "presence_penalty": ' + b"9" * 400 + b"}", "presence_penalty"),
    (b'{"model": "%s", "prompt": "hi", "frequency_penalty": "x"}', "frequency_penalty"),
    (b'{"model": "%s", "prompt": "hi", "ignore_eos": 1}', "ignore_eos"),
    (b'{"model": "%s", "prompt": "hi", "n": 0}', "n"),
    (b'{"model": "%s", "prompt": "hi", "stream": true, "stream_options": {"include_usage": "y"}}', "include_usage"),
]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("raw,param", BAD_FIELDS)
def test_every_sampling_field_is_checked_at_the_api(client, path, raw, param):
    raw = raw.replace(b"%s", NAME.encode())
    if path.endswith("chat/completions"):
        raw = raw.replace(b'"prompt": "hi"', b'"messages": [{"role": "user", "content": "hi"}]')
    assert_openai_error(post_raw(client, path, raw), 400, param)


def test_sampling_params_check_seed_and_finiteness():
    for bad in (dict(seed=-1), dict(seed=[1, -2]), dict(seed=[3, 4]), dict(seed=1.5), dict(seed=2 ** 64),
                dict(seed=True), dict(temperature=float("nan")), dict(temperature=float("inf")),
                dict(top_p=float("nan")), dict(top_k=2.5)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SamplingParams(**{"temperature": 1.0, **bad})
    SamplingParams(1.0, seed=2 ** 64 - 1)


def test_one_sequence_failing_in_the_engine_fails_only_its_request(model, tok, monkeypatch):
    """A sequence whose token raises in the engine thread (taking it, patched to raise for one seed once another
    sequence shares its decode step) gets its 500; the valid request decoded in the same steps completes, with the
    tokens it gets alone."""
    bad_seed = 4242
    real = generate_mod.Sequence._push
    app = create_app(model, tok, model_name=NAME, max_batch=2, max_queue=4)
    srv = app.state.server
    failed = threading.Event()

    def flaky(self, token, logprobs=None):
        if self.params.seed == bad_seed:
            # wait (bounded) until the valid request is queued, then fail beside it
            wait_until(lambda: len(srv.engine.active) >= 2 or srv.loop.waiting)
            if len(srv.engine.active) == 2:
                failed.set()
                raise RuntimeError("boom in one sequence")
        return real(self, token, logprobs)

    monkeypatch.setattr(generate_mod.Sequence, "_push", flaky)
    bad = {"model": NAME, "prompt": "Once upon a time", "max_tokens": 200, "temperature": 0.9, "seed": bad_seed,
           "ignore_eos": True}
    good = {"model": NAME, "prompt": "Hello, world", "max_tokens": 20, "temperature": 0}
    with ServerThread(app) as url:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            f_bad = pool.submit(post_completion, url, bad)
            wait_until(lambda: srv.engine.active or srv.loop.waiting)  # the bad one is in the engine first
            f_good = pool.submit(post_completion, url, good)
            r_bad, r_good = f_bad.result(), f_good.result()
        assert failed.is_set()
        err = assert_openai_error(r_bad, 500)
        assert "boom in one sequence" in err["message"]
        assert r_good.status_code == 200, r_good.text
        assert r_good.json()["choices"][0]["text"] == greedy_text(model, tok, "Hello, world", 20)
        with httpx.Client(base_url=url, timeout=TIMEOUT) as c:  # the engine goes on
            r = c.post("/v1/completions", json=good)
            assert r.status_code == 200 and r.json()["choices"][0]["text"] == r_good.json()["choices"][0]["text"]


def test_engine_fails_one_sequence_and_goes_on(model, monkeypatch):
    real = generate_mod.Sequence._push

    def flaky(self, token, logprobs=None):
        if self.params.seed == 1:
            raise ValueError("bad sequence")
        return real(self, token, logprobs)
    monkeypatch.setattr(generate_mod.Sequence, "_push", flaky)
    engine = Engine(model, max_batch=2, max_len=64)
    good = Sequence([1, 2, 3], max_new_tokens=8)
    bad = Sequence([4, 5], max_new_tokens=8, params=SamplingParams(1.0, seed=1))
    engine.add([good, bad])
    while engine.active:
        engine.step()
    assert bad.finish_reason == "error" and isinstance(bad.exception, ValueError) and "bad sequence" in bad.error
    assert good.finish_reason == "length" and good.tokens == generate(model, [1, 2, 3], max_new_tokens=8)
    assert engine.free == 2
    with pytest.raises(ValueError, match="bad sequence"):  # generate() raises a sequence's error
        generate(model, [4, 5], max_new_tokens=4, temperature=1.0, seed=1)


def test_a_failing_prefill_is_retried_alone(model, tok, monkeypatch):
    """A batched prefill that raises is retried one sequence at a time: only the sequence whose own prefill raises
    fails."""
    real_add = Engine.add

    def add(self, seqs):
        if any(s.prompt == [7, 7, 7] for s in seqs):
            raise RuntimeError("bad prefill")
        return real_add(self, seqs)
    monkeypatch.setattr(Engine, "add", add)
    app = create_app(model, tok, model_name=NAME, max_batch=4, max_queue=8)
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        r = c.post("/v1/completions", json={"model": NAME, "prompt": [[1, 2, 3], [7, 7, 7]], "max_tokens": 5,
                                            "temperature": 0})
        assert "bad prefill" in assert_openai_error(r, 500)["message"]
        r = c.post("/v1/completions", json={"model": NAME, "prompt": [[1, 2, 3], [4, 5, 6]], "max_tokens": 5,
                                            "temperature": 0})
        assert r.status_code == 200
        assert r.json()["choices"][0]["text"] == tok.decode(generate(model, [1, 2, 3], max_new_tokens=5,
                                                                     stop_tokens=[tok.eos_token_id]))


# --- 2. long prompts and large bodies do not block other clients ----------------------------------------------


class BlockingTokenizer:
    """The tiny tokenizer, whose encode of a text starting with "BLOCK" waits for ``release`` (bounded)."""

    def __init__(self, tok):
        self.tok = tok
        self.started, self.release = threading.Event(), threading.Event()
        self.encoded = []

    def encode(self, text):
        self.encoded.append(len(text))
        if text.startswith("BLOCK") or "BLOCK" in text[:64]:
            self.started.set()
            self.release.wait(20)
        return self.tok.encode(text)

    def __getattr__(self, name):
        return getattr(self.tok, name)


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_health_answers_while_a_prompt_is_tokenized(model, tok, path):
    blocking = BlockingTokenizer(tok)
    app = create_app(model, blocking, model_name=NAME, max_batch=2)
    body = {"model": NAME, "max_tokens": 4, "temperature": 0}
    if path == "/v1/completions":
        body["prompt"] = "BLOCK " + "word " * 100
    else:
        body["messages"] = [{"role": "user", "content": "BLOCK " + "word " * 100}]
    order = []
    with ServerThread(app) as url:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            def post():
                with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
                    r = c.post(path, json=body)
                    order.append("completion")
                    return r
            future = pool.submit(post)
            assert blocking.started.wait(20)  # the prompt is being tokenized now
            try:
                with httpx.Client(base_url=url, timeout=httpx.Timeout(10.0)) as c:
                    h = c.get("/health")
                    order.append("health")
                    assert h.status_code == 200 and h.json()["status"] == "ok"
                    m = c.get("/metrics")
                    assert m.status_code == 200
            finally:
                blocking.release.set()
            r = future.result()
    assert r.status_code == 200, r.text
    assert order == ["health", "completion"]


def test_text_too_long_for_the_context_is_refused_before_tokenizing(model, tok):
    counting = BlockingTokenizer(tok)
    app = create_app(model, counting, model_name=NAME, max_batch=2)
    ctx, most = app.state.server.engine.max_len, tok.max_token_bytes
    with TestClient(app) as c:
        for n in ((ctx - 1) * most + 1, 2_000_000):
            r = c.post("/v1/completions", json={"model": NAME, "prompt": "!" * n})
            assert assert_openai_error(r, 400, "prompt")["code"] == "context_length_exceeded"
            r = c.post("/v1/chat/completions", json={"model": NAME, "messages": [{"role": "user",
                                                                                   "content": "!" * n}]})
            assert assert_openai_error(r, 400, "messages")["code"] == "context_length_exceeded"
        assert counting.encoded == []  # refused by their length alone
        # the bound is safe: the longest text it lets through may still fit (here it is tokenized, then refused)
        r = c.post("/v1/completions", json={"model": NAME, "prompt": "!" * ((ctx - 1) * most)})
        assert counting.encoded == [(ctx - 1) * most]
        assert assert_openai_error(r, 400, "prompt")["code"] == "context_length_exceeded"


def test_the_token_bound_holds():
    """A text of n characters has at least n / max_token_bytes tokens (the bound the early refusal relies on), for
    texts of long tokens, multi-byte characters and special tokens."""
    tok = Tokenizer.from_dir(TINY)
    longest = max((tok.id_to_token(i) for i in range(tok.vocab_size)), key=lambda t: len(t or ""))
    for text in ["<|endoftext|>" * 50, "!" * 3000, "naïve café ☃ ok " * 40, "😀" * 100, longest * 30]:
        assert len(tok.encode(text)) * tok.max_token_bytes >= len(text.encode("utf-8")) >= len(text)


def test_body_over_the_cap_gets_413(model, tok):
    app = create_app(model, tok, model_name=NAME, max_batch=2, max_body_bytes=1000)
    big = json.dumps({"model": NAME, "prompt": "x" * 2000}).encode()
    with TestClient(app) as c:
        for path in ("/v1/completions", "/v1/chat/completions"):
            assert_openai_error(post_raw(c, path, big), 413, None)

            def chunks():  # no Content-Length: counted as it arrives
                for i in range(0, len(big), 100):
                    yield big[i:i + 100]
            r = c.post(path, content=chunks(), headers={"content-type": "application/json"})
            assert assert_openai_error(r, 413, None)["code"] == "request_too_large"
        r = c.post("/v1/completions", json={"model": NAME, "prompt": "Hi", "max_tokens": 2})
        assert r.status_code == 200
        text = c.get("/metrics").text
        assert re.search(r'^gpk_requests_total\{endpoint="/v1/completions",status="413"\} 2$', text, re.M)
    # over real HTTP, with keep-alive: the 413 comes back and the connection serves the next request
    app = create_app(model, tok, model_name=NAME, max_batch=2, max_body_bytes=1000)
    seen = []
    with ServerThread(_recording(app, seen)) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        assert_openai_error(post_raw(c, "/v1/completions", b" " * 5000), 413)
        assert c.post("/v1/completions", json={"model": NAME, "prompt": "Hi", "max_tokens": 2}).status_code == 200
    assert len(seen) == 2 and len(set(seen)) == 1


def test_serve_option_max_body_bytes():
    from gpk_array.cli import build_parser
    args = build_parser().parse_args(["serve", "--model", "m", "--max-body-bytes", "1MiB"])
    assert args.max_body_bytes == 1 << 20
    assert build_parser().parse_args(["serve", "--model", "m"]).max_body_bytes is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--model", "m", "--max-body-bytes", "0"])
    with pytest.raises(ValueError, match="max_body_bytes"):
        create_app(None, max_body_bytes=0)


# --- 3. client mistakes are 400, not 500 ------------------------------------------------------------------------

MALFORMED = [
    b'{"model": "%s", "prompt": "hi", "temperature": NaN}',
    b'{"model": "%s", "prompt": "hi", "top_p": NaN}',
    b'{"model": "%s", "prompt": "\\ud800"}',
    b'{"model": "%s", "prompt": ["ok", "\\udfff tail"]}',
    b'{"model": "%s", "messages": [{"role": "user", "content": "\\ud800"}]}',
    b'{"model": "%s", "messages": [{"role": "\\ud800", "content": "hi"}]}',
    b'{"model": "%s", "messages": [{"role": "user", "content": [{"type": "text", "text": "\\udc00"}]}]}',
    b'{"model": "%s", "prompt": "hi", "stop": "\\ud800"}',
    b'{"model": "\\ud800", "prompt": "hi"}',
    b'{"model": "%s", "prompt": ' + b"[" * 20000 + b"]" * 20000 + b"}",
    b'{"model": "%s", "prompt": "hi", "extra": ' + b'{"a": ' * 20000 + b"1" + b"}" * 20000 + b"}",
    b'{"model": "%s", "prompt": "hi", "max_tokens": ' + b"9" * 5000 + b"}",
    b'{"model": "%s", "prompt": [' + b"1" * 5000 + b"]}",
    b'{"model": "%s", "prompt": "hi", "seed": -1}',
    b'{"model": "%s", "prompt": "\xff\xfe bad utf-8"}',
    b'\xef\xbb\xbf{"model": "%s", "prompt": "hi"}',
    b'',
    b'null',
    b'"a string"',
    b'{"model": ["%s"], "prompt": "hi"}',
    b'{"model": {"x": 1}, "prompt": "hi"}',
]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("raw", MALFORMED, ids=range(len(MALFORMED)))
def test_client_mistakes_are_400(client, path, raw):
    r = post_raw(client, path, raw.replace(b"%s", NAME.encode()))
    assert r.status_code in (400, 404), r.text
    assert_openai_error(r, r.status_code)


def test_client_mistakes_with_several_models(model, tok):
    """With several models the body is read once, to pick the model: the same mistakes are 400 there too."""
    app = create_app(model, tok, model_name="a", more=[(model, tok, "b", None)], max_batch=2)
    with TestClient(app) as c:
        for raw in MALFORMED:
            r = post_raw(c, "/v1/completions", raw.replace(b"%s", b"b"))
            assert r.status_code in (400, 404), (raw[:60], r.text)
            assert_openai_error(r, r.status_code)
        assert c.post("/v1/completions", json={"model": "b", "prompt": "Hi", "max_tokens": 2}).status_code == 200


# --- 4. an error does not cost the client its connection --------------------------------------------------------


def _recording(app, seen):
    """app, recording the client address of each HTTP request (one address: one TCP connection)."""
    async def wrapper(scope, receive, send):
        if scope["type"] == "http":
            seen.append(scope.get("client"))
        await app(scope, receive, send)
    return wrapper


@pytest.mark.parametrize("where", ["handler", "after the response"])
def test_keep_alive_survives_an_internal_error(model, tok, monkeypatch, where):
    app = create_app(model, tok, model_name=NAME, max_batch=2)
    if where == "handler":  # a bug in a request handler
        real = server_mod.Server._options

        def boom(self, body, chat):
            if body.get("user") == "boom":
                raise RuntimeError("internal bug")
            return real(self, body, chat)
        monkeypatch.setattr(server_mod.Server, "_options", boom)
    else:  # a bug after the response was made (here: counting it), which Starlette's error handler answers
        real = server_mod.Metrics.request
        armed = [True]

        def boom(self, endpoint, status):
            if armed[0] and status == 200 and endpoint == "/v1/completions":
                armed[0] = False
                raise RuntimeError("internal bug")
            return real(self, endpoint, status)
        monkeypatch.setattr(server_mod.Metrics, "request", boom)
    seen = []
    valid = {"model": NAME, "prompt": "Hi", "max_tokens": 3, "temperature": 0}
    with ServerThread(_recording(app, seen)) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        r = c.post("/v1/completions", json={**valid, "user": "boom"})
        assert "internal bug" in assert_openai_error(r, 500)["message"]
        codes = [c.post("/v1/completions", json=valid).status_code for _ in range(10)]
        assert codes == [200] * 10
        assert len(seen) == 11 and len(set(seen)) == 1, seen  # all on the first connection
        text = c.get("/metrics").text
    assert re.search(r'^gpk_requests_total\{endpoint="/v1/completions",status="500"\} 1$', text, re.M)
    assert 'endpoint="other"' not in text


def test_an_error_inside_a_stream_ends_it_cleanly(model, tok, monkeypatch):
    """An unexpected error once a stream's headers are out: an error event ends the response, and the connection
    serves the next request."""
    real = server_mod.Server._usage
    monkeypatch.setattr(server_mod.Server, "_usage", lambda self, job: 1 / 0)
    app = create_app(model, tok, model_name=NAME, max_batch=2)
    seen = []
    req = {"model": NAME, "prompt": "Hi", "max_tokens": 3, "temperature": 0, "stream": True,
           "stream_options": {"include_usage": True}}
    with ServerThread(_recording(app, seen)) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        with c.stream("POST", "/v1/completions", json=req) as r:
            data = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
        assert "ZeroDivisionError" in json.loads(data[-1])["error"]["message"]
        monkeypatch.setattr(server_mod.Server, "_usage", real)
        assert c.post("/v1/completions", json={**req, "stream": False}).status_code == 200
        assert len(seen) == 2 and len(set(seen)) == 1


# --- 5. metrics label errors by route ---------------------------------------------------------------------------


def test_metrics_label_errors_by_route(model, tok, monkeypatch):
    app = create_app(model, tok, model_name=NAME, max_batch=2)
    monkeypatch.setattr(server_mod.Server, "_chat_text", lambda self, body: 1 / 0)
    with TestClient(app) as c:
        assert_openai_error(c.post("/v1/chat/completions", json={"model": NAME, "messages": []}), 500)
        assert_openai_error(post_raw(c, "/v1/completions", b'{"model": "%s", "prompt": "\\ud800"}' % NAME.encode()),
                            400)
        assert_openai_error(post_raw(c, "/v1/completions", b"[" * 20000), 400)
        assert c.get("/v1/completions").status_code == 405
        assert c.get("/nowhere").status_code == 404
        text = c.get("/metrics").text
    for endpoint, status in (("/v1/chat/completions", 500), ("/v1/completions", 400), ("/v1/completions", 405),
                             ("other", 404)):
        assert re.search(rf'^gpk_requests_total\{{endpoint="{endpoint}",status="{status}"\}} \d+$', text, re.M), text
    assert not re.search(r'endpoint="other",status="5\d\d"', text)


# --- 6. tiny temperatures decode greedily; NaN / inf logits ----------------------------------------------------


@pytest.mark.parametrize("temperature", [1e-310, 5e-324, 1e-300, 1e-12, 1e-6])
def test_tiny_temperature_is_greedy(client, model, tok, temperature):
    req = {"model": NAME, "prompt": "Hello, world", "max_tokens": 20, "seed": 3}
    greedy = client.post("/v1/completions", json={**req, "temperature": 0}).json()["choices"][0]["text"]
    assert greedy == greedy_text(model, tok, "Hello, world", 20) and greedy
    r = client.post("/v1/completions", json={**req, "temperature": temperature})
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == greedy
    ids = tok.encode("Hello, world")
    assert generate(model, ids, max_new_tokens=20, temperature=temperature, seed=1) == \
        generate(model, ids, max_new_tokens=20)


def test_sampler_never_picks_nan_or_overflows():
    huge = np.array([-3e38, 3e38, 0.0, np.nextafter(np.float32(3e38), 0)], dtype=np.float32)  # logits / T overflow
    for t in (1e-4, 0.01):
        assert {sample(huge, SamplingParams(t, seed=0), i) for i in range(50)} == {1}
    for t in (1e-310, 5e-324, 1e-30):  # below MIN_TEMPERATURE: greedy
        assert sample(np.array([1.0, 3.0, 2.0, -1.0], dtype=np.float32), SamplingParams(t)) == 1
    nan = np.array([np.nan, 1.0, np.nan, 0.5, np.nan], dtype=np.float32)
    assert {sample(nan, SamplingParams(1.0, seed=1), i) for i in range(200)} == {1, 3}
    assert sample(nan, SamplingParams(0.0)) == 1
    inf = np.array([1.0, np.inf, 2.0, np.inf, np.nan])
    assert {sample(inf, SamplingParams(0.7, seed=2), i) for i in range(200)} == {1, 3}
    assert sample(inf, SamplingParams(0.0)) == 1
    for hopeless in (np.full(4, np.nan), np.array([-np.inf, np.nan, -np.inf])):
        for params in (SamplingParams(1.0), SamplingParams(0.0)):
            with pytest.raises(ValueError, match="no finite logit"):
                sample(hopeless, params)
    # ordinary logits: the softmax's frequencies
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    freq = np.bincount([sample(logits, SamplingParams(1.0, seed=3), i) for i in range(4000)], minlength=4) / 4000
    assert np.allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.03)
