"""The decode engine: ``Sequence`` (one prompt being continued) and ``Engine`` (a KV cache of slots, batched
prefill and decode steps, and the sampler that chooses every slot's token inside the step).

``Engine`` holds a fixed number of slots, the rows of one preallocated KV cache. A sequence is prefilled into a
free slot (several at once, right-padded; the ``n`` choices of one prompt share one prefill, ``add_shared``), then
every ``step()`` runs one batched decode over all slots, with fixed shapes: tokens and positions in device buffers,
attention over the first ``kv_len`` cache slots (rounded up to a block) with a mask. On a CUDA device that step is
captured once per ``kv_len`` in a CUDA graph and replayed (when every kernel in it can be captured; otherwise,
with a warning, it runs eagerly). Sequences come and go between steps (continuous batching): ``generate`` and the
HTTP server both drive it.

Token choice is part of the step (``sampling.py``): one batched sampler over every slot, each with its own
parameters (greedy or sampled, penalties, logit bias, seed, logprobs) in a table on the device, written when the
sequence joins. On CUDA it is one kernel inside the captured graph; so for sampled sequences as for greedy ones
the step after this one is launched from the device's tokens before the host has read them. The draws come from
Philox4x32-10 keyed by the sequence's seed and counted by its token index, computed alike in NumPy and CUDA: the
CPU and a GPU choose the same tokens from the same logits, whatever the batch.
"""
import warnings

import numpy as np

import gpk_array as gp
from .graphs import CudaGraphs
from .sampling import MAX_LOGPROBS, SamplingParams, SlotSampler, fresh_seed

NO_FINITE_LOGIT = "no finite logit to choose a token from (every logit is NaN or -inf)"


class Sequence:
    """One prompt being continued: its generated ``tokens``, and ``finish_reason`` once done
    ("stop": a stop token came (it is not kept), "length": max_new_tokens reached, "cancelled", "error": choosing
    its next token failed, the exception in ``exception`` and its text in ``error``; the other sequences of the
    batch go on). ``token_logprobs``: None unless params.logprobs is set, else one ``(logprob, [(id, logprob),
    ...])`` per token of ``tokens`` (the chosen token's log-softmax and the params.logprobs most likely tokens',
    from the raw logits). ``seed``: the Philox key of its draws (params.seed, or fresh entropy)."""

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
        self.seed = self.params.seed if self.params.seed is not None else fresh_seed()
        self.stop_tokens = frozenset(int(t) for t in stop_tokens)
        self.tokens = []
        self.token_logprobs = None if self.params.logprobs is None else []
        self.finish_reason = None
        self.slot = None
        self.tag = tag  # anything the caller wants to find again
        self.error = None  # "ExceptionType: message" when finish_reason is "error"
        self.exception = None

    @property
    def prompt_array(self):
        """The prompt as an int64 NumPy array (made once)."""
        if self._prompt_array is None:
            self._prompt_array = np.array(self.prompt, dtype=np.int64)
        return self._prompt_array

    @property
    def done(self):
        """Whether the sequence has finished (``finish_reason`` is set)."""
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

    def _push(self, token, logprobs=None):
        if token in self.stop_tokens:
            self.finish_reason = "stop"
            return
        self.tokens.append(token)
        if self.token_logprobs is not None:
            self.token_logprobs.append(logprobs)
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
        self._io_next = gp.zeros((2, max_batch, 1), dtype=gp.int64, device=dev)  # the next step's, from the sampler
        if cuda_graphs is None or cuda_graphs is True:
            cuda_graphs = CudaGraphs() if dev.kind == "cuda" else None
        self.graphs = cuda_graphs or None
        self.graph_error = None  # why capture was given up, if it was
        self._ahead = None  # (active set, fetch): a decode step launched before its inputs reached the host
        self.sampler = SlotSampler(max_batch, c.vocab_size, dev)
        # what a step leaves for the host: tokens, logprobs (the chosen token's, then the top ones), top ids;
        # decode rows are slots, prefill rows the sequences being added
        self._out = self._outputs(max_batch)
        self._p_out = self._outputs(max_batch)
        self._p_io = gp.zeros((self.max_len + 2,), dtype=gp.int64, device=dev)  # prefill graph: tokens, row, last
        self._pinned = None
        self._busy = False  # lent out by generate()'s engine cache
        self._ctx = None
        self.steps = 0
        self.max_active = 0  # most sequences seen in one decode step (evidence of batching)

    def _outputs(self, n):
        dev = self.device
        return (gp.zeros((n,), dtype=gp.int64, device=dev), gp.zeros((n, 1 + MAX_LOGPROBS), dtype=gp.float32,
                device=dev), gp.zeros((n, MAX_LOGPROBS), dtype=gp.int32, device=dev))

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
        self.sampler.check(seq.params)

    def add(self, seqs):
        """Prefill seqs into free slots (one batched forward) and choose their first tokens; returns them."""
        seqs = list(seqs)
        if not seqs:
            return []
        self._claim(seqs)
        if len(seqs) == 1 and self.graphs is not None:
            self._prefill_graph(seqs[0])
        else:
            self._prefill_batch(seqs)
        self._push_tokens(seqs, *self._fetch(self._p_out, len(seqs), seqs)(), rows=range(len(seqs)))
        return seqs

    def step(self):
        """One decode step for every active sequence; returns the sequences that advanced (or finished).

        With CUDA graphs the step after this one is launched before this one's tokens are read back (its inputs
        come from this step's sampler on the device, greedy or sampled alike), so the GPU never waits for the host;
        it is used when the next call finds the same sequences, and simply recomputed otherwise (a sequence that
        stopped, one that joined), which rewrites the same cache entries with the same values (and the sampler's
        penalty counts count a fed token once)."""
        active = self.active
        if not active:
            return []
        sig = tuple((s.slot, id(s)) for s in active)
        if self.graphs is not None:
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
        fn = self._decode_fn(kv_len)
        if not self._graph(("decode", kv_len), fn):
            fn()
        return self._finish_step(active, self._fetch(self._out, self.max_batch, active), sig)

    def add_shared(self, seqs):
        """Prefill one prompt once for several sequences of it (an OpenAI request's ``n`` choices) and choose
        their first tokens; returns them. The first sequence's prefill fills its cache row, whose prompt slots are
        then copied to the other sequences' rows; the sampler chooses each one's token from the same logits with
        its own parameters and seed."""
        seqs = list(seqs)
        if len(seqs) <= 1:
            return self.add(seqs)
        first = seqs[0]
        if any(s.prompt != first.prompt for s in seqs[1:]):
            raise ValueError("add_shared takes sequences of one prompt")
        self._claim(seqs)
        n, k, dev = len(first.prompt), len(seqs), self.device
        toks = gp.asarray(first.prompt_array.reshape(1, n), device=dev)
        last = gp.asarray(np.full(k, n - 1, dtype=np.int64), device=dev)
        logits = self.model(toks, cache=self.cache, rows=gp.asarray(np.array([first.slot], dtype=np.int64),
                                                                    device=dev), last=last[:1])
        for layer in self.cache.layers:  # (2, batch, n_head, max_len, head_dim): the prompt's slots of its row
            for s in seqs[1:]:
                layer[:, s.slot, :, :n] = layer[:, first.slot, :, :n]
        rows = gp.asarray(np.array([s.slot for s in seqs], dtype=np.int64), device=dev)
        out, lp, ids = self._p_out
        self.sampler.run(gp.tile(logits, (k, 1)), tok=last, pos=last, slots=rows, prompt=gp.tile(toks, (k, 1)),
                         out=out[:k], logprobs=lp[:k], logprob_ids=ids[:k])
        self._push_tokens(seqs, *self._fetch(self._p_out, k, seqs)(), rows=range(k))
        return seqs

    def _claim(self, seqs):
        """Check seqs, give each a free slot (RuntimeError when there are too few) and load their sampling
        parameters into the sampler."""
        if len(seqs) > self.free:
            raise RuntimeError(f"{len(seqs)} sequences for {self.free} free slots")
        for s in seqs:
            self.check(s)
        self._ahead = None  # the set of sequences changes (ids of gone sequences may be reused by new ones)
        free = [i for i, s in enumerate(self.slots) if s is None]
        for s, i in zip(seqs, free):
            s.slot, self.slots[i] = i, s
        for s in seqs:
            self.sampler.set_slot(s.slot, s.params, s.seed, len(s.prompt))
        self.sampler.upload()

    def release(self, seq, reason=None):
        """Free seq's slot (finishing it with ``reason`` if it was still running)."""
        if reason is not None and seq.finish_reason is None:
            seq.finish_reason = reason
        if seq.slot is not None and self.slots[seq.slot] is seq:
            self.slots[seq.slot] = None
            self.sampler.clear_slot(seq.slot)
            self._ahead = None  # a step launched ahead was for the old set of sequences
        seq.slot = None

    # --- internals -------------------------------------------------------------------------------------
    def _decode_fn(self, kv_len):
        """The decode step (captured per kv_len): logits of the tokens and positions in self._io, the sampler's
        choice of every slot into self._out, and the next step's inputs (the tokens, the positions + 1) into
        self._io_next (not self._io: a step must stay idempotent, as CudaGraphs runs it once before capturing it)."""
        tok, pos = self._io[0], self._io[1]
        out, lp, ids = self._out

        def fn():
            logits = self.model(tok, pos, cache=self.cache, kv_len=kv_len)[:, 0]
            self.sampler.run(logits, tok=tok, pos=pos, out=out, logprobs=lp, logprob_ids=ids,
                             next_tok=self._io_next[0], next_pos=self._io_next[1], max_pos=self.max_len - 1)
        return fn

    def _finish_step(self, active, fetch, sig):
        """The step whose tokens ``fetch`` brings: with graphs, launch the one after it first when every sequence
        will still be running then, then read the tokens and push them."""
        if self.graphs is not None and all(len(s.tokens) + 1 < s.max_new_tokens for s in active):
            top = max(s.next_position for s in active) + 1  # the next step feeds this position
            if top < self.max_len:
                kv_len = self._kv_len(top)
                self._io[...] = self._io_next
                if self._graph(("decode", kv_len), self._decode_fn(kv_len)):
                    self._ahead = (sig, self._fetch(self._out, self.max_batch, active))
        self.steps += 1
        self.max_active = max(self.max_active, len(active))
        self._push_tokens(active, *fetch())
        return active

    def _kv_len(self, top):
        """Cache slots a decode step attends when the highest position it feeds is top: whole kv_blocks."""
        return min(self.max_len, -(-(top + 1) // self.kv_block) * self.kv_block)

    def _push_tokens(self, seqs, ids, lp, lp_ids, rows=None):
        """Append each sequence's token (row: its slot, or rows[i]); -1 (no logit above -inf) fails that
        sequence alone; then free the slots of those that finished."""
        vocab = self.model.config.vocab_size
        for i, s in enumerate(seqs):
            r = s.slot if rows is None else rows[i]
            try:
                t = int(ids[r])
                if t < 0:
                    raise ValueError(NO_FINITE_LOGIT)
                entry = None
                if s.params.logprobs is not None:
                    k = min(s.params.logprobs, vocab)
                    entry = (float(lp[r, 0]), [(int(lp_ids[r, j]), float(lp[r, 1 + j])) for j in range(k)])
                s._push(t, entry)
            except Exception as e:  # one sequence's failure is its own
                s.fail(e)
        for s in seqs:
            if s.done:
                self.release(s)

    def _fetch(self, bufs, n, seqs):
        """Start copying the first n rows of a step's outputs (tokens; logprobs when one of seqs records them) to
        the host; returns a function that waits for them and gives (tokens, logprobs, top ids) (CUDA: into one of
        two pinned buffer sets, the copies ordered on the stream before anything launched later)."""
        want = any(s.params.logprobs is not None for s in seqs)
        if self.device.kind != "cuda":
            vals = tuple(b._data[:n].copy() if (i == 0 or want) else None for i, b in enumerate(bufs))
            return lambda: vals
        import cupy
        if self._pinned is None:
            sets = []
            for _ in range(2):
                host = []
                for b in bufs:
                    mem = cupy.cuda.alloc_pinned_memory(b._data.nbytes)
                    host.append((mem, np.frombuffer(mem, dtype=b.dtype, count=b.size).reshape(b.shape)))
                sets.append(host)
            self._pinned = [sets, 0]
        k = self._pinned[1] = 1 - self._pinned[1]
        host = [h for _, h in self._pinned[0][k]]
        for i, b in enumerate(bufs):
            if i == 0 or want:
                b._data[:n].get(out=host[i][:n], blocking=False)
        ev = cupy.cuda.Event()
        ev.record()

        def wait():
            ev.synchronize()
            return tuple(h[:n].copy() if (i == 0 or want) else None for i, h in enumerate(host))
        return wait

    def _prefill_batch(self, seqs):
        """The prompts of seqs right-padded into one forward, and the sampler over their last tokens' logits."""
        n = len(seqs)
        lens = [len(s.prompt) for s in seqs]
        toks = np.zeros((n, max(lens)), dtype=np.int64)  # right padding: later slots are rewritten
        for r, s in enumerate(seqs):
            toks[r, :lens[r]] = s.prompt
        dev = self.device
        toks = gp.asarray(toks, device=dev)
        rows = gp.asarray(np.array([s.slot for s in seqs], dtype=np.int64), device=dev)
        last = gp.asarray(np.array(lens, dtype=np.int64) - 1, device=dev)
        logits = self.model(toks, cache=self.cache, rows=rows, last=last)
        out, lp, ids = self._p_out
        self.sampler.run(logits, tok=last, pos=last, slots=rows, prompt=toks, out=out[:n], logprobs=lp[:n],
                         logprob_ids=ids[:n])

    def _prefill_graph(self, seq):
        """One prompt's prefill and first token, through the graph of its length bucket (powers of two >= 16)."""
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
        out, lp, ids = self._p_out

        def fn():
            logits = self.model(tok, cache=self.cache, rows=row, last=last)
            self.sampler.run(logits, tok=last, pos=last, slots=row, prompt=tok, out=out[:1], logprobs=lp[:1],
                             logprob_ids=ids[:1])
        if not self._graph(("prefill", T), fn):
            fn()

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


def _upload(dst, host):
    """Copy a host NumPy array into the device array dst (same shape and dtype), in place."""
    if dst.device.kind == "cpu":
        np.copyto(np.asarray(dst), host)
    else:
        dst._data.set(host)
