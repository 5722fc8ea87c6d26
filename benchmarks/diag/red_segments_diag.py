"""Full and column reductions with more, shorter segments (session 11): python -m benchmarks.diag.red_segments_diag

CONFIG waves / block_min_seg / fin / col_waves settings against the defaults for float32 and float16 sums (max, argmax
for float32) of 2^28 and 2^24 elements and float32 column sums of (1024, 262144); GB/s read, CUDA events, 10 calls,
best of 5, two rounds, CuPy beside; "~" marks a setting whose sum differs in bits (another summation order) but agrees
within 1e-3. Writes $OUT/diag_red_waves.json. Results: benchmarks/results/h200_2026-12-01_s11_diag_red_waves_*.
Finding: more segments lose (each extra partial costs the combine more than launch order gains)."""
import json
import os

import numpy as np

OUT = os.environ.get("OUT", "/tmp")


def timed(cp, fn, nbytes, calls=10, reps=5):
    fn()
    cp.cuda.Device().synchronize()
    best = None
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        t = cp.cuda.get_elapsed_time(s, e) * 1e-3 / calls
        best = t if best is None else min(best, t)
    return nbytes / best / 1e9


def main():
    import cupy as cp

    from gpk_array._kernels import reduction as red
    base_cfg = dict(red.CONFIG)
    rng = np.random.default_rng(0)
    N = 1 << 28
    data = {"f32": cp.asarray(rng.uniform(-1, 1, N).astype(np.float32)),
            "f16": cp.asarray(rng.uniform(-1, 1, N).astype(np.float16))}
    cases = []
    for dt, a in data.items():
        for p in (28, 24):
            for op in ("sum", "max", "argmax"):
                if dt == "f16" and op != "sum":
                    continue
                cases.append((f"{dt} {op} 2^{p}", a[: 1 << p], op))
        if dt == "f32":
            cases.append(("f32 sum cols (1024,262144)", a.reshape(1024, 262144), "sumcol"))
    configs = {"base": {}, "w4": {"waves": 4}, "w8": {"waves": 8}, "w16": {"waves": 16}, "w32": {"waves": 32},
               "w8s16k": {"waves": 8, "block_min_seg": 16384}, "w32s16k": {"waves": 32, "block_min_seg": 16384},
               "w16fk": {"waves": 16, "fin": "kernel"}, "w32fk": {"waves": 32, "fin": "kernel"},
               "cw2": {"col_waves": 2}, "cw8": {"col_waves": 8}}
    def call(x, op):
        if op == "sumcol":
            return red.reduce("sum", x, axis=0)
        return red.reduce(op, x)
    res = {c: {} for c in configs}
    refs = {}
    for name, x, op in cases:
        red.CONFIG.update(base_cfg)
        refs[name] = call(x, op)
    cfn = {"sum": lambda x: cp.sum(x), "max": lambda x: cp.max(x), "argmax": lambda x: cp.argmax(x),
           "sumcol": lambda x: cp.sum(x, axis=0)}
    cup = {name: timed(cp, lambda x=x, op=op: cfn[op](x), x.nbytes) for name, x, op in cases}
    for r in range(2):
        for name, x, op in cases:
            for cname, over in configs.items():
                red.CONFIG.update(base_cfg)
                red.CONFIG.update(over)
                y = call(x, op)
                same = bool(cp.array_equal(y.reshape(-1).view(cp.uint8), refs[name].reshape(-1).view(cp.uint8)))
                close = bool(cp.allclose(y.astype(cp.float64), refs[name].astype(cp.float64), rtol=1e-3, atol=1e-2))
                g = timed(cp, lambda x=x, op=op: call(x, op), x.nbytes)
                res[cname].setdefault(name, []).append((g, same, close))
    red.CONFIG.update(base_cfg)
    print(f"{'case':30} {'cupy':>7} " + " ".join(f"{c:>8}" for c in configs))
    for name, x, op in cases:
        best = {c: max(g for g, s, cl in res[c][name]) for c in configs}
        flags = "".join("" if all(s for g, s, cl in res[c][name])
                        else (" ~" + c if all(cl for g, s, cl in res[c][name]) else " BAD:" + c) for c in configs)
        print(f"{name:30} {cup[name]:7.1f} " + " ".join(f"{best[c]:8.1f}" for c in configs) + flags, flush=True)
    with open(f"{OUT}/diag_red_waves.json", "w") as fh:
        json.dump({"cupy": cup, "res": res, "configs": configs}, fh, indent=1)


if __name__ == "__main__":
    main()
