"""The request parameters of /v1/completions and /v1/chat/completions: each field read, checked (JSON type, range,
finiteness) into one ``Options``, and turned into the ``SamplingParams`` of each choice. A bad field is a 400 in
OpenAI's shape naming it (``param``); nothing here touches the engine, so a bad request never reaches it.

docs/llm.md's table of request parameters is the user-facing form of this module.
"""
import dataclasses
import math
import re

from ..generate import SamplingParams
from .errors import APIError, short
from .jsonbody import json_type

MAX_SEED = 2 ** 63 - 1
DEFAULT_COMPLETION_MAX_TOKENS = 16  # OpenAI's default for completions
# Chat without max_tokens: at most this many new tokens (and never past the context). OpenAI's models stop on their
# own long before their context ends and vLLM runs to the context end; GPT-2 has no chat tuning and rarely writes
# its end-of-text token, so the rest of the context (up to 1,023 tokens) would be the usual answer. 256 tokens is a
# long chat reply; create_app(chat_max_tokens=...) and `gpk serve --chat-max-tokens` change it.
DEFAULT_CHAT_MAX_TOKENS = 256
MAX_N = 128  # OpenAI's limit on n
MAX_STOP = 4
MAX_COMPLETION_LOGPROBS = 5  # completions' logprobs (OpenAI's limit)
MAX_TOP_LOGPROBS = 20  # chat's top_logprobs (OpenAI's limit)
MAX_LOGIT_BIAS = 100.0
_TOKEN_ID = re.compile(r"0|[1-9][0-9]{0,9}")  # a token id as logit_bias writes it: "50256"


def field(body, name, kind, default=None, *, low=None, high=None, low_open=False, required=False, param=None):
    """body[name] checked to be of JSON type kind (int, float, bool, str) and within [low, high] (a number:
    finite, and a float fits in a float); APIError 400 naming ``param`` (default: name) otherwise."""
    param = param or name
    v = body.get(name)
    if v is None:
        if required:
            raise APIError(400, f"you must provide '{name}'", param=param, code="missing_required_parameter")
        return default
    ok = {int: isinstance(v, int) and not isinstance(v, bool),
          float: isinstance(v, (int, float)) and not isinstance(v, bool),
          bool: isinstance(v, bool), str: isinstance(v, str)}[kind]
    if not ok:
        want = {int: "an integer", float: "a number", bool: "a boolean", str: "a string"}[kind]
        raise APIError(400, f"'{name}' must be {want}, got {json_type(v)}", param=param, code="invalid_type")
    if kind is float:
        v = _float(v)
        if not math.isfinite(v):
            raise APIError(400, f"'{name}' must be a finite number", param=param, code="invalid_value")
    if (low is not None and (v <= low if low_open else v < low)) or (high is not None and v > high):
        lo = "-inf" if low is None else low
        rng = f"{'(' if low_open else '['}{lo}, {'inf' if high is None else high}]"
        raise APIError(400, f"'{name}' must be in {rng}, got {short(repr(v))}", param=param, code="invalid_value")
    return v


def _float(v):
    try:
        return float(v)
    except OverflowError:  # an integer beyond float's range
        return math.inf if v > 0 else -math.inf


def check_text(text, param):
    """APIError 400 if text is not Unicode text (it holds a lone surrogate, which JSON's \\ud800 escapes allow)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise APIError(400, f"'{param}' holds a lone surrogate (U+{ord(text[e.start]):04X} at character "
                                f"{e.start}), which is not text", param=param, code="invalid_value") from None


@dataclasses.dataclass
class Options:
    """The checked parameters of one request (see ``parse_options``)."""
    chat: bool
    limit: str  # the field that set max_tokens: "max_tokens" or "max_completion_tokens"
    max_tokens: int | None  # None: the endpoint's default, bounded by the context
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: dict | None = None
    seed: int | None = None
    ignore_eos: bool = False
    stop: list = dataclasses.field(default_factory=list)
    n: int = 1
    logprobs: int | None = None  # the top-k the engine records per token (None: no logprobs)
    echo: bool = False
    stream: bool = False
    include_usage: bool = False
    token_ids: bool = False  # return_tokens_as_token_ids

    def params(self, index):
        """The SamplingParams of choice ``index`` (its seed: ``seed + index``)."""
        return SamplingParams(
            temperature=self.temperature, top_k=self.top_k or None, top_p=self.top_p, min_p=self.min_p or None,
            repetition_penalty=self.repetition_penalty, presence_penalty=self.presence_penalty,
            frequency_penalty=self.frequency_penalty, logit_bias=self.logit_bias,
            seed=None if self.seed is None else self.seed + index, logprobs=self.logprobs)


def parse_options(body, *, chat, context, vocab, slots):
    """The Options of a request body, every field checked; APIError 400 naming the first bad one.

    context: the engine's context length (max_tokens' bound); vocab: the vocabulary size (logit_bias ids);
    slots: the engine's KV-cache slots (an n larger can never run: its choices decode together)."""
    _unsupported(body, chat)
    echo = False if chat else field(body, "echo", bool, False)
    limit = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    opts = Options(chat=chat, limit=limit, echo=echo,
                   max_tokens=field(body, limit, int, None, low=0 if echo else 1, high=context))
    opts.stream = field(body, "stream", bool, False)
    opts.include_usage = _stream_usage(body)
    opts.temperature = field(body, "temperature", float, 1.0, low=0.0, high=2.0)
    opts.top_p = field(body, "top_p", float, 1.0, low=0.0, high=1.0, low_open=True)
    opts.top_k = field(body, "top_k", int, 0, low=0)
    opts.min_p = field(body, "min_p", float, 0.0, low=0.0, high=1.0)
    opts.repetition_penalty = field(body, "repetition_penalty", float, 1.0, low=0.01, high=100.0)
    opts.presence_penalty = field(body, "presence_penalty", float, 0.0, low=-2.0, high=2.0)
    opts.frequency_penalty = field(body, "frequency_penalty", float, 0.0, low=-2.0, high=2.0)
    opts.logit_bias = _logit_bias(body, vocab)
    opts.seed = field(body, "seed", int, None, low=0, high=MAX_SEED)
    opts.ignore_eos = field(body, "ignore_eos", bool, False)
    opts.stop = _stop(body)
    opts.n = field(body, "n", int, 1, low=1, high=MAX_N)
    if opts.n > slots:
        raise APIError(400, f"n = {opts.n} choices decode together and need {opts.n} KV-cache slots; this server "
                            f"has {slots} (gpk serve --max-batch)", param="n", code="invalid_value")
    best_of = field(body, "best_of", int, None, low=1)
    if best_of is not None and best_of != opts.n:
        raise APIError(400, f"'best_of' must equal n ({opts.n}): choices are not ranked here, got {best_of}",
                       param="best_of", code="invalid_value")
    opts.logprobs = _chat_logprobs(body) if chat else _completion_logprobs(body)
    opts.token_ids = field(body, "return_tokens_as_token_ids", bool, False)
    return opts


def _unsupported(body, chat):
    """APIError 400 for a field whose meaning this server cannot give (rather than silently ignoring it)."""
    def refuse(name, why):
        raise APIError(400, f"'{name}' is not supported: {why}", param=name, code="unsupported_parameter")
    if chat and body.get("echo") not in (None, False):
        refuse("echo", "it is a completions parameter")
    if not chat and body.get("suffix") not in (None, ""):
        refuse("suffix", "GPT-2 does not fill in text")
    for name in ("tools", "functions"):
        if body.get(name) not in (None, []):
            refuse(name, "GPT-2 has no tool calling")
    fmt = body.get("response_format")
    if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
        refuse("response_format", "only {\"type\": \"text\"}")


def _stream_usage(body):
    opts = body.get("stream_options")
    if opts is None:
        return False
    if not isinstance(opts, dict):
        raise APIError(400, "'stream_options' must be an object", param="stream_options", code="invalid_type")
    return field(opts, "include_usage", bool, False)


def _stop(body):
    stop = body.get("stop")
    if stop is None:
        stop = []
    elif isinstance(stop, str):
        stop = [stop]
    elif not (isinstance(stop, list) and len(stop) <= MAX_STOP and all(isinstance(s, str) for s in stop)):
        raise APIError(400, f"'stop' must be a string or a list of up to {MAX_STOP} strings", param="stop",
                       code="invalid_type")
    for s in stop:
        check_text(s, "stop")
    return [s for s in stop if s]


def _logit_bias(body, vocab):
    """{token id: bias} from logit_bias's {"id": number}: ids in [0, vocab), biases in [-100, 100]."""
    bias = body.get("logit_bias")
    if bias is None:
        return None
    if not isinstance(bias, dict):
        raise APIError(400, f"'logit_bias' must be an object {{\"token id\": bias}}, got {json_type(bias)}",
                       param="logit_bias", code="invalid_type")
    if len(bias) > vocab:
        raise APIError(400, f"'logit_bias' has {len(bias)} entries; the vocabulary has {vocab} tokens",
                       param="logit_bias", code="invalid_value")
    out = {}
    for key, value in bias.items():
        if not _TOKEN_ID.fullmatch(key):
            raise APIError(400, f"'logit_bias' keys must be token ids such as \"50256\", got {short(repr(key))}",
                           param="logit_bias", code="invalid_value")
        token = int(key)
        if token >= vocab:
            raise APIError(400, f"'logit_bias': token id {token} is outside the vocabulary [0, {vocab})",
                           param="logit_bias", code="invalid_value")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise APIError(400, f"'logit_bias' values must be numbers, got {json_type(value)} for token {token}",
                           param="logit_bias", code="invalid_type")
        v = _float(value)
        if not -MAX_LOGIT_BIAS <= v <= MAX_LOGIT_BIAS:
            raise APIError(400, f"'logit_bias' values must be in [-100, 100], got {short(repr(value))} for token "
                                f"{token}", param="logit_bias", code="invalid_value")
        out[token] = v
    return out or None


def _completion_logprobs(body):
    v = body.get("logprobs")
    if v is None or v is False:
        return None
    if v is True:
        raise APIError(400, f"'logprobs' of completions is the number of top tokens (0 to {MAX_COMPLETION_LOGPROBS})"
                            "; true / false is chat's", param="logprobs", code="invalid_type")
    return field(body, "logprobs", int, None, low=0, high=MAX_COMPLETION_LOGPROBS)


def _chat_logprobs(body):
    on = field(body, "logprobs", bool, False)
    top = field(body, "top_logprobs", int, None, low=0, high=MAX_TOP_LOGPROBS)
    if top is not None and not on:
        raise APIError(400, "'top_logprobs' needs 'logprobs': true", param="top_logprobs", code="invalid_value")
    return (top or 0) if on else None
