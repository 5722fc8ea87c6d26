"""Host-side stand-ins for what SamplingParams asks beyond temperature / top-k / top-p: the repetition, presence and
frequency penalties, logit_bias, and the recording of log-probabilities (``Sequence.token_logprobs``).

They run on one NumPy row of logits per sequence, in float64, where ``generate.sample`` already runs: a sequence
that uses any of them takes the host path of ``Engine._choose`` (its logits copied to the host every step), as a
sampled sequence does. Device-side sampling (issue 21, item 1) replaces this module; the semantics are the
interface's, so its tests hold for both.
"""
import numpy as np


def on_device(params):
    """Whether a sequence's token is the device's argmax of the raw logits (greedy, and nothing that changes the
    logits or records them)."""
    return (params.greedy and params.logit_bias is None and params.logprobs is None
            and params.repetition_penalty == 1 and not params.presence_penalty and not params.frequency_penalty)


def adjust(row, seq):
    """row (the sequence's raw logits, NumPy (V,)) with its penalties and logit_bias applied: the row itself when
    there are none, else a float64 copy. Repetition penalty first (over the prompt and generated tokens: a positive
    logit divided by it, a negative one multiplied), then presence / frequency (over the generated tokens), then the
    bias. ValueError for a biased token id outside the vocabulary."""
    p = seq.params
    rep, pres, freq, bias = p.repetition_penalty, p.presence_penalty, p.frequency_penalty, p.logit_bias
    if rep == 1 and not pres and not freq and not bias:
        return row
    z = np.array(row, dtype=np.float64).reshape(-1)
    if rep != 1:
        seen = np.unique(np.concatenate([seq.prompt_array, np.asarray(seq.tokens, dtype=np.int64)]))
        v = z[seen]
        z[seen] = np.where(v > 0, v / rep, v * rep)
    if (pres or freq) and seq.tokens:
        ids, counts = np.unique(np.asarray(seq.tokens, dtype=np.int64), return_counts=True)
        z[ids] -= counts * freq + pres
    if bias:
        cached = getattr(seq, "_bias_arrays", None)
        if cached is None:
            ids = np.fromiter(bias.keys(), dtype=np.int64, count=len(bias))
            if ids.size and int(ids.max()) >= z.size:
                raise ValueError(f"logit_bias names token {int(ids.max())}, outside the vocabulary of {z.size}")
            cached = seq._bias_arrays = (ids, np.fromiter(bias.values(), dtype=np.float64, count=len(bias)))
        z[cached[0]] += cached[1]
    return z


def logprob_entry(row, token, k):
    """(logprob of token, [(id, logprob)] of the k most likely, decreasing; ties by id) under the log-softmax of
    the raw logits row, in float64; NaN logits count as -inf, +inf ones share the probability."""
    z = np.array(row, dtype=np.float64).reshape(-1)
    z[np.isnan(z)] = -np.inf
    top = z.max()
    if top == np.inf:
        hot = np.isposinf(z)
        lp = np.where(hot, -np.log(hot.sum()), -np.inf)
    else:
        with np.errstate(divide="ignore"):
            lp = z - (top + np.log(np.exp(z - top).sum()))
    pairs = []
    if k:
        k = min(k, lp.size)
        kth = -np.partition(-lp, k - 1)[k - 1]
        cand = np.flatnonzero(lp >= kth)  # every token tied with the k-th too: the lowest ids win
        order = np.lexsort((cand, -lp[cand]))[:k]
        pairs = [(int(cand[i]), float(lp[cand[i]])) for i in order]
    return float(lp[token]), pairs
