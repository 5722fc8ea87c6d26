"""From a job's tokens to what a response carries: text pieces with stop strings applied (across token
boundaries: the end of the text that could begin a stop string waits until it is decided), the tokens each piece
covers (for logprobs), a stream's pacing, and the server-sent-events response.

A stream sends whatever text has piled up since its last chunk, so slow readers get fewer, longer chunks instead
of a growing backlog; after its first event it waits ``interval`` seconds between two (what arrives meanwhile goes
out together). The non-streaming response is built from the same events, so both carry the same text and tokens.
"""
import asyncio
import contextlib
import json
import logging
import time

from ..generate import TextStream
from .errors import APIError, internal_error
from .logprobs import TokenOffsets

log = logging.getLogger("gpk_array.llm.server")

STREAM_INTERVAL_S = 0.005
# The clock and the sleep of a stream's pacing (choice_events), as module globals so that a test can run the
# pacing on a simulated clock (tests/llm/test_server.py); bound to time.perf_counter and asyncio.sleep, they behave
# as the direct calls did, at the cost of the same lookups.
_now = time.perf_counter
_sleep = asyncio.sleep


class Delta:
    """What one event adds to one choice: ``text``, ``finish`` (None, or the finish reason) and ``tokens``, the
    (id, logprobs entry, character offset in the choice's text) of the tokens that text covers (only when
    logprobs are tracked)."""
    __slots__ = ("text", "finish", "tokens")

    def __init__(self, text, finish, tokens):
        self.text, self.finish, self.tokens = text, finish, tokens


class _Choice:
    """One choice's decoding state: its text stream, the text held back for stop strings, and (tracking logprobs)
    its tokens not yet sent, with their character offsets."""

    def __init__(self, tokenizer, names):
        self.text = TextStream(tokenizer) if tokenizer is not None else None
        self.held = ""
        self.done = False
        self.sent = 0  # characters of text sent
        self.offsets = TokenOffsets(names) if names is not None else None
        self.pending = []  # (id, entry, start, end) of tokens not sent yet

    def push(self, tokens, entries, finish, stops):
        """(text piece, whether a stop string ended it, the tokens that go with the piece)."""
        piece = "" if self.text is None else self.text.push(tokens)
        if finish is not None and self.text is not None:
            piece += self.text.flush()
        if self.offsets is not None:
            for t, e in zip(tokens, entries if entries is not None else [None] * len(tokens)):
                self.pending.append((t, e, *self.offsets.push(t)))
        piece, hit = apply_stops(self.held + piece, stops)
        self.held = "" if hit or finish else held_suffix(piece, stops)
        piece = piece[:len(piece) - len(self.held)]
        self.sent += len(piece)
        if self.offsets is None:
            return piece, hit, []
        if hit or finish is not None:  # the end: the tokens that began inside the text (all of them without a cut)
            out = [p for p in self.pending if not hit or p[2] < self.sent]
            self.pending = []
        else:  # the tokens whose text is out: they end within it and begin before its end
            k = 0
            while k < len(self.pending) and self.pending[k][3] <= self.sent and self.pending[k][2] < self.sent:
                k += 1
            out, self.pending = self.pending[:k], self.pending[k:]
        return piece, hit, [(t, e, start) for t, e, start, _ in out]


async def choice_events(owner, job, stops, interval=0.0, names=None):
    """Yield {choice index: Delta} as a job's tokens arrive, stop strings applied; at most one yield per
    ``interval`` seconds after the first (what arrives in between goes out together). owner: the Server (its
    tokenizer, metrics and engine loop). names: a TokenNames to track the tokens of each piece (logprobs), or None.
    A choice that failed in the engine raises APIError 500."""
    states = [_Choice(owner.tokenizer, names) for _ in job.seqs]
    first = True
    last = None
    while not all(c.done for c in states):
        items = [await job.queue.get()]
        if last is not None:
            wait = interval - (_now() - last)
            if wait > 0:
                await _sleep(wait)
        while not job.queue.empty():
            items.append(job.queue.get_nowait())
        if job.cancelled:
            return
        out = {}
        for index, tokens, entries, finish, error in items:
            c = states[index]
            if c.done:
                continue
            if error is not None or finish == "error":
                raise APIError(500, f"generation failed: {error}", type="server_error")
            if first and tokens:
                owner.metrics.ttft(time.perf_counter() - job.created)
                first = False
            piece, hit, toks = c.push(tokens, entries, finish, stops)
            if hit:
                finish = "stop"
                job.seqs[index].cancelled = True  # the engine may drop it at the next step
            if finish is not None:
                c.done = True
            d = out.get(index)
            if d is None:
                out[index] = Delta(piece, finish, toks)
            else:
                d.text += piece
                d.finish = finish
                d.tokens += toks
        if all(c.done for c in states):
            job.completed = True
            owner.loop.cancel(job)
        yield out
        if interval > 0:
            last = _now()


def apply_stops(text, stops):
    """(text cut before the first stop string, whether one was found)."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def held_suffix(text, stops):
    """The longest end of text that could be the start of a stop string (held back until it is decided)."""
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return text[len(text) - best:] if best else ""


async def watch_disconnect(receive, job, loop):
    """Cancel job when the client disconnects (the request body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            loop.cancel(job)
            job.queue.put_nowait((0, [], None, None, None))  # wake the reader
            return


class EventStream:
    """A server-sent-events response: one ``data: {json}`` event per chunk, then ``data: [DONE]``.

    events: an async iterator of {choice index: Delta} (choice_events, maybe with a first event before it);
    chunks(out): the chunk objects of one event; usage_head: the head of a last chunk with ``usage``, or None."""

    def __init__(self, server, job, events, chunks, usage_head):
        self.server, self.job, self.events, self.chunks, self.usage_head = server, job, events, chunks, usage_head

    async def __call__(self, scope, receive, send):
        job, loop = self.job, self.server.loop
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no")]})
        watcher = asyncio.ensure_future(watch_disconnect(receive, job, loop))
        try:
            async for out in self.events:
                data = "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in self.chunks(out))
                if data:
                    await send({"type": "http.response.body", "body": data.encode(), "more_body": True})
            if not job.completed:  # the client is gone
                return
            tail = ""
            if self.usage_head is not None:
                usage = {**self.usage_head, "choices": [], "usage": self.server._usage(job)}
                tail = f"data: {json.dumps(usage, separators=(',', ':'))}\n\n"
            await send({"type": "http.response.body", "body": (tail + "data: [DONE]\n\n").encode(),
                        "more_body": False})
        except OSError:  # the client is gone
            pass
        except Exception as e:  # the headers are sent: report the error as an event, and end the response
            if not isinstance(e, APIError):
                log.error("stream failed", exc_info=e)
                e = internal_error(e)
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": f"data: {json.dumps(e.body())}\n\n".encode(),
                            "more_body": False})
        finally:
            watcher.cancel()
            loop.cancel(job)
