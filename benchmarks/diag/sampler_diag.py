"""GPU time of one token-sampler step (gpk_array/_kernels/cuda/sampling.cu) per setting, batch and logit spread.

    python -m benchmarks.diag.sampler_diag [--json OUT] [--phases]

For V = 50,257 float16 logits drawn from N(0, s^2) (s = 0.55 is what a random-weight GPT-2 gives, s = 4 a peaked
distribution like a trained model's), each setting (greedy; temperature 1 alone; with top-k 50;
with top-k 50 and top-p 0.95; top-p 0.95 alone) is captured 24 times in a CUDA graph, the graph replayed and
timed with CUDA events: GPU microseconds per step as in a captured decode step (no host launch cost), for the
one-block kernel and the cluster kernel (gpk_array/_kernels/sampling.py) in the same run, at batch 1, 4, 16, 64.
With --phases: the cluster kernel's clock64() cycles per phase (built with -DGPK_SMC_STAMPS), batch 1.
The decode step's sampled/greedy ratio (benchmarks/llm_bench.py) is lost or won here.
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


def _step(logits, kw, dev):
    """One sampler step over the rows of logits with SamplingParams(**kw) in every slot (seed = the row), as a
    function of no arguments; its buffers are made here, once."""
    import gpk_array as gp
    from gpk_array.llm.sampling import SamplingParams, SlotSampler
    B, V = logits.shape
    s = SlotSampler(B, V, dev)
    for i in range(B):
        s.set_slot(i, SamplingParams(**kw, seed=i), i, 4)
    s.upload()
    pos = gp.asarray(np.full(B, 10, np.int64), device=dev)
    tok = gp.asarray(np.arange(B, dtype=np.int64), device=dev)
    out = gp.zeros((B,), dtype=gp.int64, device=dev)
    lp = gp.zeros((B, 21), dtype=gp.float32, device=dev)
    ids = gp.zeros((B, 20), dtype=gp.int32, device=dev)
    return lambda: s.run(logits, tok=tok, pos=pos, out=out, logprobs=lp, logprob_ids=ids)


def run(out_json=None, V=50257, reps=200):
    import cupy as cp

    import gpk_array as gp
    from benchmarks.diag.llm_profile import _graph_us
    from gpk_array._device import as_device
    from gpk_array._kernels import sampling as launcher
    dev = as_device("cuda:0")
    rows = []
    print(f"{'setting':18} {'batch':>5} {'spread':>6} {'block us':>9} {'cluster us':>10} {'x block':>8} "
          f"{'cl x greedy':>11}")
    default = launcher.use_cluster
    for B in (1, 4, 16, 64):
        for spread in (0.55, 4.0):
            rng = np.random.default_rng(0)
            logits = gp.asarray((rng.standard_normal((B, V)) * spread).astype(np.float16), device=dev)
            greedy_us = None
            for name, kw in SETTINGS.items():
                step = _step(logits, kw, dev)
                us = {}
                for kernel in ("block", "cluster"):
                    launcher.use_cluster = (lambda V, R=1: False) if kernel == "block" else (lambda V, R=1: True)
                    us[kernel] = _graph_us(cp, step)
                launcher.use_cluster = default
                greedy_us = us["cluster"] if name == "greedy" else greedy_us
                rows.append(dict(setting=name, batch=B, spread=spread, block_us=us["block"], cluster_us=us["cluster"],
                                 cluster_x_greedy=us["cluster"] / greedy_us))
                print(f"{name:18} {B:>5} {spread:>6} {us['block']:>9.1f} {us['cluster']:>10.1f} "
                      f"{us['block'] / us['cluster']:>8.2f} {us['cluster'] / greedy_us:>11.2f}")
    if out_json:
        with open(out_json, "w") as f:
            from benchmarks.__main__ import _env
            json.dump({"env": _env(), "rows": rows}, f, indent=1)
    return rows


STAMP_NAMES = {0: "start", 1: "penalty state", 2: "load + local argmax", 3: "cluster max", 4: "keys",
               5: "bin histogram", 6: "barrier", 7: "bin gather", 8: "top-k bin search", 9: "top-k select",
               10: "top-p bin search", 11: "top-p select", 12: "draw: block totals", 13: "barrier",
               14: "cluster totals", 15: "draw: token", 16: "token written"}
STAMP_NAMES.update({40: "start", 41: "load + max (work row)", 42: "block argmax", 43: "keys (work row)",
                    44: "top-k radix select", 45: "top-k survivors", 46: "top-p (large path)",
                    47: "draw"})
for _p in range(6):
    STAMP_NAMES.update({20 + 3 * _p: f"radix {_p}: histogram", 21 + 3 * _p: f"radix {_p}: barrier",
                        22 + 3 * _p: f"radix {_p}: gather + digit search"})


def phases(out_json=None, V=50257, B=1, spread=0.55, defines=()):
    """The cluster kernel built with -DGPK_SMC_STAMPS: clock64() cycles between the numbered points of
    sample_row_cl (block 0, thread 0) per setting, one eager step after warm-up."""
    import cupy as cp

    import gpk_array as gp
    from gpk_array._device import as_device
    from gpk_array._kernels import loader
    from gpk_array._kernels import sampling as launcher
    opts = ("-DGPK_SMC_STAMPS",) + tuple(f"-D{d}" for d in defines)
    real = loader.get_function
    loader.get_function = lambda f, name, options=(): real(f, name, opts if f == launcher.SAMPLING_FILE else options)
    default = launcher.use_cluster
    stamps = loader.get_module(launcher.SAMPLING_FILE, opts).get_global("gpk_smc_stamps")
    dev = as_device("cuda:0")
    rng = np.random.default_rng(0)
    logits = gp.asarray((rng.standard_normal((B, V)) * spread).astype(np.float16), device=dev)
    res = {}
    try:
        for kernel in ("block", "cluster"):
            launcher.use_cluster = (lambda V, R=1: False) if kernel == "block" else (lambda V, R=1: True)
            for name, kw in SETTINGS.items():
                step = _step(logits, kw, dev)
                for _ in range(3):
                    stamps.memset(0, 64 * 8)
                    step()
                    cp.cuda.get_current_stream().synchronize()
                host = np.empty(64, np.int64)
                stamps.copy_to_host(host.ctypes.data, 64 * 8)
                marks = sorted((int(t), i) for i, t in enumerate(host) if t)
                t0 = marks[0][0]
                res[f"{kernel} {name}"] = [(STAMP_NAMES.get(i, str(i)), t - t0) for t, i in marks]
                print(f"-- {kernel} {name}: {marks[-1][0] - t0} cycles")
                prev = t0
                for t, i in marks[1:]:
                    print(f"   {STAMP_NAMES.get(i, str(i)):34} {t - prev:8d}")
                    prev = t
    finally:
        loader.get_function = real
        launcher.use_cluster = default
    if out_json:
        with open(out_json, "w") as f:
            from benchmarks.__main__ import _env
            json.dump({"env": _env(), "V": V, "batch": B, "spread": spread, "defines": list(defines),
                       "phases": res}, f, indent=1)
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--phases", action="store_true", help="cycles per phase of the cluster kernel (one row)")
    ap.add_argument("--define", action="append", default=[], help="with --phases: a macro to build with")
    a = ap.parse_args()
    if a.phases:
        phases(a.json, defines=a.define)
    else:
        run(a.json)
