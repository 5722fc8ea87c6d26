"""What the server tests share: the tiny model and tokenizer, a server on 127.0.0.1 (uvicorn in a thread) and a
client of it, module-scoped. Import after the importorskip of starlette, uvicorn and httpx."""
import pathlib
import time

import httpx
import pytest

from gpk_array.llm import GPT2, Tokenizer, generate
from gpk_array.llm.server import ServerThread, create_app

TINY = pathlib.Path(__file__).parent / "data" / "tiny-gpt2"
NAME = "tiny-gpt2"
TIMEOUT = httpx.Timeout(30.0)


@pytest.fixture(scope="module")
def model():
    return GPT2.from_pretrained(TINY, device="cpu")


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_dir(TINY)


@pytest.fixture(scope="module")
def server(model, tok):
    app = create_app(model, tok, model_name=NAME, max_batch=4, max_queue=16)
    with ServerThread(app) as url:
        yield url, app.state.server


@pytest.fixture()
def client(server):
    with httpx.Client(base_url=server[0], timeout=TIMEOUT) as c:
        yield c


def greedy_text(model, tok, prompt, n):
    return tok.decode(generate(model, tok.encode(prompt), max_new_tokens=n, stop_tokens=[tok.eos_token_id]))


def wait_until(ready, polls=20_000):
    """Poll ready() every millisecond until it is true, at most ``polls`` times (a bound against hangs, not a
    timing assertion); returns its last value."""
    for _ in range(polls):
        if ready():
            return True
        time.sleep(0.001)
    return ready()


def post_completion(url, body):
    """POST ``body`` to ``url``'s /v1/completions with a fresh client; the httpx response."""
    with httpx.Client(base_url=url, timeout=TIMEOUT) as c:
        return c.post("/v1/completions", json=body)


def stream_text(api, prompt, max_tokens, started):
    """The text of a greedy streamed completion of ``prompt`` (ignore_eos) through the openai client ``api``;
    ``started`` (a threading.Event) is set at the first chunk."""
    text = ""
    for ch in api.completions.create(model=NAME, prompt=prompt, max_tokens=max_tokens, temperature=0, stream=True,
                                     extra_body={"ignore_eos": True}):
        started.set()
        text += ch.choices[0].text if ch.choices else ""
    return text
