"""An OpenAI-compatible HTTP server for a GPT-2 model (Starlette + uvicorn).

Endpoints: POST /v1/completions, POST /v1/chat/completions (``stream: true`` answers with server-sent events,
``data: {...}`` per chunk and ``data: [DONE]`` at the end), GET /v1/models, GET /health, GET /metrics (Prometheus
text format).

One engine thread owns the model: it admits waiting sequences into free KV-cache slots (a batched prefill) and
then runs one batched decode step over every active sequence, again and again (continuous batching). Requests
reach it through a bounded queue (full: 429); a client that disconnects has its sequences released at the next
step. Tokens go back to the event loop once per step, and a stream sends whatever text has piled up since its
last chunk, so slow readers get fewer, longer chunks instead of a growing backlog.
"""
import asyncio
import bisect
import collections
import concurrent.futures
import contextlib
import json
import logging
import math
import socket
import sys
import threading
import time
import uuid

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .generate import Engine, SamplingParams, Sequence, TextStream

TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# The largest request body read (larger: 413). 64 prompts of a full GPT-2 context fit with room to spare.
DEFAULT_MAX_BODY_BYTES = 4 << 20
TOKENIZE_THREADS = 2  # worker threads that tokenize prompts, off the event loop
MAX_SEED = 2 ** 63 - 1

log = logging.getLogger(__name__)


class APIError(Exception):
    """An error answered as OpenAI does: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status, message, *, type="invalid_request_error", param=None, code=None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code

    def body(self):
        """The OpenAI error object, ``{"error": {...}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self):
        """This error as a JSON response with its HTTP status (ASCII JSON: a lone surrogate that a message quotes
        from the request is escaped, not an encoding error)."""
        return Response(json.dumps(self.body()).encode("ascii"), status_code=self.status,
                        media_type="application/json")


def _internal_error(exc):
    return APIError(500, f"internal error: {type(exc).__name__}: {_short(str(exc), 300)}", type="server_error")


def _short(text, limit=60):
    """text, cut to ``limit`` characters with "..." (values quoted back in error messages)."""
    return text if len(text) <= limit else text[:limit] + "..."


# --- metrics -------------------------------------------------------------------------------------------


class Metrics:
    """Counters and a time-to-first-token histogram, rendered in the Prometheus text format."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = collections.Counter()  # (endpoint, status) -> count
        self.prompt_tokens = 0
        self.generated_tokens = 0
        self.ttft_counts = [0] * (len(TTFT_BUCKETS) + 1)
        self.ttft_sum = 0.0

    def request(self, endpoint, status):
        """Count one answered request of ``endpoint`` with HTTP ``status``."""
        with self.lock:
            self.requests[endpoint, status] += 1

    def ttft(self, seconds):
        """Record one time to first token, in seconds, in the histogram."""
        with self.lock:
            self.ttft_counts[bisect.bisect_left(TTFT_BUCKETS, seconds)] += 1
            self.ttft_sum += seconds

    def families(self, loop):
        """[(family, type, help, [(sample name, labels, value)])] of this model's metrics."""
        with self.lock:
            fams = [("gpk_requests_total", "counter", "HTTP requests by endpoint and status code.",
                     [("gpk_requests_total", {"endpoint": e, "status": str(st)}, n)
                      for (e, st), n in sorted(self.requests.items())])]
            for name, doc, value in (("gpk_prompt_tokens_total", "Prompt tokens prefilled.", self.prompt_tokens),
                                     ("gpk_generation_tokens_total", "Tokens generated.", self.generated_tokens),
                                     ("gpk_decode_steps_total", "Batched decode steps run.", loop.engine.steps)):
                fams.append((name, "counter", doc, [(name, {}, value)]))
            for name, doc, value in (
                    ("gpk_active_sequences", "Sequences holding a KV-cache slot.", len(loop.engine.active)),
                    ("gpk_waiting_sequences", "Sequences queued for a slot.", len(loop.waiting)),
                    ("gpk_slots", "KV-cache slots (the largest decode batch).", loop.engine.max_batch),
                    ("gpk_max_active_sequences", "Most sequences seen in one decode step.", loop.engine.max_active)):
                fams.append((name, "gauge", doc, [(name, {}, value)]))
            name = "gpk_time_to_first_token_seconds"
            samples, total = [], 0
            for le, n in zip(TTFT_BUCKETS + ("+Inf",), self.ttft_counts):
                total += n
                samples.append((f"{name}_bucket", {"le": str(le)}, total))
            samples += [(f"{name}_sum", {}, f"{self.ttft_sum:.6f}"), (f"{name}_count", {}, total)]
            fams.append((name, "histogram", "Time from a request's arrival to its first generated token.", samples))
        return fams

    def render(self, loop):
        """The Prometheus text of these metrics for one engine loop (no model label)."""
        return render_metrics([(None, self, loop)])


def render_metrics(entries):
    """The Prometheus text of several models' metrics: entries are (model name or None, Metrics, EngineLoop);
    with a name, each sample carries a ``model`` label. Each family's HELP and TYPE come once."""
    order, merged = [], {}
    for model, metrics, loop in entries:
        for name, kind, doc, samples in metrics.families(loop):
            if name not in merged:
                order.append(name)
                merged[name] = (kind, doc, [])
            extra = {} if model is None else {"model": model}
            merged[name][2].extend((sname, {**extra, **labels}, v) for sname, labels, v in samples)
    lines = []
    for name in order:
        kind, doc, samples = merged[name]
        lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
        for sname, labels, v in samples:
            lab = ",".join(f'{k}="{x}"' for k, x in labels.items())
            lines.append(f"{sname}{{{lab}}} {v}" if lab else f"{sname} {v}")
    return "\n".join(lines) + "\n"


# --- the engine thread ---------------------------------------------------------------------------------


class Job:
    """One HTTP request: its sequences (one per prompt) and the queue their tokens arrive on."""

    def __init__(self, seqs, loop):
        self.seqs = seqs
        self.loop = loop
        self.queue = asyncio.Queue()
        self.cancelled = False  # the client left, or the job is complete: its sequences can go
        self.completed = False  # every sequence reached its end
        self.created = time.perf_counter()
        for i, s in enumerate(seqs):
            s.tag, s.index, s.sent, s.cancelled = self, i, 0, False


class EngineLoop:
    """The background thread that runs an Engine for every request (continuous batching)."""

    def __init__(self, engine, metrics, max_queue=256, context=None):
        """context: a gpk_array.sched context the thread runs every step in (its stream, pool and budget)."""
        self.engine, self.metrics, self.max_queue, self.context = engine, metrics, max_queue, context
        self.waiting = collections.deque()
        self.cond = threading.Condition()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="gpk-llm-engine", daemon=True)

    def start(self):
        """Start the engine thread."""
        self.thread.start()

    def stop(self, timeout=10.0):
        """Ask the engine thread to stop and wait up to ``timeout`` seconds for it."""
        with self.cond:
            self.stopping = True
            self.cond.notify()
        self.thread.join(timeout)

    def submit(self, job):
        """Queue a job's sequences; APIError 429 when the queue is full."""
        with self.cond:
            if self.stopping:
                raise APIError(503, "the server is shutting down", type="server_error")
            if len(self.waiting) + len(job.seqs) > self.max_queue:
                raise APIError(429, f"the server is at capacity ({len(self.waiting)} sequences waiting for "
                                    f"{self.engine.max_batch} slots); retry later",
                               type="requests", code="rate_limit_exceeded")
            self.waiting.extend(job.seqs)
            self.cond.notify()

    def cancel(self, job):
        """Forget a job (its client left, or it is complete): slots are released at the next step."""
        job.cancelled = True
        with self.cond:
            self.cond.notify()

    def _run(self):
        with self.context if self.context is not None else contextlib.nullcontext():
            self._steps()

    def _steps(self):
        """Admit, step, deliver, until stopped. An error of one sequence (its sampling, its prefill alone) finishes
        that sequence only; an error of a whole batched step, which no one sequence can be blamed for, finishes the
        sequences of that step; the thread itself never stops on an error."""
        engine = self.engine
        while True:
            with self.cond:
                while not (self.stopping or self.waiting or engine.active):
                    self.cond.wait()
                if self.stopping:
                    return
                admit = []
                while self.waiting and len(admit) < engine.free:
                    seq = self.waiting.popleft()
                    if not (seq.tag.cancelled or seq.cancelled):
                        admit.append(seq)
            changed = {}
            try:
                for seq in engine.active:
                    if seq.tag.cancelled or seq.cancelled:
                        engine.release(seq, "cancelled")
                if admit:
                    for s in self._admit(admit):
                        changed[id(s)] = s
                    with self.metrics.lock:
                        self.metrics.prompt_tokens += sum(len(s.prompt) for s in admit)
                for s in engine.step():
                    changed[id(s)] = s
            except Exception as e:  # keep serving: fail the sequences of the step, free their slots
                log.error("a decode step of %d sequences failed", len(engine.active), exc_info=e)
                for s in admit + engine.active:
                    if s.finish_reason is None:
                        s.fail(e)
                    engine.release(s)
                    changed[id(s)] = s
            try:
                self._deliver(changed.values())
            except Exception as e:  # never let the thread die: every later request would hang
                log.error("delivering tokens failed", exc_info=e)

    def _admit(self, seqs):
        """Prefill seqs (engine.add); when the batched prefill raises, each sequence alone, so that only the ones
        whose own prefill raises fail (a prefill writes only its sequence's cache rows)."""
        engine = self.engine
        try:
            return engine.add(seqs)
        except Exception as e:
            for s in seqs:  # the ones given a slot before the error hold it without a token
                engine.release(s)
            if len(seqs) == 1:
                log.warning("prefill failed: %s: %s", type(e).__name__, e)
                seqs[0].fail(e)
                return seqs
        out = []
        for s in seqs:
            out += self._admit([s])
        return out

    def _deliver(self, seqs):
        """Send each sequence's new tokens (and its end) to its job's event loop, one call per loop."""
        by_loop = collections.defaultdict(list)
        count = 0
        for s in seqs:
            new = s.tokens[s.sent:]
            s.sent += len(new)
            count += len(new)
            if new or s.finish_reason is not None:
                error = getattr(s, "error", None) if s.finish_reason == "error" else None
                by_loop[s.tag.loop].append((s.tag, (s.index, new, s.finish_reason, error)))
        with self.metrics.lock:
            self.metrics.generated_tokens += count
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_dispatch, items)
            except RuntimeError:  # that loop is closed: its clients are gone
                pass


def _dispatch(items):
    for job, payload in items:
        job.queue.put_nowait(payload)


# --- requests ------------------------------------------------------------------------------------------


def _json_type(v):
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
            type(None): "null"}.get(type(v), type(v).__name__)


def _field(body, name, kind, default=None, *, low=None, high=None, low_open=False, required=False):
    """body[name] checked to be of JSON type kind (int, float, bool, str) and within [low, high] (a number:
    finite, and a float fits in a float)."""
    v = body.get(name)
    if v is None:
        if required:
            raise APIError(400, f"you must provide '{name}'", param=name, code="missing_required_parameter")
        return default
    ok = {int: isinstance(v, int) and not isinstance(v, bool),
          float: isinstance(v, (int, float)) and not isinstance(v, bool),
          bool: isinstance(v, bool), str: isinstance(v, str)}[kind]
    if not ok:
        want = {int: "an integer", float: "a number", bool: "a boolean", str: "a string"}[kind]
        raise APIError(400, f"'{name}' must be {want}, got {_json_type(v)}", param=name, code="invalid_type")
    if kind is float:
        try:
            v = float(v)
        except OverflowError:  # an integer beyond float's range
            v = math.inf if v > 0 else -math.inf
        if not math.isfinite(v):
            raise APIError(400, f"'{name}' must be a finite number", param=name, code="invalid_value")
    if (low is not None and (v <= low if low_open else v < low)) or (high is not None and v > high):
        lo = "-inf" if low is None else low
        rng = f"{'(' if low_open else '['}{lo}, {'inf' if high is None else high}]"
        raise APIError(400, f"'{name}' must be in {rng}, got {_short(repr(v))}", param=name, code="invalid_value")
    return v


def _check_text(text, param):
    """APIError 400 if text is not Unicode text (it holds a lone surrogate, which JSON's \\ud800 escapes allow)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise APIError(400, f"'{param}' holds a lone surrogate (U+{ord(text[e.start]):04X} at character "
                                f"{e.start}), which is not text", param=param, code="invalid_value") from None


class _NotJSON(ValueError):
    pass


def _no_constant(name):
    raise _NotJSON(f"{name} is not a JSON value (JSON has no NaN or Infinity)")


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise _NotJSON(f"the number {_short(text, 30)} is out of range")
    return v


def parse_json(raw):
    """The JSON object of a request body (bytes), as OpenAI takes it; APIError 400 for anything else: not UTF-8,
    not JSON, NaN / Infinity / numbers beyond a float, integers of more digits than Python converts, nesting
    deeper than the parser recurses, a value other than an object."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise APIError(400, f"the request body is not UTF-8 (byte {e.start}: {e.reason})",
                       code="invalid_json") from None
    try:
        body = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise APIError(400, "the JSON body of your request is nested too deeply", code="invalid_json") from None
    except _NotJSON as e:
        raise APIError(400, f"the JSON body of your request is not valid: {e}", code="invalid_json") from None
    except ValueError as e:  # JSONDecodeError; an integer of more digits than int() takes
        raise APIError(400, f"we could not parse the JSON body of your request ({_short(str(e), 200)})",
                       code="invalid_json") from None
    if not isinstance(body, dict):
        raise APIError(400, f"the request body must be a JSON object, got {_json_type(body)}", code="invalid_json")
    return body


async def read_json(request, max_bytes):
    """The JSON object of a request's body, read up to ``max_bytes`` bytes (beyond: APIError 413, as soon as the
    Content-Length says so or the bytes read pass the limit)."""
    def too_large():
        return APIError(413, f"the request body is larger than the {max_bytes} bytes this server takes",
                        code="request_too_large")
    length = request.headers.get("content-length", "")
    if length.isdigit() and (len(length) > 18 or int(length) > max_bytes):
        raise too_large()
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise too_large()
            chunks.append(chunk)
    except ClientDisconnect:
        raise APIError(400, "the client disconnected before sending the whole body") from None
    return parse_json(b"".join(chunks))


STREAM_INTERVAL_S = 0.005
# The clock and the sleep of a stream's pacing (Server._events), as module globals so that a test can run the
# pacing on a simulated clock (tests/llm/test_server.py); bound to time.perf_counter and asyncio.sleep, they behave
# as the direct calls did, at the cost of the same lookups.
_now = time.perf_counter
_sleep = asyncio.sleep


class Server:
    """The request handlers, bound to one model, tokenizer and engine thread."""

    def __init__(self, model, tokenizer, *, model_name, max_batch=8, max_queue=256, max_len=None, cuda_graphs=None,
                 context=None, stream_interval=STREAM_INTERVAL_S, max_body_bytes=DEFAULT_MAX_BODY_BYTES):
        """context: a gpk_array.sched context holding this model's KV cache and running its decode steps.
        stream_interval: seconds a stream waits after an event before the next one, gathering the tokens that
        arrive meanwhile into one event (the first event is never delayed). max_body_bytes: the largest request
        body read (larger: 413)."""
        self.model, self.tokenizer, self.model_name = model, tokenizer, model_name
        self.stream_interval = float(stream_interval)
        self.max_body_bytes = int(max_body_bytes)
        self.tokenize_pool = None  # the executor prompts are tokenized in (create_app's lifespan sets one)
        # a text of n characters has at least n / max_token_bytes tokens (a token is at most that many bytes, a
        # character at least one): longer texts than the context allows are refused before they are tokenized
        self.max_token_bytes = getattr(tokenizer, "max_token_bytes", None)
        self.names = [model_name]  # every model the app serves (for the 404 message)
        self.metrics = Metrics()
        with context if context is not None else contextlib.nullcontext():
            self.engine = Engine(model, max_batch=max_batch, max_len=max_len, cuda_graphs=cuda_graphs)
        self.loop = EngineLoop(self.engine, self.metrics, max_queue, context)
        self.created = int(time.time())
        self.eos = tokenizer.eos_token_id if tokenizer is not None else model.config.eos_token_id

    # --- parsing ---------------------------------------------------------------------------------------
    async def _body(self, request):
        """The request's JSON body (at most max_bytes bytes), checked to name this model."""
        return self._check_model(await read_json(request, self.max_body_bytes))

    def _check_model(self, body):
        model = _field(body, "model", str, required=True)
        if model != self.model_name:
            has = ", ".join(f"'{n}'" for n in self.names)
            raise APIError(404, f"the model '{_short(model)}' does not exist; this server has {has}",
                           param="model", code="model_not_found")
        return body

    def _sampling(self, body):
        """The sampling fields of body, each checked (type, range, finiteness): a dict for _sequences."""
        for name in ("n", "best_of"):
            if _field(body, name, int, 1, low=1) != 1:
                raise APIError(400, f"only '{name}' = 1 is supported", param=name)
        if body.get("logprobs") not in (None, False) or body.get("echo") not in (None, False):
            raise APIError(400, "'logprobs' and 'echo' are not supported", param="logprobs" if body.get(
                "logprobs") not in (None, False) else "echo")
        for name in ("presence_penalty", "frequency_penalty"):
            if _field(body, name, float, 0.0) != 0.0:
                raise APIError(400, f"'{name}' is not supported (only 0)", param=name)
        ctx = self.engine.max_len
        limit = ("max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens")
        opts = {"limit": limit, "max_tokens": _field(body, limit, int, None, low=1, high=ctx),
                "temperature": _field(body, "temperature", float, 1.0, low=0.0, high=2.0),
                "top_p": _field(body, "top_p", float, 1.0, low=0.0, high=1.0, low_open=True),
                "top_k": _field(body, "top_k", int, 0, low=0),
                "seed": _field(body, "seed", int, None, low=0, high=MAX_SEED),
                "ignore_eos": _field(body, "ignore_eos", bool, False)}
        stop = body.get("stop")
        if stop is None:
            stop = []
        elif isinstance(stop, str):
            stop = [stop]
        elif not (isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop)):
            raise APIError(400, "'stop' must be a string or a list of up to 4 strings", param="stop",
                           code="invalid_type")
        for s in stop:
            _check_text(s, "stop")
        opts["stop"] = [s for s in stop if s]
        return opts

    def _sequences(self, prompts, opts, default_max):
        """Sequences for the prompts (lists of ids) under the checked sampling options."""
        ctx, limit, max_tokens = self.engine.max_len, opts["limit"], opts["max_tokens"]
        seqs = []
        for i, ids in enumerate(prompts):
            self._check_prompt_length(len(ids), "prompt" if default_max else "messages")
            n = max_tokens if max_tokens is not None else min(default_max or ctx, ctx - len(ids))
            if len(ids) + n > ctx:
                raise APIError(400, f"this model's maximum context length is {ctx} tokens; you requested "
                                    f"{len(ids) + n} ({len(ids)} in the prompt, {n} for the completion)",
                               param=limit, code="context_length_exceeded")
            seed = opts["seed"]
            try:
                params = SamplingParams(temperature=opts["temperature"], top_k=opts["top_k"] or None,
                                        top_p=opts["top_p"], seed=None if seed is None else seed + i)
            except ValueError as e:  # the checks above should have caught it
                raise APIError(400, str(e)) from None
            stops = () if opts["ignore_eos"] or self.eos is None else (self.eos,)
            seqs.append(Sequence(ids, max_new_tokens=n, params=params, stop_tokens=stops))
        return seqs

    def _check_prompt_length(self, tokens, param):
        ctx = self.engine.max_len
        if tokens >= ctx:
            raise APIError(400, f"this model's maximum context length is {ctx} tokens, but the prompt has {tokens}",
                           param=param, code="context_length_exceeded")

    def _check_text_length(self, chars, param):
        """Refuse a text of ``chars`` characters that has more tokens than the context, before tokenizing it."""
        ctx, most = self.engine.max_len, self.max_token_bytes
        if most and chars > (ctx - 1) * most:
            raise APIError(400, f"this model's maximum context length is {ctx} tokens, but the prompt has more "
                                f"({chars} characters; no token is longer than {most})", param=param,
                           code="context_length_exceeded")

    def _prompt_items(self, body):
        """The prompts of a completions request, checked but not tokenized: texts and lists of token ids."""
        p = body.get("prompt")
        vocab = self.model.config.vocab_size
        if p is None:
            raise APIError(400, "you must provide 'prompt'", param="prompt", code="missing_required_parameter")
        if isinstance(p, str) or (isinstance(p, list) and p and isinstance(p[0], int) and not isinstance(p[0], bool)):
            p = [p]  # one prompt (a list of ids when it starts with one: its items are checked below)
        if not (isinstance(p, list) and p and len(p) <= 64):
            raise APIError(400, "'prompt' must be a string, a list of strings, a list of token ids or a list of "
                                "lists of token ids (1 to 64 prompts)", param="prompt", code="invalid_type")
        for item in p:
            if isinstance(item, str):
                if self.tokenizer is None:
                    raise APIError(400, "this server has no tokenizer: send token ids", param="prompt")
                self._check_text_length(len(item), "prompt")
                _check_text(item, "prompt")
            elif isinstance(item, list):
                self._check_prompt_length(len(item), "prompt")
                if not all(isinstance(t, int) and not isinstance(t, bool) for t in item):
                    raise APIError(400, "'prompt' items must be strings or lists of token ids", param="prompt",
                                   code="invalid_type")
                if any(not 0 <= t < vocab for t in item):
                    raise APIError(400, f"token ids must be in [0, {vocab})", param="prompt", code="invalid_value")
            else:
                raise APIError(400, f"'prompt' items must be strings or lists of token ids, got {_json_type(item)}",
                               param="prompt", code="invalid_type")
        return p

    def _encode_prompts(self, items):
        """Token ids of each prompt (texts tokenized, in a worker thread; the first too long for the context stops
        the work)."""
        empty = [self.eos if self.eos is not None else 0]  # an empty prompt starts a document
        out = []
        for item in items:
            ids = (self.tokenizer.encode(item) if isinstance(item, str) else item) or empty
            self._check_prompt_length(len(ids), "prompt")
            out.append(ids)
        return out

    def _chat_text(self, body):
        """The chat template applied to the messages: "Role: content" lines, then "Assistant:"."""
        messages = body.get("messages")
        if not (isinstance(messages, list) and messages):
            raise APIError(400, "'messages' must be a non-empty array", param="messages",
                           code="missing_required_parameter" if messages is None else "invalid_type")
        lines, chars = [], 0
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise APIError(400, f"messages[{i}] must be an object with a string 'role'", param=f"messages[{i}]",
                               code="invalid_type")
            content = m.get("content")
            if isinstance(content, list):
                if not all(isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
                           for c in content):
                    raise APIError(400, f"messages[{i}].content: only text parts are supported",
                                   param=f"messages[{i}].content")
                content = "".join(c["text"] for c in content)
            if not isinstance(content, str):
                raise APIError(400, f"messages[{i}].content must be a string or a list of text parts",
                               param=f"messages[{i}].content", code="invalid_type")
            chars += len(m["role"]) + len(content) + 3
            self._check_text_length(chars, "messages")  # as it grows: the work here stays within the bound
            _check_text(m["role"], f"messages[{i}].role")
            _check_text(content, f"messages[{i}].content")
            lines.append(f"{m['role'].capitalize()}: {content}\n")
        if self.tokenizer is None:
            raise APIError(400, "this server has no tokenizer, so it cannot serve chat", param="messages")
        text = "".join(lines) + "Assistant:"
        self._check_text_length(len(text), "messages")
        return text

    async def _off_loop(self, fn, *args):
        """fn(*args) in the tokenizing worker threads, so that the event loop keeps answering meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self.tokenize_pool, fn, *args)

    # --- running jobs ----------------------------------------------------------------------------------
    def _start(self, seqs):
        for s in seqs:
            try:
                self.engine.check(s)
            except ValueError as e:
                raise APIError(400, str(e), param="prompt", code="context_length_exceeded") from None
        job = Job(seqs, asyncio.get_running_loop())
        self.loop.submit(job)
        return job

    async def _events(self, job, stops, interval=0.0):
        """Yield {choice index: (text, finish_reason or None)} as tokens arrive, stop strings applied; at most one
        yield per ``interval`` seconds after the first (what arrives in between goes out together)."""
        texts = [TextStream(self.tokenizer) if self.tokenizer else None for _ in job.seqs]
        held = [""] * len(job.seqs)
        done = [False] * len(job.seqs)
        first = True
        last = None
        while not all(done):
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
            for index, tokens, finish, error in items:
                if done[index]:
                    continue
                if error is not None or finish == "error":
                    raise APIError(500, f"generation failed: {error}", type="server_error")
                if first and tokens:
                    self.metrics.ttft(time.perf_counter() - job.created)
                    first = False
                piece = "" if texts[index] is None else texts[index].push(tokens)
                if finish is not None and texts[index] is not None:
                    piece += texts[index].flush()
                piece, hit = _apply_stops(held[index] + piece, stops)
                held[index] = "" if hit or finish else _held_suffix(piece, stops)
                piece = piece[:len(piece) - len(held[index])]
                if hit:
                    finish = "stop"
                    job.seqs[index].cancelled = True  # the engine may drop it at the next step
                if finish is not None:
                    done[index] = True
                text, _ = out.get(index, ("", None))
                out[index] = (text + piece, finish)
            if all(done):
                job.completed = True
                self.loop.cancel(job)
            yield out
            if interval > 0:
                last = _now()

    def _usage(self, job):
        prompt = sum(len(s.prompt) for s in job.seqs)
        completion = sum(len(s.tokens) for s in job.seqs)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    async def _collect(self, job, stops, receive):
        """Run a job to its end: (texts, finish reasons); the job is cancelled if the client leaves."""
        texts = [""] * len(job.seqs)
        finish = [None] * len(job.seqs)
        watcher = asyncio.ensure_future(_watch_disconnect(receive, job, self.loop))
        try:
            async for out in self._events(job, stops):
                for i, (piece, reason) in out.items():
                    texts[i] += piece
                    finish[i] = reason or finish[i]
        finally:
            watcher.cancel()
            self.loop.cancel(job)
        return texts, finish

    # --- endpoints -------------------------------------------------------------------------------------
    async def completions(self, request, body=None):
        """``POST /v1/completions``: OpenAI's completions API (``prompt`` a string, a list of strings, token ids or
        lists of token ids; ``stream`` for server-sent events). A prompt without ``max_tokens`` gets 16 new
        tokens. body: the request's JSON body, when already read."""
        body = await self._body(request) if body is None else self._check_model(body)
        opts = self._sampling(body)
        stream = _field(body, "stream", bool, False)
        usage_in_stream = _stream_usage(body)
        items = self._prompt_items(body)
        if any(isinstance(item, str) for item in items):
            prompts = await self._off_loop(self._encode_prompts, items)
        else:
            prompts = self._encode_prompts(items)
        seqs, stops = self._sequences(prompts, opts, 16), opts["stop"]
        job = self._start(seqs)
        cid, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        head = {"id": cid, "object": "text_completion", "created": created, "model": self.model_name}
        if stream:
            def chunks(out):
                return [{**head, "choices": [{"index": i, "text": text, "logprobs": None, "finish_reason": reason}]}
                        for i, (text, reason) in sorted(out.items()) if text or reason]
            return EventStream(self, job, stops, chunks, head if usage_in_stream else None)
        texts, finish = await self._collect(job, stops, request.receive)
        choices = [{"index": i, "text": t, "logprobs": None, "finish_reason": f} for i, (t, f) in
                   enumerate(zip(texts, finish))]
        return JSONResponse({**head, "choices": choices, "usage": self._usage(job)})

    async def chat_completions(self, request, body=None):
        """``POST /v1/chat/completions``: OpenAI's chat API, the messages rendered as ``"Role: content"`` lines
        followed by ``"Assistant:"`` (GPT-2 has no chat template); ``stream`` for server-sent events. body: the
        request's JSON body, when already read."""
        body = await self._body(request) if body is None else self._check_model(body)
        opts = self._sampling(body)
        stream = _field(body, "stream", bool, False)
        usage_in_stream = _stream_usage(body)
        text = self._chat_text(body)
        prompt = await self._off_loop(self.tokenizer.encode, text)
        seqs, stops = self._sequences([prompt], opts, None), opts["stop"]
        job = self._start(seqs)
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        head = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": self.model_name}
        if stream:
            started = [False]

            def chunks(out):
                result = []
                for i, (text, reason) in sorted(out.items()):
                    if not (text or reason):
                        continue
                    delta = {"content": text} if text else {}
                    if not started[0]:
                        delta = {"role": "assistant", **delta}
                        started[0] = True
                    result.append({**head, "choices": [{"index": i, "delta": delta, "logprobs": None,
                                                        "finish_reason": reason}]})
                return result
            return EventStream(self, job, stops, chunks, head if usage_in_stream else None)
        texts, finish = await self._collect(job, stops, request.receive)
        return JSONResponse({**head, "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": texts[0]}, "logprobs": None,
             "finish_reason": finish[0]}], "usage": self._usage(job)})

    async def health(self, request):
        """``GET /health``: status, model name, active and waiting sequences, KV-cache slots."""
        return JSONResponse({"status": "ok", "model": self.model_name, "active": len(self.engine.active),
                             "waiting": len(self.loop.waiting), "slots": self.engine.max_batch})


def _stream_usage(body):
    opts = body.get("stream_options")
    if opts is None:
        return False
    if not isinstance(opts, dict):
        raise APIError(400, "'stream_options' must be an object", param="stream_options", code="invalid_type")
    return _field(opts, "include_usage", bool, False)


def _apply_stops(text, stops):
    """(text cut before the first stop string, whether one was found)."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def _held_suffix(text, stops):
    """The longest end of text that could be the start of a stop string (held back until it is decided)."""
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return text[len(text) - best:] if best else ""


async def _watch_disconnect(receive, job, loop):
    """Cancel job when the client disconnects (the request body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            loop.cancel(job)
            job.queue.put_nowait((0, [], None, None))  # wake the reader
            return


class EventStream:
    """A server-sent-events response: one ``data: {json}`` event per chunk, then ``data: [DONE]``."""

    def __init__(self, server, job, stops, chunks, usage_head):
        self.server, self.job, self.stops, self.chunks, self.usage_head = server, job, stops, chunks, usage_head

    async def __call__(self, scope, receive, send):
        job, loop = self.job, self.server.loop
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no")]})
        watcher = asyncio.ensure_future(_watch_disconnect(receive, job, loop))
        try:
            async for out in self.server._events(job, self.stops, self.server.stream_interval):
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
                e = _internal_error(e)
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": f"data: {json.dumps(e.body())}\n\n".encode(),
                            "more_body": False})
        finally:
            watcher.cancel()
            loop.cancel(job)


# --- the application -----------------------------------------------------------------------------------


class _App(Starlette):
    """Starlette, with no exception escaping to the server: after a complete response (Starlette re-raises what
    its error handler answered), raising would make uvicorn close the connection, failing the requests a
    keep-alive client sends on it next. Before any response, the client gets a 500 in OpenAI's shape; in the middle
    of one, the exception goes on (the connection cannot carry another response)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        state = {"started": False, "complete": False}

        async def tracked(message):
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["complete"] = True
            await send(message)
        try:
            await super().__call__(scope, receive, tracked)
        except Exception as e:
            if state["complete"]:  # answered (by the error handler): keep the connection
                if not getattr(e, "_gpk_logged", False):
                    log.error("%s %s failed after its response", scope.get("method"), scope.get("path"), exc_info=e)
                return
            if state["started"]:
                raise
            log.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=e)
            await _internal_error(e).response()(scope, receive, send)


def create_app(model, tokenizer=None, *, model_name="gpt2", max_batch=8, max_queue=256, max_len=None,
               cuda_graphs=None, context=None, more=(), stream_interval=None, max_body_bytes=None,
               tokenize_threads=TOKENIZE_THREADS):
    """The Starlette application serving ``model``; its engine thread runs while the app is up.

    stream_interval: seconds between two events of one stream after its first (default STREAM_INTERVAL_S, 5 ms):
    tokens that arrive in between go out in one event, so a busy server sends one event per stream every few
    steps instead of one per step (fewer socket writes and JSON encodings; a reader sees no difference at
    human speed). 0: an event as soon as tokens arrive.

    context: a gpk_array.sched context for the model (its KV cache, pool, stream and budget). more: further
    ``(model, tokenizer, model_name, context)`` served by the same app in the same process, each with its own
    engine thread (and context): requests go to the model their body names, ``/v1/models`` lists them all,
    ``/metrics`` labels every sample with its model.

    max_body_bytes: the largest request body read (default DEFAULT_MAX_BODY_BYTES, 4 MiB); a larger one gets 413.
    tokenize_threads: worker threads that tokenize prompts, so that the event loop keeps answering (``/health``
    too) while a long prompt is tokenized.

    No client input makes a 5xx: bodies that are not JSON objects (NaN, huge numbers, deep nesting, bad UTF-8,
    lone surrogates in texts) and invalid fields get 400 in OpenAI's error shape; an error inside one sequence's
    generation fails that request only.
    """
    max_body_bytes = DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else int(max_body_bytes)
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
    specs = [(model, tokenizer, model_name, context)] + [tuple(m) for m in more]
    names = [sp[2] for sp in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"model names must differ, got {names}")
    servers = {}
    for m, t, name, ctx in specs:
        servers[name] = Server(m, t, model_name=name, max_batch=max_batch, max_queue=max_queue, max_len=max_len,
                               cuda_graphs=cuda_graphs, context=ctx,
                               stream_interval=STREAM_INTERVAL_S if stream_interval is None else stream_interval,
                               max_body_bytes=max_body_bytes)
        servers[name].names = names
    first = servers[names[0]]

    def endpoint(name, method=None, fn=None):
        """The route handler of ``name``: the Server ``method`` of the model the JSON body names (the first
        model when it names none it has: its handler then answers 400 or 404), or the app-wide ``fn``. Any error
        is answered here, in OpenAI's shape (500 for a bug), and counted under this route in that model's metrics
        (the first model's for app-wide routes)."""
        async def handle(request):
            server = first
            try:
                if method:
                    body = await read_json(request, max_body_bytes)
                    model = body.get("model")
                    server = servers.get(model, first) if isinstance(model, str) else first
                    response = await getattr(server, method)(request, body)
                else:
                    response = await fn(request)
            except APIError as e:
                response = e.response()
            except Exception as e:
                log.error("%s %s failed", request.method, name, exc_info=e)
                response = _internal_error(e).response()
            server.metrics.request(name, getattr(response, "status_code", 200))
            return response
        return handle

    async def models(request):
        return JSONResponse({"object": "list", "data": [
            {"id": n, "object": "model", "created": sv.created, "owned_by": "gpk_array"} for n, sv in servers.items()]})

    async def health(request):
        if len(servers) == 1:
            return await first.health(request)
        return JSONResponse({"status": "ok", "models": {n: {"active": len(sv.engine.active),
                                                             "waiting": len(sv.loop.waiting),
                                                             "slots": sv.engine.max_batch}
                                                         for n, sv in servers.items()}})

    async def metrics(request):
        entries = [(None if len(servers) == 1 else n, sv.metrics, sv.loop) for n, sv in servers.items()]
        return Response(render_metrics(entries), media_type="text/plain; version=0.0.4; charset=utf-8")

    routes = [Route("/v1/completions", endpoint("/v1/completions", "completions"), methods=["POST"]),
              Route("/v1/chat/completions", endpoint("/v1/chat/completions", "chat_completions"), methods=["POST"]),
              Route("/v1/models", endpoint("/v1/models", fn=models), methods=["GET"]),
              Route("/health", endpoint("/health", fn=health), methods=["GET"]),
              Route("/metrics", endpoint("/metrics", fn=metrics), methods=["GET"])]
    paths = {r.path for r in routes}

    def label(request):
        """The metrics label of a request: its route, "other" for paths that are none."""
        return request.url.path if request.url.path in paths else "other"

    async def http_error(request, exc):
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(exc.status_code)
        first.metrics.request(label(request), exc.status_code)
        return APIError(exc.status_code, f"{request.method} {_short(request.url.path)}: {exc.detail}",
                        code=code).response()

    async def server_error(request, exc):
        log.error("%s %s failed", request.method, _short(request.url.path), exc_info=exc)
        with contextlib.suppress(AttributeError):
            exc._gpk_logged = True  # Starlette raises it again after this response: _App keeps the connection
        first.metrics.request(label(request), 500)
        return _internal_error(exc).response()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        pool = concurrent.futures.ThreadPoolExecutor(tokenize_threads, thread_name_prefix="gpk-tokenize")
        for sv in servers.values():
            sv.tokenize_pool = pool
            sv.loop.start()
        try:
            yield
        finally:
            for sv in servers.values():
                sv.loop.stop()
                sv.tokenize_pool = None
            pool.shutdown(wait=False, cancel_futures=True)

    app = _App(routes=routes, lifespan=lifespan,
               exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.server = first
    app.state.servers = servers
    return app


def bind_socket(host="127.0.0.1", port=0):
    """A TCP socket bound to ``(host, port)`` (port 0: a free one), for uvicorn to listen on; OSError when the
    address is taken (EADDRINUSE) or not this machine's."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _url(host, port):
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class ServerThread:
    """uvicorn serving an app from a background thread, on a socket bound here (port 0: a free port).

        with ServerThread(app) as url:   # "http://127.0.0.1:PORT"
            ...
    """

    def __init__(self, app, host="127.0.0.1", port=0, log_level="warning"):
        import uvicorn
        self.sock = bind_socket(host, port)
        self.port = self.sock.getsockname()[1]
        self.url = _url(host, self.port)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self.url

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


def serve(model_dir, *, host="127.0.0.1", port=8000, device=None, dtype=None, max_batch=8, max_queue=256,
          max_len=None, model_name=None, cuda_graphs=None, log_level="info", context_vram=None,
          stream_interval=None, sock=None, max_body_bytes=None):
    """Load one model directory (or a list of them, served side by side) and serve until interrupted.

    model_name: a name or a list of names (default: each directory's name). context_vram: bytes (or "4GiB") of a
    guaranteed gpk_array.sched context per model, which then holds its KV cache and runs its decode steps.
    sock: a socket from ``bind_socket`` to listen on (then closed here); by default one is bound to (host, port)
    before the models load, so that a taken port fails at once (OSError). max_body_bytes: the largest request body
    read (default 4 MiB; larger: 413). What is served (models, device, dtype, slots, URL) is logged on stderr at
    startup (logger ``gpk_array.llm.server``)."""
    import pathlib

    import uvicorn

    from .model import GPT2
    from .tokenizer import Tokenizer
    dirs = [model_dir] if isinstance(model_dir, (str, pathlib.Path)) else list(model_dir)
    names = [model_name] if isinstance(model_name, str) or model_name is None else list(model_name)
    names += [None] * (len(dirs) - len(names))
    if len(names) != len(dirs):
        raise ValueError(f"{len(names)} model names for {len(dirs)} model directories")
    if sock is None:
        sock = bind_socket(host, port)
    log = _startup_log()
    try:
        specs = []
        for d, name in zip(dirs, names):
            model = GPT2.from_pretrained(d, device=device, dtype=dtype)
            try:
                tokenizer = Tokenizer.from_dir(d)
            except FileNotFoundError:
                tokenizer = None
                log.warning("%s has no tokenizer files (tokenizer.json, or vocab.json and merges.txt): its API "
                            "takes token ids only, and no chat", d)
            name = name or pathlib.Path(d).resolve().name
            context = None
            if context_vram is not None:
                from .. import sched
                try:
                    sched.get_scheduler(str(model.device))
                except RuntimeError:  # not initialized for this device yet
                    sched.initialize(str(model.device))
                context = sched.create_context(f"serve-{name}", context_vram, qos="guaranteed",
                                               device=str(model.device))
            specs.append((model, tokenizer, name, context))
        (model, tokenizer, name, context), more = specs[0], specs[1:]
        app = create_app(model, tokenizer, model_name=name, max_batch=max_batch, max_queue=max_queue,
                         max_len=max_len, cuda_graphs=cuda_graphs, context=context, more=more,
                         stream_interval=stream_interval, max_body_bytes=max_body_bytes)
        bound = sock.getsockname()[1]
        for (m, t, n, ctx), d in zip(specs, dirs):
            c = m.config
            log.info("model %r from %s: GPT-2, %d layers, %.1fM parameters, %d-token context%s%s", n, d,
                     c.n_layer, c.num_parameters / 1e6, c.n_positions, "" if t else ", no tokenizer",
                     f", in sched context {ctx.name!r}" if ctx is not None else "")
        engine = app.state.server.engine
        log.info("device %s, dtype %s, %d slots of %d tokens (sequences decoded together), queue %d", model.device,
                 model.dtype.name, max_batch, engine.max_len, max_queue)
        log.info("serving %s on %s/v1 (POST /v1/completions, /v1/chat/completions; GET /v1/models, /health, "
                 "/metrics; CTRL+C quits)", ", ".join(repr(sp[2]) for sp in specs), _url(host, bound))
        config = uvicorn.Config(app, host=host, port=bound, log_level=log_level, timeout_graceful_shutdown=5)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _startup_log():
    """The logger of serve(), printing on stderr as uvicorn does (``INFO:     ...``) unless logging was set up."""
    log = logging.getLogger(__name__)
    if not log.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_UvicornStyle())
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


class _UvicornStyle(logging.Formatter):
    def format(self, record):
        return f"{record.levelname + ':':<9} {record.getMessage()}"
