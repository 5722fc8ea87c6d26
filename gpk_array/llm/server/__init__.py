"""An OpenAI-compatible HTTP server for GPT-2 models (Starlette + uvicorn).

Endpoints: POST /v1/completions, POST /v1/chat/completions (``stream: true`` answers with server-sent events,
``data: {...}`` per chunk and ``data: [DONE]`` at the end), GET /v1/models, GET /health, GET /metrics (Prometheus
text format). The parameters OpenAI's clients send are supported (docs/llm.md has the table): ``n`` choices that
share their prompt's prefill, ``logprobs`` / ``top_logprobs`` in each endpoint's format, ``echo``, stop strings
across token boundaries, ``seed``, ``presence_penalty``, ``frequency_penalty``, ``logit_bias``,
``max_completion_tokens``, and vLLM's ``top_k``, ``min_p``, ``repetition_penalty``, ``ignore_eos``,
``return_tokens_as_token_ids``.

One engine thread owns each model (continuous batching; engine_loop.py). The modules, one concept each:
``options`` (the request parameters, checked), ``prompts`` (prompts and the chat template), ``jsonbody`` (reading
bodies), ``engine_loop`` (the engine thread), ``streaming`` (from tokens to text pieces and server-sent events),
``logprobs`` (log-probabilities in OpenAI's formats), ``handlers`` (the endpoints of one model), ``metrics``,
``errors`` and ``app`` (the Starlette application, ``ServerThread``, ``serve``).
"""
from .app import TOKENIZE_THREADS, ServerThread, bind_socket, create_app, serve
from .engine_loop import EngineLoop, Job
from .errors import APIError
from .handlers import Server
from .jsonbody import DEFAULT_MAX_BODY_BYTES, parse_json, read_json
from .metrics import TTFT_BUCKETS, Metrics, render_metrics
from .options import DEFAULT_CHAT_MAX_TOKENS, DEFAULT_COMPLETION_MAX_TOKENS, MAX_SEED, Options, parse_options
from .streaming import STREAM_INTERVAL_S, EventStream

__all__ = ["APIError", "DEFAULT_CHAT_MAX_TOKENS", "DEFAULT_COMPLETION_MAX_TOKENS", "DEFAULT_MAX_BODY_BYTES",
           "EngineLoop", "EventStream", "Job", "MAX_SEED", "Metrics", "Options", "STREAM_INTERVAL_S", "Server",
           "ServerThread", "TOKENIZE_THREADS", "TTFT_BUCKETS", "bind_socket", "create_app", "parse_json",
           "parse_options", "read_json", "render_metrics", "serve"]
