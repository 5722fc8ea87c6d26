"""Benchmark of gpk_array.sched on a GPU: isolation, overhead, and a stress run.

``run()`` prints a table and returns a dict (the caller writes it as JSON):

(a) isolation: a guaranteed context runs a fixed loop of small FP16 GEMMs (each step 4 chained
    1024x768 @ 768x768 products) and records each step's latency (host launch to completion, observed through an
    event; the step's GPU time between events is reported beside it), first alone, then while two best-effort
    contexts on other threads keep the GPU busy with 8192^3 FP16 GEMMs. Every GEMM is a gpk_array matmul (cuBLASLt
    through gpk_array._kernels.blas; a paced best-effort context's GEMMs plan for its share of the SMs while the
    guaranteed context is busy). The same runs without the scheduler
    (every thread on the default stream, the big GEMM loops bounded to the same queue depth) give the baseline.
    Reported: p50/p99 per case and the p99 ratio contended / alone, with and without the scheduler, plus the
    best-effort throughput in each case.
(a2) the GPU's share alone: the same graph step while best-effort GEMMs queued on the confined streams before the
    loop run (no best-effort host activity meanwhile), the step's GEMMs planned around the confined SMs (the
    scheduler's way) or for the whole device.
(b) overhead: host time per call of a small CuPy op outside any context, inside an entered context, entering
    a context around each op, and through ``ctx.launch`` (guaranteed and paced best-effort).
(c) stress: 1,000 random allocate/free sequences over 4 contexts under a total budget (count of allocations
    beyond a budget must be 0), then the device's free memory after destroying them against the baseline.

Run: ``python -m benchmarks.sched_bench [--quick]`` or ``python benchmarks/sched_bench.py``.
"""

import gc
import random
import sys
import threading
import time

import numpy as np

MiB = 2**20

SMALL = (1024, 768, 768)  # M, K, N of the latency-critical GEMM
SMALL_CHAIN = 4  # GEMMs per step
BIG = 8192  # the best-effort GEMMs: BIG^3
SWITCH_INTERVAL = 50e-6  # seconds (sys.setswitchinterval) during the isolation runs


def _gpu_count():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def _pct(values, q):
    return float(np.percentile(np.asarray(values), q)) if len(values) else float("nan")


# --- (a) isolation --------------------------------------------------------------------------------------------


def _latency_loop(cp, stream, steps, warmup, graph=False, ctx=None):
    """Run the small-GEMM steps on the current stream; returns (host latencies s, gpu times s). graph=True: the
    step is recorded once in a CUDA graph (on a side stream, in the current context) and each step replays it on
    ``stream``, as a latency-critical server runs its steps: then the step's time is the GPU's, not Python's.
    ``ctx``: the scheduler context the loop runs in; each step ends with ``ctx.pace()`` (outside the timed span),
    the API by which a loop tells the scheduler it is busy (for a guaranteed context it records activity only)."""
    import gpk_array as gp
    m, k, n = SMALL
    a = gp.from_dlpack(cp.random.standard_normal((m, k), dtype=cp.float32).astype(cp.float16))
    w = gp.from_dlpack((cp.random.standard_normal((k, n), dtype=cp.float32) / np.sqrt(k)).astype(cp.float16))
    start = cp.cuda.Event()
    end = cp.cuda.Event(block=True)
    host, gpu = [], []

    def step():
        x = a
        for _ in range(SMALL_CHAIN):
            x = x @ w
        return x

    g = keep = x = None
    if graph:
        side = cp.cuda.Stream(non_blocking=True)
        with side:
            step()  # plans and pool blocks made outside the capture
            side.synchronize()
            side.begin_capture()
            try:
                keep = step()
            finally:
                g = side.end_capture()
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        start.record(stream)
        if g is not None:
            g.launch(stream=stream)
        else:
            x = step()
        end.record(stream)
        end.synchronize()
        t1 = time.perf_counter()
        if i >= warmup:
            host.append(t1 - t0)
            gpu.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        if ctx is not None:
            ctx.pace()
    del keep, x
    return host, gpu


def _big_gemm_worker(cp, ctx, stop, counter, errors, ready):
    """A best-effort loop of BIG^3 FP16 GEMMs; with ``ctx`` paced by the scheduler, without it on the default
    stream with at most two GEMMs queued (the scheduler's default ``max_inflight``)."""
    try:
        if ctx is not None:
            ctx.__enter__()
        try:
            import gpk_array as gp
            a = gp.ones((BIG, BIG), dtype=gp.float16, device="cuda:0")
            b = gp.ones((BIG, BIG), dtype=gp.float16, device="cuda:0")
            stream = cp.cuda.get_current_stream()
            events = []
            ready.release()
            while not stop.is_set():
                c = a @ b
                del c
                counter[0] += 1
                if ctx is not None:
                    ctx.pace()
                else:
                    ev = cp.cuda.Event(block=True)
                    ev.record(stream)
                    events.append(ev)
                    if len(events) > 2:
                        events.pop(0).synchronize()
            stream.synchronize()
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    except Exception as e:  # reported by the caller
        errors.append(e)
        ready.release()


def _contended(cp, make_ctx, latency_ctx, steps, warmup, graph=False):
    stop = threading.Event()
    counters = [[0], [0]]
    errors = []
    ready = threading.Semaphore(0)
    threads = [threading.Thread(target=_big_gemm_worker, args=(cp, make_ctx(i), stop, counters[i], errors, ready),
                                daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for _ in threads:
        ready.acquire(timeout=120)
    time.sleep(0.2)  # let them saturate the GPU
    n0 = sum(c[0] for c in counters)
    t0 = time.perf_counter()
    try:
        if latency_ctx is not None:
            with latency_ctx:
                host, gpu = _latency_loop(cp, latency_ctx.stream, steps, warmup, graph, latency_ctx)
        else:
            host, gpu = _latency_loop(cp, cp.cuda.get_current_stream(), steps, warmup, graph)
    finally:
        wall = time.perf_counter() - t0
        n1 = sum(c[0] for c in counters)
        stop.set()
        for t in threads:
            t.join(timeout=120)
    if errors:
        raise errors[0]
    tflops = (n1 - n0) * 2.0 * BIG**3 / wall / 1e12
    return host, gpu, tflops


def _summary(host, gpu):
    return {
        "p50_us": _pct(host, 50) * 1e6,
        "p99_us": _pct(host, 99) * 1e6,
        "max_us": max(host) * 1e6 if host else float("nan"),
        "gpu_p50_us": _pct(gpu, 50) * 1e6,
        "gpu_p99_us": _pct(gpu, 99) * 1e6,
    }


def bench_isolation(cp, steps=1000, warmup=50):
    """Both ways of running the latency-critical step: "graph" (recorded once, replayed: the GPU's isolation) is the
    headline; "eager" (four Python matmul calls per step) also measures the host threads sharing one interpreter."""
    out = {"small_gemm": f"{SMALL[0]}x{SMALL[1]}x{SMALL[2]} fp16 x{SMALL_CHAIN} per step",
           "big_gemm": f"{BIG}^3 fp16, 2 best-effort threads", "steps": steps,
           "switch_interval_s": SWITCH_INTERVAL}
    # The three threads share one interpreter: with CPython's default 5 ms switch interval, a best-effort thread's
    # Python (its matmul and pace calls) keeps the latency-critical thread waiting for the interpreter after its
    # synchronize returns. This benchmark starts every case at 50 us; with the scheduler, while its guaranteed and
    # best-effort contexts coexist, the scheduler's own setting applies (switch_interval, 5 us by default; "alone"
    # is measured with the same contexts alive, so under the same interval): reported per case.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        for mode in ("graph", "eager"):
            out[mode] = _isolation(cp, steps, warmup, mode == "graph")
    finally:
        sys.setswitchinterval(previous)
    return out


# The scheduler's settings compared: the defaults (a best-effort context's kernels confined to a green context of
# contention_sms SMs while the guaranteed one is busy, and paced to its contention share of the time), each
# mechanism alone, and no scheduler at all.
VARIANTS = {
    "sched": {},
    "sched_confined_only": {"contention_share": {"best_effort": 1.0}},
    "sched_paced_only": {"contention_sms": 0},
    "sched_confined8_only": {"contention_sms": 8, "contention_share": {"best_effort": 1.0}},
}


def _isolation(cp, steps, warmup, graph):
    from gpk_array import sched

    out = {}
    alone = None
    for variant, config in VARIANTS.items():
        sched.shutdown()
        sched.initialize(0, **config)
        try:
            lat = sched.create_context("latency", 1024 * MiB, qos="guaranteed")
            bes = [sched.create_context(f"batch{i}", 4096 * MiB, qos="best_effort") for i in range(2)]
            if alone is None:  # the guaranteed loop alone does not depend on the best-effort settings
                with lat:
                    alone = _summary(*_latency_loop(cp, lat.stream, steps, warmup, graph, lat))
            host, gpu, tflops = _contended(cp, lambda i: bes[i], lat, steps, warmup, graph)
            stats = [b.stats() for b in bes]
            res = {"config": {k: v for k, v in config.items()}, "alone": alone, "contended": _summary(host, gpu),
                   "switch_interval_s": sys.getswitchinterval(),  # the scheduler's while G and BE coexist
                   "best_effort_tflops": tflops,
                   "best_effort_throttled_s": [st["throttled_s"] for st in stats],
                   "best_effort_confined_steps": [st["confined_steps"] for st in stats],
                   "best_effort_steps": [st["steps"] for st in stats],
                   "confined_sms": max(st["confined_sms"] for st in stats)}
            res["p99_ratio"] = res["contended"]["p99_us"] / alone["p99_us"]
            out[variant] = res
        finally:
            sched.shutdown()
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()

    # without: everything on the default stream, no pacing
    alone = _latency_loop(cp, cp.cuda.get_current_stream(), steps, warmup, graph)
    host, gpu, tflops = _contended(cp, lambda i: None, None, steps, warmup, graph)
    res = {"alone": _summary(*alone), "contended": _summary(host, gpu), "best_effort_tflops": tflops,
           "switch_interval_s": sys.getswitchinterval()}
    res["p99_ratio"] = res["contended"]["p99_us"] / res["alone"]["p99_us"]
    out["no_sched"] = res
    gc.collect()
    cp.get_default_memory_pool().free_all_blocks()
    return out


def bench_gpu_isolation(cp, steps=1000, warmup=50, reps=3, queued=8):
    """(a2) The GPU's share of the interference alone: the graph step in the guaranteed context while best-effort
    GEMMs run that two best-effort contexts queued on their confined streams *before* the loop (no best-effort host
    activity during it, so no interpreter shared with running threads), ``queued`` BIG^3 GEMMs each (they outlast
    the loop: checked). The guaranteed step's GEMMs planned around the confined SMs (the scheduler's way) or for
    the whole device (its SM target forced to 0), alternating, ``reps`` times each. The two modes may also run
    different kernels: with a target, cuBLASLt's heuristic choice for that many SMs; without, what the namespace
    picks for the whole device (timed cuBLASLt candidates or SM90 instances)."""
    import gpk_array as gp
    from gpk_array import sched

    sched.shutdown()
    sched.initialize(0)
    out = {"steps": steps, "queued_per_context": queued, "runs": []}
    try:
        lat = sched.create_context("latency", 1024 * MiB, qos="guaranteed")
        bes = [sched.create_context(f"batch{i}", 4096 * MiB, qos="best_effort") for i in range(2)]
        ops = []
        for be in bes:
            with be:
                ops.append((gp.ones((BIG, BIG), dtype=gp.float16, device="cuda:0"),
                            gp.ones((BIG, BIG), dtype=gp.float16, device="cuda:0")))
        with lat:
            out["alone"] = _summary(*_latency_loop(cp, lat.stream, steps, warmup, True, lat))
        for rep in range(reps):
            for mode in ("planned", "whole_device"):
                with lat:
                    pass  # activity: the best-effort contexts confine at their next step
                for be, (a, b) in zip(bes, ops):
                    with be:
                        be.pace()
                        for _ in range(queued):
                            a @ b  # queued work; the result is dropped
                confined = [bool(be._confined) and be.stream is be._confined[0] for be in bes]
                if mode == "whole_device":
                    lat._sm_target = lambda: 0  # an instance override of the method
                target = lat._sm_target()
                try:
                    with lat:
                        host, gpu = _latency_loop(cp, lat.stream, steps, warmup, True, lat)
                finally:
                    lat.__dict__.pop("_sm_target", None)
                busy = [cp.cuda.runtime.streamQuery(be.stream.ptr) != 0 for be in bes]
                for be in bes:
                    be.stream.synchronize()
                res = _summary(host, gpu)
                out["runs"].append({"mode": mode, "rep": rep, "sm_target": target, "confined": confined,
                                    "best_effort_busy_at_end": busy, "contended": res,
                                    "p99_ratio": res["p99_us"] / out["alone"]["p99_us"],
                                    "gpu_p99_ratio": res["gpu_p99_us"] / out["alone"]["gpu_p99_us"]})
    finally:
        sched.shutdown()
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
    return out


# --- (b) overhead ---------------------------------------------------------------------------------------------


def bench_overhead(cp, n=20000):
    from gpk_array import sched

    sched.shutdown()
    sched.initialize(0)
    try:
        g = sched.create_context("ovh", 256 * MiB)
        be = sched.create_context("ovh_be", 256 * MiB, qos="best_effort")
        x = cp.ones(1024, dtype=cp.float32)

        def add1():
            return x + 1

        def timed(fn, rounds=7, calls=n):
            """Best of several rounds, the cases interleaved (see below): host time per call drifts by tens of
            percent between moments on a shared machine, so one long round per case is not comparable."""
            for _ in range(200):
                fn()  # warm up (kernel compile, pool)
            cp.cuda.runtime.deviceSynchronize()
            best = float("inf")
            per = max(1, calls // rounds)
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(per):
                    fn()
                best = min(best, (time.perf_counter() - t0) / per)
                cp.cuda.runtime.deviceSynchronize()
            return best * 1e6

        def outside():
            x + 1

        def enter_only():
            with g:
                pass

        def enter_each():
            with g:
                x + 1

        def inside():
            with g:
                for _ in range(50):
                    x + 1

        res = {"op": "x + 1 on 1024 float32", "calls": n}
        samples = {k: [] for k in ("outside_us", "inside_entered_us", "enter_exit_only_us", "enter_and_op_us")}
        for _ in range(3):  # interleaved: each case measured in the same stretches of time as the others
            samples["outside_us"].append(timed(outside))
            samples["inside_entered_us"].append(timed(inside, calls=n // 50) / 50)
            samples["enter_exit_only_us"].append(timed(enter_only))
            samples["enter_and_op_us"].append(timed(enter_each))
        res.update({k: min(v) for k, v in samples.items()})
        res["launch_guaranteed_us"] = timed(lambda: g.launch(add1))
        res["launch_best_effort_paced_us"] = timed(lambda: be.launch(add1))
        own = cp.cuda.Stream(non_blocking=True)

        def cupy_stream_and_op():  # CuPy's own floor: switching to a stream of one's own for one op
            with own:
                x + 1
        res["cupy_stream_enter_and_op_us"] = min(timed(cupy_stream_and_op) for _ in range(3))
        res["cupy_stream_overhead_us"] = res["cupy_stream_enter_and_op_us"] - res["outside_us"]
        res["enter_overhead_us"] = res["enter_and_op_us"] - res["outside_us"]
        res["inside_overhead_us"] = res["inside_entered_us"] - res["outside_us"]
        return res
    finally:
        sched.shutdown()
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()


# --- (c) stress -----------------------------------------------------------------------------------------------


def _settle(cp):
    gc.collect()
    cp.cuda.runtime.deviceSynchronize()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()
    return int(cp.cuda.runtime.memGetInfo()[0])


def bench_stress(cp, sequences=1000, seed=0):
    from gpk_array import sched

    sched.shutdown()
    base = _settle(cp)
    total = 2048 * MiB
    sched.initialize(0, total_vram_budget=total, wait_timeout=0)
    budgets = {"g1": 512 * MiB, "g2": 256 * MiB, "b": 1024 * MiB, "be": 2048 * MiB}
    qos = {"g1": "guaranteed", "g2": "guaranteed", "b": "burstable", "be": "best_effort"}
    sizes = [MiB, 4 * MiB, 16 * MiB, 64 * MiB, 128 * MiB]
    rng = random.Random(seed)
    granted = refused = over_budget = over_total = 0
    t0 = time.perf_counter()
    try:
        ctxs = {k: sched.create_context(k, budgets[k], qos=qos[k]) for k in budgets}
        live = {k: [] for k in budgets}
        for _ in range(sequences):
            name = rng.choice(list(budgets))
            ctx = ctxs[name]
            with ctx:
                for _ in range(rng.randint(1, 6)):
                    try:
                        live[name].append(cp.empty(rng.choice(sizes), dtype=cp.uint8))
                        granted += 1
                    except MemoryError:
                        refused += 1
                    if ctx.used_bytes() > budgets[name]:
                        over_budget += 1
            if sum(c.used_bytes() for c in ctxs.values()) > total:
                over_total += 1
            for other in rng.sample(list(budgets), k=rng.randint(0, 4)):
                arrays = live[other]
                for _ in range(rng.randint(0, len(arrays))):
                    arrays.pop(rng.randrange(len(arrays)))
        peaks = {k: c.stats()["peak"] for k, c in ctxs.items()}
        evictions = sum(c.stats()["evictions"] for c in ctxs.values())
        live.clear()
        for c in list(ctxs.values()):
            sched.destroy_context(c)
    finally:
        sched.shutdown()
    elapsed = time.perf_counter() - t0
    after = _settle(cp)
    return {
        "sequences": sequences,
        "allocations": granted + refused,
        "granted": granted,
        "refused": refused,
        "over_budget": over_budget,
        "over_total": over_total,
        "pool_evictions": evictions,
        "peak_held": peaks,
        "seconds": elapsed,
        "free_before": base,
        "free_after": after,
        "free_delta_bytes": base - after,
        "back_to_baseline": abs(base - after) <= 4 * MiB,
    }


# --- driver ---------------------------------------------------------------------------------------------------


def _table(res):
    lines = []
    iso = res.get("isolation")
    if iso:
        lines.append(f"(a) isolation: {iso['small_gemm']} latency, contended by {iso['big_gemm']}")
        lines.append(f"    {'step/mode':32} {'case':10} {'p50 us':>9} {'p99 us':>9} {'gpu p50':>9} {'gpu p99':>9} "
                     f"{'p99/alone':>10} {'BE TFLOP/s':>10} {'BE confined':>11}")
        for step in ("graph", "eager"):
            for mode in (*VARIANTS, "no_sched"):
                r = iso[step].get(mode)
                if r is None:
                    continue
                for case in ("alone", "contended"):
                    s = r[case]
                    ratio = f"{r['p99_ratio']:.2f}" if case == "contended" else ""
                    tf = f"{r['best_effort_tflops']:.0f}" if case == "contended" else ""
                    conf = ""
                    if case == "contended" and "best_effort_steps" in r:
                        conf = f"{sum(r['best_effort_confined_steps'])}/{sum(r['best_effort_steps'])}"
                    label = f"{step}/{mode}"
                    lines.append(f"    {label:32} {case:10} {s['p50_us']:9.1f} {s['p99_us']:9.1f} "
                                 f"{s['gpu_p50_us']:9.1f} {s['gpu_p99_us']:9.1f} {ratio:>10} {tf:>10} {conf:>11}")
    gi = res.get("gpu_isolation")
    if gi:
        a = gi["alone"]
        lines.append(f"(a2) GPU-only: best-effort GEMMs queued on their confined streams before the loop (no host "
                     f"activity during it); guaranteed graph step alone: p99 {a['p99_us']:.1f} us, gpu p50/p99 "
                     f"{a['gpu_p50_us']:.1f}/{a['gpu_p99_us']:.1f} us")
        lines.append(f"    {'guaranteed GEMMs plan for':26} {'SMs':>4} {'p50 us':>8} {'p99 us':>8} {'gpu p50':>8} "
                     f"{'gpu p99':>8} {'p99/alone':>10} {'gpu p99/alone':>14}  BE confined / busy at end")
        for r in gi["runs"]:
            c = r["contended"]
            lines.append(f"    {r['mode']:26} {r['sm_target'] or 'all':>4} {c['p50_us']:8.1f} {c['p99_us']:8.1f} "
                         f"{c['gpu_p50_us']:8.1f} {c['gpu_p99_us']:8.1f} {r['p99_ratio']:10.2f} "
                         f"{r['gpu_p99_ratio']:14.2f}  {all(r['confined'])} / {all(r['best_effort_busy_at_end'])}")
    ovh = res.get("overhead")
    if ovh:
        lines.append(f"(b) overhead, host us per call ({ovh['op']}):")
        for key in ("outside_us", "inside_entered_us", "enter_exit_only_us", "enter_and_op_us",
                    "enter_overhead_us", "cupy_stream_enter_and_op_us", "cupy_stream_overhead_us",
                    "launch_guaranteed_us", "launch_best_effort_paced_us"):
            lines.append(f"    {key:32} {ovh[key]:8.2f}")
    st = res.get("stress")
    if st:
        lines.append(f"(c) stress: {st['sequences']} sequences, {st['allocations']} allocations "
                     f"({st['granted']} granted, {st['refused']} refused), beyond a budget: {st['over_budget']}, "
                     f"beyond the total: {st['over_total']}")
        lines.append(f"    free memory after destroy vs baseline: {st['free_delta_bytes'] / MiB:+.2f} MiB "
                     f"({'back to baseline' if st['back_to_baseline'] else 'NOT back to baseline'})")
    return "\n".join(lines)


def run(quick=False):
    """Run the scheduler benchmark on cuda:0; print a table and return the numbers as a dict."""
    if _gpu_count() == 0:
        print("sched benchmark: no CUDA GPU, skipped")
        return {"skipped": "no CUDA GPU"}
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    res = {"device": name.decode() if isinstance(name, bytes) else str(name)}
    res["isolation"] = bench_isolation(cp, steps=200 if quick else 4000, warmup=20 if quick else 50)
    res["gpu_isolation"] = bench_gpu_isolation(cp, steps=200 if quick else 1000, reps=1 if quick else 3)
    res["overhead"] = bench_overhead(cp, n=3000 if quick else 20000)
    res["stress"] = bench_stress(cp, sequences=1000)
    print(_table(res))
    return res


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run(quick="--quick" in sys.argv)
