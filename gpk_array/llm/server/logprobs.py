"""Log-probabilities in OpenAI's two response formats, and those of a prompt's tokens (``echo``).

A token's entry comes from the engine (``Sequence.token_logprobs``: the log-softmax of the model's raw logits at
the chosen token, and the top k), or for prompt tokens from ``prompt_logprobs`` (a plain forward of the prompt, run
on the engine thread). Here they become

- completions: ``{"tokens", "token_logprobs", "top_logprobs", "text_offset"}``, the top dict holding the k most
  likely tokens and the chosen one (so up to k + 1 entries), offsets in characters into the choice's ``text``;
- chat: ``{"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}``.

Token strings are the token's text (a token holding part of a character's bytes shows U+FFFD; ``bytes`` has the
exact bytes), or ``"token_id:N"`` with vLLM's ``return_tokens_as_token_ids``.
"""
import codecs
import math

import numpy as np

import gpk_array as gp

# JSON has no -Infinity: a log-probability of -inf (a token of probability 0) is written as this (as vLLM does)
MIN_LOGPROB = -9999.0


def _finite(v):
    return v if math.isfinite(v) else MIN_LOGPROB


class TokenNames:
    """Token id -> its string and bytes in responses (cached; ``as_ids``: ``"token_id:N"`` strings)."""

    def __init__(self, tokenizer, as_ids=False):
        self.tokenizer, self.as_ids = tokenizer, as_ids or tokenizer is None
        self._bytes = {}

    def bytes(self, token):
        """The token's bytes (b"" without a tokenizer)."""
        b = self._bytes.get(token)
        if b is None:
            tok = self.tokenizer
            if tok is None:
                b = b""
            elif hasattr(tok, "token_bytes"):
                b = tok.token_bytes(token)
            else:
                b = tok.decode([token]).encode("utf-8", "surrogatepass")
            self._bytes[token] = b
        return b

    def text(self, token):
        """The token's string in a response."""
        if self.as_ids:
            return f"token_id:{token}"
        return self.bytes(token).decode("utf-8", errors="replace")


class TokenOffsets:
    """Character offsets of tokens in the text they decode to (invalid bytes as U+FFFD, as ``decode`` writes
    them), token by token: ``push(id)`` returns ``(start, end)``: start, the index of the character that holds the
    token's first byte (a token that continues a character begun before it starts at that character); end, the
    characters complete once it is added."""

    def __init__(self, names):
        self.names = names
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.chars = 0

    def push(self, token):
        """(start, end) character offsets of one more token."""
        data = self.names.bytes(token)
        start = self.chars
        held = self.decoder.getstate()[0]  # the bytes of a character begun before: a valid, unfinished prefix
        if held and data:
            try:
                codecs.getincrementaldecoder("utf-8")().decode(held + data[:1])  # does the token continue it?
            except UnicodeDecodeError:
                start += 1  # no: those bytes become one U+FFFD before the token
        self.chars += len(self.decoder.decode(data))
        return start, self.chars


def prompt_logprobs(model, ids, k):
    """Entries for each prompt token (run on the engine thread): None for the first (nothing predicts it), then
    ``(logprob, [(id, logprob)] * k)`` of token t under the model's logits after tokens < t: one plain forward of
    the prompt, the log-softmax in float32 on the model's device, the top k in decreasing order (ties by id)."""
    n = len(ids)
    if n < 2:
        return [None] * n
    dev = model.device
    x = gp.astype(model(np.asarray(ids, dtype=np.int64).reshape(1, n))[0, :-1], gp.float32)  # (n - 1, V)
    m = gp.max(x, axis=-1, keepdims=True)
    lp = x - (m + gp.log(gp.sum(gp.exp(x - m), axis=-1, keepdims=True)))
    nxt = gp.asarray(np.asarray(ids[1:], dtype=np.int64).reshape(-1, 1), device=dev)
    chosen = np.asarray(gp.take_along_axis(lp, nxt, axis=-1).to_device("cpu")).reshape(-1).tolist()
    tops = [[] for _ in range(n - 1)]
    if k:
        if dev.kind == "cpu":
            h = np.asarray(lp)
            kth = -np.partition(-h, k - 1, axis=-1)[:, k - 1:k]
            idx = np.empty((n - 1, k), dtype=np.int64)
            for r in range(n - 1):  # every token tied with the k-th too: the lowest ids win
                cand = np.flatnonzero(h[r] >= kth[r])
                idx[r] = cand[np.lexsort((cand, -h[r, cand]))[:k]]
            vals = np.take_along_axis(h, idx, axis=-1)
        else:
            top = gp.argsort(lp, axis=-1, descending=True, stable=True)[:, :k]
            idx = np.asarray(top.to_device("cpu"))
            vals = np.asarray(gp.take_along_axis(lp, top, axis=-1).to_device("cpu"))
        tops = [list(zip(map(int, i), map(float, v))) for i, v in zip(idx, vals)]
    return [None] + [(float(c), t) for c, t in zip(chosen, tops)]


def completion_logprobs(tokens, names, k, offset=0):
    """OpenAI's completions ``logprobs`` object for ``tokens``, a list of (id, entry or None, start offset);
    offsets shifted by ``offset`` characters."""
    out = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for t, entry, start in tokens:
        name = names.text(t)
        out["tokens"].append(name)
        out["text_offset"].append(offset + start)
        if entry is None:  # the first prompt token
            out["token_logprobs"].append(None)
            out["top_logprobs"].append(None)
            continue
        lp, top = entry
        out["token_logprobs"].append(_finite(lp))
        d = {names.text(i): _finite(v) for i, v in top[:k]}
        d.setdefault(name, _finite(lp))
        out["top_logprobs"].append(d)
    return out


def chat_logprobs(tokens, names):
    """OpenAI's chat ``logprobs`` object, ``{"content": [...]}``, for ``tokens`` (id, entry, start offset)."""
    content = []
    for t, entry, _ in tokens:
        lp, top = entry
        content.append({"token": names.text(t), "logprob": _finite(lp), "bytes": list(names.bytes(t)),
                        "top_logprobs": [{"token": names.text(i), "logprob": _finite(v), "bytes": list(names.bytes(i))}
                                         for i, v in top]})
    return {"content": content, "refusal": None}
