"""Elementwise build and launch settings against the 2^28-element targets, per op kind (not only add).

    python -m benchmarks.diag.ew_settings_diag [--p 28] [--rounds 2] [--json OUT]

The elementwise tuning sweep (``kernels_bench elementwise_tune``) times ``add`` alone; one-input streams
(x * scalar, unary ops, row / column broadcasts) read one array and write one, and may want other settings.
This times each setting of ``elementwise.CONFIG`` below on add, multiply(x, s), negative, exp, add(bias row) and
subtract(column), float32 and float16, in interleaved rounds, beside a device-to-device cudaMemcpyAsync of the
same bytes (the copy ceiling) measured in the same run, and checks that every setting's output equals the
default's bit for bit. GB/s count bytes read + written. The modules are compiled first, in parallel
(``prebuild``), so compile time stays out of the timings.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys

import numpy as np

SETTINGS = [
    {},
    {"load": 1}, {"load": 2}, {"load": 3}, {"load": 4}, {"load": 5}, {"load": 6},
    {"store": 1}, {"store": 2},
    {"load": 5, "store": 1}, {"load": 6, "store": 2},
    {"unroll": 8}, {"unroll": 8, "load": 6},
    {"waves": 2}, {"threads": 512}, {"threads": 1024},
    {"threads": 256, "waves": 1},   # the launch before session 11: one persistent wave of 256-thread blocks
]


def _label(cfg: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items()) or "default"


def _time_dtype(cupy, ew, base, settings, dt, n, rounds, res):
    """Every setting on every op for one dtype, ``rounds`` interleaved rounds, into res[(dtype, op, setting)]."""
    from benchmarks.kernels_bench import _rand, _time_per_call
    isz = dt.itemsize
    x = _rand(cupy, (n,), dt)
    y = _rand(cupy, (n,), dt)
    out = cupy.empty_like(x)
    s = cupy.asarray(np.asarray(1.5, dtype=dt))
    x2, out2 = x.reshape(n // 1024, 1024), out.reshape(n // 1024, 1024)
    bias, col = y[:1024], y[: n // 1024].reshape(n // 1024, 1)
    ops = {
        "add": (lambda: ew.binary("add", x, y, out=out), 3 * n * isz),
        "multiply(x,s)": (lambda: ew.binary("multiply", x, s, out=out), 2 * n * isz),
        "negative": (lambda: ew.unary("negative", x, out=out), 2 * n * isz),
        "exp": (lambda: ew.unary("exp", x, out=out), 2 * n * isz),
        "add(bias row)": (lambda: ew.binary("add", x2, bias, out=out2), 2 * n * isz),
        "sub(column)": (lambda: ew.binary("subtract", x2, col, out=out2), 2 * n * isz),
    }

    def memcpy():
        out.data.copy_from_device_async(x.data, n * isz)

    bits = cupy.uint16 if isz == 2 else cupy.uint32
    ref = {}
    ew.CONFIG.update(base)
    for op, (fn, _) in ops.items():
        fn()
        ref[op] = out.copy()
    for rnd in range(rounds):
        t = _time_per_call(cupy, memcpy, 7, 3)
        res.setdefault((dt.name, "memcpy D2D", "-"), []).append(2 * n * isz / t / 1e9)
        for cfg in settings:
            ew.CONFIG.update(base)
            ew.CONFIG.update(cfg)
            for op, (fn, nbytes) in ops.items():
                fn()
                if rnd == 0 and not bool(cupy.array_equal(out.view(bits), ref[op].view(bits))):
                    print(f"MISMATCH {dt.name} {op} {_label(cfg)}", flush=True)
                t = _time_per_call(cupy, fn, 7, 3)
                res.setdefault((dt.name, op, _label(cfg)), []).append(nbytes / t / 1e9)
    ew.CONFIG.update(base)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--p", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--settings", help="a JSON list of CONFIG dicts to time in place of SETTINGS ({} first)")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--json")
    a = ap.parse_args(argv)

    import cupy

    from gpk_array._kernels import elementwise as ew
    pb = importlib.import_module("gpk_array._kernels.prebuild")   # the package exports a function of that name

    settings = json.loads(a.settings) if a.settings else SETTINGS
    base = dict(ew.CONFIG)
    from benchmarks.kernels_bench import _dtype
    dts = [_dtype(d) for d in a.dtypes.split(",")]
    todo = set()
    for cfg in settings:
        ew.CONFIG.update(base)
        ew.CONFIG.update(cfg)
        for dt in dts:
            code = ew.dtype_code(dt)
            todo.add((ew.BINARY_FILE, ew.module_options(code, "arith")))
            todo.add((ew.UNARY_FILE, ew.module_options(code, "basic")))
            todo.add((ew.UNARY_FILE, ew.module_options(code, "math")))
    ew.CONFIG.update(base)
    built = pb.prebuild(jobs=a.jobs, variants=sorted(todo))
    print(f"modules: {len(built)}, compiled {sum(not b.get('cached', False) for b in built)}, "
          f"{max((b.get('seconds') or 0) for b in built):.1f} s the longest", flush=True)

    n = 1 << a.p
    res: dict = {}
    for dt in dts:
        _time_dtype(cupy, ew, base, settings, dt, n, a.rounds, res)
        cupy.get_default_memory_pool().free_all_blocks()

    rows = []
    print(f"\n2^{a.p} elements, GB/s (read + written), median of {a.rounds} interleaved rounds; x = / default")
    labels = [_label(c) for c in settings]
    for dt in dts:
        mc = statistics.median(res[(dt.name, "memcpy D2D", "-")])
        print(f"\n{dt.name}: memcpy D2D {mc:.0f} GB/s")
        opnames = ["add", "multiply(x,s)", "negative", "exp", "add(bias row)", "sub(column)"]
        print(f"{'setting':28s}" + "".join(f"{o:>20s}" for o in opnames))
        for lab in labels:
            cells = []
            for op in opnames:
                v = statistics.median(res[(dt.name, op, lab)])
                d = statistics.median(res[(dt.name, op, "default")])
                cells.append(f"{v:9.0f} x{v / d:5.3f}   ")
                rows.append({"dtype": dt.name, "op": op, "setting": lab, "gbs": v, "x_default": v / d,
                             "memcpy_gbs": mc, "rounds": res[(dt.name, op, lab)]})
            print(f"{lab:28s}" + "".join(f"{c:>20s}" for c in cells))
    if a.json:
        from benchmarks.__main__ import _env
        with open(a.json, "w") as f:
            json.dump({"env": _env(), "p": a.p, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
