"""Decode tokens/s of benchmarks/llm_bench.py's decode rows (ours only) with each sampler kernel.

    python -m benchmarks.diag.sampler_decode [--json OUT] [--steps 256]

GPT-2 124M fp16 with random weights on cuda:0, 256 graph-captured decode steps at batch 1 and 64, greedy and
sampled (llm_bench.SAMPLED: temperature 1, top-k 50, top-p 0.95), once with the one-block sampler kernel forced
and once with the launcher's own choice (the cluster kernel where gpk_array/_kernels/sampling.py's use_cluster
takes it): the sampled/greedy ratio the issue's target is about, per kernel, in one run.
"""
import argparse
import json
import pathlib
import tempfile


def run(out_json=None, steps=256):
    import gpk_array as gp
    from benchmarks.llm_bench import SAMPLED, make_model_dir, ours_decode
    from gpk_array._kernels import sampling as launcher
    from gpk_array.llm import GPT2
    default = launcher.use_cluster
    rows = []
    print(f"{'kernel':7} {'batch':>5} {'greedy tok/s':>13} {'sampled tok/s':>14} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp) / "m"
        d.mkdir()
        make_model_dir(d)
        model = GPT2.from_pretrained(d, device="cuda:0", dtype=gp.float16)
        try:
            for kernel in ("block", "auto"):
                launcher.use_cluster = (lambda V, rows=1: False) if kernel == "block" else default
                for batch in (1, 64):
                    g, _ = ours_decode(model, batch, steps)
                    s, _ = ours_decode(model, batch, steps, sampling=SAMPLED)
                    rows.append(dict(kernel=kernel, batch=batch, greedy_tok_s=g, sampled_tok_s=s, ratio=s / g))
                    print(f"{kernel:7} {batch:5} {g:13.0f} {s:14.0f} {s / g:6.2f}", flush=True)
        finally:
            launcher.use_cluster = default
    if out_json:
        from benchmarks.__main__ import _env
        with open(out_json, "w") as f:
            json.dump({"env": _env(), "steps": steps, "sampled": SAMPLED, "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--steps", type=int, default=256)
    a = ap.parse_args()
    run(a.json, a.steps)
