"""Text generation: KV cache, greedy and sampled decoding, stop tokens, batches, streaming.

``Engine`` holds a fixed number of slots, the rows of one preallocated KV cache. A sequence is prefilled into a
free slot (several at once, right-padded), then every ``step()`` runs one batched decode over all slots, with
fixed shapes: tokens and positions in device buffers, attention over the first ``kv_len`` cache slots (rounded up
to a block) with a mask. On a CUDA device that step is captured once per ``kv_len`` in a CUDA graph and replayed
(when every kernel in it can be captured; otherwise, with a warning, it runs eagerly).
Sequences come and go between steps (continuous batching): ``generate`` and the HTTP server both drive it.

Token choice happens on the host for sampling, with one seeded NumPy Generator per sequence, so the CPU and a
GPU draw the same tokens from the same logits; greedy rows take an argmax on the device.
"""
import collections
import dataclasses
import warnings

import numpy as np

import gpk_array as gp
from .._ops.indexing import take_unchecked
from . import _host_sampling as _hs


# Temperatures below this decode greedily: dividing logits by a tiny temperature overflows (1e-310: every logit
# becomes +-inf and the softmax NaN), and well before that the distribution is one-hot but for exact ties.
MIN_TEMPERATURE = 1e-5


@dataclasses.dataclass
class SamplingParams:
    """How a sequence chooses its tokens; each field is checked (ValueError naming it).

    temperature 0 (or below MIN_TEMPERATURE) means greedy; top_k None/0 and top_p None/1.0 keep every token; min_p
    None/0 keeps every token, else those with a probability of at least min_p times the largest.
    repetition_penalty (Hugging Face / vLLM semantics, over the prompt and the generated tokens: a positive logit
    is divided by it, a negative one multiplied), presence_penalty and frequency_penalty (OpenAI semantics, over
    the generated tokens: a logit drops by frequency_penalty per occurrence plus presence_penalty once),
    logit_bias ({token id: value added to its logit}) change the logits before the choice, greedy included.
    seed: None (fresh entropy), a non-negative integer below 2**64 (or a sequence of them:
    numpy.random.default_rng's). logprobs: None records nothing; k in [0, 20] records, for every token appended
    to ``Sequence.tokens``, the chosen token's log-probability and the top k (``Sequence.token_logprobs``)."""
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: dict | None = None
    seed: int | None = None
    logprobs: int | None = None

    def __post_init__(self):
        if not (_is_number(self.temperature) and 0 <= self.temperature < float("inf")):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if self.top_k is not None and not (_is_int(self.top_k) and self.top_k >= 0):
            raise ValueError(f"top_k must be an integer >= 0, got {self.top_k!r}")
        if self.top_p is not None and not (_is_number(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.min_p is not None and not (_is_number(self.min_p) and 0 <= self.min_p <= 1):
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p!r}")
        if not (_is_number(self.repetition_penalty) and 0 < self.repetition_penalty < float("inf")):
            raise ValueError(f"repetition_penalty must be a finite number > 0, got {self.repetition_penalty!r}")
        for name in ("presence_penalty", "frequency_penalty"):
            v = getattr(self, name)
            if not (_is_number(v) and np.isfinite(v)):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if self.logit_bias is not None:
            if not isinstance(self.logit_bias, dict):
                raise ValueError(f"logit_bias must be a dict {{token id: bias}}, got {type(self.logit_bias).__name__}")
            for k, v in self.logit_bias.items():
                if not (_is_int(k) and k >= 0):
                    raise ValueError(f"logit_bias keys must be token ids (integers >= 0), got {k!r}")
                if not (_is_number(v) and np.isfinite(v)):
                    raise ValueError(f"logit_bias values must be finite numbers, got {v!r} for token {k}")
        if self.logprobs is not None and not (_is_int(self.logprobs) and 0 <= self.logprobs <= 20):
            raise ValueError(f"logprobs must be None or an integer in [0, 20], got {self.logprobs!r}")
        seed = self.seed
        if seed is None or isinstance(seed, (np.random.SeedSequence, np.random.BitGenerator, np.random.Generator)):
            return
        parts = seed if isinstance(seed, (list, tuple)) and seed else [seed]
        if not all(_is_int(x) and 0 <= x < 2 ** 64 for x in parts):
            raise ValueError(f"seed must be None, an integer in [0, 2**64) or a non-empty sequence of them, "
                             f"got {seed!r}")

    @property
    def greedy(self):
        """Whether these parameters pick the most likely token (temperature below MIN_TEMPERATURE, or top_k 1)."""
        return self.temperature < MIN_TEMPERATURE or self.top_k == 1


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _clean_logits(logits):
    """float64 logits in which NaN counts as -inf and, if any logit is +inf, only the +inf ones remain (at 0);
    ValueError when no logit is above -inf (no token can be chosen)."""
    z = np.array(logits, dtype=np.float64).reshape(-1)
    if not np.isfinite(z).all():
        z[np.isnan(z)] = -np.inf
        top = np.isposinf(z)
        if top.any():
            z = np.where(top, 0.0, -np.inf)
        if not (z > -np.inf).any():
            raise ValueError("no finite logit to choose a token from (every logit is NaN or -inf)")
    return z


def sample(logits, params, rng):
    """A token id from one row of logits (NumPy, (V,)) under ``params``, drawing with ``rng``.

    NaN logits never win (they count as -inf); +inf logits share all of the probability; ValueError when no logit
    is above -inf. The softmax subtracts the largest logit before dividing by the temperature, in float64."""
    z = _clean_logits(logits)
    if params.greedy:
        return int(np.argmax(z))
    with np.errstate(over="ignore"):  # <= 0, with 0 at the largest: what overflows is -inf, a probability of 0
        z = (z - z.max()) / params.temperature
    if params.top_k and params.top_k < z.size:
        kth = np.partition(z, -params.top_k)[-params.top_k]
        z = np.where(z >= kth, z, -np.inf)
    p = np.exp(z)
    p /= p.sum()
    if params.top_p is not None and params.top_p < 1:
        order = np.argsort(-p, kind="stable")
        sorted_p = p[order]
        drop = np.cumsum(sorted_p) - sorted_p >= params.top_p  # keep the smallest prefix reaching top_p
        p[order[drop]] = 0.0
        p /= p.sum()
    if params.min_p:  # after top-k / top-p: tokens below min_p times the most likely one's probability drop
        p[p < params.min_p * p.max()] = 0.0
        p /= p.sum()
    cdf = np.cumsum(p)
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), z.size - 1))


class Sequence:
    """One prompt being continued: its generated ``tokens``, and ``finish_reason`` once done
    ("stop": a stop token came (it is not kept), "length": max_new_tokens reached, "cancelled", "error": choosing
    its next token raised, the exception in ``exception`` and its text in ``error``; the other sequences of the
    batch go on).

    ``token_logprobs``: None unless ``params.logprobs`` is an integer k; then one ``(logprob, top)`` per token of
    ``tokens``: the log-softmax of the model's raw logits (before temperature, penalties, bias, top-k/p) at the
    chosen token, and the k most likely ``(token id, logprob)`` in decreasing order (a stop token that ends the
    sequence is not appended and has no entry)."""

    def __init__(self, prompt, *, max_new_tokens=64, params=None, stop_tokens=(), tag=None):
        if isinstance(prompt, np.ndarray) and prompt.dtype.kind in "iu":  # one C conversion, not one per token
            self._prompt_array = prompt.astype(np.int64).reshape(-1)
            self.prompt = self._prompt_array.tolist()
        else:
            self.prompt = [int(t) for t in prompt]
            self._prompt_array = None
        if not self.prompt:
            raise ValueError("a prompt needs at least one token")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.max_new_tokens = max_new_tokens
        self.params = params or SamplingParams()
        self._on_device = _hs.on_device(self.params)  # its token is the device's argmax (read every step)
        self._rng = None
        self.stop_tokens = frozenset(int(t) for t in stop_tokens)
        self.tokens = []
        self.token_logprobs = None if self.params.logprobs is None else []
        self.finish_reason = None
        self.slot = None
        self.tag = tag  # anything the caller wants to find again
        self.error = None  # "ExceptionType: message" when finish_reason is "error"
        self.exception = None

    @property
    def rng(self):
        """The sampling generator, seeded from params.seed (made when first sampled from: greedy never does)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.params.seed)
        return self._rng

    @property
    def prompt_array(self):
        """The prompt as an int64 NumPy array (made once)."""
        if self._prompt_array is None:
            self._prompt_array = np.array(self.prompt, dtype=np.int64)
        return self._prompt_array

    @property
    def done(self):
        """Whether the sequence has finished (``finish_reason`` is ``"stop"`` or ``"length"``)."""
        return self.finish_reason is not None

    @property
    def next_position(self):
        """Position (and cache slot) of the last token, the one fed to the next decode step."""
        return len(self.prompt) + len(self.tokens) - 1

    def fail(self, exc):
        """Finish with "error" because of the exception exc (raised while working on this sequence alone)."""
        if self.finish_reason is None:
            self.finish_reason = "error"
            self.error, self.exception = f"{type(exc).__name__}: {exc}", exc

    def _push(self, token, logprob=None):
        if token in self.stop_tokens:
            self.finish_reason = "stop"
            return
        self.tokens.append(token)
        if self.token_logprobs is not None:
            self.token_logprobs.append(logprob)
        if len(self.tokens) >= self.max_new_tokens:
            self.finish_reason = "length"


class Engine:
    """A KV cache of ``max_batch`` slots and the prefill / decode steps that fill and read it."""

    def __init__(self, model, max_batch=1, max_len=None, *, cuda_graphs=None, kv_block=128):
        """cuda_graphs: None (or True) captures decode steps and single-sequence prefills in CUDA graphs on a CUDA
        device; False runs them eagerly; an object with ``run(key, fn)`` stands in for CudaGraphs (the tests use
        one that replays the first closure per key, on the CPU). kv_block: decode attends the cache in blocks of
        this many slots."""
        c = model.config
        self.model = model
        self.device = model.device
        self.max_batch = max_batch
        self.max_len = min(max_len or c.n_positions, c.n_positions)
        self.kv_block = kv_block
        self.cache = model.new_cache(max_batch, self.max_len)
        self.slots = [None] * max_batch
        dev = self.device
        self._io = gp.zeros((2, max_batch, 1), dtype=gp.int64, device=dev)  # decode tokens and positions
        self._io_host = np.zeros((2, max_batch, 1), dtype=np.int64)
        if cuda_graphs is None or cuda_graphs is True:
            cuda_graphs = CudaGraphs() if dev.kind == "cuda" else None
        self.graphs = cuda_graphs or None
        self.graph_error = None  # why capture was given up, if it was
        self._ahead = None  # (active set, fetch): a decode step launched before its inputs reached the host
        if self.graphs is not None:  # the static buffers a captured step reads and writes
            self._logits = gp.zeros((max_batch, c.vocab_size), dtype=model.dtype, device=dev)
            self._next = gp.zeros((max_batch,), dtype=gp.int64, device=dev)
            self._io_next = gp.zeros((2, max_batch, 1), dtype=gp.int64, device=dev)  # the next step's inputs
            self._pinned = None
            self._p_io = gp.zeros((self.max_len + 2,), dtype=gp.int64, device=dev)  # prefill: tokens, row, last
            self._p_logits = gp.zeros((1, c.vocab_size), dtype=model.dtype, device=dev)
            self._p_next = gp.zeros((1,), dtype=gp.int64, device=dev)
        self.steps = 0
        self.max_active = 0  # most sequences seen in one decode step (evidence of batching)

    @property
    def active(self):
        """The sequences holding a KV-cache slot, in slot order."""
        return [s for s in self.slots if s is not None]

    @property
    def free(self):
        """The number of free KV-cache slots."""
        return sum(s is None for s in self.slots)

    def check(self, seq):
        """ValueError if seq cannot run here (too long for the cache, ids outside the vocabulary)."""
        n = len(seq.prompt) + seq.max_new_tokens - 1  # the last new token is never fed back
        if n > self.max_len:
            raise ValueError(f"prompt ({len(seq.prompt)} tokens) + max_new_tokens ({seq.max_new_tokens}) - 1 = {n} "
                             f"exceeds the context length {self.max_len}")
        v = self.model.config.vocab_size
        a = seq.prompt_array
        if int(a.min()) < 0 or int(a.max()) >= v:
            raise ValueError(f"prompt token ids must be in [0, {v})")

    def add(self, seqs):
        """Prefill seqs into free slots (one batched forward) and choose their first tokens; returns them."""
        seqs = list(seqs)
        if not seqs:
            return []
        if len(seqs) > self.free:
            raise RuntimeError(f"{len(seqs)} sequences for {self.free} free slots")
        for s in seqs:
            self.check(s)
        self._ahead = None  # the set of sequences changes (ids of gone sequences may be reused by new ones)
        free = [i for i, s in enumerate(self.slots) if s is None]
        for s, i in zip(seqs, free):
            s.slot, self.slots[i] = i, s
        if len(seqs) == 1 and self.graphs is not None:
            logits, nxt = self._prefill_graph(seqs[0])
        else:
            lens = [len(s.prompt) for s in seqs]
            toks = np.zeros((len(seqs), max(lens)), dtype=np.int64)  # right padding: later slots are rewritten
            for r, s in enumerate(seqs):
                toks[r, :lens[r]] = s.prompt
            rows = np.array([s.slot for s in seqs], dtype=np.int64)
            logits = self.model(toks, cache=self.cache, rows=rows, last=np.array(lens) - 1)
            nxt = None
        self._choose(seqs, logits, nxt)
        return seqs

    def step(self):
        """One decode step for every active sequence; returns the sequences that advanced (or finished).

        With CUDA graphs and greedy sequences the step after this one is launched before this one's tokens are
        read back (its inputs come from this step's argmax on the device), so the GPU never waits for the host;
        it is used when the next call finds the same sequences, and simply recomputed otherwise (a sequence that
        stopped, one that joined), which rewrites the same cache entries with the same values."""
        active = self.active
        if not active:
            return []
        if self.graphs is not None:
            sig = tuple((s.slot, id(s)) for s in active)
            ahead, self._ahead = self._ahead, None
            if ahead is not None and ahead[0] == sig:
                return self._finish_step(active, ahead[1], sig)
        io = self._io_host
        io[:] = 0  # free slots decode token 0 at position 0 of their own row: harmless, fixed shapes
        for s in active:
            io[0, s.slot, 0] = s.tokens[-1]
            io[1, s.slot, 0] = s.next_position
        kv_len = self._kv_len(max(s.next_position for s in active))
        _upload(self._io, io)
        tok, pos = self._io[0], self._io[1]
        if self.graphs is not None:
            if self._graph(("decode", kv_len), self._decode_fn(kv_len)):
                if all(s._on_device for s in active):
                    return self._finish_step(active, self._fetch(), sig)
                logits, nxt = self._logits, self._next
            else:
                logits, nxt = self.model(tok, pos, cache=self.cache, kv_len=kv_len)[:, 0], None
        else:
            logits, nxt = self.model(tok, pos, cache=self.cache, kv_len=kv_len)[:, 0], None
        self.steps += 1
        self.max_active = max(self.max_active, len(active))
        rows = [s.slot for s in active]
        self._choose(active, logits, nxt, rows)
        return active

    def add_shared(self, seqs):
        """Prefill one prompt once for several sequences of it (an OpenAI request's ``n`` choices) and choose
        their first tokens; returns them. The first sequence's prefill fills its cache row, whose prompt slots are
        then copied to the other sequences' rows; each chooses from the same logits with its own parameters."""
        seqs = list(seqs)
        if len(seqs) <= 1:
            return self.add(seqs)
        first = seqs[0]
        if any(s.prompt != first.prompt for s in seqs[1:]):
            raise ValueError("add_shared takes sequences of one prompt")
        if len(seqs) > self.free:
            raise RuntimeError(f"{len(seqs)} sequences for {self.free} free slots")
        for s in seqs:
            self.check(s)
        self._ahead = None
        free = [i for i, s in enumerate(self.slots) if s is None]
        for s, i in zip(seqs, free):
            s.slot, self.slots[i] = i, s
        n = len(first.prompt)
        if self.graphs is not None:
            logits, nxt = self._prefill_graph(first)
        else:
            logits = self.model(first.prompt_array.reshape(1, n), cache=self.cache,
                                rows=np.array([first.slot], dtype=np.int64), last=np.array([n - 1]))
            nxt = None
        for layer in self.cache.layers:  # (2, batch, n_head, max_len, head_dim): the prompt's slots of its row
            for s in seqs[1:]:
                layer[:, s.slot, :, :n] = layer[:, first.slot, :, :n]
        self._choose(seqs, logits, nxt, [0] * len(seqs))
        return seqs

    def release(self, seq, reason=None):
        """Free seq's slot (finishing it with ``reason`` if it was still running)."""
        if reason is not None and seq.finish_reason is None:
            seq.finish_reason = reason
        if seq.slot is not None and self.slots[seq.slot] is seq:
            self.slots[seq.slot] = None
            self._ahead = None  # a step launched ahead was for the old set of sequences
        seq.slot = None

    # --- internals -------------------------------------------------------------------------------------
    def _decode_fn(self, kv_len):
        """The captured decode step: logits and argmax of the tokens and positions in self._io, and the next
        step's inputs (the argmax, the positions + 1) in self._io_next (not in self._io: a step must stay
        idempotent, as CudaGraphs runs it once before capturing it)."""
        tok, pos = self._io[0], self._io[1]

        def fn():
            logits = self.model(tok, pos, cache=self.cache, kv_len=kv_len)[:, 0]
            self._logits[...] = logits
            nxt = gp.argmax(logits, axis=-1)
            self._next[...] = nxt
            self._io_next[0, :, 0] = nxt
            self._io_next[1] = gp.minimum(pos + 1, self.max_len - 1)
        return fn

    def _finish_step(self, active, fetch, sig):
        """The greedy step whose tokens ``fetch`` brings: launch the one after it first when every sequence will
        still be running then, then read the tokens and push them."""
        if all(len(s.tokens) + 1 < s.max_new_tokens for s in active):
            top = max(s.next_position for s in active) + 1  # the next step feeds this position
            if top < self.max_len:
                kv_len = self._kv_len(top)
                self._io[...] = self._io_next
                if self._graph(("decode", kv_len), self._decode_fn(kv_len)):
                    self._ahead = (sig, self._fetch())
        self.steps += 1
        self.max_active = max(self.max_active, len(active))
        ids = fetch()
        self._push_tokens(active, [ids[s.slot] for s in active])
        return active

    def _kv_len(self, top):
        """Cache slots a decode step attends when the highest position it feeds is top: whole kv_blocks."""
        return min(self.max_len, -(-(top + 1) // self.kv_block) * self.kv_block)

    def _push_tokens(self, seqs, tokens, entries=None):
        """Append each sequence's chosen token (None: it failed) and its logprobs entry, then free the slots of
        those that finished."""
        entries = entries or [None] * len(seqs)
        for s, t, e in zip(seqs, tokens, entries):
            if t is None:
                continue
            try:
                s._push(int(t), e)
            except Exception as e:  # one sequence's failure is its own
                s.fail(e)
        for s in seqs:
            if s.done:
                self.release(s)

    def _fetch(self):
        """Start copying the step's argmax to the host; returns a function that waits for it (CUDA: into one of
        two pinned buffers, the copy ordered on the stream before anything launched later)."""
        if self.device.kind != "cuda":
            ids = _host(self._next).copy()
            return lambda: ids
        import cupy
        if self._pinned is None:
            n = self.max_batch
            mem = [cupy.cuda.alloc_pinned_memory(8 * n) for _ in range(2)]
            self._pinned = [mem, [np.frombuffer(m, dtype=np.int64, count=n) for m in mem], 0]
        k = self._pinned[2] = 1 - self._pinned[2]
        buf = self._pinned[1][k]
        self._next._data.get(out=buf, blocking=False)
        ev = cupy.cuda.Event()
        ev.record()

        def wait():
            ev.synchronize()
            return buf.copy()
        return wait

    def _choose(self, seqs, logits, nxt, rows=None):
        """Choose each sequence's next token from its row of logits (rows: their rows, default 0..n-1)."""
        rows = list(range(len(seqs))) if rows is None else rows
        if all(s._on_device for s in seqs):
            tokens = _host(nxt if nxt is not None else gp.argmax(logits, axis=-1))[rows]
        else:
            picked = logits if rows == list(range(logits.shape[0])) else take_unchecked(logits, gp.asarray(
                np.array(rows), device=self.device), 0)  # the engine's own rows: no CUDA bounds check
            host = _host(gp.astype(picked, gp.float32))
            tokens, entries = [], []
            for s, row in zip(seqs, host):
                try:
                    t = sample(_hs.adjust(row, s), s.params, s.rng)
                    k = s.params.logprobs
                    entries.append(None if k is None else _hs.logprob_entry(row, t, k))
                    tokens.append(t)
                except Exception as e:  # this sequence's parameters or logits: it alone finishes, with "error"
                    s.fail(e)
                    tokens.append(None)
                    entries.append(None)
            self._push_tokens(seqs, tokens, entries)
            return
        self._push_tokens(seqs, tokens)

    def _prefill_graph(self, seq):
        n = len(seq.prompt)
        T = 16
        while T < n:
            T *= 2
        T = min(T, self.max_len)
        host = np.zeros(self.max_len + 2, dtype=np.int64)
        host[:n] = seq.prompt_array
        host[-2:] = seq.slot, n - 1
        _upload(self._p_io, host)
        tok = gp.reshape(self._p_io[:T], (1, T))
        row, last = self._p_io[-2:-1], self._p_io[-1:]

        def fn():
            logits = self.model(tok, cache=self.cache, rows=row, last=last)
            self._p_logits[...] = logits
            self._p_next[...] = gp.argmax(logits, axis=-1)
        if self._graph(("prefill", T), fn):
            return self._p_logits, self._p_next
        return self.model(tok, cache=self.cache, rows=row, last=last), None

    def _graph(self, key, fn):
        """Run fn through its CUDA graph; False (and graphs off from now on) if it cannot be captured."""
        if self.graphs is None:
            return False
        try:
            self.graphs.run(key, fn)
            return True
        except Exception as e:  # a capture the backend refuses (CuPy refuses cuBLAS calls): run eagerly from now on
            self.graph_error = f"{type(e).__name__}: {e}"
            warnings.warn(f"CUDA graph capture failed ({self.graph_error}); decoding without CUDA graphs. Every "
                          "kernel of a step must be capturable: see gpk_array/_ops/nn.py", RuntimeWarning,
                          stacklevel=3)
            self.graphs = None
            return False


class CudaGraphs:
    """CUDA graphs of step functions, captured on first use per key and replayed after.

    A step function reads and writes only arrays that outlive it (static inputs, outputs, the KV cache); its
    temporaries come from a private memory pool that nothing else allocates from, so the addresses the graph
    recorded stay its own across replays.
    """

    def __init__(self):
        import cupy
        self._cp = cupy
        self.pool = cupy.cuda.MemoryPool()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.graphs = {}

    def run(self, key, fn):
        """Run the step ``fn`` as the CUDA graph stored under ``key``: on the first call for a key, ``fn`` runs once
        eagerly (warm-up) and once under capture on this object's stream and private pool; every call replays the
        graph on the current stream."""
        cp = self._cp
        graph = self.graphs.get(key)
        if graph is None:
            cp.cuda.get_current_stream().synchronize()
            with cp.cuda.using_allocator(self.pool.malloc), self.stream:
                fn()  # warm-up: compiles kernels and fills the pool; a step is idempotent, so running it twice is fine
                self.stream.begin_capture()
                try:
                    fn()
                finally:
                    graph = self.stream.end_capture()
                graph.upload(self.stream)
            self.stream.synchronize()
            self.graphs[key] = graph
        graph.launch(stream=cp.cuda.get_current_stream())


def _upload(dst, host):
    """Copy a host NumPy array into the device array dst (same shape and dtype), in place."""
    if dst.device.kind == "cpu":
        np.copyto(np.asarray(dst), host)
    else:
        dst._data.set(host)


def _host(a):
    return np.asarray(a.to_device("cpu"))


# --- the generation API ----------------------------------------------------------------------------------


def generate(model, prompts, *, max_new_tokens=64, temperature=0.0, top_k=None, top_p=None, seed=None,
             stop_tokens=None, tokenizer=None, max_batch=None, cuda_graphs=None):
    """Continue one prompt or a batch of prompts of any lengths.

    prompts: a list of token ids, or a list of them (or text / a list of texts, with ``tokenizer``).
    stop_tokens: ids that end a sequence (default: the tokenizer's end-of-text id, if a tokenizer is given).
    seed: sequence i draws from ``numpy.random.default_rng([seed, i])`` (one prompt: ``default_rng(seed)``).
    Returns the generated ids (stop token excluded) per prompt, or texts when the prompts were texts.
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
    seqs = []
    for i, p in enumerate(batch):
        s = seed if single or seed is None else [seed, i]
        params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=s)
        seqs.append(Sequence(p, max_new_tokens=max_new_tokens, params=params, stop_tokens=stop_tokens))
    max_len = max(len(s.prompt) for s in seqs) + max_new_tokens - 1
    engine = Engine(model, max_batch=min(len(seqs), max_batch or len(seqs)), max_len=max_len,
                    cuda_graphs=cuda_graphs)
    for s in seqs:
        engine.check(s)
    pending = collections.deque(seqs)
    while pending or engine.active:
        if pending and engine.free:
            _raise_failure(engine.add([pending.popleft() for _ in range(min(engine.free, len(pending)))]))
        _raise_failure(engine.step())
    out = [s.tokens for s in seqs]
    if texts:
        out = [tokenizer.decode(t) for t in out]
    return out[0] if single else out


def _raise_failure(seqs):
    """Raise the exception of the first sequence that failed (an Engine finishes only that one, with "error")."""
    for s in seqs:
        if s.exception is not None:
            raise s.exception


def generate_stream(model, prompt, *, max_new_tokens=64, temperature=0.0, top_k=None, top_p=None, seed=None,
                    stop_tokens=None, tokenizer=None, engine=None):
    """Yield the tokens generated for one prompt as they come: ids, or text pieces when a tokenizer is given
    (pieces end on whole UTF-8 characters). ``engine``: reuse an Engine (its cache and captured graphs)."""
    if isinstance(prompt, str):
        if tokenizer is None:
            raise ValueError("a text prompt needs a tokenizer")
        prompt = tokenizer.encode(prompt)
    if stop_tokens is None:
        stop_tokens = () if tokenizer is None or tokenizer.eos_token_id is None else (tokenizer.eos_token_id,)
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    seq = Sequence(prompt, max_new_tokens=max_new_tokens, params=params, stop_tokens=stop_tokens)
    engine = engine or Engine(model, max_batch=1, max_len=len(seq.prompt) + max_new_tokens - 1)
    text = TextStream(tokenizer) if tokenizer is not None else None
    engine.check(seq)
    sent = 0
    try:
        _raise_failure(engine.add([seq]))
        while True:
            for t in seq.tokens[sent:]:
                if text is None:
                    yield t
                else:
                    piece = text.push([t])
                    if piece:
                        yield piece
            sent = len(seq.tokens)
            if seq.done:
                break
            _raise_failure(engine.step())
        if text is not None:
            rest = text.flush()
            if rest:
                yield rest
    finally:
        engine.release(seq, "cancelled")


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
