"""The Starlette application (its routes and error handling, one ``Server`` per model), uvicorn in a thread
(``ServerThread``), and ``serve``, what ``gpk serve`` runs."""
import concurrent.futures
import contextlib
import logging
import socket
import sys
import threading
import time

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .errors import APIError, internal_error, short
from .handlers import Server
from .jsonbody import DEFAULT_MAX_BODY_BYTES, read_json
from .metrics import render_metrics
from .options import DEFAULT_CHAT_MAX_TOKENS
from .streaming import STREAM_INTERVAL_S

TOKENIZE_THREADS = 2  # worker threads that tokenize prompts, off the event loop

log = logging.getLogger("gpk_array.llm.server")


class _App(Starlette):
    """Starlette, with no exception escaping to the server: after a complete response (Starlette re-raises what
    its error handler answered), raising would make uvicorn close the connection, failing the requests a
    keep-alive client sends on it next. Before any response, the client gets a 500 in OpenAI's shape; in the middle
    of one, the exception goes on (the connection cannot carry another response)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        state = {"started": False, "complete": False}

        async def tracked(message):
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["complete"] = True
            await send(message)
        try:
            await super().__call__(scope, receive, tracked)
        except Exception as e:
            if state["complete"]:  # answered (by the error handler): keep the connection
                if not getattr(e, "_gpk_logged", False):
                    log.error("%s %s failed after its response", scope.get("method"), scope.get("path"), exc_info=e)
                return
            if state["started"]:
                raise
            log.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=e)
            await internal_error(e).response()(scope, receive, send)


def create_app(model, tokenizer=None, *, model_name="gpt2", max_batch=8, max_queue=256, max_len=None,
               cuda_graphs=None, context=None, more=(), stream_interval=None, max_body_bytes=None,
               tokenize_threads=TOKENIZE_THREADS, chat_max_tokens=DEFAULT_CHAT_MAX_TOKENS):
    """The Starlette application serving ``model``; its engine thread runs while the app is up.

    stream_interval: seconds between two events of one stream after its first (default STREAM_INTERVAL_S, 5 ms):
    tokens that arrive in between go out in one event, so a busy server sends one event per stream every few
    steps instead of one per step (fewer socket writes and JSON encodings; a reader sees no difference at
    human speed). 0: an event as soon as tokens arrive.

    context: a gpk_array.sched context for the model (its KV cache, pool, stream and budget). more: further
    ``(model, tokenizer, model_name, context)`` served by the same app in the same process, each with its own
    engine thread (and context): requests go to the model their body names, ``/v1/models`` lists them all,
    ``/metrics`` labels every sample with its model.

    max_body_bytes: the largest request body read (default DEFAULT_MAX_BODY_BYTES, 4 MiB); a larger one gets 413.
    tokenize_threads: worker threads that tokenize prompts, so that the event loop keeps answering (``/health``
    too) while a long prompt is tokenized. chat_max_tokens: the new tokens of a chat request without max_tokens
    (default DEFAULT_CHAT_MAX_TOKENS, 256; never past the context).

    No client input makes a 5xx: bodies that are not JSON objects (NaN, huge numbers, deep nesting, bad UTF-8,
    lone surrogates in texts) and invalid fields get 400 in OpenAI's error shape; an error inside one sequence's
    generation fails that request only.
    """
    max_body_bytes = DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else int(max_body_bytes)
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
    specs = [(model, tokenizer, model_name, context)] + [tuple(m) for m in more]
    names = [sp[2] for sp in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"model names must differ, got {names}")
    servers = {}
    for m, t, name, ctx in specs:
        servers[name] = Server(m, t, model_name=name, max_batch=max_batch, max_queue=max_queue, max_len=max_len,
                               cuda_graphs=cuda_graphs, context=ctx,
                               stream_interval=STREAM_INTERVAL_S if stream_interval is None else stream_interval,
                               max_body_bytes=max_body_bytes, chat_max_tokens=chat_max_tokens)
        servers[name].names = names
    first = servers[names[0]]

    def endpoint(name, method=None, fn=None):
        """The route handler of ``name``: the Server ``method`` of the model the JSON body names (the first
        model when it names none it has: its handler then answers 400 or 404), or the app-wide ``fn``. Any error
        is answered here, in OpenAI's shape (500 for a bug), and counted under this route in that model's metrics
        (the first model's for app-wide routes)."""
        async def handle(request):
            server = first
            try:
                if method:
                    body = await read_json(request, max_body_bytes)
                    model = body.get("model")
                    server = servers.get(model, first) if isinstance(model, str) else first
                    response = await getattr(server, method)(request, body)
                else:
                    response = await fn(request)
            except APIError as e:
                response = e.response()
            except Exception as e:
                log.error("%s %s failed", request.method, name, exc_info=e)
                response = internal_error(e).response()
            server.metrics.request(name, getattr(response, "status_code", 200))
            return response
        return handle

    async def models(request):
        return JSONResponse({"object": "list", "data": [
            {"id": n, "object": "model", "created": sv.created, "owned_by": "gpk_array"} for n, sv in servers.items()]})

    async def health(request):
        if len(servers) == 1:
            return await first.health(request)
        return JSONResponse({"status": "ok", "models": {n: {"active": len(sv.engine.active),
                                                             "waiting": sv.loop.waiting_sequences,
                                                             "slots": sv.engine.max_batch}
                                                         for n, sv in servers.items()}})

    async def metrics(request):
        entries = [(None if len(servers) == 1 else n, sv.metrics, sv.loop) for n, sv in servers.items()]
        return Response(render_metrics(entries), media_type="text/plain; version=0.0.4; charset=utf-8")

    routes = [Route("/v1/completions", endpoint("/v1/completions", "completions"), methods=["POST"]),
              Route("/v1/chat/completions", endpoint("/v1/chat/completions", "chat_completions"), methods=["POST"]),
              Route("/v1/models", endpoint("/v1/models", fn=models), methods=["GET"]),
              Route("/health", endpoint("/health", fn=health), methods=["GET"]),
              Route("/metrics", endpoint("/metrics", fn=metrics), methods=["GET"])]
    paths = {r.path for r in routes}

    def label(request):
        """The metrics label of a request: its route, "other" for paths that are none."""
        return request.url.path if request.url.path in paths else "other"

    async def http_error(request, exc):
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(exc.status_code)
        first.metrics.request(label(request), exc.status_code)
        return APIError(exc.status_code, f"{request.method} {short(request.url.path)}: {exc.detail}",
                        code=code).response()

    async def server_error(request, exc):
        log.error("%s %s failed", request.method, short(request.url.path), exc_info=exc)
        with contextlib.suppress(AttributeError):
            exc._gpk_logged = True  # Starlette raises it again after this response: _App keeps the connection
        first.metrics.request(label(request), 500)
        return internal_error(exc).response()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        pool = concurrent.futures.ThreadPoolExecutor(tokenize_threads, thread_name_prefix="gpk-tokenize")
        for sv in servers.values():
            sv.tokenize_pool = pool
            sv.loop.start()
        try:
            yield
        finally:
            for sv in servers.values():
                sv.loop.stop()
                sv.tokenize_pool = None
            pool.shutdown(wait=False, cancel_futures=True)

    app = _App(routes=routes, lifespan=lifespan,
               exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.server = first
    app.state.servers = servers
    return app


def bind_socket(host="127.0.0.1", port=0):
    """A TCP socket bound to ``(host, port)`` (port 0: a free one), for uvicorn to listen on; OSError when the
    address is taken (EADDRINUSE) or not this machine's."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _url(host, port):
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class ServerThread:
    """uvicorn serving an app from a background thread, on a socket bound here (port 0: a free port).

        with ServerThread(app) as url:   # "http://127.0.0.1:PORT"
            ...
    """

    def __init__(self, app, host="127.0.0.1", port=0, log_level="warning"):
        import uvicorn
        self.sock = bind_socket(host, port)
        self.port = self.sock.getsockname()[1]
        self.url = _url(host, self.port)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self.url

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


def serve(model_dir, *, host="127.0.0.1", port=8000, device=None, dtype=None, max_batch=8, max_queue=256,
          max_len=None, model_name=None, cuda_graphs=None, log_level="info", context_vram=None,
          stream_interval=None, sock=None, max_body_bytes=None, chat_max_tokens=DEFAULT_CHAT_MAX_TOKENS):
    """Load one model directory (or a list of them, served side by side) and serve until interrupted.

    model_name: a name or a list of names (default: each directory's name). context_vram: bytes (or "4GiB") of a
    guaranteed gpk_array.sched context per model, which then holds its KV cache and runs its decode steps.
    sock: a socket from ``bind_socket`` to listen on (then closed here); by default one is bound to (host, port)
    before the models load, so that a taken port fails at once (OSError). max_body_bytes: the largest request body
    read (default 4 MiB; larger: 413). chat_max_tokens: the new tokens of a chat request without max_tokens
    (default 256, bounded by the context). What is served (models, device, dtype, slots, URL) is logged on stderr at
    startup (logger ``gpk_array.llm.server``)."""
    import pathlib

    import uvicorn

    from ..model import GPT2
    from ..tokenizer import Tokenizer
    dirs = [model_dir] if isinstance(model_dir, (str, pathlib.Path)) else list(model_dir)
    names = [model_name] if isinstance(model_name, str) or model_name is None else list(model_name)
    names += [None] * (len(dirs) - len(names))
    if len(names) != len(dirs):
        raise ValueError(f"{len(names)} model names for {len(dirs)} model directories")
    if sock is None:
        sock = bind_socket(host, port)
    log = _startup_log()
    try:
        specs = []
        for d, name in zip(dirs, names):
            model = GPT2.from_pretrained(d, device=device, dtype=dtype)
            try:
                tokenizer = Tokenizer.from_dir(d)
            except FileNotFoundError:
                tokenizer = None
                log.warning("%s has no tokenizer files (tokenizer.json, or vocab.json and merges.txt): its API "
                            "takes token ids only, and no chat", d)
            name = name or pathlib.Path(d).resolve().name
            context = None
            if context_vram is not None:
                from ... import sched
                try:
                    sched.get_scheduler(str(model.device))
                except RuntimeError:  # not initialized for this device yet
                    sched.initialize(str(model.device))
                context = sched.create_context(f"serve-{name}", context_vram, qos="guaranteed",
                                               device=str(model.device))
            specs.append((model, tokenizer, name, context))
        (model, tokenizer, name, context), more = specs[0], specs[1:]
        app = create_app(model, tokenizer, model_name=name, max_batch=max_batch, max_queue=max_queue,
                         max_len=max_len, cuda_graphs=cuda_graphs, context=context, more=more,
                         stream_interval=stream_interval, max_body_bytes=max_body_bytes,
                         chat_max_tokens=chat_max_tokens)
        bound = sock.getsockname()[1]
        for (m, t, n, ctx), d in zip(specs, dirs):
            c = m.config
            log.info("model %r from %s: GPT-2, %d layers, %.1fM parameters, %d-token context%s%s", n, d,
                     c.n_layer, c.num_parameters / 1e6, c.n_positions, "" if t else ", no tokenizer",
                     f", in sched context {ctx.name!r}" if ctx is not None else "")
        engine = app.state.server.engine
        log.info("device %s, dtype %s, %d slots of %d tokens (sequences decoded together), queue %d; without "
                 "max_tokens a completion has at most 16 new tokens, a chat reply %d", model.device,
                 model.dtype.name, max_batch, engine.max_len, max_queue, min(chat_max_tokens, engine.max_len - 1))
        log.info("serving %s on %s/v1 (POST /v1/completions, /v1/chat/completions; GET /v1/models, /health, "
                 "/metrics; CTRL+C quits)", ", ".join(repr(sp[2]) for sp in specs), _url(host, bound))
        config = uvicorn.Config(app, host=host, port=bound, log_level=log_level, timeout_graceful_shutdown=5)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _startup_log():
    """The logger of serve(), printing on stderr as uvicorn does (``INFO:     ...``) unless logging was set up."""
    log = logging.getLogger("gpk_array.llm.server")
    if not log.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_UvicornStyle())
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


class _UvicornStyle(logging.Formatter):
    def format(self, record):
        return f"{record.levelname + ':':<9} {record.getMessage()}"
