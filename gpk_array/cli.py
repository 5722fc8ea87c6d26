"""The ``gpk`` command: ``gpk info`` (devices, a GEMM, a scikit-learn fit, with timings), ``gpk generate`` (stream a
GPT-2 continuation to stdout), ``gpk serve`` (the OpenAI-compatible server) and ``gpk kernels ...`` (the kernel
workbench, gpk_array.workbench: create, validate, bench, profile, promote, list, show, compare, doctor).

Every subcommand exists whatever is installed; one whose packages are missing says which, and the extra that
brings them, when it runs. A user error (a missing model directory, an unusable device, a bad number, a taken
port, ...) is one line on stderr, ``gpk CMD: error: ...``, and exit status 2; ``gpk --debug CMD`` adds the
traceback. Anything else is a bug and ends in a traceback (exit status 1).
"""
import argparse
import errno
import importlib
import importlib.util
import math
import os
import pathlib
import re
import sys
import time
import traceback

from ._errors import GpkArrayError

DTYPES = ("float32", "float16", "bfloat16")


class CLIError(Exception):
    """A user error of the ``gpk`` command: printed as one line on stderr, exit status 2, no traceback (unless
    ``--debug``)."""


# Errors of the library that mean "the input was wrong", not "gpk_array is broken": reported like CLIError.
USER_ERRORS = (CLIError, GpkArrayError, ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError,
               PermissionError)


def package_version():
    """The installed distribution's version (importlib.metadata), else ``gpk_array.__version__``."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("gpk_array")
    except (ImportError, PackageNotFoundError):
        import gpk_array
        return gpk_array.__version__


# --- argument types: a bad value is an argparse error (one line, exit status 2) ---------------------------------


def _number(kind, low=None, high=None, low_open=False, what=None):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if kind is float and not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if (low is not None and (v <= low if low_open else v < low)) or (high is not None and v > high):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return v
    parse.__name__ = kind.__name__
    parse.__doc__ = f"An argparse type: the text as {kind.__name__}, which must be {what}."
    return parse


positive_int = _number(int, 1, what=">= 1")
nonnegative_int = _number(int, 0, what=">= 0")
nonnegative_float = _number(float, 0.0, what=">= 0")
probability = _number(float, 0.0, 1.0, low_open=True, what="in (0, 1]")
port_number = _number(int, 0, 65535, what="in [0, 65535] (0: any free port)")


def _positive_bytes(text, option):
    """The byte count of a size such as 4MiB or 1000000 (gpk_array.sched's parser), which must be above 0."""
    from .sched._parse import parse_bytes
    try:
        n = parse_bytes(text, option)
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 bytes, got {text!r}")
    return n


def byte_count(text):
    """A size such as 4MiB, 512KiB or 1000000, as a number of bytes (at least 1)."""
    return int(_positive_bytes(text, "--max-body-bytes"))


def byte_size(text):
    """A size such as 4GiB or 512MiB (checked, kept as given; gpk_array.sched parses it)."""
    _positive_bytes(text, "--context-vram")
    return text


# --- the parser ----------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message):
        message = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" to every option's help, except flags, required options and options whose help
    already says its default (each option whose default is None says what that means)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or action.required or action.default is None or action.default is False:
            return text
        return super()._get_help_string(action)


def _debug_option(parser, top=False):
    parser.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="show the traceback of an error" + (" (also accepted after the command)" if top else ""))


def _add(subparsers, name, help, func):
    p = subparsers.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".",
                              formatter_class=HelpFormatter)
    _debug_option(p)
    p.set_defaults(func=func, command=name)
    return p


def _model_options(p, many=False):
    what = ("model directory in Hugging Face layout: config.json, model.safetensors, and tokenizer.json or "
            "vocab.json + merges.txt")
    if many:
        p.add_argument("--model", required=True, action="append",
                       help=what + " (repeat to serve several; without tokenizer files the API takes token ids)")
    else:
        p.add_argument("--model", required=True, help=what)
    p.add_argument("--device", default=None,
                   help="cpu or cuda:N (default: gpk_array's default device: cuda:0 when a GPU is usable, else cpu)")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="weights and activations (default: float16 on CUDA, float32 on the CPU)")


def register(subparsers):
    """Add the ``generate`` and ``serve`` commands to an argparse subparsers object (they import gpk_array.llm
    only when they run)."""
    g = _add(subparsers, "generate", "continue a prompt with a GPT-2 model, streaming to stdout", cmd_generate)
    _model_options(g)
    g.add_argument("--prompt", required=True, help="the text to continue")
    g.add_argument("--max-new-tokens", type=positive_int, default=64,
                   help="most tokens to generate (fewer when the end-of-text token comes or the context is full)")
    g.add_argument("--temperature", type=nonnegative_float, default=0.0,
                   help="0: greedy decoding, the default of transformers' generate() and of "
                        "gpk_array.llm.generate(); above 0 samples (e.g. 0.8; gpk serve's API follows OpenAI's "
                        "default, 1.0)")
    g.add_argument("--top-k", type=nonnegative_int, default=0,
                   help="when sampling, among the k likeliest tokens only; 0 keeps every token")
    g.add_argument("--top-p", type=probability, default=1.0,
                   help="when sampling, among the likeliest tokens of this total probability only; 1 keeps every "
                        "token")
    g.add_argument("--seed", type=nonnegative_int, default=None,
                   help="seed of the sampler, for a repeatable sample (default: a fresh one each run)")
    g.add_argument("--echo", action="store_true", help="print the prompt before the continuation")

    s = _add(subparsers, "serve", "serve GPT-2 models over an OpenAI-compatible HTTP API", cmd_serve)
    _model_options(s, many=True)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    s.add_argument("--port", type=port_number, default=8000, help="TCP port (0: any free port)")
    s.add_argument("--max-batch", type=positive_int, default=8, help="KV-cache slots: sequences decoded together")
    s.add_argument("--max-queue", type=positive_int, default=256,
                   help="sequences waiting for a slot before the server answers 429")
    s.add_argument("--max-len", type=positive_int, default=None,
                   help="context length of a slot (default: the model's)")
    s.add_argument("--model-name", action="append", default=None,
                   help="name in the API, one per --model (default: the directory's name)")
    s.add_argument("--context-vram", type=byte_size, default=None,
                   help="run each model in its own guaranteed gpk_array.sched context of this size, e.g. 4GiB "
                        "(default: no context; the models share the device)")
    s.add_argument("--no-cuda-graphs", action="store_true", help="run decode steps without CUDA graphs")
    s.add_argument("--stream-interval-ms", type=nonnegative_float, default=None,
                   help="least time between two events of a stream after its first; tokens arriving in between "
                        "go out together (default: 5; 0: every step's tokens at once)")
    s.add_argument("--max-body-bytes", type=byte_count, default=None,
                   help="largest request body read, e.g. 4MiB; a larger one gets HTTP 413 (default: 4MiB)")
    s.add_argument("--chat-max-tokens", type=positive_int, default=256,
                   help="new tokens of a chat reply whose request sets no max_tokens (never past the context)")


def build_parser():
    """The ``gpk`` argument parser: the global options and every subcommand (info, generate, serve, ...)."""
    ap = _Parser(prog="gpk", description="gpk_array: the Python array API on NVIDIA GPUs and the CPU, and GPT-2 "
                                         "generation and serving on it.", formatter_class=HelpFormatter)
    ap.add_argument("--version", action="version", version=f"gpk_array {package_version()}")
    _debug_option(ap, top=True)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = _add(sub, "info", "devices found, a GEMM and a scikit-learn fit, with timings", info)
    p.add_argument("--device", default=None,
                   help="cpu or cuda:N (default: gpk_array's default device: cuda:0 when a GPU is usable, else cpu)")
    p.add_argument("-n", type=positive_int, default=1024, help="size of the square GEMM")
    register(sub)
    from .workbench.cli import register_kernels
    register_kernels(sub)
    return ap


# --- checks shared by the commands ----------------------------------------------------------------------------


_NEEDS = {"generate": (("regex",), "llm"), "serve": (("regex", "starlette", "uvicorn"), "serve")}


def _and(names):
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def require(command):
    """CLIError naming the missing packages of ``command`` and the extra that installs them."""
    modules, extra = _NEEDS[command]
    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m)
    if missing:
        raise CLIError(f"needs {_and(missing)}, not installed: pip install 'gpk_array[{extra}]'")


def device_of(spec):
    """The gpk_array Device ``spec`` names (None: the default one); CLIError when it is unknown or unusable."""
    import gpk_array as gp
    if spec is None:
        return gp.default_device()
    try:
        return gp.Device(spec)
    except gp.DeviceError as e:
        if not re.fullmatch(r"cuda(:\d+)?", str(spec)):
            raise CLIError(str(e)) from None
        hint = "" if importlib.util.find_spec("cupy") else \
            ": CuPy is not installed (pip install 'gpk_array[cuda13]', or [cuda12])"
        raise CLIError(f"{e}{hint}; --device cpu runs on the CPU") from None


_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_TOKENIZER_FILES = "tokenizer.json, or vocab.json and merges.txt"
_LAYOUT = "config.json, model.safetensors, and tokenizer.json or vocab.json + merges.txt"


def has_tokenizer(path):
    """Whether a model directory holds tokenizer files (tokenizer.json, or vocab.json and merges.txt)."""
    path = pathlib.Path(path)
    return (path / "tokenizer.json").is_file() or ((path / "vocab.json").is_file() and
                                                    (path / "merges.txt").is_file())


def check_model_dir(path, *, tokenizer=True):
    """CLIError unless ``path`` is a model directory gpk_array.llm can load (with tokenizer files when
    ``tokenizer``)."""
    p = pathlib.Path(path)
    if not p.exists():
        if _HUB_NAME.fullmatch(str(path)):
            leaf = str(path).rsplit("/", 1)[-1]
            raise CLIError(
                f"no model directory {str(path)!r}, and gpk downloads nothing (Hugging Face Hub names are not "
                f"fetched): give --model a local GPT-2 directory in Hugging Face layout ({_LAYOUT}), e.g. from "
                f"`hf download {path} --local-dir {leaf}`, or one with random weights written by "
                f"gpk_array.llm.save_checkpoint(dir, config, random_weights(config)) (see help(gpk_array.llm); add "
                f"GPT-2's vocab.json and merges.txt for text)")
        raise CLIError(f"no model directory {str(path)!r}: it does not exist")
    if not p.is_dir():
        raise CLIError(f"{str(path)!r} is a file: --model takes the directory that holds it ({_LAYOUT})")
    if not (p / "config.json").is_file():
        raise CLIError(f"{path}: no config.json, so not a model directory in Hugging Face layout ({_LAYOUT})")
    if not ((p / "model.safetensors").is_file() or (p / "model.safetensors.index.json").is_file()):
        other = [n for n in ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack") if (p / n).is_file()]
        hint = (f"; it has {other[0]}, which gpk_array does not read: convert it with transformers, "
                f"GPT2LMHeadModel.from_pretrained(dir).save_pretrained(dir)" if other else "")
        raise CLIError(f"{path}: no model.safetensors (nor model.safetensors.index.json){hint}")
    if tokenizer and not has_tokenizer(p):
        raise CLIError(f"{path}: no tokenizer files ({_TOKENIZER_FILES}): copy GPT-2's into it")


def _device_dtype(args):
    import gpk_array as gp
    device = device_of(args.device)
    dtype = args.dtype or ("float16" if device.kind == "cuda" else "float32")
    return device, getattr(gp, dtype)


# --- the commands ----------------------------------------------------------------------------------------------


def _time(fn, sync, reps=5):
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return best


def info(args):
    """``gpk info``: the devices found, a GEMM on the chosen device, and a scikit-learn fit where it is installed."""
    os.environ.setdefault("SCIPY_ARRAY_API", "1")
    import numpy as np

    import gpk_array as xp
    ns = xp.__array_namespace_info__()
    dev = device_of(args.device)
    print(f"gpk_array {xp.__version__}  (array API {xp.__array_api_version__})")
    print("devices: " + ", ".join(str(d) for d in ns.devices()) + f"   default: {ns.default_device()}")
    if dev.kind == "cuda":
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(dev.index)
        free, total = cupy.cuda.runtime.memGetInfo()
        print(f"  {dev}: {props['name'].decode()}  sm_{props['major']}{props['minor']}  "
              f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} free)")
    n = args.n
    dtype = xp.float32
    a = xp.asarray(np.random.default_rng(0).standard_normal((n, n), dtype=np.float32), device=dev)
    b = xp.asarray(np.random.default_rng(1).standard_normal((n, n), dtype=np.float32), device=dev)
    t = _time(lambda: a @ b, dev.synchronize)
    ref = np.asarray((a @ b).to_device("cpu"))
    err = np.max(np.abs(ref - np.asarray(a.to_device("cpu"), dtype=np.float64) @ np.asarray(
        b.to_device("cpu"), dtype=np.float64))) / np.sqrt(n)
    print(f"GEMM {n}x{n}x{n} {np.dtype(dtype).name} on {dev}: {t * 1e3:.2f} ms, "
          f"{2 * n ** 3 / t / 1e12:.2f} TFLOP/s (max error / sqrt(n) vs float64: {err:.1e})")
    try:
        import sklearn
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    except ImportError:
        print("scikit-learn not installed: pip install scikit-learn to see the fit")
        return 0
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 32))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
    Xd, yd = xp.asarray(X, device=dev), xp.asarray(y, device=dev)
    with sklearn.config_context(array_api_dispatch=True):
        t0 = time.perf_counter()
        lda = LinearDiscriminantAnalysis().fit(Xd, yd)
        acc = float(xp.mean(xp.astype(lda.predict(Xd) == yd, xp.float64)))
        dt = time.perf_counter() - t0
    print(f"scikit-learn {sklearn.__version__} LinearDiscriminantAnalysis on gpk_array arrays ({X.shape[0]}x"
          f"{X.shape[1]}, {dev}): fit + predict {dt * 1e3:.1f} ms, training accuracy {acc:.3f}, "
          f"coef_ is {type(lda.coef_).__name__} on {lda.coef_.device}")
    return 0


def cmd_generate(args):
    """``gpk generate``: load the model directory and stream a continuation of the prompt to stdout."""
    require("generate")
    check_model_dir(args.model)
    device, dtype = _device_dtype(args)
    from .llm.generate import generate_stream
    from .llm.model import GPT2
    from .llm.tokenizer import Tokenizer
    model = GPT2.from_pretrained(args.model, device=device, dtype=dtype)
    tokenizer = Tokenizer.from_dir(args.model)
    prompt = tokenizer.encode(args.prompt) or [tokenizer.eos_token_id]
    max_new = min(args.max_new_tokens, model.config.n_positions - len(prompt))
    if max_new < 1:
        raise CLIError(f"the prompt ({len(prompt)} tokens) fills the model's context ({model.config.n_positions} "
                       f"tokens)")
    out = sys.stdout
    if args.echo:
        out.write(args.prompt)
    try:
        for piece in generate_stream(model, prompt, max_new_tokens=max_new, temperature=args.temperature,
                                     top_k=args.top_k, top_p=args.top_p, seed=args.seed, tokenizer=tokenizer):
            out.write(piece)
            out.flush()
    finally:
        out.write("\n")
        out.flush()
    return 0


def cmd_serve(args):
    """``gpk serve``: load every ``--model`` directory and serve them over the OpenAI-compatible HTTP API."""
    require("serve")
    names = args.model_name or []
    if len(names) > len(args.model):
        raise CLIError(f"{len(names)} --model-name for {len(args.model)} --model")
    for d in args.model:
        check_model_dir(d, tokenizer=False)
    device, dtype = _device_dtype(args)
    from .llm.server import bind_socket, serve
    try:  # before the models load: a taken port fails at once
        sock = bind_socket(args.host, args.port)
    except OSError as e:
        hint = ": is another server running there? pick another --port (0: any free port)" \
            if e.errno == errno.EADDRINUSE else ""
        raise CLIError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}{hint}") from e
    serve(args.model, host=args.host, port=args.port, device=device, dtype=dtype, max_batch=args.max_batch,
          max_queue=args.max_queue, max_len=args.max_len, model_name=args.model_name,
          cuda_graphs=False if args.no_cuda_graphs else None, context_vram=args.context_vram,
          stream_interval=None if args.stream_interval_ms is None else args.stream_interval_ms / 1e3, sock=sock,
          max_body_bytes=args.max_body_bytes, chat_max_tokens=args.chat_max_tokens)
    return 0


# --- main ------------------------------------------------------------------------------------------------------


def _one_line(e):
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = str(e) or type(e).__name__
    return " ".join(text.split())


def main(argv=None):
    """Run ``gpk`` with ``argv`` (default: sys.argv[1:]); returns the exit status (argparse errors, --help and
    --version raise SystemExit)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130
    except USER_ERRORS as e:
        if args.debug:
            traceback.print_exc()
        print(f"gpk {args.command}: error: {_one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
