"""The engine thread: one per served model, the only thread that runs it.

It admits waiting sequences into free KV-cache slots (a batched prefill; the ``n`` choices of one prompt share
one prefill, ``Engine.add_shared``) and then runs one batched decode step over every active sequence, again and
again (continuous batching). Requests reach it through a bounded queue (full: 429); a client that disconnects has
its sequences released at the next step. Tokens (and their logprobs entries) go back to the event loop once per
step. Other work on the model (a prompt's log-probabilities, for ``echo``) runs here too, between steps, through
``EngineLoop.call``.
"""
import asyncio
import collections
import contextlib
import logging
import threading
import time

from .errors import APIError

log = logging.getLogger("gpk_array.llm.server")


class Job:
    """One HTTP request: its sequences (its choices, in order) and the queue their tokens arrive on.

    groups: the sequences as admitted together, each a list of the choices of one prompt that share its prefill
    (default: each sequence alone). A group waits until it fits the free slots whole."""

    def __init__(self, seqs, loop, groups=None):
        self.seqs = seqs
        self.groups = [[s] for s in seqs] if groups is None else groups
        self.loop = loop
        self.queue = asyncio.Queue()
        self.cancelled = False  # the client left, or the job is complete: its sequences can go
        self.completed = False  # every sequence reached its end
        self.prompt_tokens = None  # usage's prompt_tokens when it is not the groups' prompts (echo alone)
        self.created = time.perf_counter()
        for i, s in enumerate(seqs):
            s.tag, s.index, s.sent, s.cancelled = self, i, 0, False


class EngineLoop:
    """The background thread that runs an Engine for every request (continuous batching)."""

    def __init__(self, engine, metrics, max_queue=256, context=None):
        """context: a gpk_array.sched context the thread runs every step in (its stream, pool and budget)."""
        self.engine, self.metrics, self.max_queue, self.context = engine, metrics, max_queue, context
        self.waiting = collections.deque()  # groups of sequences, first come first served
        self.waiting_sequences = 0
        self.tasks = collections.deque()  # (fn, future, event loop) to run on this thread
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
            if any(len(g) > self.engine.max_batch for g in job.groups):  # parse_options refuses such an n first
                raise APIError(400, f"choices that share a prompt decode together: at most {self.engine.max_batch}",
                               param="n", code="invalid_value")
            if self.waiting_sequences + len(job.seqs) > self.max_queue:
                raise APIError(429, f"the server is at capacity ({self.waiting_sequences} sequences waiting for "
                                    f"{self.engine.max_batch} slots); retry later",
                               type="requests", code="rate_limit_exceeded")
            self.waiting.extend(job.groups)
            self.waiting_sequences += len(job.seqs)
            self.cond.notify()

    def cancel(self, job):
        """Forget a job (its client left, or it is complete): slots are released at the next step."""
        job.cancelled = True
        with self.cond:
            self.cond.notify()

    async def call(self, fn):
        """fn() run on the engine thread, between two steps (in the model's scheduler context); its result, or
        its exception raised here."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self.cond:
            if self.stopping:
                raise APIError(503, "the server is shutting down", type="server_error")
            self.tasks.append((fn, future, loop))
            self.cond.notify()
        return await future

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
                while not (self.stopping or self.waiting or self.tasks or engine.active):
                    self.cond.wait()
                if self.stopping:
                    return
                tasks, self.tasks = self.tasks, collections.deque()
                admit, room = [], engine.free
                while self.waiting and len(self.waiting[0]) <= room:  # first come first served, whole groups
                    group = self.waiting.popleft()
                    self.waiting_sequences -= len(group)
                    group = [s for s in group if not (s.tag.cancelled or s.cancelled)]
                    if group:
                        admit.append(group)
                        room -= len(group)
            for task in tasks:
                _run_task(*task)
            changed = {}
            admitted = [s for g in admit for s in g]
            try:
                for seq in engine.active:
                    if seq.tag.cancelled or seq.cancelled:
                        engine.release(seq, "cancelled")
                if admit:
                    for s in self._admit(admit):
                        changed[id(s)] = s
                    with self.metrics.lock:
                        self.metrics.prompt_tokens += sum(len(g[0].prompt) for g in admit)
                for s in engine.step():
                    changed[id(s)] = s
            except Exception as e:  # keep serving: fail the sequences of the step, free their slots
                log.error("a decode step of %d sequences failed", len(engine.active), exc_info=e)
                for s in admitted + engine.active:
                    if s.finish_reason is None:
                        s.fail(e)
                    engine.release(s)
                    changed[id(s)] = s
            try:
                self._deliver(changed.values())
            except Exception as e:  # never let the thread die: every later request would hang
                log.error("delivering tokens failed", exc_info=e)

    def _admit(self, groups):
        """Prefill the groups: the lone sequences in one batch (engine.add), each group of several choices of one
        prompt in one shared prefill (engine.add_shared). Returns the sequences admitted or failed."""
        out = self._add([g[0] for g in groups if len(g) == 1])
        for g in groups:
            if len(g) > 1:
                try:
                    out += self.engine.add_shared(g)
                except Exception as e:  # the group is one request: its choices fail together, nothing else
                    for s in g:
                        self.engine.release(s)
                        s.fail(e)
                    log.warning("prefill failed: %s: %s", type(e).__name__, e)
                    out += g
        return out

    def _add(self, seqs):
        """Prefill seqs (engine.add); when the batched prefill raises, each sequence alone, so that only the ones
        whose own prefill raises fail (a prefill writes only its sequence's cache rows)."""
        engine = self.engine
        if not seqs:
            return []
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
            out += self._add([s])
        return out

    def _deliver(self, seqs):
        """Send each sequence's new tokens, their logprobs entries (or None) and its end to its job's event loop,
        one call per loop."""
        by_loop = collections.defaultdict(list)
        count = 0
        for s in seqs:
            new = s.tokens[s.sent:]
            recorded = getattr(s, "token_logprobs", None)
            entries = None if recorded is None else recorded[s.sent:s.sent + len(new)]
            s.sent += len(new)
            count += len(new)
            if new or s.finish_reason is not None:
                error = getattr(s, "error", None) if s.finish_reason == "error" else None
                by_loop[s.tag.loop].append((s.tag, (s.index, new, entries, s.finish_reason, error)))
        with self.metrics.lock:
            self.metrics.generated_tokens += count
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_dispatch, items)
            except RuntimeError:  # that loop is closed: its clients are gone
                pass


def _run_task(fn, future, loop):
    try:
        result, exc = fn(), None
    except Exception as e:  # the caller's to raise
        result, exc = None, e
    try:
        loop.call_soon_threadsafe(_settle, future, result, exc)
    except RuntimeError:  # that loop is closed: its client is gone
        pass


def _settle(future, result, exc):
    if not future.done():
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)


def _dispatch(items):
    for job, payload in items:
        job.queue.put_nowait(payload)
