"""Where a GPT-2 124M decode step and a 1,024-token prefill spend their time on a GPU (float16, random weights).

    python -m benchmarks.diag.llm_profile [--json OUT]

Prints: host time per Engine.step() at batch 1 and 32 beside the GPU time of the captured decode graph alone
(events around graph replays), the host-side pieces of a step (upload of token/position, reading the next token
back), and the GPU time of each op of one layer inside a CUDA graph (24 calls captured, the graph replayed), for decode
(T = 1) and prefill (T = 1024). Evidence for where the decode and prefill targets of benchmarks/llm_bench.py are lost.
"""
import argparse
import json
import math
import time

import numpy as np


def _graph_us(cp, fn, reps=24):
    """GPU microseconds of one call of fn inside a CUDA graph (reps calls captured, the graph replayed 5 times):
    what the op costs in a captured decode step, without the host's launch overhead."""
    from gpk_array.llm.graphs import CudaGraphs
    graphs = CudaGraphs()

    def many():
        for _ in range(reps):
            fn()
    try:
        graphs.run("op", many)
    except Exception as e:  # not capturable: report why
        return f"not capturable: {type(e).__name__}: {str(e)[:60]}"
    graph = graphs.graphs["op"]
    stream = cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    stream.synchronize()
    start.record(stream)
    for _ in range(5):
        graph.launch(stream=stream)
    end.record(stream)
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1e3 / (5 * reps)


def _gpu_us(cp, fn, reps=50):
    fn()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    cp.cuda.get_current_stream().synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1e3 / reps


def _host_us(fn, reps=200):
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) * 1e6 / reps


def op_times(gp, cp, model, T, kv_len=None):
    """GPU microseconds of each op of layer 0 for B=1 and T tokens (decode with a cache when kv_len is given)."""
    c = model.config
    blk = model.blocks[0]
    dev = model.device
    dt = model.dtype
    rng = np.random.default_rng(0)
    x = gp.asarray(rng.standard_normal((1, T, c.n_embd)).astype(np.float32), device=dev)
    x = gp.astype(x, dt)
    h3 = gp.astype(gp.asarray(rng.standard_normal((1, T, c.inner_dim)).astype(np.float32), device=dev), dt)
    out = {
        "layer_norm": _graph_us(cp, lambda: gp.layer_norm(x, blk.ln_1_weight, blk.ln_1_bias)),
        "add_layer_norm": _graph_us(cp, lambda: gp.add_layer_norm(x, x, blk.ln_2_weight, blk.ln_2_bias)),
        "add_layer_norm_linear qkv": _graph_us(cp, lambda: gp.add_layer_norm_linear(
            x, x, blk.ln_1_weight, blk.ln_1_bias, blk.attn_c_attn_weight, blk.attn_c_attn_bias)),
        "linear qkv": _graph_us(cp, lambda: gp.linear(x, blk.attn_c_attn_weight, blk.attn_c_attn_bias)),
        "linear attn proj": _graph_us(cp, lambda: gp.linear(x, blk.attn_c_proj_weight, blk.attn_c_proj_bias)),
        "linear fc + gelu": _graph_us(cp, lambda: gp.linear(x, blk.mlp_c_fc_weight, blk.mlp_c_fc_bias,
                                                          activation=c.activation)),
        "linear mlp proj": _graph_us(cp, lambda: gp.linear(h3, blk.mlp_c_proj_weight, blk.mlp_c_proj_bias)),
    }
    H, D = c.n_head, c.head_dim
    if kv_len is not None:
        cache = model.new_cache(1, kv_len)
        qkv = gp.astype(gp.asarray(rng.standard_normal((1, 3, H, D)).astype(np.float32), device=dev), dt)
        pos = gp.asarray(np.array([kv_len - 1]), device=dev)
        out["kv_cache_attention"] = _graph_us(cp, lambda: gp.kv_cache_attention(qkv, cache.layers[0], pos, kv_len,
                                                                               blk.scale))
        xl = gp.reshape(x, (1, c.n_embd))
        out["lm head (x @ wte.T)"] = _graph_us(cp, lambda: gp.linear(xl, model.wte))
        logits = gp.linear(xl, model.wte)
        out["argmax (vocab)"] = _graph_us(cp, lambda: gp.argmax(logits, axis=-1))
        tok = gp.asarray(np.array([5]), device=dev)
        out["embedding (2 takes + add)"] = _graph_us(cp, lambda: gp.take(model.wte, tok, axis=0)
                                                     + gp.take(model.wpe, tok, axis=0))
        out["residual x + y"] = _graph_us(cp, lambda: x + x)
    else:
        q = gp.astype(gp.asarray(rng.standard_normal((1, H, T, D)).astype(np.float32), device=dev), dt)
        out["attention (causal)"] = _graph_us(cp, lambda: gp.scaled_dot_product_attention(q, q, q, causal=True,
                                                                                         scale=1 / math.sqrt(D)))
        xl = gp.reshape(x[:, -1], (1, c.n_embd))
        out["lm head, last token"] = _graph_us(cp, lambda: gp.linear(xl, model.wte))
    return out


def engine_times(gp, cp, model, batch, steps=200, prompt_len=16):
    from gpk_array.llm import Engine, Sequence
    from gpk_array.llm.engine import _upload
    engine = Engine(model, max_batch=batch, max_len=prompt_len + steps + 64)
    rng = np.random.default_rng(1)
    seqs = [Sequence(rng.integers(0, model.config.vocab_size - 1, prompt_len), max_new_tokens=steps + 40)
            for _ in range(batch)]
    engine.add(seqs)
    for _ in range(5):
        engine.step()
    cp.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    n = steps // 2
    for _ in range(n):
        engine.step()
    res = {"batch": batch, "step_host_us": (time.perf_counter() - t0) * 1e6 / n,
           "graphs": engine.graphs is not None, "graph_error": engine.graph_error}
    if engine.graphs is not None:
        key = next(k for k in engine.graphs.graphs if k[0] == "decode")
        graph = engine.graphs.graphs[key]
        res["graph_replay_gpu_us"] = _gpu_us(cp, lambda: graph.launch(stream=cp.cuda.get_current_stream()))
        res["graph_launch_host_us"] = _host_us(lambda: graph.launch(stream=cp.cuda.get_current_stream()), 100)
        cp.cuda.get_current_stream().synchronize()
    res["upload_host_us"] = _host_us(lambda: _upload(engine._io, engine._io_host))
    res["read_next_host_us"] = _host_us(lambda: engine._fetch(engine._out, engine.max_batch, engine.active)())
    return res


def prefill_graph_us(gp, cp, model, n=1024):
    from gpk_array.llm import Engine, Sequence
    engine = Engine(model, max_batch=1, max_len=n)
    prompt = np.random.default_rng(2).integers(0, model.config.vocab_size - 1, n)
    for _ in range(2):
        s = Sequence(prompt, max_new_tokens=1)
        engine.add([s])
        engine.release(s)
    res = {"graphs": engine.graphs is not None, "graph_error": engine.graph_error}
    if engine.graphs is not None:
        key = next(k for k in engine.graphs.graphs if k[0] == "prefill")
        graph = engine.graphs.graphs[key]
        res["prefill_graph_gpu_us"] = _gpu_us(cp, lambda: graph.launch(stream=cp.cuda.get_current_stream()), 20)
    t0 = time.perf_counter()
    for _ in range(10):
        s = Sequence(prompt, max_new_tokens=1)
        engine.add([s])
        engine.release(s)
    res["prefill_host_us"] = (time.perf_counter() - t0) * 1e6 / 10
    return res


def run():
    import cupy as cp

    import gpk_array as gp
    from gpk_array.llm import GPT2, GPT2Config, random_weights
    cfg = GPT2Config.gpt2()
    model = GPT2.from_weights(cfg, random_weights(cfg, 0), device="cuda:0", dtype=gp.float16)
    out = {"decode_ops_us": op_times(gp, cp, model, 1, kv_len=272),
           "prefill_ops_us": op_times(gp, cp, model, 1024),
           "engine_b1": engine_times(gp, cp, model, 1), "engine_b32": engine_times(gp, cp, model, 32),
           "prefill": prefill_graph_us(gp, cp, model)}
    for k, v in out.items():
        print(f"== {k}")
        for name, val in v.items():
            print(f"   {name:28s} {val:10.1f}" if isinstance(val, float) else f"   {name:28s} {val}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    out = run()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
