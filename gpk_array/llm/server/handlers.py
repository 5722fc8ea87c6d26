"""The request handlers of one served model: /v1/completions, /v1/chat/completions and /health.

A request is checked whole (options.py, prompts.py) before anything reaches the engine thread; its sequences (``n``
choices per prompt, choice ``i * n + j`` for prompt ``i``, drawing with ``seed + index``) then run there, and the
response (JSON, or server-sent events) is built from their events (streaming.py), with logprobs in the endpoint's
format (logprobs.py).
"""
import asyncio
import contextlib
import time
import uuid

from starlette.responses import JSONResponse

from ..generate import Engine, Sequence
from .engine_loop import EngineLoop, Job
from .errors import APIError, short
from .jsonbody import DEFAULT_MAX_BODY_BYTES, read_json
from .logprobs import TokenNames, TokenOffsets, chat_logprobs, completion_logprobs, prompt_logprobs
from .metrics import Metrics
from .options import DEFAULT_CHAT_MAX_TOKENS, DEFAULT_COMPLETION_MAX_TOKENS, field, parse_options
from .prompts import Prompts
from .streaming import STREAM_INTERVAL_S, Delta, EventStream, choice_events, watch_disconnect


class Server:
    """The request handlers, bound to one model, tokenizer and engine thread."""

    def __init__(self, model, tokenizer, *, model_name, max_batch=8, max_queue=256, max_len=None, cuda_graphs=None,
                 context=None, stream_interval=STREAM_INTERVAL_S, max_body_bytes=DEFAULT_MAX_BODY_BYTES,
                 chat_max_tokens=DEFAULT_CHAT_MAX_TOKENS):
        """context: a gpk_array.sched context holding this model's KV cache and running its decode steps.
        stream_interval: seconds a stream waits after an event before the next one, gathering the tokens that
        arrive meanwhile into one event (the first event is never delayed). max_body_bytes: the largest request
        body read (larger: 413). chat_max_tokens: the new tokens of a chat request without max_tokens (bounded by
        the context)."""
        self.model, self.tokenizer, self.model_name = model, tokenizer, model_name
        self.stream_interval = float(stream_interval)
        self.max_body_bytes = int(max_body_bytes)
        if not (isinstance(chat_max_tokens, int) and chat_max_tokens >= 1):
            raise ValueError(f"chat_max_tokens must be an integer >= 1, got {chat_max_tokens!r}")
        self.chat_max_tokens = chat_max_tokens
        self.tokenize_pool = None  # the executor prompts are tokenized in (create_app's lifespan sets one)
        self.names = [model_name]  # every model the app serves (for the 404 message)
        self.metrics = Metrics()
        with context if context is not None else contextlib.nullcontext():
            self.engine = Engine(model, max_batch=max_batch, max_len=max_len, cuda_graphs=cuda_graphs)
        self.loop = EngineLoop(self.engine, self.metrics, max_queue, context)
        self.created = int(time.time())
        self.eos = tokenizer.eos_token_id if tokenizer is not None else model.config.eos_token_id
        self.prompts = Prompts(tokenizer, context=self.engine.max_len, vocab=model.config.vocab_size, eos=self.eos)

    # --- parsing ---------------------------------------------------------------------------------------
    async def _body(self, request):
        """The request's JSON body (at most max_bytes bytes), checked to name this model."""
        return self._check_model(await read_json(request, self.max_body_bytes))

    def _check_model(self, body):
        model = field(body, "model", str, required=True)
        if model != self.model_name:
            has = ", ".join(f"'{n}'" for n in self.names)
            raise APIError(404, f"the model '{short(model)}' does not exist; this server has {has}",
                           param="model", code="model_not_found")
        return body

    def _options(self, body, chat):
        """The request's checked options (options.parse_options against this engine)."""
        return parse_options(body, chat=chat, context=self.engine.max_len, vocab=self.model.config.vocab_size,
                             slots=self.engine.max_batch)

    def _chat_text(self, body):
        """The chat template applied to the messages (prompts.Prompts.chat_text)."""
        return self.prompts.chat_text(body)

    async def _off_loop(self, fn, *args):
        """fn(*args) in the tokenizing worker threads, so that the event loop keeps answering meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self.tokenize_pool, fn, *args)

    def _sequences(self, prompts, opts):
        """(sequences, groups): opts.n sequences per prompt (lists of ids), one group each, that share its prefill."""
        ctx = self.engine.max_len
        default = self.chat_max_tokens if opts.chat else DEFAULT_COMPLETION_MAX_TOKENS
        total = len(prompts) * opts.n
        if total > self.loop.max_queue:
            param = "n" if opts.n > 1 else ("messages" if opts.chat else "prompt")
            raise APIError(400, f"this request has {total} sequences; the server queues at most "
                                f"{self.loop.max_queue}", param=param, code="invalid_value")
        seqs, groups = [], []
        stops = () if opts.ignore_eos or self.eos is None else (self.eos,)
        for i, ids in enumerate(prompts):
            self.prompts.check_length(len(ids), "messages" if opts.chat else "prompt")
            n = opts.max_tokens if opts.max_tokens is not None else min(default, ctx - len(ids))
            if len(ids) + n > ctx:
                raise APIError(400, f"this model's maximum context length is {ctx} tokens; you requested "
                                    f"{len(ids) + n} ({len(ids)} in the prompt, {n} for the completion)",
                               param=opts.limit, code="context_length_exceeded")
            group = []
            for j in range(opts.n):
                try:
                    params = opts.params(i * opts.n + j)
                except ValueError as e:  # the checks of parse_options should have caught it
                    raise APIError(400, str(e)) from None
                group.append(Sequence(ids, max_new_tokens=n, params=params, stop_tokens=stops))
            seqs += group
            groups.append(group)
        return seqs, groups

    # --- running jobs ----------------------------------------------------------------------------------
    def _start(self, seqs, groups):
        for s in seqs:
            try:
                self.engine.check(s)
            except ValueError as e:
                raise APIError(400, str(e), param="prompt", code="context_length_exceeded") from None
        job = Job(seqs, asyncio.get_running_loop(), groups)
        self.loop.submit(job)
        return job

    def _usage(self, job):
        prompt = sum(len(g[0].prompt) for g in job.groups if g) if job.prompt_tokens is None else job.prompt_tokens
        completion = sum(len(s.tokens) for s in job.seqs)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    async def _collect(self, job, events, receive):
        """Run a job's events to their end: {choice index: Delta} of everything; the job is cancelled if the
        client leaves."""
        whole = {}
        watcher = asyncio.ensure_future(watch_disconnect(receive, job, self.loop))
        try:
            async for out in events:
                for i, d in out.items():
                    w = whole.setdefault(i, Delta("", None, []))
                    w.text += d.text
                    w.finish = d.finish or w.finish
                    w.tokens += d.tokens
        finally:
            watcher.cancel()
            self.loop.cancel(job)
        return whole

    async def _echo(self, prompts, opts, names):
        """Each prompt's (text, tokens) for ``echo``: its decoded text and, with logprobs, its tokens' entries
        (computed on the engine thread; the first token has none)."""
        entries = [[None] * len(ids) for ids in prompts]
        if opts.logprobs is not None:
            k = opts.logprobs
            entries = await self.loop.call(lambda: [prompt_logprobs(self.model, ids, k) for ids in prompts])
        out = []
        for ids, ents in zip(prompts, entries):
            text = self.tokenizer.decode(ids) if self.tokenizer is not None else ""
            toks = []
            if names is not None:
                offsets = TokenOffsets(names)
                toks = [(t, e, offsets.push(t)[0]) for t, e in zip(ids, ents)]
            out.append((text, toks))
        return out

    # --- endpoints -------------------------------------------------------------------------------------
    async def completions(self, request, body=None):
        """``POST /v1/completions``: OpenAI's completions API (``prompt`` a string, a list of strings, token ids or
        lists of token ids; ``stream`` for server-sent events; ``n`` choices per prompt; ``logprobs``, ``echo``).
        A prompt without ``max_tokens`` gets 16 new tokens. body: the request's JSON body, when already read."""
        body = await self._body(request) if body is None else self._check_model(body)
        opts = self._options(body, chat=False)
        items = self.prompts.items(body)
        if any(isinstance(item, str) for item in items):
            prompts = await self._off_loop(self.prompts.encode, items)
        else:
            prompts = self.prompts.encode(items)
        names = TokenNames(self.tokenizer, opts.token_ids) if opts.logprobs is not None else None
        cid, created = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        head = {"id": cid, "object": "text_completion", "created": created, "model": self.model_name}
        echo = await self._echo(prompts, opts, names) if opts.echo else None
        if opts.max_tokens == 0:  # echo alone: the prompts and their logprobs, nothing generated
            job = Job([], asyncio.get_running_loop(), [])
            job.completed, job.prompt_tokens = True, sum(map(len, prompts))
            first = {i * opts.n + j: Delta(text, "length", list(toks)) for i, (text, toks) in enumerate(echo)
                     for j in range(opts.n)}
            events = _once(first)
        else:
            seqs, groups = self._sequences(prompts, opts)
            job = self._start(seqs, groups)
            events = choice_events(self, job, opts.stop, self.stream_interval if opts.stream else 0.0, names)
            if echo is not None:
                events = _echoed(events, {i * opts.n + j: echo[i] for i in range(len(prompts))
                                          for j in range(opts.n)})

        def choice(i, d):
            lp = None if names is None else completion_logprobs(d.tokens, names, opts.logprobs)
            return {"index": i, "text": d.text, "logprobs": lp, "finish_reason": d.finish}
        if opts.stream:
            def chunks(out):
                return [{**head, "choices": [choice(i, d)]} for i, d in sorted(out.items())
                        if d.text or d.finish or d.tokens]
            return EventStream(self, job, events, chunks, head if opts.include_usage else None)
        whole = await self._collect(job, events, request.receive)
        choices = [choice(i, whole.get(i, Delta("", None, []))) for i in range(len(prompts) * opts.n)]
        return JSONResponse({**head, "choices": choices, "usage": self._usage(job)})

    async def chat_completions(self, request, body=None):
        """``POST /v1/chat/completions``: OpenAI's chat API, the messages rendered as ``"Role: content"`` lines
        followed by ``"Assistant:"`` (GPT-2 has no chat template); ``stream`` for server-sent events; ``n``
        choices; ``logprobs`` with ``top_logprobs``. Without ``max_tokens`` (or ``max_completion_tokens``) a reply
        has at most ``chat_max_tokens`` (256) new tokens. body: the request's JSON body, when already read."""
        body = await self._body(request) if body is None else self._check_model(body)
        opts = self._options(body, chat=True)
        text = self._chat_text(body)
        prompt = await self._off_loop(self.tokenizer.encode, text)
        seqs, groups = self._sequences([prompt], opts)
        job = self._start(seqs, groups)
        names = TokenNames(self.tokenizer, opts.token_ids) if opts.logprobs is not None else None
        events = choice_events(self, job, opts.stop, self.stream_interval if opts.stream else 0.0, names)
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        head = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": self.model_name}

        def logprobs(d):
            return None if names is None or (opts.stream and not d.tokens) else chat_logprobs(d.tokens, names)
        if opts.stream:
            started = set()

            def chunks(out):
                result = []
                for i, d in sorted(out.items()):
                    if not (d.text or d.finish or d.tokens):
                        continue
                    delta = {"content": d.text} if d.text else {}
                    if i not in started:
                        delta = {"role": "assistant", **delta}
                        started.add(i)
                    result.append({**head, "choices": [{"index": i, "delta": delta, "logprobs": logprobs(d),
                                                        "finish_reason": d.finish}]})
                return result
            return EventStream(self, job, events, chunks, head if opts.include_usage else None)
        whole = await self._collect(job, events, request.receive)
        choices = []
        for i in range(opts.n):
            d = whole.get(i, Delta("", None, []))
            choices.append({"index": i, "message": {"role": "assistant", "content": d.text},
                            "logprobs": logprobs(d), "finish_reason": d.finish})
        return JSONResponse({**head, "object": "chat.completion", "choices": choices, "usage": self._usage(job)})

    async def health(self, request):
        """``GET /health``: status, model name, active and waiting sequences, KV-cache slots."""
        return JSONResponse({"status": "ok", "model": self.model_name, "active": len(self.engine.active),
                             "waiting": self.loop.waiting_sequences, "slots": self.engine.max_batch})


async def _once(out):
    yield out


async def _echoed(events, prefix):
    """events with each choice's echoed prompt first: prefix {choice index: (text, tokens)}; the offsets of the
    generated tokens move past the prompt's text."""
    yield {i: Delta(text, None, list(toks)) for i, (text, toks) in prefix.items()}
    async for out in events:
        for i, d in out.items():
            shift = len(prefix[i][0])
            d.tokens = [(t, e, s + shift) for t, e, s in d.tokens]
        yield out
