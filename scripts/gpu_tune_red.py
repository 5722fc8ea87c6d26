#!/usr/bin/env python3
"""One GPU run that checks and times the reduction kernels' candidate settings (gpk_array/_kernels/reduction.py).

    python3 scripts/gpu_tune_red.py [--budget SECONDS] [--rounds N] [--skip-check]

1. Builds every candidate's modules in parallel (NVRTC; separate cubins per build setting, no package rebuild).
2. Correctness of every candidate against float64 references (NumPy on the host for small shapes, CuPy float64 for
   the 1 GiB ones): sum, mean, max, argmax, var over all elements, axis 0 and axis 1, float32/float16/bfloat16,
   small odd shapes, split and unsplit plans, both ways of finishing split results; determinism (bit-identical
   repeats). argmax and var for the builds in STAT_BUILDS (the others: sum, mean, max), to keep the compile short.
3. GB/s (bytes read / time) of each candidate against CuPy on the targets: float32 sum/max/mean of 2^28 elements,
   sum over axis 1 of (262144, 1024), over axis 0 of (1024, 262144); float16/bfloat16 full sum, float16 rows and
   columns. Stage 1 times every build at default launch settings, stage 2 the best three builds of each shape with
   its launch settings (waves, fin, col_tx, col_vec). Times: CUDA events around batches of back-to-back calls,
   candidates and CuPy interleaved round by round (so clock drift hits all alike); the table shows the median of the
   rounds (GB/s) and the best round.
4. Which of ours and CuPy's float16 row sums is right (errors against float64), and float32 crossovers against CuPy
   at 2^22 .. 2^28 elements (for gpk_array/_gpu.py's REDUCE_ROUTE).

Prints as it goes (flushes), writes $OUT/red_tune.json (if OUT is set) after every section, and stops starting new
sections once --budget seconds have passed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpk_array._kernels import loader, reduction as red  # noqa: E402

# Candidate build settings (each builds its own modules): name -> CONFIG overrides (absolute: u8nc is the default
# chosen from this script's first H200 run).
BUILDS = {
    "base": {"unroll": 4, "load": 0},                             # reduce.cu's defaults before the H200 tuning
    "nobound": {"unroll": 4, "load": 0, "min_blocks": 0},         # no launch bounds (the old code generation)
    "u8": {"unroll": 8, "load": 0},
    "u8nc": {"unroll": 8, "load": 1},                             # ld.global.nc.L1::no_allocate
    "u8cs": {"unroll": 8, "load": 2},                             # ld.global.cs (evict first)
    "u8pf": {"unroll": 8, "load": 3},                             # .nc.L1::no_allocate.L2::256B
    "u8m4nc": {"unroll": 8, "min_blocks": 4, "load": 1},
    "u12nc": {"unroll": 12, "load": 1},
    "u16m2nc": {"unroll": 16, "min_blocks": 2, "load": 1},
    "a4u4": {"async": 4, "unroll": 4, "load": 0},                            # cp.async pipeline, 4 stages of 4 vectors
    "a3u8": {"async": 3, "unroll": 8, "min_blocks": 2, "load": 0},
    "v8nc": {"unroll": 8, "vcol_unroll": 8, "load": 1},           # column kernel: 8 vector loads in flight
}

# Builds whose argmax/var modules are built and checked too (the others: sum, mean, max), to keep the compile short.
STAT_BUILDS = ("base", "u8nc", "a4u4", "u16m2nc")

# Launch settings swept in stage 2, per shape kind.
LAUNCH = {
    "full": [dict(waves=w, fin=f) for w in (1, 2, 4, 8) for f in ("last", "kernel")],
    "rows": [dict(warp_waves=w) for w in (1, 2, 4, 0)],
    "cols": [dict(col_waves=w, col_tx=t, col_vec=v) for w in (1, 2, 4) for t in (32, 64) for v in (True,)]
    + [dict(col_vec=False)],
}

SAVED = dict(red.CONFIG)
OUT: dict = {"builds": BUILDS, "launch": LAUNCH, "errors": [], "check": [], "timing": [], "notes": []}
T0 = time.perf_counter()


def log(*a):
    print(*a, flush=True)


def save():
    d = os.environ.get("OUT")
    if d:
        with open(Path(d) / "red_tune.json", "w") as f:
            json.dump(OUT, f, indent=1, default=str)


def configure(build=None, launch=None):
    red.CONFIG.clear()
    red.CONFIG.update(SAVED)
    red.CONFIG.update(BUILDS[build] if build else {})
    red.CONFIG.update(launch or {})


def bf16():
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16)}


def dtype(name):
    return bf16() if name == "bfloat16" else DTYPES[name]


# ----------------------------------------------------------------------------------------------------------------
# 1. build

def build_all(jobs):
    arch = loader.device_arch()
    todo = set()
    for b in BUILDS:
        configure(b)
        for dt in ("f32", "f16", "bf16"):
            for group in ("basic", "stat") if b in STAT_BUILDS else ("basic",):
                todo.add((red.REDUCE_FILE, red.module_options(dt, group)))
    configure()
    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        infos = list(pool.map(lambda v: loader.build(v[0], v[1], arch, note=False), sorted(todo)))
    built = sum(not i["cached"] for i in infos)
    log(f"built {built} of {len(infos)} modules for sm_{arch} in {time.perf_counter() - t:.1f}s ({jobs} jobs)")
    OUT["notes"].append(f"modules: {len(infos)} ({built} built) in {time.perf_counter() - t:.1f}s")


# ----------------------------------------------------------------------------------------------------------------
# 2. correctness

CHECK_SHAPES = [((1,), None), ((7,), None), ((4097,), None), ((1 << 20) + 5, None), ((3, 5), None),
                ((64, 1000), 1), ((8, 100003), 1), ((3, 5000), 1), ((1 << 12, 4), 1),
                ((100000, 3), 0), ((1000, 512), 0), ((33, 40), 0), ((7, 24), 0), ((2000, 72), 0), ((5, 3, 7), 1)]
CHECK_OPS = ("sum", "mean", "max", "argmax", "var")
RTOL = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 2e-2}
_refs: dict = {}


def host_data(shape, name):
    rng = np.random.default_rng(zlib.crc32(repr((shape, name)).encode()))
    x = rng.uniform(-4, 4, size=shape)
    return x.astype(dtype(name))


def reference(x, op, axis):
    x64 = x.astype(np.float64)
    if op == "sum":
        return x64.sum(axis=axis), np.abs(x64).sum(axis=axis)
    if op == "mean":
        return x64.mean(axis=axis), np.abs(x64).mean(axis=axis)
    if op == "var":
        return x64.var(axis=axis), x64.var(axis=axis)
    if op == "max":
        return x64.max(axis=axis), None
    return np.argmax(x64, axis=axis), None


def compare(got, ref, scale, op, name):
    """'' when good, else what is wrong."""
    got = np.asarray(got)
    if got.shape != np.shape(ref):
        return f"shape {got.shape} != {np.shape(ref)}"
    if op == "argmax":
        return "" if np.array_equal(got, ref) else f"{int(np.sum(got != ref))} indices differ"
    g = got.astype(np.float64)
    if op == "max":
        return "" if np.array_equal(g, ref) else f"max err {np.max(np.abs(g - ref))}"
    rtol = RTOL[name] * (4 if op == "var" else 1)
    tol = rtol * (np.abs(ref) + scale) + 1e-30
    err = np.abs(g - ref)
    return "" if np.all(err <= tol) else f"err {np.max(err):.3g} > tol {np.min(tol):.3g}"


def to_host(a, name):
    import cupy
    if name == "bfloat16" and a.dtype == bf16():
        return cupy.asnumpy(a.view(cupy.uint16)).view(bf16())
    return cupy.asnumpy(a)


def check_all():
    import cupy
    runs = [("base", dict(fin="kernel")), ("base", dict(col_vec=False))]
    stress = dict(waves=4, warp_waves=0, col_waves=2)  # more splits: the last-block path everywhere
    for b in BUILDS:
        runs += [(b, {}), (b, stress)]
    data = {}
    for name in ("float32", "float16", "bfloat16"):
        for shape, axis in CHECK_SHAPES:
            h = host_data(shape, name)
            data[(name, shape)] = (h, cupy.asarray(h))
    bad = 0
    for b, launch in runs:
        configure(b, launch)
        fails = []
        for (name, shape), (h, g) in data.items():
            for s2, axis in CHECK_SHAPES:
                if s2 != shape:
                    continue
                for op in CHECK_OPS if b in STAT_BUILDS else ("sum", "mean", "max"):
                    key = (name, shape, axis, op)
                    if key not in _refs:
                        _refs[key] = reference(h, op, axis)
                    ref, scale = _refs[key]
                    try:
                        got = to_host(red.reduce(op, g, axis), name)
                        msg = compare(got, ref, scale, op, name)
                    except Exception as e:  # noqa: BLE001
                        msg = f"{type(e).__name__}: {e}"
                    if msg:
                        fails.append(f"{op} {name} {shape} axis={axis}: {msg}")
        # determinism: bit-identical repeats of the largest full sum and column sum (split plans)
        big = max((sh for sh, ax in CHECK_SHAPES if ax is None), key=np.prod)
        big0 = max((sh for sh, ax in CHECK_SHAPES if ax == 0), key=np.prod)
        for arr, axis in ((data[("float32", big)][1], None), (data[("float32", big0)][1], 0)):
            try:
                r1, r2 = red.reduce("sum", arr, axis), red.reduce("sum", arr, axis)
                if cupy.asnumpy(r1).tobytes() != cupy.asnumpy(r2).tobytes():
                    fails.append(f"nondeterministic sum {arr.shape} axis={axis}")
            except Exception as e:  # noqa: BLE001  (a launch this build cannot make: reported, not fatal)
                fails.append(f"repeat sum {arr.shape} axis={axis}: {type(e).__name__}: {e}")
        bad += len(fails)
        row = {"build": b, "launch": launch, "failures": fails[:20], "n_failures": len(fails)}
        OUT["check"].append(row)
        log(f"check {b:9s} {json.dumps(launch):48s} {'ok' if not fails else f'{len(fails)} FAILED'}")
        for f in fails[:6]:
            log(f"    {f}")
    configure()
    save()
    return bad


# ----------------------------------------------------------------------------------------------------------------
# 3. timing

def timer(fns, rounds, batch):
    """fns: {label: fn}. Per label (median, best) seconds per call; rounds interleave the labels."""
    import cupy
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = {k: [] for k in fns}
    for k, (fn, cfg) in fns.items():  # warm-up: module loads, plans, allocations
        configure(*cfg)
        fn()
        fn()
    cupy.cuda.get_current_stream().synchronize()
    for _ in range(rounds):
        for k, (fn, cfg) in fns.items():
            configure(*cfg)
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            end.synchronize()
            times[k].append(cupy.cuda.get_elapsed_time(start, end) * 1e-3 / batch)
    configure()
    return {k: (statistics.median(v), min(v)) for k, v in times.items()}


def as_f32(a):
    """A CuPy array of float32 values (bfloat16 through its bits: CuPy has no bfloat16 arithmetic)."""
    import cupy
    if a.dtype == bf16():
        return (a.view(cupy.uint16).astype(cupy.uint32) << 16).view(cupy.float32)
    return a.astype(cupy.float32, copy=False)


def target_arrays():
    import cupy
    n = 1 << 28
    x32 = cupy.random.uniform(-2.0, 2.0, size=n, dtype=cupy.float32)
    x16 = x32.astype(cupy.float16)
    xb = (x32.view(cupy.uint32) >> 16).astype(cupy.uint16).view(bf16())  # x32 truncated to bfloat16
    return x32, x16, xb


def cases(x32, x16, xb):
    """(label, op, array, axis, CuPy's call, axis kind) for every timed target."""
    import cupy
    n = x32.size
    return [("sum f32 full", "sum", x32, None, cupy.sum, "full"),
            ("max f32 full", "max", x32, None, cupy.max, "full"),
            ("mean f32 full", "mean", x32, None, cupy.mean, "full"),
            ("sum f32 rows", "sum", x32.reshape(n // 1024, 1024), 1, cupy.sum, "rows"),
            ("sum f32 cols", "sum", x32.reshape(1024, n // 1024), 0, cupy.sum, "cols"),
            ("sum f16 full", "sum", x16, None, cupy.sum, "full"),
            ("sum f16 rows", "sum", x16.reshape(n // 1024, 1024), 1, cupy.sum, "rows"),
            ("sum f16 cols", "sum", x16.reshape(1024, n // 1024), 0, cupy.sum, "cols"),
            # CuPy cannot add bfloat16: its baseline is the float32 round trip (three passes)
            ("sum bf16 full", "sum", xb, None, lambda a, axis=None: as_f32(a).sum(axis=axis), "full")]


def time_section(label, op, arr, axis, cfn, kind, rounds, batch, builds, launches):
    import cupy
    nbytes = arr.size * arr.dtype.itemsize
    fns = {"cupy": ((lambda: cfn(arr, axis=axis)), (None, None))}
    for b in builds:
        for launch in launches:
            name = b if not launch else f"{b} {json.dumps(launch, separators=(',', ':'))}"
            fns[name] = ((lambda: red.reduce(op, arr, axis)), (b, launch))
    # each result against CuPy's float64 reduction, relative to mean|x| (max, mean) or mean|x| * K (sum)
    x64 = as_f32(arr).astype(cupy.float64)
    ref64 = cupy.asnumpy(getattr(cupy, op)(x64, axis=axis))
    k = arr.size if axis is None else arr.shape[axis]
    bound = float(cupy.abs(x64[: 1 << 20] if axis is None else x64.reshape(-1)[: 1 << 20]).mean())
    bound *= k if op == "sum" else 1
    del x64
    errs = {}
    for name, (fn, cfg) in list(fns.items()):
        configure(*cfg)
        try:
            r = cupy.asnumpy(as_f32(fn()).astype(cupy.float64))
            errs[name] = float(np.max(np.abs(r - ref64))) / max(bound, 1e-30)
        except Exception as e:  # noqa: BLE001
            log(f"  {label} {name}: {type(e).__name__}: {e}")
            OUT["errors"].append(f"{label} {name}: {type(e).__name__}: {e}")
            del fns[name]
    configure()
    t = timer(fns, rounds, batch)
    t_cupy = t.pop("cupy")[0] if "cupy" in t else None
    rows = []
    for name, (med, best) in t.items():
        rows.append({"case": label, "candidate": name, "gbs": nbytes / med / 1e9, "gbs_best": nbytes / best / 1e9,
                     "cupy_gbs": nbytes / t_cupy / 1e9 if t_cupy else None,
                     "ratio": t_cupy / med if t_cupy else None, "us": med * 1e6,
                     "rel_err": errs.get(name), "cupy_rel_err": errs.get("cupy")})
    rows.sort(key=lambda r: -r["gbs"])
    cg = f"{nbytes / t_cupy / 1e9:.1f} GB/s" if t_cupy else "-"
    log(f"\n{label}  ({arr.shape}, {arr.dtype}, axis={axis}; CuPy {cg}, rel err {errs.get('cupy', float('nan')):.2e})")
    log(f"  {'candidate':58s}{'GB/s':>9s}{'best':>9s}{'x cupy':>8s}{'rel err':>10s}")
    for r in rows:
        ratio = f"{r['ratio']:8.3f}" if r["ratio"] else f"{'-':>8s}"
        log(f"  {r['candidate']:58s}{r['gbs']:9.1f}{r['gbs_best']:9.1f}{ratio}{r['rel_err']:10.2e}")
    OUT["timing"] += rows
    save()
    return rows


def top_builds(rows, k=3):
    seen = []
    for r in rows:
        b = r["candidate"].split(" ")[0]
        if b not in seen:
            seen.append(b)
    return seen[:k]


# ----------------------------------------------------------------------------------------------------------------
# 4. float16 rows: who is right; float32 crossovers

def f16_rows_accuracy(x16):
    import cupy
    a = x16.reshape(-1, 1024)[: 1 << 16]
    ref = cupy.asnumpy(a.astype(cupy.float64).sum(axis=1))
    scale = cupy.asnumpy(cupy.abs(a.astype(cupy.float64)).sum(axis=1))
    res = {}
    for name, r in (("ours", red.reduce("sum", a, 1)), ("cupy", cupy.sum(a, axis=1)),
                    ("cupy via float32", a.astype(cupy.float32).sum(axis=1).astype(cupy.float16))):
        e = np.abs(cupy.asnumpy(r).astype(np.float64) - ref)
        res[name] = {"max_abs_err": float(e.max()), "max_err_over_sum_abs": float((e / scale).max()),
                     "mean_abs_err": float(e.mean())}
    log("\nfloat16 row sums (65536 rows of 1024) against float64:")
    for k, v in res.items():
        log(f"  {k:18s} max |err| {v['max_abs_err']:.4g}  mean |err| {v['mean_abs_err']:.4g}  "
            f"max |err|/sum|x| {v['max_err_over_sum_abs']:.3g}")
    OUT["f16_rows_accuracy"] = res
    save()


def crossovers(x32, best, rounds):
    """best: kind -> (build, launch). Per-call time of ours and CuPy's at 2^22 .. 2^28 elements (host included)."""
    import cupy
    rows = []
    log("\nfloat32 crossovers (per call, host time included: back-to-back calls):")
    for p in (22, 24, 26, 28):
        n = 1 << p
        x = x32[:n]
        for kind, shape, axis in (("full", (n,), None), ("rows", (n // 1024, 1024), 1), ("cols", (1024, n // 1024), 0)):
            b, launch = best.get(kind, ("base", {}))
            a = x.reshape(shape)
            for op in ("sum", "max", "mean"):
                fns = {"cupy": ((lambda a=a, op=op, axis=axis: getattr(cupy, op)(a, axis=axis)), (None, None)),
                       "ours": ((lambda a=a, op=op, axis=axis: red.reduce(op, a, axis)), (b, launch))}
                t = timer(fns, rounds, max(4, min(200, (1 << 28) // n * 4)))
                r = {"p": p, "kind": kind, "op": op, "ours_us": t["ours"][0] * 1e6, "cupy_us": t["cupy"][0] * 1e6,
                     "ratio": t["cupy"][0] / t["ours"][0], "build": b, "launch": launch}
                rows.append(r)
                log(f"  2^{p} {kind:5s} {op:5s} ours {r['ours_us']:9.1f} us  cupy {r['cupy_us']:9.1f} us  "
                    f"x{r['ratio']:.2f}")
    OUT["crossovers"] = rows
    save()


# ----------------------------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=150.0, help="start no new section after this many seconds")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    a = ap.parse_args(argv)
    import cupy
    dev = cupy.cuda.Device(0)
    OUT["env"] = {"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sms": loader.sm_count(),
                  "cupy": cupy.__version__, "commit": os.environ.get("GPK_COMMIT", ""), "config": SAVED}
    log(f"{OUT['env']['gpu']}: {loader.sm_count()} SMs, CuPy {cupy.__version__}, cc {dev.compute_capability}")

    def left():
        return a.budget - (time.perf_counter() - T0)

    sections = []
    try:
        build_all(a.jobs)
        log(f"[{time.perf_counter() - T0:.0f}s]")
        if not a.skip_check:
            bad = check_all()
            log(f"correctness: {bad} failures [{time.perf_counter() - T0:.0f}s]")
        x32, x16, xb = target_arrays()
        best = {}
        for label, op, arr, axis, cfn, kind in cases(x32, x16, xb):
            if left() < 5:
                OUT["notes"].append(f"budget: skipped {label}")
                log(f"budget: skipped {label}")
                continue
            rows = time_section(label, op, arr, axis, cfn, kind, a.rounds, a.batch, list(BUILDS), [{}])
            sections.append(label)
            if label in ("sum f32 full", "sum f32 rows", "sum f32 cols") and left() > 10:
                tops = top_builds(rows)
                rows2 = time_section(label + " (launch settings)", op, arr, axis, cfn, kind, a.rounds, a.batch,
                                     tops, LAUNCH[kind])
                r = rows2[0]
                b = r["candidate"].split(" ")[0]
                rest = r["candidate"][len(b):].strip()
                best[kind] = (b, json.loads(rest) if rest else {})
        OUT["best"] = {k: {"build": v[0], "build_config": BUILDS[v[0]], "launch": v[1]} for k, v in best.items()}
        log(f"\nbest per kind: {json.dumps(OUT['best'])}")
        if left() > 5:
            f16_rows_accuracy(x16)
        if left() > 10:
            crossovers(x32, best, max(3, a.rounds // 2))
    except Exception:  # noqa: BLE001 - keep what was measured
        OUT["errors"].append(traceback.format_exc())
        traceback.print_exc()
    finally:
        configure()
        save()
        log(f"done in {time.perf_counter() - T0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
