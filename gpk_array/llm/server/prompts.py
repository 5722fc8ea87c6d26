"""Prompts: a completions request's ``prompt`` (texts, token ids, lists of them) and a chat request's ``messages``
(rendered as "Role: content" lines, then "Assistant:", since GPT-2 has no chat template), checked against the
context before any tokenizing work: a text with more characters than the context has tokens times the longest
token's bytes is refused at once."""
from .errors import APIError
from .jsonbody import json_type
from .options import check_text

MAX_PROMPTS = 64  # prompts in one completions request


class Prompts:
    """The prompt checks and the chat template of one served model."""

    def __init__(self, tokenizer, *, context, vocab, eos):
        self.tokenizer, self.context, self.vocab, self.eos = tokenizer, context, vocab, eos
        # a text of n characters has at least n / max_token_bytes tokens (a token is at most that many bytes, a
        # character at least one): longer texts than the context allows are refused before they are tokenized
        self.max_token_bytes = getattr(tokenizer, "max_token_bytes", None)

    def check_length(self, tokens, param):
        """APIError 400 (context_length_exceeded) for a prompt of ``tokens`` tokens that leaves no room to generate."""
        ctx = self.context
        if tokens >= ctx:
            raise APIError(400, f"this model's maximum context length is {ctx} tokens, but the prompt has {tokens}",
                           param=param, code="context_length_exceeded")

    def check_text_length(self, chars, param):
        """Refuse a text of ``chars`` characters that has more tokens than the context, before tokenizing it."""
        ctx, most = self.context, self.max_token_bytes
        if most and chars > (ctx - 1) * most:
            raise APIError(400, f"this model's maximum context length is {ctx} tokens, but the prompt has more "
                                f"({chars} characters; no token is longer than {most})", param=param,
                           code="context_length_exceeded")

    def items(self, body):
        """The prompts of a completions request, checked but not tokenized: texts and lists of token ids."""
        p = body.get("prompt")
        vocab = self.vocab
        if p is None:
            raise APIError(400, "you must provide 'prompt'", param="prompt", code="missing_required_parameter")
        if isinstance(p, str) or (isinstance(p, list) and p and isinstance(p[0], int) and not isinstance(p[0], bool)):
            p = [p]  # one prompt (a list of ids when it starts with one: its items are checked below)
        if not (isinstance(p, list) and p and len(p) <= MAX_PROMPTS):
            raise APIError(400, "'prompt' must be a string, a list of strings, a list of token ids or a list of "
                                f"lists of token ids (1 to {MAX_PROMPTS} prompts)", param="prompt",
                           code="invalid_type")
        for item in p:
            if isinstance(item, str):
                if self.tokenizer is None:
                    raise APIError(400, "this server has no tokenizer: send token ids", param="prompt")
                self.check_text_length(len(item), "prompt")
                check_text(item, "prompt")
            elif isinstance(item, list):
                self.check_length(len(item), "prompt")
                if not all(isinstance(t, int) and not isinstance(t, bool) for t in item):
                    raise APIError(400, "'prompt' items must be strings or lists of token ids", param="prompt",
                                   code="invalid_type")
                if any(not 0 <= t < vocab for t in item):
                    raise APIError(400, f"token ids must be in [0, {vocab})", param="prompt", code="invalid_value")
            else:
                raise APIError(400, f"'prompt' items must be strings or lists of token ids, got {json_type(item)}",
                               param="prompt", code="invalid_type")
        return p

    def encode(self, items):
        """Token ids of each prompt (texts tokenized, in a worker thread; the first too long for the context stops
        the work)."""
        empty = [self.eos if self.eos is not None else 0]  # an empty prompt starts a document
        out = []
        for item in items:
            ids = (self.tokenizer.encode(item) if isinstance(item, str) else item) or empty
            self.check_length(len(ids), "prompt")
            out.append(ids)
        return out

    def chat_text(self, body):
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
            self.check_text_length(chars, "messages")  # as it grows: the work here stays within the bound
            check_text(m["role"], f"messages[{i}].role")
            check_text(content, f"messages[{i}].content")
            lines.append(f"{m['role'].capitalize()}: {content}\n")
        if self.tokenizer is None:
            raise APIError(400, "this server has no tokenizer, so it cannot serve chat", param="messages")
        text = "".join(lines) + "Assistant:"
        self.check_text_length(len(text), "messages")
        return text
