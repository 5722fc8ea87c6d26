"""The OpenAI-compatible server, over real HTTP on 127.0.0.1 (uvicorn in a thread), with the tiny model on the CPU."""
import concurrent.futures
import json
import re
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from gpk_array.llm import GPT2, generate  # noqa: E402
from gpk_array.llm.server import ServerThread, create_app  # noqa: E402

from ._server_common import NAME, TIMEOUT, TINY, client, greedy_text, model, server, tok  # noqa: E402,F401


def events(response):
    """The data of each server-sent event of a streaming response, [DONE] last."""
    out = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            out.append(line[6:])
        else:
            assert line == "", line
    assert out[-1] == "[DONE]"
    return [json.loads(d) for d in out[:-1]]


def test_health_and_models(client):
    assert client.get("/health").json()["status"] == "ok"
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == NAME


def test_completion(client, model, tok):
    r = client.post("/v1/completions", json={"model": NAME, "prompt": "Hello, world", "max_tokens": 20,
                                             "temperature": 0})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "text_completion" and body["model"] == NAME
    assert body["choices"][0]["text"] == greedy_text(model, tok, "Hello, world", 20)
    assert body["choices"][0]["finish_reason"] in ("length", "stop")
    assert body["usage"]["prompt_tokens"] == len(tok.encode("Hello, world"))
    # token-id prompts and several prompts in one request
    ids = tok.encode("The quick brown fox")
    r = client.post("/v1/completions", json={"model": NAME, "prompt": [ids, "Hello, world"], "max_tokens": 20,
                                             "temperature": 0})
    texts = [c["text"] for c in sorted(r.json()["choices"], key=lambda c: c["index"])]
    assert texts == [greedy_text(model, tok, "The quick brown fox", 20), greedy_text(model, tok, "Hello, world", 20)]


def test_seeded_sampling_is_reproducible(client):
    req = {"model": NAME, "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0.9, "top_p": 0.95,
           "top_k": 50, "seed": 42}
    a = client.post("/v1/completions", json=req).json()["choices"][0]["text"]
    assert a == client.post("/v1/completions", json=req).json()["choices"][0]["text"]


def test_streaming_completion(client, model, tok):
    req = {"model": NAME, "prompt": "Hello, world", "max_tokens": 30, "temperature": 0, "stream": True,
           "stream_options": {"include_usage": True}}
    with client.stream("POST", "/v1/completions", json=req) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        chunks = events(r)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1
    body = chunks[:-1]
    assert "".join(c["choices"][0]["text"] for c in body) == greedy_text(model, tok, "Hello, world", 30)
    assert body[-1]["choices"][0]["finish_reason"] in ("length", "stop")
    assert all(c["choices"][0]["finish_reason"] is None for c in body[:-1])


def test_chat(client, model, tok):
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"}]
    r = client.post("/v1/chat/completions", json={"model": NAME, "messages": messages, "max_tokens": 16,
                                                  "temperature": 0})
    body = r.json()
    assert r.status_code == 200 and body["object"] == "chat.completion"
    prompt = "System: You are terse.\nUser: Hi there\nAssistant:"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": greedy_text(model, tok, prompt, 16)}
    with client.stream("POST", "/v1/chat/completions", json={"model": NAME, "messages": messages, "max_tokens": 16,
                                                             "temperature": 0, "stream": True}) as r:
        chunks = events(r)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == body["choices"][0]["message"]["content"]
    # content as a list of text parts
    parts = [{"role": "system", "content": [{"type": "text", "text": "You are "}, {"type": "text", "text": "terse."}]},
             messages[1]]
    r = client.post("/v1/chat/completions", json={"model": NAME, "messages": parts, "max_tokens": 16,
                                                  "temperature": 0})
    assert r.json()["choices"][0]["message"] == body["choices"][0]["message"]


def test_stop_strings(client, model, tok):
    full = greedy_text(model, tok, "Hello, world", 40)
    stop = full[12:15]
    want = full[:full.index(stop)]
    req = {"model": NAME, "prompt": "Hello, world", "max_tokens": 40, "temperature": 0, "stop": [stop]}
    r = client.post("/v1/completions", json=req).json()
    assert r["choices"][0]["text"] == want and r["choices"][0]["finish_reason"] == "stop"
    with client.stream("POST", "/v1/completions", json={**req, "stream": True}) as s:
        chunks = events(s)
    assert "".join(c["choices"][0]["text"] for c in chunks) == want
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_concurrent_streams_share_decode_steps(server, model, tok):
    url, srv = server
    prompts = ["Hello, world", "The quick brown fox", "Once upon a time", "In the beginning", "Dear Sir",
               "It was a dark", "Call me", "To be or not"]
    want = {p: greedy_text(model, tok, p, 40) for p in prompts}

    def stream(prompt):
        with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
            req = {"model": NAME, "prompt": prompt, "max_tokens": 40, "temperature": 0, "stream": True}
            with c.stream("POST", "/v1/completions", json=req) as r:
                return prompt, "".join(ch["choices"][0]["text"] for ch in events(r))

    before = srv.engine.max_active
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
        got = dict(pool.map(stream, prompts))
    assert got == want  # batched decoding gives each stream what it gets alone
    assert max(before, srv.engine.max_active) > 1


def _wait_idle(client, deadline=20.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        h = client.get("/health").json()
        if h["active"] == 0 and h["waiting"] == 0:
            return h
        time.sleep(0.02)
    raise AssertionError(f"server still busy: {h}")


def test_disconnect_stops_generation(server, client):
    url, srv = server
    _wait_idle(client)
    before = srv.metrics.generated_tokens
    req = {"model": NAME, "prompt": "Hello", "max_tokens": 250, "temperature": 0, "stream": True, "ignore_eos": True}
    with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        with c.stream("POST", "/v1/completions", json=req) as r:
            next(r.iter_lines())
    _wait_idle(client)
    assert srv.engine.free == srv.engine.max_batch
    assert srv.metrics.generated_tokens - before < 250  # dropped, not run to its 250 tokens


BAD = [
    (b"{not json", 400, None),
    (b"[1, 2]", 400, None),
    ({"prompt": "hi"}, 400, "model"),
    ({"model": "gpt-4", "prompt": "hi"}, 404, "model"),
    ({"model": NAME}, 400, "prompt"),
    ({"model": NAME, "prompt": 5}, 400, "prompt"),
    ({"model": NAME, "prompt": [[1, "a"]]}, 400, "prompt"),
    ({"model": NAME, "prompt": [1, 2, 99999]}, 400, "prompt"),
    ({"model": NAME, "prompt": "word " * 300}, 400, "prompt"),
    ({"model": NAME, "prompt": "hi", "max_tokens": 0}, 400, "max_tokens"),
    ({"model": NAME, "prompt": "hi", "max_tokens": 10_000}, 400, "max_tokens"),
    ({"model": NAME, "prompt": "word " * 100, "max_tokens": 200}, 400, "max_tokens"),
    ({"model": NAME, "prompt": "hi", "max_tokens": "5"}, 400, "max_tokens"),
    ({"model": NAME, "prompt": "hi", "max_tokens": True}, 400, "max_tokens"),
    ({"model": NAME, "prompt": "hi", "temperature": 3}, 400, "temperature"),
    ({"model": NAME, "prompt": "hi", "temperature": "hot"}, 400, "temperature"),
    ({"model": NAME, "prompt": "hi", "top_p": 0}, 400, "top_p"),
    ({"model": NAME, "prompt": "hi", "top_k": -1}, 400, "top_k"),
    ({"model": NAME, "prompt": "hi", "seed": 1.5}, 400, "seed"),
    ({"model": NAME, "prompt": "hi", "stream": "yes"}, 400, "stream"),
    ({"model": NAME, "prompt": "hi", "stop": 3}, 400, "stop"),
    ({"model": NAME, "prompt": "hi", "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
    ({"model": NAME, "prompt": "hi", "n": 5}, 400, "n"),  # more choices than the server's 4 slots
    ({"model": NAME, "prompt": "hi", "n": 2, "best_of": 3}, 400, "best_of"),
    ({"model": NAME, "prompt": "hi", "logprobs": 6}, 400, "logprobs"),
    ({"model": NAME, "prompt": "hi", "logprobs": True}, 400, "logprobs"),
    ({"model": NAME, "prompt": "hi", "logprobs": -1}, 400, "logprobs"),
    ({"model": NAME, "prompt": "hi", "echo": "yes"}, 400, "echo"),
    ({"model": NAME, "prompt": "hi", "max_tokens": 0, "echo": False}, 400, "max_tokens"),
    ({"model": NAME, "prompt": "hi", "presence_penalty": 2.5}, 400, "presence_penalty"),
    ({"model": NAME, "prompt": "hi", "frequency_penalty": -3}, 400, "frequency_penalty"),
    ({"model": NAME, "prompt": "hi", "repetition_penalty": 0}, 400, "repetition_penalty"),
    ({"model": NAME, "prompt": "hi", "min_p": 1.5}, 400, "min_p"),
    ({"model": NAME, "prompt": "hi", "logit_bias": [1, 2]}, 400, "logit_bias"),
    ({"model": NAME, "prompt": "hi", "logit_bias": {"1024": 5}}, 400, "logit_bias"),  # outside the 1024 ids
    ({"model": NAME, "prompt": "hi", "logit_bias": {"-1": 5}}, 400, "logit_bias"),
    ({"model": NAME, "prompt": "hi", "logit_bias": {"a": 5}}, 400, "logit_bias"),
    ({"model": NAME, "prompt": "hi", "logit_bias": {"5": 101}}, 400, "logit_bias"),
    ({"model": NAME, "prompt": "hi", "logit_bias": {"5": "1"}}, 400, "logit_bias"),
    ({"model": NAME, "prompt": "hi", "logit_bias": {str(i): 1 for i in range(1025)}}, 400, "logit_bias"),
    ({"model": NAME, "prompt": "hi", "return_tokens_as_token_ids": 1}, 400, "return_tokens_as_token_ids"),
    ({"model": NAME, "prompt": "hi", "suffix": "end"}, 400, "suffix"),
    ({"model": NAME, "prompt": "hi", "stream": True, "stream_options": 1}, 400, "stream_options"),
]
BAD_CHAT = [
    ({"model": NAME}, 400, "messages"),
    ({"model": NAME, "messages": []}, 400, "messages"),
    ({"model": NAME, "messages": "hi"}, 400, "messages"),
    ({"model": NAME, "messages": [{"content": "hi"}]}, 400, "messages[0]"),
    ({"model": NAME, "messages": [{"role": "user", "content": 5}]}, 400, "messages[0].content"),
    ({"model": NAME, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400, "messages[0].content"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": -3}, 400,
     "max_completion_tokens"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "logprobs": 3}, 400, "logprobs"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}, 400, "top_logprobs"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "logprobs": True, "top_logprobs": 21}, 400,
     "top_logprobs"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "n": 5}, 400, "n"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "echo": True}, 400, "echo"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "logit_bias": {"99999": 1}}, 400,
     "logit_bias"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}, 400,
     "tools"),
    ({"model": NAME, "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}},
     400, "response_format"),
]


@pytest.mark.parametrize("path,body,status,param", [("/v1/completions", *b) for b in BAD] +
                         [("/v1/chat/completions", *b) for b in BAD_CHAT])
def test_bad_requests(client, path, body, status, param):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = client.post(path, content=content, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    assert err["param"] == param


def test_unknown_routes_and_methods(client):
    r = client.get("/v1/engines")
    assert r.status_code == 404 and "error" in r.json()
    r = client.get("/v1/completions")
    assert r.status_code == 405 and "error" in r.json()
    assert client.get("/health").status_code == 200


def test_metrics(client):
    client.post("/v1/completions", json={"model": NAME, "prompt": "Hi", "max_tokens": 3, "temperature": 0})
    text = client.get("/metrics").text
    assert re.search(r'^gpk_requests_total\{endpoint="/v1/completions",status="200"\} \d+$', text, re.M)
    assert re.search(r"^gpk_generation_tokens_total [1-9]\d*$", text, re.M)
    assert re.search(r"^gpk_prompt_tokens_total [1-9]\d*$", text, re.M)
    assert "# TYPE gpk_time_to_first_token_seconds histogram" in text
    count = int(re.search(r"^gpk_time_to_first_token_seconds_count (\d+)$", text, re.M).group(1))
    inf = int(re.search(r'^gpk_time_to_first_token_seconds_bucket\{le="\+Inf"\} (\d+)$', text, re.M).group(1))
    assert count == inf >= 1


def test_overload_gets_429(model, tok):
    app = create_app(model, tok, model_name=NAME, max_batch=1, max_queue=1)
    req = {"model": NAME, "prompt": "Hello", "max_tokens": 200, "temperature": 0, "ignore_eos": True}
    with ServerThread(app) as url:
        def post(_):
            with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
                return c.post("/v1/completions", json=req)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(post, range(8)))
        codes = sorted(r.status_code for r in responses)
        assert 429 in codes and 200 in codes and set(codes) <= {200, 429}, codes
        err = next(r for r in responses if r.status_code == 429).json()["error"]
        assert err["code"] == "rate_limit_exceeded"
        assert all(len(r.json()["choices"][0]["text"]) > 0 for r in responses if r.status_code == 200)
        with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
            assert c.get("/health").json()["status"] == "ok"


def test_openai_client(server, model, tok):
    openai = pytest.importorskip("openai")
    url, _ = server
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", timeout=30, max_retries=0)
    assert [m.id for m in client.models.list()] == [NAME]
    c = client.completions.create(model=NAME, prompt="Hello, world", max_tokens=20, temperature=0)
    assert c.choices[0].text == greedy_text(model, tok, "Hello, world", 20)
    assert c.usage.completion_tokens >= 1
    pieces = [ch.choices[0].text for ch in client.completions.create(
        model=NAME, prompt="Hello, world", max_tokens=20, temperature=0, stream=True) if ch.choices]
    assert "".join(pieces) == c.choices[0].text
    chat = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Hi"}], max_tokens=12,
                                          temperature=0)
    assert chat.choices[0].message.role == "assistant"
    stream = client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Hi"}], max_tokens=12,
                                            temperature=0, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == chat.choices[0].message.content
    assert chunks[-1].usage.completion_tokens >= 1
    extra = client.completions.create(model=NAME, prompt="Hi", max_tokens=5, temperature=0,
                                      extra_body={"top_k": 1, "ignore_eos": True})
    assert extra.usage.completion_tokens == 5
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=NAME, prompt="Hi", max_tokens=0)
    assert e.value.body["param"] == "max_tokens"
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="gpt-4", prompt="Hi")


def test_two_models_from_two_scheduler_contexts(model, tok):
    """Issue 5's case over HTTP: one app, two models, each with its engine thread in its own gpk_array.sched
    context (KV cache charged to it); concurrent streams to both get what each model gives alone."""
    from gpk_array import sched
    from gpk_array.llm import GPT2Config, random_weights
    cfg = GPT2Config.from_json(TINY / "config.json")
    other = GPT2.from_weights(cfg, random_weights(cfg, seed=7), device="cpu")
    sched.initialize("cpu", total_vram_budget=1 << 30)
    try:
        ctx_a = sched.create_context("tenant-a", 256 << 20)
        ctx_b = sched.create_context("tenant-b", 256 << 20)
        app = create_app(model, tok, model_name="a", max_batch=4, context=ctx_a,
                         more=[(other, tok, "b", ctx_b)])
        prompts = [("a", "Hello, world"), ("b", "Hello, world"), ("a", "Once upon a time"), ("b", "Dear Sir")]
        want = {(n, p): greedy_text(model if n == "a" else other, tok, p, 24) for n, p in prompts}
        assert want["a", "Hello, world"] != want["b", "Hello, world"]  # two different models
        with ServerThread(app) as url:
            def stream(item):
                n, p = item
                with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
                    req = {"model": n, "prompt": p, "max_tokens": 24, "temperature": 0, "stream": True}
                    with c.stream("POST", "/v1/completions", json=req) as r:
                        return item, "".join(ch["choices"][0]["text"] for ch in events(r))
            with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
                got = dict(pool.map(stream, prompts))
            with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
                assert [m["id"] for m in c.get("/v1/models").json()["data"]] == ["a", "b"]
                r = c.post("/v1/completions", json={"model": "c", "prompt": "x"})
                assert r.status_code == 404 and "'a', 'b'" in r.json()["error"]["message"]
                text = c.get("/metrics").text
                assert text.count("# TYPE gpk_generation_tokens_total counter") == 1
                assert re.search(r'^gpk_generation_tokens_total\{model="b"\} [1-9]\d*$', text, re.M)
                assert set(c.get("/health").json()["models"]) == {"a", "b"}
        assert got == want
        stats = sched.stats()["contexts"]
        assert stats["tenant-a"]["peak"] > 0 and stats["tenant-b"]["peak"] > 0  # each model's cache in its own
    finally:
        sched.shutdown()


def test_serve_builds_one_app_for_several_model_directories(monkeypatch):
    """`gpk serve --model A --model B --context-vram 64MiB`: one app, a guaranteed scheduler context per model."""
    import uvicorn

    from gpk_array import sched
    seen = {}
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: seen.update(
        app=self.config.app, port=self.config.port, bound=sockets[0].getsockname()[1]))
    from gpk_array.llm.server import bind_socket, serve
    try:
        sock = bind_socket("127.0.0.1", 0)
        port = sock.getsockname()[1]
        serve([TINY, TINY], model_name=["x", "y"], device="cpu", port=port, context_vram="64MiB", sock=sock)
        servers = seen["app"].state.servers
        assert list(servers) == ["x", "y"] and seen["port"] == seen["bound"] == port
        assert sock.fileno() == -1  # serve closed the socket it was given
        assert [sv.loop.context.name for sv in servers.values()] == ["serve-x", "serve-y"]
        assert {c.name: c.qos for c in sched.list_contexts()} == {"serve-x": "guaranteed", "serve-y": "guaranteed"}
        with pytest.raises(ValueError, match="names"):
            serve([TINY], model_name=["x", "y"], device="cpu")
    finally:
        sched.shutdown()


@pytest.mark.parametrize("interval", [0.0, 0.25])
def test_stream_interval_gathers_tokens(model, tok, interval, monkeypatch):
    """A stream with or without an interval sends the text the model generates (each greedy step of the tiny model
    takes milliseconds). Without an interval each step's token goes out alone; the engine steps are slowed to 20 ms
    there, so that a loaded host's event loop (which sends whatever has arrived) keeps up. How the interval gathers
    tokens is checked on a simulated clock below."""
    if not interval:
        from gpk_array.llm.generate import Engine
        step = Engine.step
        monkeypatch.setattr(Engine, "step", lambda self: time.sleep(0.02) or step(self))
    app = create_app(model, tok, model_name=NAME, max_batch=2, max_queue=4, stream_interval=interval)
    req = {"model": NAME, "prompt": "Hello, world", "max_tokens": 24, "temperature": 0, "stream": True,
           "ignore_eos": True}
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        with c.stream("POST", "/v1/completions", json=req) as r:
            chunks = events(r)
    text = "".join(ch["choices"][0]["text"] for ch in chunks)
    assert text == tok.decode(generate(model, tok.encode("Hello, world"), max_new_tokens=24))
    if not interval:
        assert len(chunks) >= 8  # one event per step, but for what the tokenizer holds back (partial characters)


@pytest.mark.parametrize("interval", [0.0, 0.005])
def test_stream_interval_on_a_simulated_clock(tok, interval, monkeypatch):
    """streaming.choice_events, the pacing of a stream, on a simulated clock: 24 tokens arrive 1 ms apart. With a 5 ms
    interval, the first goes out at once, and afterwards each event waits until 5 ms after the previous one and
    carries every token that arrived meanwhile: events at 0, 5, ..., 25 ms with tokens [0], [1-5], ..., [21-23].
    Without an interval each token goes out alone, with no wait."""
    import asyncio
    import types

    from gpk_array.llm import server as server_mod
    from gpk_array.llm.server import streaming

    tokens = tok.encode("The quick brown fox jumps over the lazy dog, and then it runs far away into the woods")[:24]
    assert len(tokens) == 24
    clock = types.SimpleNamespace(now=0.0)
    waits = []
    arrivals = [(i * 1e-3, (0, [t], None, "length" if i == 23 else None, None)) for i, t in enumerate(tokens)]
    real_sleep = asyncio.sleep

    def deliver(queue):
        while arrivals and arrivals[0][0] <= clock.now + 1e-12:
            queue.put_nowait(arrivals.pop(0)[1])

    async def main():
        job = server_mod.Job([types.SimpleNamespace()], asyncio.get_running_loop())

        async def sim_sleep(seconds):  # the stream's wait: time passes, the tokens of that time arrive
            waits.append(seconds)
            clock.now += seconds
            deliver(job.queue)

        async def producer():  # while the stream waits for a token: the clock moves to the next arrival
            while arrivals:
                await real_sleep(0)
                if arrivals and job.queue.empty():  # (the stream suspends only on an empty queue)
                    clock.now = max(clock.now, arrivals[0][0])
                    deliver(job.queue)

        monkeypatch.setattr(streaming, "_now", lambda: clock.now)
        monkeypatch.setattr(streaming, "_sleep", sim_sleep)
        owner = types.SimpleNamespace(tokenizer=tok, metrics=types.SimpleNamespace(ttft=lambda s: None),
                                      loop=types.SimpleNamespace(cancel=lambda j: setattr(j, "cancelled", True)))
        feed = asyncio.ensure_future(producer())
        out = []
        async for ev in streaming.choice_events(owner, job, [], interval):
            out.append((clock.now, (ev[0].text, ev[0].finish)))
        await feed
        return out

    out = asyncio.run(asyncio.wait_for(main(), 30))
    assert "".join(text for _, (text, _) in out) == tok.decode(tokens)
    assert out[-1][1][1] == "length" and all(finish is None for _, (_, finish) in out[:-1])
    times = [t for t, _ in out]
    if interval:
        assert times == pytest.approx([0.0, 0.005, 0.010, 0.015, 0.020, 0.025], abs=1e-9)
        assert waits == pytest.approx([0.004] * 5, abs=1e-9)  # each event waits out the rest of the interval
        groups = [[0], [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15], [16, 17, 18, 19, 20], [21, 22, 23]]
        assert [text for _, (text, _) in out] == [tok.decode([tokens[i] for i in g]) for g in groups]
    else:
        assert times == pytest.approx([i * 1e-3 for i in range(24)], abs=1e-9) and waits == []
