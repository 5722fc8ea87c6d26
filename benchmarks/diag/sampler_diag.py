"""GPU time of one token-sampler step (gpk_array/_kernels/cuda/sampling.cu) per setting, batch and logit spread.

    python -m benchmarks.diag.sampler_diag [--json OUT]

For V = 50,257 float16 logits drawn from N(0, s^2) (s = 0.55 is what a random-weight GPT-2 gives, s = 4 a peaked
distribution like a trained model's), batch 1 and 64, each setting (greedy; temperature 1 alone; with top-k 50;
with top-k 50 and top-p 0.95; top-p 0.95 alone) is launched 200 times back to back and timed with CUDA events:
microseconds per step. The decode step's sampled/greedy ratio (benchmarks/llm_bench.py) is lost or won here.
"""
import argparse
import json

import numpy as np

SETTINGS = {
    "greedy": {},
    "t=1": dict(temperature=1.0),
    "t=1 k=50": dict(temperature=1.0, top_k=50),
    "t=1 k=50 p=0.95": dict(temperature=1.0, top_k=50, top_p=0.95),
    "t=1 p=0.95": dict(temperature=1.0, top_p=0.95),
}


def run(out_json=None, V=50257, reps=200):
    import cupy as cp

    import gpk_array as gp
    from gpk_array._device import as_device
    from gpk_array.llm.sampling import SamplingParams, SlotSampler
    dev = as_device("cuda:0")
    rows = []
    print(f"{'setting':18} {'batch':>5} {'spread':>6} {'us/step':>9} {'x greedy':>9}")
    for B in (1, 64):
        for spread in (0.55, 4.0):
            rng = np.random.default_rng(0)
            logits = gp.asarray((rng.standard_normal((B, V)) * spread).astype(np.float16), device=dev)
            greedy_us = None
            for name, kw in SETTINGS.items():
                s = SlotSampler(B, V, dev)
                for i in range(B):
                    s.set_slot(i, SamplingParams(**kw, seed=i), i, 4)
                s.upload()
                pos = gp.asarray(np.full(B, 10, np.int64), device=dev)
                tok = gp.asarray(np.arange(B, dtype=np.int64), device=dev)
                out = gp.zeros((B,), dtype=gp.int64, device=dev)
                lp = gp.zeros((B, 21), dtype=gp.float32, device=dev)
                ids = gp.zeros((B, 20), dtype=gp.int32, device=dev)

                def step():
                    s.run(logits, tok=tok, pos=pos, out=out, logprobs=lp, logprob_ids=ids)
                for _ in range(5):
                    step()
                start, end = cp.cuda.Event(), cp.cuda.Event()
                cp.cuda.get_current_stream().synchronize()
                start.record()
                for _ in range(reps):
                    step()
                end.record()
                end.synchronize()
                us = cp.cuda.get_elapsed_time(start, end) * 1e3 / reps
                greedy_us = us if name == "greedy" else greedy_us
                rows.append(dict(setting=name, batch=B, spread=spread, us=us, x_greedy=us / greedy_us))
                print(f"{name:18} {B:>5} {spread:>6} {us:>9.1f} {us / greedy_us:>9.2f}")
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    run(ap.parse_args().json)
