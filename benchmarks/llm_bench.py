"""GPT-2 124M inference on a GPU, float16, random weights: gpk_array.llm against transformers in the same run.

Rows: decode tokens/s at batch 1 and batch 64, greedy and sampled (temperature 1, top-k 50, top-p 0.95: on the
device, inside the captured step; the note gives the ratio to greedy, the target is 0.9x), ours with CUDA graphs
and eager; ``generate()`` of 32 tokens called twice (the second call reuses the kept engine and its graphs; the
note compares it with an engine reused by hand); prefill latency of 1,024 tokens; and the HTTP server with 64
concurrent streaming clients of the official openai client (AsyncOpenAI, in 4 processes), at temperature 1 (the
clients' default) and greedy: aggregate tokens/s, time to first token p50 and p99. Baselines: transformers'
GPT2LMHeadModel on the same GPU, float16 and float32, eager attention, with its own KV cache, driven by the same
kind of loop (one host sync per token; sampled rows with transformers' own temperature / top-k / top-p warpers
and torch.multinomial).

    python -m benchmarks.llm_bench [--quick] [--json results.json]

``run()`` prints the table and returns the rows (dicts).
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGETS = {"decode_b1": ">= 6000 tok/s", "decode_b64": ">= 60000 tok/s", "prefill_1024": "<= 2 ms",
           "server_64": ">= 40000 tok/s", "sampled": ">= 0.9x greedy", "generate_twice": ">= 0.9x reused"}
SAMPLED = dict(temperature=1.0, top_k=50, top_p=0.95)  # the sampled rows' settings


# --- the model directory -----------------------------------------------------------------------------------


def make_model_dir(path, seed=0):
    """A random-weight GPT-2 124M in the Hugging Face layout, with a GPT-2 tokenizer beside it."""
    from gpk_array.llm import GPT2Config, random_weights, save_checkpoint
    try:
        import torch
        import transformers
        torch.manual_seed(seed)
        transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(path)
    except ImportError:
        save_checkpoint(path, GPT2Config.gpt2(), random_weights(GPT2Config.gpt2(), seed))
    for src in (os.environ.get("GPK_GPT2_TOKENIZER"), ROOT.parent / "shared" / "data" / "gpt2-tokenizer",
                ROOT / "shared" / "data" / "gpt2-tokenizer", ROOT / "tests" / "llm" / "data" / "gpt2-tokenizer"):
        if src and (pathlib.Path(src) / "vocab.json").is_file():
            for name in ("vocab.json", "merges.txt"):
                shutil.copy(pathlib.Path(src) / name, path / name)
            return "GPT-2"
    _synthetic_tokenizer(path)
    return "synthetic byte-pair"


def _synthetic_tokenizer(path):
    """A 50,257-token byte-level BPE (256 bytes, 50,000 two-byte merges, <|endoftext|>) when GPT-2's is absent."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b], extra = chr(256 + extra), extra + 1
    byte_chars = [chars[b] for b in range(256)]
    vocab = {c: i for i, c in enumerate(byte_chars)}
    merges = []
    for a in byte_chars:
        for b in byte_chars:
            if len(merges) == 50000:
                break
            merges.append(f"{a} {b}")
            vocab[a + b] = 256 + len(merges) - 1
    vocab["<|endoftext|>"] = 50256
    (path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")


# --- ours ----------------------------------------------------------------------------------------------------


def ours_decode(model, batch, steps, cuda_graphs=None, prompt_len=16, sampling=None):
    """(tokens/s of decode steps over ``batch`` sequences, how they ran); a first pass captures graphs.
    sampling: SamplingParams keywords (default greedy); sequence i gets seed i."""
    from gpk_array.llm import Engine, SamplingParams, Sequence
    engine = Engine(model, max_batch=batch, max_len=prompt_len + steps + 1, cuda_graphs=cuda_graphs)
    rng = np.random.default_rng(0)
    vocab = model.config.vocab_size - 1
    for timed in (False, True):
        seqs = [Sequence(rng.integers(0, vocab, prompt_len), max_new_tokens=steps + 1,
                         params=SamplingParams(**(sampling or {}), seed=i)) for i in range(batch)]
        engine.add(seqs)
        start = time.perf_counter()
        while engine.active:
            engine.step()
        elapsed = time.perf_counter() - start
    how = "CUDA graphs" if engine.graphs is not None else "eager" + (
        f" (capture refused: {engine.graph_error[:80]})" if engine.graph_error else "")
    return batch * steps / elapsed, how


def ours_generate_twice(model, n=32, prompt_len=16):
    """tokens/s of the first and of the second ``generate()`` of n greedy tokens for one prompt (the second finds
    the engine and graphs the first kept), on a model whose kept engines were cleared."""
    from gpk_array.llm import generate
    from gpk_array.llm.generate import clear_engines
    clear_engines(model)
    prompt = np.random.default_rng(2).integers(0, model.config.vocab_size - 1, prompt_len).tolist()
    speeds = []
    for _ in range(2):
        start = time.perf_counter()
        out = generate(model, prompt, max_new_tokens=n, stop_tokens=())
        speeds.append(len(out) / (time.perf_counter() - start))
    return speeds


def ours_prefill(model, n=1024, repeats=20):
    """Median milliseconds to prefill n tokens and choose the first new token (batch 1)."""
    from gpk_array.llm import Engine, Sequence
    engine = Engine(model, max_batch=1, max_len=n)
    prompt = np.random.default_rng(1).integers(0, model.config.vocab_size - 1, n)
    times = []
    for _ in range(repeats + 2):
        seq = Sequence(prompt, max_new_tokens=1)
        start = time.perf_counter()
        engine.add([seq])
        times.append(time.perf_counter() - start)
        engine.release(seq)
    return 1e3 * float(np.median(times[2:]))


# --- transformers --------------------------------------------------------------------------------------------


def hf_model(path, dtype, device="cuda"):
    import transformers
    m = transformers.GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager", dtype=dtype)
    return m.to(device).eval()


def _sync(model):
    import torch
    if model.device.type == "cuda":
        torch.cuda.synchronize()


def hf_cache_args(model, out):
    """The keyword that feeds transformers' KV cache back in (``past_key_values``, ``cache`` in later 5.x)."""
    import inspect
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return {name: out["cache"] if "cache" in out else out["past_key_values"]}


def hf_decode(model, batch, steps, prompt_len=16, sampling=None):
    import torch
    ids = torch.randint(0, model.config.vocab_size - 1, (batch, prompt_len), device=model.device)
    choose = (lambda logits: logits.argmax(-1, keepdim=True)) if sampling is None else _hf_sampler(sampling)
    with torch.no_grad():
        for timed in (False, True):
            out = model(ids, use_cache=True)
            nxt = choose(out.logits[:, -1])
            _sync(model)
            start = time.perf_counter()
            for _ in range(steps):
                out = model(nxt, **hf_cache_args(model, out), use_cache=True)
                nxt = choose(out.logits[:, -1])
                nxt.tolist()  # the host reads each token, as a generation loop does
            elapsed = time.perf_counter() - start
    return batch * steps / elapsed


def _hf_sampler(sampling):
    """transformers' own warpers (temperature, top-k, top-p) and torch.multinomial, on the GPU."""
    import torch
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
    warpers = [TemperatureLogitsWarper(sampling["temperature"]), TopKLogitsWarper(sampling["top_k"]),
               TopPLogitsWarper(sampling["top_p"])]

    def choose(logits):
        scores = logits.float()
        for w in warpers:
            scores = w(None, scores)
        return torch.multinomial(torch.softmax(scores, dim=-1), 1)
    return choose


def hf_prefill(model, n=1024, repeats=20):
    import torch
    ids = torch.randint(0, model.config.vocab_size - 1, (1, n), device=model.device)
    times = []
    with torch.no_grad():
        for _ in range(repeats + 2):
            _sync(model)
            start = time.perf_counter()
            out = model(ids, use_cache=True)
            out.logits[:, -1].argmax(-1).item()
            times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times[2:]))


# --- the server ----------------------------------------------------------------------------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _clients(url, n, max_tokens, prompt_len, seed, vocab, temperature=0.0):
    """n concurrent streaming completions with the official openai client (AsyncOpenAI, one connection pool):
    (start, first token, end, completion tokens) of each, None for a request that failed."""
    import openai
    rng = np.random.default_rng(seed)

    async def one(client, prompt):
        start = time.perf_counter()
        first, tokens = None, 0
        try:
            stream = await client.completions.create(
                model="bench", prompt=prompt, max_tokens=max_tokens, temperature=temperature, stream=True,
                stream_options={"include_usage": True}, extra_body={"ignore_eos": True}, seed=seed)
            async for chunk in stream:
                if chunk.usage is not None:
                    tokens = chunk.usage.completion_tokens
                elif first is None and chunk.choices and chunk.choices[0].text:
                    first = time.perf_counter()
        except openai.APIError:
            return None
        return start, first, time.perf_counter(), tokens

    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", timeout=300.0, max_retries=0) as client:
        prompts = [rng.integers(0, vocab - 1, prompt_len).tolist() for _ in range(n)]
        return await asyncio.gather(*(one(client, p) for p in prompts))


def _client_process(args):
    return asyncio.run(_clients(*args))


def server_bench(model_dir, clients=64, max_tokens=256, prompt_len=32, processes=4, device="cuda:0",
                 dtype="float16", temperatures=(1.0, 0.0)):
    """{temperature: (aggregate tokens/s, TTFT p50 ms, TTFT p99 ms)} of `clients` concurrent streaming openai
    clients (in `processes` processes) against one `gpk serve`, per temperature; a first untimed round at each
    captures the CUDA graphs."""
    from gpk_array.llm import GPT2Config
    vocab = GPT2Config.from_json(model_dir).vocab_size
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "gpk_array.llm.cli", "serve", "--model", str(model_dir), "--model-name", "bench",
           "--device", device, "--dtype", dtype, "--max-batch", str(clients), "--port", str(port),
           "--max-len", str(prompt_len + max_tokens), "--max-queue", str(4 * clients)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        import httpx
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"the server exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.5)
        per = clients // processes
        ctx = multiprocessing.get_context("spawn")
        out = {}
        with ctx.Pool(processes) as pool:
            for temperature in temperatures:
                for timed in (False, True):
                    results = pool.map(_client_process, [(url, per, max_tokens, prompt_len, i, vocab, temperature)
                                                         for i in range(processes)])
                done = [r for part in results for r in part if r is not None]
                if len(done) < clients:
                    raise RuntimeError(f"{clients - len(done)} of {clients} requests failed")
                tokens = sum(r[3] for r in done)
                span = max(r[2] for r in done) - min(r[0] for r in done)
                ttft = np.array([r[1] - r[0] for r in done if r[1] is not None])
                out[temperature] = (tokens / span, 1e3 * float(np.percentile(ttft, 50)),
                                    1e3 * float(np.percentile(ttft, 99)))
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# --- the table -----------------------------------------------------------------------------------------------


def _row_adder(rows):
    """row(name, ours, unit, hf16, hf32, target, note): append one table row to rows."""
    def row(name, ours, unit, hf16=None, hf32=None, target=None, note=""):
        rows.append({"benchmark": name, "gpk_array": ours, "transformers_fp16": hf16, "transformers_fp32": hf32,
                     "unit": unit, "target": target, "note": note})
    return row


def run(quick=False, device="cuda:0"):
    import gpk_array as gp
    from gpk_array.llm import GPT2
    steps = 64 if quick else 256
    rows = []
    row = _row_adder(rows)

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = pathlib.Path(tmp) / "gpt2-random"
        model_dir.mkdir()
        tokenizer = make_model_dir(model_dir)
        model = GPT2.from_pretrained(model_dir, device=device, dtype=gp.float16)
        hf = {}
        try:
            import torch
            hf = {"fp16": hf_model(model_dir, torch.float16), "fp32": hf_model(model_dir, torch.float32)}
        except Exception as e:  # no torch, no transformers, or a torch without CUDA
            print(f"transformers baseline skipped: {type(e).__name__}: {e}", file=sys.stderr)

        def base(fn, *a):
            return {k: fn(m, *a) for k, m in hf.items()}

        for batch in (1, 64):
            b = base(hf_decode, batch, steps)
            greedy, how = ours_decode(model, batch, steps)
            row(f"decode batch {batch}", greedy, "tok/s", b.get("fp16"), b.get("fp32"), TARGETS[f"decode_b{batch}"],
                how)
            b = base(hf_decode, batch, steps, 16, SAMPLED)
            tps, how = ours_decode(model, batch, steps, sampling=SAMPLED)
            row(f"decode batch {batch}, sampled t=1 k=50 p=0.95", tps, "tok/s", b.get("fp16"), b.get("fp32"),
                TARGETS["sampled"], f"{tps / greedy:.2f}x greedy; {how}")
            tps, how = ours_decode(model, batch, min(steps, 64), cuda_graphs=False)
            row(f"decode batch {batch}, no graphs", tps, "tok/s", note=how)
        first, second = ours_generate_twice(model)
        reused, how = ours_decode(model, 1, 32)
        row("generate() 32 tokens, first call", first, "tok/s", note="engine built, graphs captured")
        row("generate() 32 tokens, second call", second, "tok/s", target=TARGETS["generate_twice"],
            note=f"{second / reused:.2f}x an engine reused by hand ({reused:,.0f} tok/s)")
        b = base(hf_prefill, 1024)
        row("prefill 1024 tokens, batch 1", ours_prefill(model), "ms", b.get("fp16"), b.get("fp32"),
            TARGETS["prefill_1024"])
        model = None
        hf.clear()  # free the GPU for the server process
        if "torch" in sys.modules:
            sys.modules["torch"].cuda.empty_cache()
        _server_rows(row, model_dir, tokenizer, device, quick)
    _print(rows)
    return rows


def _server_rows(row, model_dir, tokenizer, device, quick, processes=4):
    """The server rows (server_bench at temperature 1 and greedy), or rows saying why they were skipped."""
    import gpk_array as gp
    names = {1.0: "server, 64 streaming openai clients, t=1", 0.0: "server, 64 streaming openai clients, greedy"}
    try:
        import openai  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        for name in names.values():
            row(name, None, "tok/s", target=TARGETS["server_64"], note=f"skipped: {e}")
        return
    dtype = "float16" if gp.Device(device).kind == "cuda" else "float32"
    res = server_bench(model_dir, max_tokens=64 if quick else 256, device=device, dtype=dtype, processes=processes)
    for t, (tps, p50, p99) in res.items():
        row(names[t], tps, "tok/s", target=TARGETS["server_64"],
            note=f"TTFT p50 {p50:.1f} ms, p99 {p99:.1f} ms; {tokenizer} tokenizer; {processes} client processes")


def server_only(quick=False, device="cuda:0", processes=4):
    """Only the server rows, on a fresh random-weight checkpoint."""
    rows = []
    row = _row_adder(rows)

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = pathlib.Path(tmp) / "gpt2-random"
        model_dir.mkdir()
        _server_rows(row, model_dir, make_model_dir(model_dir), device, quick, processes)
    _print(rows)
    return rows


def _fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _print(rows):
    head = ("benchmark", "gpk_array", "hf fp16", "hf fp32", "unit", "target", "note")
    table = [head] + [(r["benchmark"], _fmt(r["gpk_array"]), _fmt(r["transformers_fp16"]),
                       _fmt(r["transformers_fp32"]), r["unit"], r["target"] or "", r["note"]) for r in rows]
    widths = [max(len(str(t[i])) for t in table) for i in range(len(head))]
    for t in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)).rstrip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer decode steps")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--server-only", action="store_true", help="only the server rows")
    ap.add_argument("--client-processes", type=int, default=4,
                    help="with --server-only: processes the 64 clients run in (their parsing costs CPU too)")
    args = ap.parse_args(argv)
    if args.server_only:
        rows = server_only(quick=args.quick, device=args.device, processes=args.client_processes)
    else:
        rows = run(quick=args.quick, device=args.device)
    if args.json:
        from benchmarks.__main__ import _env
        pathlib.Path(args.json).write_text(json.dumps({"env": _env(), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
