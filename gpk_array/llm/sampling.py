"""Token choice: one batched step over every slot of an Engine, the same tokens on the CPU and on a GPU.

The parameters (``SamplingParams``: temperature, top-k, top-p, min-p, repetition / presence / frequency penalties,
logit bias, seed, logprobs) of each slot live in a small table on the device, written when a sequence joins; the
step reads the logits of every slot, the table and the slot's penalty counts, and writes each slot's token (and
logprobs). On CUDA it is one kernel (``gpk_array/_kernels/cuda/sampling.cu``, one block per row) recorded in the
decode step's CUDA graph, so a sampled step costs no host work and the next step can be launched from the device's
tokens before the host has read them; on the CPU it is NumPy (``run_numpy`` below, vectorized over the batch).

**The algorithm**, per row of logits ``x`` (any float dtype; arithmetic in float32):

1. Penalties, in this order, each one IEEE float32 operation: repetition ``r`` over the prompt's and the generated
   tokens (``x / r`` where ``x > 0``, else ``x * r``: Hugging Face's and vLLM's rule), then frequency ``f`` and
   presence ``p`` over the generated ones (``x - f * count - p``, where count > 0: OpenAI's), then ``logit_bias``
   (``x + bias``). NaN counts as -inf, before and after.
2. Greedy (temperature below ``MIN_TEMPERATURE``, including 1e-310, or top_k 1): the first index of the largest.
3. Else ``z = (x - max) / temperature`` and ``e = exp(z)`` by a fixed sequence of float32 multiplications and
   additions (Cody-Waite reduction by ln 2, a degree-6 polynomial, a power of two; ``exp_fixed``), never a
   library ``exp``: the CPU and CUDA compute every bit of it alike. When some logits are +inf, they alone share
   the probability (e = 1 there, 0 elsewhere).
4. Fixed point: ``q = floor(e * 2**40)``, an integer (the largest token has exactly ``2**40``; one below 2**-40 of
   it gets 0 and is never drawn). Every sum from here on is of uint64 integers, which no summation order changes:
   renormalizing after the filters is exact, and the same set and weights come out on both devices.
5. Filters, all as thresholds on ``q`` (ties at a threshold are kept, as in transformers' top-k): min-p keeps
   ``q >= ceil(min_p * 2**40)``; top-k keeps ``e >= `` the k-th largest ``e``; then top-p keeps the tokens whose
   ``e`` is at least the largest threshold ``t`` for which the kept mass at or above ``t`` reaches ``top_p`` of
   the kept total (the smallest head of the distribution holding ``top_p`` of it).
6. The draw: 64 random bits ``R`` from Philox4x32-10 (``philox.py``: key = the sequence's seed, counter = the
   index of the token in the sequence), ``u = floor(R * total / 2**64)``, and the token is the first, in token-id
   order, at which the running sum of kept ``q`` exceeds ``u`` (the inverse CDF in a fixed order).

So a sequence's tokens depend on its seed, its logits and its parameters only: not on the device, the batch, the
slot or the step it joined in. What can still differ between devices is the logits themselves (a model computed
in a different order rounds differently), and then only where a draw falls within that rounding of a boundary.

**Logprobs** (``SamplingParams.logprobs = k``): the log-softmax of the raw logits in float32 (before penalties,
temperature and filters): the chosen token's and the k largest (ties by lower id), per token.

**Penalty state**: per slot, the counts of generated tokens (int32, one per vocabulary entry) and a mask of the
prompt's tokens (for the repetition penalty). A step counts the token it is fed (a generated token) once: it
remembers the highest position counted, so running a step twice (a graph's warm-up, a step launched ahead and
discarded) counts nothing twice. The first row of a sequence (the prefill's) resets the slot's state.

A row with no logit above -inf (all NaN / -inf) gets token -1: its sequence alone fails.
"""
import dataclasses
import os

import numpy as np

from .philox import mulhi64, token_bits

__all__ = ["MIN_TEMPERATURE", "SamplingParams", "SlotSampler", "bias_row", "exp_fixed", "filter_mask", "fresh_seed",
           "pack_slot", "penalized", "quantize", "run_numpy", "sample"]

# Temperatures below this decode greedily: dividing logits by a tiny temperature overflows (1e-310: every logit
# becomes +-inf), and well before that the distribution is one-hot but for exact ties.
MIN_TEMPERATURE = 1e-5
MAX_LOGPROBS = 20
SLOT_WORDS = 8          # uint64 words of one slot's parameters in the table
Q_BITS = 40             # fixed-point bits of a probability relative to the largest

# slot flags (the high half of table word 6); the logprobs count sits in bits 8..15
GREEDY, REPETITION, COUNTS, BIAS, TOP_P, LOGPROBS = 1, 2, 4, 8, 16, 32

_F32 = np.float32
_F32_MAX = float(np.finfo(np.float32).max)
_LO32 = np.uint64(0xFFFFFFFF)
_TWO40 = _F32(2.0 ** Q_BITS)
# exp_fixed's constants, as float32 (the CUDA kernel spells the same bits in hex)
_L2E = _F32(1.4426950408889634)            # 0x3fb8aa3b
_LN2_HI = _F32(0.693359375)                # 0x3f318000: n * _LN2_HI is exact for |n| < 2**15
_LN2_LO = _F32(-2.12194440e-4)             # 0xb95e8083: ln 2 - _LN2_HI
_POLY = tuple(_F32(c) for c in (1 / 720, 1 / 120, 1 / 24, 1 / 6, 0.5, 1.0, 1.0))
_EXP_CUT = _F32(-28.0)                     # e**-28 < 2**-40: below it q is 0 anyway


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _finite(x):
    return _is_real(x) and np.isfinite(float(x))


@dataclasses.dataclass
class SamplingParams:
    """How a sequence chooses its tokens (checked on construction: ValueError naming the field).

    temperature: finite >= 0; below MIN_TEMPERATURE (1e-5, 1e-310 included) decodes greedily. top_k: None or 0
    keep every token, else an integer >= 0. top_p: None or 1.0 keep every token, else in (0, 1]. min_p: None or 0
    keep every token, else in [0, 1]: keep the tokens with probability >= min_p times the largest.
    repetition_penalty: finite > 0, over the prompt's and the generated tokens (1: off). presence_penalty,
    frequency_penalty: finite, over the generated tokens (OpenAI's). logit_bias: {token id: finite float} added
    to those logits. Penalties and bias apply to greedy choice too. seed: None (fresh entropy, drawn once per
    sequence) or an integer in [0, 2**64): the Philox key of the sequence's draws. logprobs: None (record nothing)
    or k in [0, 20]: record the chosen token's logprob and the k most likely tokens' (``Sequence.token_logprobs``).
    """
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
        if not (_finite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if self.top_k is not None and not (_is_int(self.top_k) and self.top_k >= 0):
            raise ValueError(f"top_k must be an integer >= 0, got {self.top_k!r}")
        if self.top_p is not None and not (_finite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.min_p is not None and not (_finite(self.min_p) and 0 <= self.min_p <= 1):
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p!r}")
        if not (_finite(self.repetition_penalty) and self.repetition_penalty > 0):
            raise ValueError(f"repetition_penalty must be a finite number > 0, got {self.repetition_penalty!r}")
        for name in ("presence_penalty", "frequency_penalty"):
            if not _finite(getattr(self, name)):
                raise ValueError(f"{name} must be a finite number, got {getattr(self, name)!r}")
        if self.logit_bias is not None:
            if not isinstance(self.logit_bias, dict):
                raise ValueError(f"logit_bias must be a dict {{token id: bias}}, got {type(self.logit_bias).__name__}")
            for k, v in self.logit_bias.items():
                if not (_is_int(k) and k >= 0):
                    raise ValueError(f"logit_bias keys must be token ids (integers >= 0), got {k!r}")
                if not _finite(v):
                    raise ValueError(f"logit_bias values must be finite numbers, got {v!r} for token {k}")
        if self.seed is not None and not (_is_int(self.seed) and 0 <= self.seed < 2 ** 64):
            raise ValueError(f"seed must be None or an integer in [0, 2**64), got {self.seed!r}")
        if self.logprobs is not None and not (_is_int(self.logprobs) and 0 <= self.logprobs <= MAX_LOGPROBS):
            raise ValueError(f"logprobs must be None or an integer in [0, {MAX_LOGPROBS}], got {self.logprobs!r}")

    @property
    def greedy(self):
        """Whether these parameters pick the most likely token (temperature below MIN_TEMPERATURE, or top_k 1);
        penalties and logit_bias still change which one that is."""
        return self.temperature < MIN_TEMPERATURE or self.top_k == 1


def fresh_seed():
    """64 bits of fresh entropy (the seed of a sequence whose params.seed is None)."""
    return int.from_bytes(os.urandom(8), "little")


def _f32_bits(v):
    return int(np.array(min(max(float(v), -_F32_MAX), _F32_MAX), dtype=np.float32).view(np.uint32))


def pack_slot(params, seed, prompt_len, vocab_size):
    """The table row (SLOT_WORDS uint64) of a sequence: its parameters as the sampler step reads them."""
    p = params
    flags = 0
    if p.greedy:
        flags |= GREEDY
    if p.repetition_penalty != 1:
        flags |= REPETITION
    if p.presence_penalty != 0 or p.frequency_penalty != 0:
        flags |= COUNTS
    if p.logit_bias:
        flags |= BIAS
    if p.top_p is not None and p.top_p < 1:
        flags |= TOP_P
    if p.logprobs is not None:
        flags |= LOGPROBS | (min(p.logprobs, vocab_size) << 8)
    top_k = p.top_k or 0
    if top_k >= vocab_size:
        top_k = 0
    # min-p threshold on q: ceil(min_p * 2**40), exact (a power-of-two scaling of a double, then ceil)
    qmin = int(np.ceil(float(p.min_p) * 2.0 ** Q_BITS)) if p.min_p else 0
    row = np.zeros(SLOT_WORDS, dtype=np.uint64)
    row[0] = int(seed)
    row[1] = int(prompt_len)
    row[2] = _f32_bits(max(float(p.temperature), MIN_TEMPERATURE)) | (top_k << 32)
    row[3] = int(np.array(float(p.top_p if p.top_p is not None else 1.0), dtype=np.float64).view(np.uint64))
    row[4] = qmin
    row[5] = _f32_bits(p.repetition_penalty) | (_f32_bits(p.presence_penalty) << 32)
    row[6] = _f32_bits(p.frequency_penalty) | (flags << 32)
    return row


def bias_row(params, vocab_size):
    """The dense float32 logit-bias row of params (None when it has no bias); ValueError for ids outside the
    vocabulary."""
    if not params.logit_bias:
        return None
    row = np.zeros(vocab_size, dtype=np.float32)
    for k, v in params.logit_bias.items():
        if k >= vocab_size:
            raise ValueError(f"logit_bias token id {k} is outside the vocabulary [0, {vocab_size})")
        row[k] = min(max(float(v), -_F32_MAX), _F32_MAX)
    return row


def exp_fixed(z):
    """e**z for float32 z <= 0 by float32 multiplications and additions only (each correctly rounded, none fused),
    so every IEEE machine computes the same bits: 0 below -28 (and for NaN), 1 at 0, within 2 ulp of exp
    between. The CUDA sampler's exp_fixed is this, operation for operation."""
    z = np.asarray(z, dtype=np.float32)
    ok = z >= _EXP_CUT
    zc = np.where(ok, z, _F32(0))
    n = np.rint(zc * _L2E)
    r = zc - n * _LN2_HI
    r = r - n * _LN2_LO
    p = np.full_like(r, _POLY[0])
    for c in _POLY[1:]:
        p = p * r + c
    scale = ((n.astype(np.int32) + 127) << 23).view(np.float32)  # 2**n, n in [-41, 0]
    return np.where(ok, p * scale, _F32(0))


def quantize(e):
    """floor(e * 2**40) of float32 e in [0, 1] as uint64 (exact: a power-of-two scaling, then truncation)."""
    return (np.asarray(e, dtype=np.float32) * _TWO40).astype(np.uint64)


def _f32_field(words, shift=0):
    return ((words >> np.uint64(shift)) & _LO32).astype(np.uint32).view(np.float32)


def _clean(x):
    x[np.isnan(x)] = -np.inf
    return x


def penalized(x, slots, tab, counts, seen, bias):
    """Step 1 on float32 rows x (R, V), in place: penalties and bias of each row's slot."""
    flags = (tab[:, 6] >> np.uint64(32)).astype(np.int64)
    _clean(x)
    rep_rows = np.nonzero(flags & REPETITION)[0]
    if rep_rows.size:
        s = slots[rep_rows]
        rep = _f32_field(tab[rep_rows, 5])[:, None]
        y = x[rep_rows]
        hit = (counts[s] > 0) | (seen[s] != 0)
        x[rep_rows] = np.where(hit, np.where(y > 0, y / rep, y * rep), y)
    cnt_rows = np.nonzero(flags & COUNTS)[0]
    if cnt_rows.size:
        s = slots[cnt_rows]
        c = counts[s]
        pres = _f32_field(tab[cnt_rows, 5], 32)[:, None]
        freq = _f32_field(tab[cnt_rows, 6])[:, None]
        y = x[cnt_rows]
        x[cnt_rows] = np.where(c > 0, (y - freq * c.astype(np.float32)) - pres, y)
    bias_rows = np.nonzero(flags & BIAS)[0]
    if bias_rows.size:
        x[bias_rows] += bias[slots[bias_rows]]
    return _clean(x)


def _filter_rows(y, m, tab):
    """Steps 3-5 for rows y (R, V) (float32, penalized) with maxima m (all > -inf) and their table rows: the kept
    mask, the fixed-point weights q and the kept totals (uint64)."""
    V = y.shape[1]
    temperature = _f32_field(tab[:, 2])[:, None]
    top_k = (tab[:, 2] >> np.uint64(32)).astype(np.int64)
    flags = (tab[:, 6] >> np.uint64(32)).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = exp_fixed((y - m[:, None]) / temperature)
    inf_rows = np.nonzero(m == np.inf)[0]
    if inf_rows.size:  # +inf logits alone share the probability
        e[inf_rows] = y[inf_rows] == np.inf
    key = e.view(np.uint32)
    q = quantize(e)
    keep = (q >= tab[:, 4][:, None]) & (key > 0)
    for r in np.nonzero((top_k > 0) & (top_k < V))[0]:
        k = top_k[r]
        keep[r] &= key[r] >= np.partition(key[r], V - k)[V - k]
    total = np.where(keep, q, np.uint64(0)).sum(axis=1, dtype=np.uint64)
    for r in np.nonzero(flags & TOP_P)[0]:
        top_p = np.array(tab[r, 3], dtype=np.uint64).view(np.float64)
        target = max(min(total[r], np.uint64(np.float64(total[r]) * top_p)), np.uint64(1))
        kk, qq = key[r][keep[r]], q[r][keep[r]]
        order = np.argsort(kk, kind="stable")[::-1]
        cum = np.cumsum(qq[order], dtype=np.uint64)
        keep[r] &= key[r] >= kk[order][np.searchsorted(cum, target, side="left")]
        total[r] = q[r][keep[r]].sum(dtype=np.uint64)
    return keep, q, total


def run_numpy(logits, table, counts, seen, bias, counted, *, slots=None, tok=None, pos=None, prompt=None,
              out=None, logprobs=None, logprob_ids=None, next_tok=None, next_pos=None, max_pos=0):
    """The sampler step on NumPy arrays (the CPU device's; the CUDA kernel computes the same).

    logits (R, V); rows r uses slot ``slots[r]`` (None: slot r) of table (B, SLOT_WORDS) and of the state arrays
    counts (B, V) int32, seen (B, V) uint8, bias (B, V) float32, counted (B,) int64; tok, pos (R,): the token each
    row was fed and its position (its index in the sequence is ``pos - prompt_len + 1``); prompt (R, L) int64:
    the rows' prompts, given for a prefill (whose rows reset their slots' state). Writes out (R,) int64 (-1: no
    logit above -inf), logprobs (R, 1 + MAX_LOGPROBS) float32 and logprob_ids (R, MAX_LOGPROBS) int32 for rows
    that record logprobs, and when given next_tok, next_pos (indexed by slot): the next decode step's inputs
    (the token, clamped to >= 0, and min(pos + 1, max_pos))."""
    x_in = np.asarray(logits)
    R, V = x_in.shape
    slots = np.arange(R) if slots is None else np.asarray(slots, dtype=np.int64).reshape(-1)
    tok = np.asarray(tok, dtype=np.int64).reshape(-1)
    pos = np.asarray(pos, dtype=np.int64).reshape(-1)
    tab = table[slots]
    plen = tab[:, 1].astype(np.int64)
    flags = (tab[:, 6] >> np.uint64(32)).astype(np.int64)
    for r in range(R):  # the slots' penalty state (one row each: O(1) work, or O(V) at a prefill)
        s = slots[r]
        if prompt is not None and pos[r] == plen[r] - 1:
            counts[s] = 0
            if flags[r] & REPETITION:
                seen[s] = 0
                seen[s, np.asarray(prompt[r, :plen[r]], dtype=np.int64)] = 1
            counted[s] = pos[r]
        elif pos[r] >= plen[r] and pos[r] > counted[s] and 0 <= tok[r] < V:
            counts[s, tok[r]] += 1
            counted[s] = pos[r]
    y = penalized(x_in.astype(np.float32), slots, tab, counts, seen, bias)
    m = y.max(axis=1)
    tokens = np.where(m > -np.inf, y.argmax(axis=1), -1)
    steps = (pos - plen + 1).astype(np.uint64)
    rows = np.nonzero(((flags & GREEDY) == 0) & (m > -np.inf))[0]
    if rows.size:  # step 6: the inverse CDF in token order at 64 random bits of (seed, step)
        keep, q, total = _filter_rows(y[rows], m[rows], tab[rows])
        u = mulhi64(token_bits(tab[rows, 0], steps[rows]), total)
        cum = np.cumsum(np.where(keep, q, np.uint64(0)), axis=1, dtype=np.uint64)
        tokens[rows] = (cum > u[:, None]).argmax(axis=1)
    for r in np.nonzero(flags & LOGPROBS)[0]:
        _logprobs_row(x_in[r], int(tokens[r]), (int(flags[r]) >> 8) & 0xFF, logprobs[r], logprob_ids[r])
    if out is not None:
        out[:R] = tokens
    if next_tok is not None:
        next_tok[slots] = np.maximum(tokens, 0)
        next_pos[slots] = np.minimum(pos + 1, max_pos)
    return tokens


def _logprobs_row(x, token, k, lp, ids):
    """Log-softmax of one row of raw logits in float32: lp[0] the chosen token's, lp[1 + i] / ids[i] the i-th
    largest (ties: the lower id first)."""
    x = _clean(np.asarray(x).astype(np.float32))
    m = x.max()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if m == np.inf:
            n = np.float32((x == np.inf).sum())
            lpv = np.where(x == np.inf, -np.log(n), np.float32(-np.inf)).astype(np.float32)
        else:
            lse = m + np.log(np.exp(x - m).sum(dtype=np.float32))
            lpv = (x - lse).astype(np.float32)
    lp[0] = lpv[token] if token >= 0 else np.nan
    if k:
        V = x.size
        kth = np.partition(x, V - k)[V - k]
        cand = np.nonzero(x >= kth)[0]
        top = cand[np.argsort(-x[cand], kind="stable")][:k]
        ids[:k] = top
        lp[1:1 + k] = lpv[top]


def filter_mask(logits, params):
    """The tokens min-p, top-k and top-p keep from one row of logits (V,) under params (no penalties): a boolean
    mask (every token for greedy params, which keep only the argmax by other means). ValueError when no logit is
    above -inf."""
    y = _clean(np.asarray(logits).astype(np.float32).reshape(-1))
    m = y.max()
    if m == -np.inf:
        raise ValueError("no finite logit to choose a token from (every logit is NaN or -inf)")
    if params.greedy:
        return np.ones(y.size, dtype=bool)
    return _filter_rows(y[None], np.array([m]), pack_slot(params, 0, 1, y.size)[None])[0][0]


def sample(logits, params, step=0, *, seed=None, prompt=(), generated=()):
    """The token a sequence chooses from one row of logits (V,) with ``params`` at token index ``step`` (0: the
    first generated token), by the engine's algorithm (module docstring), on the host.

    seed: the sequence's seed (default params.seed, else fresh entropy); prompt, generated: the token ids the
    repetition, presence and frequency penalties count. ValueError when no logit is above -inf."""
    x = np.asarray(logits).reshape(1, -1)
    V = x.shape[1]
    if seed is None:
        seed = params.seed if params.seed is not None else fresh_seed()
    prompt = [int(t) for t in prompt]
    table = pack_slot(params, seed, max(len(prompt), 1), V)[None]
    counts = np.zeros((1, V), dtype=np.int32)
    np.add.at(counts[0], np.asarray([int(t) for t in generated], dtype=np.int64), 1)
    seen = np.zeros((1, V), dtype=np.uint8)
    seen[0, np.asarray(prompt, dtype=np.int64)] = 1
    bias = np.zeros((1, V), dtype=np.float32)
    b = bias_row(params, V)
    if b is not None:
        bias[0] = b
    counted = np.array([2 ** 62], dtype=np.int64)  # nothing more to count
    pos = max(len(prompt), 1) - 1 + int(step)
    tok = run_numpy(x, table, counts, seen, bias, counted, tok=[0], pos=[pos])[0]
    if tok < 0:
        raise ValueError("no finite logit to choose a token from (every logit is NaN or -inf)")
    return int(tok)


def _data(a):
    return None if a is None else a._data


class SlotSampler:
    """The sampler of an Engine: per-slot parameters and penalty state on the engine's device, and the step.

    ``set_slot`` writes a joining sequence's parameters into the host copy of the table (and its logit-bias row
    on the device); ``upload`` copies the table to the device (once per join, before the prefill's step); ``run``
    is one step over rows of logits (gpk_array arrays): the CUDA kernel, or run_numpy on the CPU. The buffers are
    allocated once, so a CUDA graph that recorded a step keeps pointing at them."""

    def __init__(self, max_batch, vocab_size, device):
        import gpk_array as gp
        B, V = max_batch, vocab_size
        self.vocab_size, self.device = V, device
        self.table_host = np.zeros((B, SLOT_WORDS), dtype=np.uint64)
        self._free_row = pack_slot(SamplingParams(), 0, 1, V)
        self.table_host[:] = self._free_row  # free slots decode greedily (the cheap way)
        self.table = gp.asarray(self.table_host, device=device, copy=True)
        self.counts = gp.zeros((B, V), dtype=gp.int32, device=device)
        self.seen = gp.zeros((B, V), dtype=gp.uint8, device=device)
        self.bias = gp.zeros((B, V), dtype=gp.float32, device=device)
        self.counted = gp.zeros((B,), dtype=gp.int64, device=device)
        # the kernel's scratch: rows padded to 16 bytes for vector loads
        self.work = gp.zeros((B, -(-V // 4) * 4), dtype=gp.float32, device=device) if device.kind == "cuda" else None

    def check(self, params):
        """ValueError if params cannot run with this vocabulary (a logit_bias id outside it)."""
        if params.logit_bias and max(params.logit_bias) >= self.vocab_size:
            raise ValueError(f"logit_bias token id {max(params.logit_bias)} is outside the vocabulary "
                             f"[0, {self.vocab_size})")

    def set_slot(self, slot, params, seed, prompt_len):
        """Write a joining sequence's parameters (host table row; its bias row on the device at once)."""
        self.table_host[slot] = pack_slot(params, seed, prompt_len, self.vocab_size)
        row = bias_row(params, self.vocab_size)
        if row is not None:
            _upload(self.bias[slot], row)

    def clear_slot(self, slot):
        """Make a freed slot greedy again (on the device from the next upload)."""
        self.table_host[slot] = self._free_row

    def upload(self):
        """Copy the host table to the device (ordered on the current stream before later steps)."""
        _upload(self.table, self.table_host)

    def run(self, logits, *, tok, pos, out, logprobs, logprob_ids, slots=None, prompt=None, next_tok=None,
            next_pos=None, max_pos=0):
        """One step over the rows of logits (R, V); see run_numpy for the arguments (gpk_array arrays here)."""
        if self.device.kind == "cuda":
            from .._kernels.sampling import sample as kernel
            kernel(_data(logits), self.table._data, self.counts._data, self.seen._data, self.bias._data,
                   self.counted._data, self.work._data, _data(out), _data(logprobs), _data(logprob_ids),
                   tok=_flat(tok), pos=_flat(pos), slots=_flat(slots), prompt=_data(prompt),
                   next_tok=_flat(next_tok), next_pos=_flat(next_pos), max_pos=max_pos)
            return
        run_numpy(np.asarray(logits), self.table._data, self.counts._data, self.seen._data, self.bias._data,
                  self.counted._data, slots=_data(slots), tok=_data(tok), pos=_data(pos), prompt=_data(prompt),
                  out=_data(out), logprobs=_data(logprobs), logprob_ids=_data(logprob_ids),
                  next_tok=_flat(next_tok), next_pos=_flat(next_pos), max_pos=max_pos)


def _flat(a):
    """The backing array of a gpk_array array as a flat view (None stays None)."""
    return None if a is None else a._data.reshape(-1)


def _upload(dst, host):
    """Copy a host NumPy array into the gpk_array array dst (same shape and dtype), in place."""
    if dst.device.kind == "cpu":
        np.copyto(dst._data, host)
    else:
        dst._data.set(host)
