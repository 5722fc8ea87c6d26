"""Malformed requests against the OpenAI-compatible server, through the in-process ASGI client (Starlette's
TestClient, on httpx): random JSON values for every field, wrong types, huge and negative numbers, NaN and
Infinity, lone surrogates, bad UTF-8, bodies that are not JSON. Every answer is 200 or a 4xx in OpenAI's error shape,
never a 5xx, and the server still serves a valid request afterwards. GPK_FUZZ_EXAMPLES examples per test (200)."""
import json
import os
import pathlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from gpk_array.llm import GPT2, Tokenizer  # noqa: E402
from gpk_array.llm.server import create_app  # noqa: E402

FUZZ = settings(max_examples=int(os.environ.get("GPK_FUZZ_EXAMPLES", "200")), deadline=None,
                suppress_health_check=list(HealthCheck))
TINY = pathlib.Path(__file__).parent.parent / "llm" / "data" / "tiny-gpt2"
NAME = "tiny-gpt2"
PATHS = ["/v1/completions", "/v1/chat/completions"]
CTX = 64  # a short context: valid requests generate few tokens, and long prompts hit the limits


@pytest.fixture(scope="module")
def client():
    model = GPT2.from_pretrained(TINY, device="cpu")
    app = create_app(model, Tokenizer.from_dir(TINY), model_name=NAME, max_batch=4, max_queue=64, max_len=CTX,
                     max_body_bytes=64 << 10, stream_interval=0)
    with TestClient(app) as c:
        yield c


NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
    st.sampled_from([0, 1, -1, 2, 16, CTX - 1, CTX, 255, 1023, 1024, 2 ** 31, 2 ** 63, 2 ** 64, 10 ** 30, 10 ** 400,
                     -10 ** 400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-310, 5e-324, 1e-6, 0.5, 0.9, 1.0, 1.5, 2.0, 2.0000001, 1e308, -0.0, float("nan"),
                     float("inf"), float("-inf")]))
TEXTS = st.one_of(st.text(max_size=24), st.sampled_from(["", "Hello", "\ud800", "a\udfffb", "<|endoftext|>",
                                                          "é☃😀", "word " * 60, "!" * 500]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXTS)
VALUES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                      max_leaves=12)
IDS = st.lists(st.one_of(st.integers(min_value=-2, max_value=1100), NUMBERS, st.booleans()), max_size=40)
MESSAGE = st.fixed_dictionaries({}, optional={
    "role": st.one_of(st.sampled_from(["user", "system", "assistant"]), VALUES),
    "content": st.one_of(TEXTS, st.lists(st.fixed_dictionaries({}, optional={
        "type": st.one_of(st.just("text"), VALUES), "text": st.one_of(TEXTS, VALUES)}), max_size=3), VALUES)})
PLAUSIBLE = {
    "model": st.just(NAME),
    "prompt": st.one_of(TEXTS, st.lists(TEXTS, max_size=3), IDS, st.lists(IDS, max_size=3), st.just([])),
    "messages": st.lists(MESSAGE, max_size=3),
    "max_tokens": st.integers(min_value=-2, max_value=CTX + 2),
    "max_completion_tokens": st.integers(min_value=-2, max_value=CTX + 2),
    "temperature": st.floats(min_value=-0.5, max_value=2.5),
    "top_p": st.floats(min_value=-0.5, max_value=1.5),
    "top_k": st.integers(min_value=-2, max_value=2000),
    "seed": st.integers(min_value=-5, max_value=2 ** 64),
    "stream": st.booleans(),
    "stream_options": st.one_of(st.fixed_dictionaries({}, optional={"include_usage": st.one_of(st.booleans(),
                                                                                             VALUES)}), VALUES),
    "stop": st.one_of(TEXTS, st.lists(TEXTS, max_size=6)),
    "n": st.integers(min_value=-1, max_value=3), "best_of": st.integers(min_value=-1, max_value=3),
    "logprobs": st.one_of(st.none(), st.booleans(), st.integers(min_value=0, max_value=5)),
    "echo": st.booleans(), "ignore_eos": st.booleans(),
    "presence_penalty": st.floats(min_value=-2, max_value=2), "frequency_penalty": st.floats(min_value=-2, max_value=2),
    "user": TEXTS, "logit_bias": st.one_of(VALUES, st.dictionaries(st.one_of(TEXTS, st.integers().map(str)), NUMBERS,
                                                                   max_size=4)),
    "suffix": TEXTS, "min_p": NUMBERS, "repetition_penalty": NUMBERS, "top_logprobs": NUMBERS,
    "return_tokens_as_token_ids": VALUES,
}
VALID_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
VALID_IDS = st.lists(st.integers(min_value=0, max_value=1023), min_size=1, max_size=20)
VALID = {  # values the server takes: a body of these is answered 200
    "prompt": st.one_of(VALID_TEXT, st.lists(VALID_TEXT, min_size=1, max_size=3), VALID_IDS,
                        st.lists(VALID_IDS, min_size=1, max_size=3)),
    "messages": st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]),
                                                "content": st.text(st.characters(codec="utf-8"), max_size=12)}),
                         min_size=1, max_size=3),
    "max_tokens": st.integers(min_value=1, max_value=8),
    "temperature": st.one_of(st.floats(min_value=0, max_value=2), st.sampled_from([0, 1e-310, 5e-324, 1e-6])),
    "top_p": st.floats(min_value=1e-300, max_value=1), "top_k": st.integers(min_value=0, max_value=2000),
    "seed": st.integers(min_value=0, max_value=2 ** 63 - 1), "stream": st.booleans(),
    "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
    "stop": st.one_of(VALID_TEXT, st.lists(VALID_TEXT, max_size=4)), "n": st.integers(min_value=1, max_value=2),
    "ignore_eos": st.booleans(), "user": VALID_TEXT,
    "presence_penalty": st.floats(min_value=-2, max_value=2), "frequency_penalty": st.floats(min_value=-2, max_value=2),
    "repetition_penalty": st.floats(min_value=0.01, max_value=100), "min_p": st.floats(min_value=0, max_value=1),
    "logit_bias": st.dictionaries(st.integers(min_value=0, max_value=1023).map(str),
                                  st.floats(min_value=-100, max_value=100), max_size=5),
    "logprobs": st.one_of(st.integers(min_value=0, max_value=5), st.booleans()),  # chat: booleans
    "top_logprobs": st.integers(min_value=0, max_value=20), "echo": st.booleans(),
    "return_tokens_as_token_ids": st.booleans(),
}
FIELDS = ["model"] + list(PLAUSIBLE)


@st.composite
def bodies(draw, path):
    """A body the server takes (a prompt or messages, some valid options), then up to three fields replaced by
    random values or left out."""
    body = {"model": NAME}
    body["messages" if path.endswith("chat/completions") else "prompt"] = draw(
        VALID["messages" if path.endswith("chat/completions") else "prompt"])
    for name in draw(st.lists(st.sampled_from([k for k in VALID if k not in ("prompt", "messages")]), unique=True,
                              max_size=6)):
        body[name] = draw(VALID[name])
    for name in draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=3)):
        value = draw(st.one_of(st.just(KeyError), PLAUSIBLE[name], VALUES))
        if value is KeyError:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def check(response):
    """200 (a complete answer) or 4xx in OpenAI's error shape; never a 5xx."""
    status = response.status_code
    assert status == 200 or 400 <= status < 500, (status, response.text[:500])
    if status != 200:
        err = response.json()["error"]
        assert set(err) == {"message", "type", "param", "code"}, err
        assert isinstance(err["message"], str) and err["message"] and isinstance(err["type"], str)
        assert err["param"] is None or isinstance(err["param"], str)
        return
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
        assert data and data[-1] == "[DONE]", response.text[-500:]
        assert all("error" not in json.loads(d) for d in data[:-1])
    else:
        assert response.json()["choices"]


def post(client, path, raw):
    return client.post(path, content=raw, headers={"content-type": "application/json"})


@FUZZ
@given(data=st.data(), path=st.sampled_from(PATHS), top=st.one_of(st.just(None), st.just(None), VALUES))
def test_random_json_fields(client, data, path, top):
    """Random values for every field (and sometimes a body that is not an object)."""
    body = data.draw(bodies(path)) if top is None else top
    check(post(client, path, json.dumps(body, allow_nan=True).encode()))  # NaN, Infinity; \ud800 escapes


def _mutate(raw, how, at, junk):
    at = at % (len(raw) + 1)
    if how == "cut":
        return raw[:at]
    if how == "insert":
        return raw[:at] + junk + raw[at:]
    if how == "replace":
        return raw[:at] + junk + raw[at + len(junk):]
    if how == "nest":
        return raw[:at] + b"[" * 5000 + raw[at:]
    if how == "digits":
        return raw[:at] + b"9" * 5000 + raw[at:]
    return junk


@FUZZ
@given(data=st.data(), path=st.sampled_from(PATHS),
       how=st.sampled_from(["cut", "insert", "replace", "nest", "digits", "raw"]), at=st.integers(min_value=0),
       junk=st.one_of(st.binary(max_size=12), st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"NaN",
                                                               b"-Infinity", b"\xef\xbb\xbf", b'"', b"}", b"\\u"])))
def test_malformed_bytes(client, data, path, how, at, junk):
    """Valid-looking bodies cut, spliced with bad UTF-8 or junk, nested deep, given huge integers; random bytes."""
    raw = json.dumps(data.draw(bodies(path)), allow_nan=True).encode()
    check(post(client, path, _mutate(raw, how, at, junk)))


def test_still_serves_after_the_fuzz(client):
    r = client.post("/v1/completions", json={"model": NAME, "prompt": "Hello", "max_tokens": 5, "temperature": 0})
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] >= 1
    r = client.post("/v1/chat/completions", json={"model": NAME, "messages": [{"role": "user", "content": "Hi"}],
                                                  "max_tokens": 5, "temperature": 0, "stream": True})
    assert r.status_code == 200 and r.text.rstrip().endswith("data: [DONE]")
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["waiting"] == 0
    assert not re.search(r'status="5\d\d"', client.get("/metrics").text)  # no 5xx was ever answered
