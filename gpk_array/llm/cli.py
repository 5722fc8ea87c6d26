"""Command line: ``gpk generate`` (stream a continuation to stdout) and ``gpk serve`` (the OpenAI-compatible server).

``register(subparsers)`` adds both to an argparse parser; each sets ``func``, so the caller runs ``args.func(args)``.
Standalone: ``python -m gpk_array.llm.cli generate --model DIR --prompt "Hello"``.
"""
import argparse
import sys

DTYPES = ("float32", "float16", "bfloat16")


def _device_dtype(args):
    import gpk_array as gp
    device = gp.Device(args.device) if args.device else gp.default_device()
    dtype = args.dtype or ("float16" if device.kind == "cuda" else "float32")
    return device, getattr(gp, dtype)


def cmd_generate(args):
    """``gpk generate``: load the model directory ``args.model`` on the chosen device and dtype, then stream a
    continuation of ``args.prompt`` to stdout (capped at the context length). Returns the exit status (2 when the
    prompt fills the context)."""
    from .generate import generate_stream
    from .model import GPT2
    from .tokenizer import Tokenizer
    device, dtype = _device_dtype(args)
    model = GPT2.from_pretrained(args.model, device=device, dtype=dtype)
    tokenizer = Tokenizer.from_dir(args.model)
    prompt = tokenizer.encode(args.prompt) or [tokenizer.eos_token_id]
    max_new = min(args.max_new_tokens, model.config.n_positions - len(prompt))
    if max_new < 1:
        print(f"error: the prompt ({len(prompt)} tokens) fills the context ({model.config.n_positions})",
              file=sys.stderr)
        return 2
    out = sys.stdout
    if args.echo:
        out.write(args.prompt)
    for piece in generate_stream(model, prompt, max_new_tokens=max_new, temperature=args.temperature,
                                 top_k=args.top_k, top_p=args.top_p, seed=args.seed, tokenizer=tokenizer):
        out.write(piece)
        out.flush()
    out.write("\n")
    out.flush()
    return 0


def cmd_serve(args):
    """``gpk serve``: load every ``--model`` directory and serve them with the OpenAI-compatible server
    (``gpk_array.llm.server.serve``) until interrupted."""
    from .server import serve
    device, dtype = _device_dtype(args)
    serve(args.model, host=args.host, port=args.port, device=device, dtype=dtype, max_batch=args.max_batch,
          max_queue=args.max_queue, max_len=args.max_len, model_name=args.model_name,
          cuda_graphs=False if args.no_cuda_graphs else None, context_vram=args.context_vram,
          stream_interval=None if args.stream_interval_ms is None else args.stream_interval_ms / 1e3)
    return 0


def _common(p, many=False):
    if many:
        p.add_argument("--model", required=True, action="append",
                       help="model directory: config.json, model.safetensors, tokenizer (repeat to serve several)")
    else:
        p.add_argument("--model", required=True, help="model directory: config.json, model.safetensors, tokenizer")
    p.add_argument("--device", default=None, help="cpu or cuda:N (default: gpk_array's default device)")
    p.add_argument("--dtype", choices=DTYPES, default=None, help="default: float16 on CUDA, float32 on the CPU")


def register(subparsers):
    """Add the ``generate`` and ``serve`` commands to an argparse subparsers object."""
    g = subparsers.add_parser("generate", help="continue a prompt with a GPT-2 model, streaming to stdout")
    _common(g)
    g.add_argument("--prompt", required=True)
    g.add_argument("--max-new-tokens", type=int, default=64)
    g.add_argument("--temperature", type=float, default=0.8, help="0 for greedy decoding")
    g.add_argument("--top-k", type=int, default=50, help="0 keeps every token")
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--echo", action="store_true", help="print the prompt before the continuation")
    g.set_defaults(func=cmd_generate)

    s = subparsers.add_parser("serve", help="serve GPT-2 models over an OpenAI-compatible HTTP API")
    _common(s, many=True)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-batch", type=int, default=8, help="KV-cache slots: sequences decoded together")
    s.add_argument("--max-queue", type=int, default=256, help="sequences waiting for a slot before 429")
    s.add_argument("--max-len", type=int, default=None, help="context length (default: the model's)")
    s.add_argument("--model-name", action="append", default=None,
                   help="name in the API, one per --model (default: the directory's name)")
    s.add_argument("--context-vram", default=None,
                   help="run each model in its own guaranteed gpk_array.sched context of this size (e.g. 4GiB)")
    s.add_argument("--no-cuda-graphs", action="store_true", help="run decode steps without CUDA graphs")
    s.add_argument("--stream-interval-ms", type=float, default=None,
                   help="least time between two events of a stream after its first; tokens arriving in between "
                        "go out together (default 5; 0: every step's tokens at once)")
    s.set_defaults(func=cmd_serve)


def main(argv=None):
    """``python -m gpk_array.llm.cli``: the ``generate`` and ``serve`` commands on their own; returns the exit
    status."""
    parser = argparse.ArgumentParser(prog="gpk", description="GPT-2 generation and serving with gpk_array")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
