"""Text generation over the decode engine (``engine.py``): ``generate`` (one prompt or a batch, greedy or
sampled, stop tokens), ``generate_stream`` (pieces as they come) and ``TextStream`` (streaming detokenization).

``generate()`` keeps its engines (their caches and captured graphs) per model and batch size and reuses them on
the next call; ``clear_engines(model)`` frees them. ``Sequence``, ``Engine`` and the sampling names are
re-exported here, where earlier versions defined them.
"""
import collections
import math
import sys
import threading

import numpy as np

from .engine import NO_FINITE_LOGIT, Engine, Sequence  # noqa: F401
from .sampling import (MAX_LOGPROBS, MIN_TEMPERATURE, SamplingParams, SlotSampler, fresh_seed,  # noqa: F401
                       sample)


# --- generate()'s engines: one per (model, batch size, graphs on/off, scheduler context), reused --------------

_engines_lock = threading.Lock()


def _sched_context():
    core = sys.modules.get("gpk_array.sched._state")  # no scheduler imported: no context can be current
    return core.current_context() if core is not None else None


def _acquire_engine(model, max_batch, max_len, cuda_graphs):
    """An idle Engine of ``model`` with ``max_batch`` slots and room for ``max_len`` tokens: the one kept from an
    earlier call when it fits, else a new one (context rounded up to a whole kv block, so that later calls of
    about the same length fit it too), kept for the next call. A stand-in ``cuda_graphs`` object (tests) gets an
    engine of its own, not kept."""
    if cuda_graphs not in (None, True, False):
        return Engine(model, max_batch=max_batch, max_len=max_len, cuda_graphs=cuda_graphs)
    ctx = _sched_context()
    key = (max_batch, cuda_graphs is not False, id(ctx))
    need = min(max_len, model.config.n_positions)
    with _engines_lock:
        kept = model.__dict__.setdefault("_generate_engines", {})
        e = kept.get(key)
        if e is not None and not e._busy and e._ctx is ctx and e.max_len >= need:
            e._busy = True
            return e
    e = Engine(model, max_batch=max_batch, max_len=math.ceil(need / 128) * 128, cuda_graphs=cuda_graphs)
    e._ctx, e._busy = ctx, True
    with _engines_lock:
        old = kept.get(key)
        if old is None or not old._busy:  # a busy one stays (another thread has it); this one is then not kept
            kept[key] = e
    return e


def _return_engine(engine):
    """Give an engine from _acquire_engine back (its sequences cancelled)."""
    for s in engine.active:
        engine.release(s, "cancelled")
    engine._busy = False


def clear_engines(model):
    """Forget the engines (KV caches and CUDA graphs) that ``generate`` and ``generate_stream`` keep for ``model``,
    so that their memory can be freed; the next call makes new ones."""
    with _engines_lock:
        model.__dict__.pop("_generate_engines", None)


def _params(temperature, top_k, top_p, seed, min_p, repetition_penalty, presence_penalty, frequency_penalty,
            logit_bias, logprobs):
    return SamplingParams(temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty,
                          logit_bias, seed, logprobs)


def generate(model, prompts, *, max_new_tokens=64, temperature=0.0, top_k=None, top_p=None, seed=None,
             stop_tokens=None, tokenizer=None, max_batch=None, cuda_graphs=None, min_p=None, repetition_penalty=1.0,
             presence_penalty=0.0, frequency_penalty=0.0, logit_bias=None, logprobs=None):
    """Continue one prompt or a batch of prompts of any lengths.

    prompts: a list of token ids, or a list of them (or text / a list of texts, with ``tokenizer``).
    stop_tokens: ids that end a sequence (default: the tokenizer's end-of-text id, if a tokenizer is given).
    Sampling parameters as SamplingParams's (temperature 0: greedy). seed: prompt i of a batch draws with seed
    ``seed + i`` (mod 2**64), one prompt with ``seed`` (None: fresh entropy).
    Returns the generated ids (stop token excluded) per prompt, or texts when the prompts were texts; with
    ``logprobs=k``, a pair (ids or text, token_logprobs) per prompt (see Sequence.token_logprobs).
    The engine (KV cache and captured graphs) is kept for the next call with the same model and batch size.
    """
    single = isinstance(prompts, str) or (len(prompts) > 0 and isinstance(prompts[0], (int, np.integer)))
    batch = [prompts] if single else list(prompts)
    texts = any(isinstance(p, str) for p in batch)
    if texts:
        if tokenizer is None:
            raise ValueError("text prompts need a tokenizer")
        batch = [tokenizer.encode(p) if isinstance(p, str) else p for p in batch]
    if stop_tokens is None:
        stop_tokens = () if tokenizer is None or tokenizer.eos_token_id is None else (tokenizer.eos_token_id,)
    extra = (min_p, repetition_penalty, presence_penalty, frequency_penalty, logit_bias, logprobs)
    seqs = []
    for i, p in enumerate(batch):
        s = seed if single or seed is None else (int(seed) + i) % 2 ** 64
        params = _params(temperature, top_k, top_p, s, *extra)
        seqs.append(Sequence(p, max_new_tokens=max_new_tokens, params=params, stop_tokens=stop_tokens))
    max_len = max(len(s.prompt) for s in seqs) + max_new_tokens - 1
    engine = _acquire_engine(model, min(len(seqs), max_batch or len(seqs)), max_len, cuda_graphs)
    try:
        for s in seqs:
            engine.check(s)
        pending = collections.deque(seqs)
        while pending or engine.active:
            if pending and engine.free:
                _raise_failure(engine.add([pending.popleft() for _ in range(min(engine.free, len(pending)))]))
            _raise_failure(engine.step())
    finally:
        _return_engine(engine)
    out = [s.tokens for s in seqs]
    if texts:
        out = [tokenizer.decode(t) for t in out]
    if logprobs is not None:
        out = [(o, s.token_logprobs) for o, s in zip(out, seqs)]
    return out[0] if single else out


def _raise_failure(seqs):
    """Raise the exception of the first sequence that failed (an Engine finishes only that one, with "error")."""
    for s in seqs:
        if s.exception is not None:
            raise s.exception


def generate_stream(model, prompt, *, max_new_tokens=64, temperature=0.0, top_k=None, top_p=None, seed=None,
                    stop_tokens=None, tokenizer=None, engine=None, min_p=None, repetition_penalty=1.0,
                    presence_penalty=0.0, frequency_penalty=0.0, logit_bias=None, logprobs=None):
    """Yield the tokens generated for one prompt as they come: ids, or text pieces when a tokenizer is given
    (pieces end on whole UTF-8 characters); with ``logprobs=k``, pairs (id or piece, the token_logprobs entries of
    its tokens). ``engine``: run on this Engine (default: generate()'s kept engine of one slot for this model)."""
    if isinstance(prompt, str):
        if tokenizer is None:
            raise ValueError("a text prompt needs a tokenizer")
        prompt = tokenizer.encode(prompt)
    if stop_tokens is None:
        stop_tokens = () if tokenizer is None or tokenizer.eos_token_id is None else (tokenizer.eos_token_id,)
    params = _params(temperature, top_k, top_p, seed, min_p, repetition_penalty, presence_penalty, frequency_penalty,
                     logit_bias, logprobs)
    seq = Sequence(prompt, max_new_tokens=max_new_tokens, params=params, stop_tokens=stop_tokens)
    own = engine is None
    if own:
        engine = _acquire_engine(model, 1, len(seq.prompt) + max_new_tokens - 1, None)
    text = TextStream(tokenizer) if tokenizer is not None else None
    sent = 0
    try:
        engine.check(seq)
        _raise_failure(engine.add([seq]))
        pending = []
        while True:
            for i in range(sent, len(seq.tokens)):
                t = seq.tokens[i]
                if logprobs is not None:
                    pending.append(seq.token_logprobs[i])
                piece = t if text is None else text.push([t])
                if text is None or piece:
                    yield piece if logprobs is None else (piece, pending)
                    pending = []
            sent = len(seq.tokens)
            if seq.done:
                break
            _raise_failure(engine.step())
        if text is not None:
            rest = text.flush()
            if rest or pending:
                yield rest if logprobs is None else (rest, pending)
    finally:
        engine.release(seq, "cancelled")
        if own:
            _return_engine(engine)


class TextStream:
    """Incremental detokenization: ``push(ids)`` returns the text completed by them. Replacement characters at
    the end (a character whose bytes are split across tokens, or invalid bytes) wait until later tokens settle
    them, so the pieces add up to ``tokenizer.decode`` of all the ids."""

    def __init__(self, tokenizer, limit=64):
        self.tokenizer, self.limit = tokenizer, limit
        self.pending = []  # ids since the last clean character boundary
        self.sent = 0  # characters of decode(pending) already returned

    def push(self, ids):
        """Add token ids; returns the text they complete (possibly empty while a character's bytes are still split
        across tokens)."""
        self.pending += ids
        text = self.tokenizer.decode(self.pending)
        if text.endswith("\ufffd") and len(self.pending) < self.limit:
            stable = text.rstrip("\ufffd")  # the bytes before an unfinished tail decode the same later
            piece, self.sent = stable[self.sent:], max(self.sent, len(stable))
            return piece
        piece = text[self.sent:]
        self.pending, self.sent = [], 0
        return piece

    def flush(self):
        """The text not yet returned (including an unfinished tail), and a reset of the stream."""
        piece = self.tokenizer.decode(self.pending)[self.sent:] if self.pending else ""
        self.pending, self.sent = [], 0
        return piece
