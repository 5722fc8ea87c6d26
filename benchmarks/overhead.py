"""Host time per call of ~40 common small calls: gpk_array beside the library it wraps on the same data (NumPy on
the CPU device, CuPy on CUDA) and torch where it is installed (same device), in the same run.

    python -m benchmarks overhead [--json OUT]          # every device gpk_array sees
    python -m benchmarks.overhead [--device cpu] [--only NAME ...] [--json OUT]

Each figure is the best of 5 loops of n calls after a warm-up (CUDA: the stream synchronized after each loop, so
the figure is host time unless the GPU is the slower side). Targets (issue 26): CPU geomean <= 1.5x NumPy, no call
above 3x (scalar indexing, which returns a 0-d array where NumPy returns a bare scalar: 5x); CUDA geomean <= 1.0x
CuPy.
"""
import argparse
import json
import math
import time

import numpy as np

TARGETS = {"cpu": (1.5, 3.0), "cuda": (1.0, None)}
SCALAR_INDEX_LIMIT = 5.0  # the standard's 0-d result of a[0, 1] against NumPy's bare scalar


def _per_call(fn, sync, n=2000, warmup=50, repeats=5):
    """Seconds per call: the best of ``repeats`` loops of ``n`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def _unchecked(a, idx):
    """a[idx] with the CUDA index bounds check off (GPK_INDEX_CHECK=0)."""
    from gpk_array._ops import indexing
    indexing.INDEX_CHECK = False
    try:
        return a[idx]
    finally:
        indexing.INDEX_CHECK = True


def cases(xp, dev, lib, kind):
    """(name, gpk_array call, the same call in ``lib`` (numpy, cupy or torch), scalar-index flag) on the same data.
    ``kind`` is "numpy", "cupy" or "torch"."""
    rng = np.random.default_rng(0)
    h1 = rng.random(1000, dtype=np.float32) + 0.5
    h2 = rng.random(1000, dtype=np.float32) + 0.5
    h33 = rng.random((3, 3)) + np.eye(3) * 3
    h64 = rng.random((64, 64), dtype=np.float32)
    hm = h1 > 0.9
    hidx = np.arange(0, 1000, 7)
    a, b = xp.asarray(h1, device=dev), xp.asarray(h2, device=dev)
    s33, m64 = xp.asarray(h33, device=dev), xp.asarray(h64, device=dev)
    s2d = xp.reshape(a[:600], (20, 30))
    mask, idx = xp.asarray(hm, device=dev), xp.asarray(hidx, device=dev)
    x0 = xp.asarray(np.float64(2.5), device=dev)
    w = xp.asarray(h1, device=dev)
    if kind == "torch":
        import torch
        d = "cuda" if dev.kind == "cuda" else "cpu"
        t = lambda h: torch.as_tensor(h, device=d)  # noqa: E731
        ra, rb, r33, r64, r2d = t(h1), t(h2), t(h33), t(h64), t(h1[:600].reshape(20, 30))
        rmask, ridx, rx0, rw = t(hm), t(hidx), t(np.array(2.5)), t(h1.copy())
        L = torch
        zeros = lambda s: torch.zeros(s, device=d)  # noqa: E731
        ones = lambda s: torch.ones(s, device=d)  # noqa: E731
        full = lambda s, v: torch.full(s, v, device=d)  # noqa: E731
        arange = lambda n: torch.arange(n, device=d)  # noqa: E731
        asarray = lambda v: torch.tensor(v, device=d)  # noqa: E731
        linspace = lambda a0, a1, n: torch.linspace(a0, a1, n, device=d)  # noqa: E731
        eye = lambda n: torch.eye(n, device=d)  # noqa: E731
        astype = lambda v: v.to(torch.float64)  # noqa: E731
        reshape = lambda v: v.reshape(20, 50)  # noqa: E731
        transpose = lambda v: v.T  # noqa: E731
        concat = lambda v: torch.cat([v, v])  # noqa: E731
        stack = lambda v: torch.stack([v, v])  # noqa: E731
        expand = lambda v: v.unsqueeze(0)  # noqa: E731
        sumax = lambda v: v.sum(dim=0)  # noqa: E731
        maxax = lambda v: v.amax(dim=0)  # noqa: E731
        where = lambda c, p, q: torch.where(c, p, q)  # noqa: E731
        sqrt, exp, absf, mean, anyf, argmax = torch.sqrt, torch.exp, torch.abs, torch.mean, torch.any, torch.argmax
        inv, solve, norm = torch.linalg.inv, torch.linalg.solve, torch.linalg.vector_norm
        dtype_of = lambda v: v.dtype  # noqa: E731
        device_of = lambda v: v.device  # noqa: E731
    else:
        L = __import__(kind)
        to = (lambda h: L.asarray(h)) if kind == "cupy" else (lambda h: np.array(h))
        ra, rb, r33, r64 = to(h1), to(h2), to(h33), to(h64)
        r2d = ra[:600].reshape(20, 30)
        rmask, ridx, rx0, rw = to(hm), to(hidx), to(np.array(2.5)), to(h1)
        zeros, ones, full, arange, asarray = L.zeros, L.ones, L.full, L.arange, L.asarray
        linspace, eye = L.linspace, L.eye
        astype = lambda v: v.astype(L.float64)  # noqa: E731
        reshape = lambda v: v.reshape(20, 50)  # noqa: E731
        transpose = lambda v: v.T  # noqa: E731
        concat = lambda v: L.concatenate([v, v])  # noqa: E731
        stack = lambda v: L.stack([v, v])  # noqa: E731
        expand = lambda v: L.expand_dims(v, 0)  # noqa: E731
        sumax = lambda v: v.sum(axis=0)  # noqa: E731
        maxax = lambda v: v.max(axis=0)  # noqa: E731
        where = L.where
        sqrt, exp, absf, mean, anyf, argmax = L.sqrt, L.exp, L.abs, L.mean, L.any, L.argmax
        inv, solve, norm = L.linalg.inv, L.linalg.solve, L.linalg.norm
        dtype_of = lambda v: v.dtype  # noqa: E731
        device_of = (lambda v: v.device) if kind == "cupy" else (lambda v: "cpu")

    def setitem_ours():
        w[0] = 1.0

    def setitem_lib():
        rw[0] = 1.0

    def setslice_ours():
        w[1:3] = b[1:3]

    def setslice_lib():
        rw[1:3] = rb[1:3]

    rows = [
        # creation
        ("zeros((3, 3))", lambda: xp.zeros((3, 3), device=dev), lambda: zeros((3, 3)), False),
        ("ones(1000)", lambda: xp.ones(1000, device=dev), lambda: ones(1000), False),
        ("full((3, 3), 2.0)", lambda: xp.full((3, 3), 2.0, device=dev), lambda: full((3, 3), 2.0), False),
        ("arange(100)", lambda: xp.arange(100, device=dev), lambda: arange(100), False),
        ("asarray([1., 2., 3.])", lambda: xp.asarray([1.0, 2.0, 3.0], device=dev), lambda: asarray([1.0, 2.0, 3.0]),
         False),
        ("linspace(0, 1, 50)", lambda: xp.linspace(0, 1, 50, device=dev), lambda: linspace(0, 1, 50), False),
        ("eye(3)", lambda: xp.eye(3, device=dev), lambda: eye(3), False),
        # arithmetic and element-wise functions
        ("a + b", lambda: a + b, lambda: ra + rb, False),
        ("a + 2.0", lambda: a + 2.0, lambda: ra + 2.0, False),
        ("a * b", lambda: a * b, lambda: ra * rb, False),
        ("a / b", lambda: a / b, lambda: ra / rb, False),
        ("-a", lambda: -a, lambda: -ra, False),
        ("s33 + s33 (3x3)", lambda: s33 + s33, lambda: r33 + r33, False),
        ("add(a, b)", lambda: xp.add(a, b), lambda: L.add(ra, rb), False),
        ("exp(a)", lambda: xp.exp(a), lambda: exp(ra), False),
        ("sqrt(a)", lambda: xp.sqrt(a), lambda: sqrt(ra), False),
        ("abs(a)", lambda: xp.abs(a), lambda: absf(ra), False),
        ("where(mask, a, b)", lambda: xp.where(mask, a, b), lambda: where(rmask, ra, rb), False),
        # comparisons
        ("a < b", lambda: a < b, lambda: ra < rb, False),
        ("a == 2.0", lambda: a == 2.0, lambda: ra == 2.0, False),
        # reductions
        ("sum(a)", lambda: xp.sum(a), lambda: L.sum(ra), False),
        ("sum(s2d, axis=0)", lambda: xp.sum(s2d, axis=0), lambda: sumax(r2d), False),
        ("mean(a)", lambda: xp.mean(a), lambda: mean(ra), False),
        ("max(s2d, axis=0)", lambda: xp.max(s2d, axis=0), lambda: maxax(r2d), False),
        ("argmax(a)", lambda: xp.argmax(a), lambda: argmax(ra), False),
        ("any(mask)", lambda: xp.any(mask), lambda: anyf(rmask), False),
        # indexing
        ("a[10:20]", lambda: a[10:20], lambda: ra[10:20], False),
        ("s2d[3:15, ::2]", lambda: s2d[3:15, ::2], lambda: r2d[3:15, ::2], False),
        ("s33[0, 1]", lambda: s33[0, 1], lambda: r33[0, 1], True),
        ("a[idx]", lambda: a[idx], lambda: ra[ridx], False),
        ("a[mask]", lambda: a[mask], lambda: ra[rmask], False),
        ("w[0] = 1.0", setitem_ours, setitem_lib, False),
        ("w[1:3] = b[1:3]", setslice_ours, setslice_lib, False),
        # shaping and conversion
        ("reshape(a, (20, 50))", lambda: xp.reshape(a, (20, 50)), lambda: reshape(ra), False),
        ("s2d.T", lambda: s2d.T, lambda: transpose(r2d), False),
        ("astype(a, float64)", lambda: xp.astype(a, xp.float64), lambda: astype(ra), False),
        ("concat([a, a])", lambda: xp.concat([a, a]), lambda: concat(ra), False),
        ("stack([a, a])", lambda: xp.stack([a, a]), lambda: stack(ra), False),
        ("expand_dims(a, axis=0)", lambda: xp.expand_dims(a, axis=0), lambda: expand(ra), False),
        # matmul and linalg
        ("s33 @ s33", lambda: s33 @ s33, lambda: r33 @ r33, False),
        ("m64 @ m64", lambda: m64 @ m64, lambda: r64 @ r64, False),
        ("linalg.inv(s33)", lambda: xp.linalg.inv(s33), lambda: inv(r33), False),
        ("linalg.solve(s33, s33)", lambda: xp.linalg.solve(s33, s33), lambda: solve(r33, r33), False),
        ("linalg.vector_norm(a)", lambda: xp.linalg.vector_norm(a), lambda: norm(ra), False),
        # attributes and conversion to Python
        ("a.shape", lambda: a.shape, lambda: ra.shape, False),
        ("a.dtype", lambda: a.dtype, lambda: dtype_of(ra), False),
        ("a.device", lambda: a.device, lambda: device_of(ra), False),
        ("len(a)", lambda: len(a), lambda: len(ra), False),
        ("float(x0)", lambda: float(x0), lambda: float(rx0), False),
    ]
    if dev.kind == "cuda" and kind == "cupy":
        rows.append(("a[idx] unchecked", lambda: _unchecked(a, idx), lambda: ra[ridx], False))
    return rows


def _baselines(dev):
    kinds = ["cupy" if dev.kind == "cuda" else "numpy"]
    try:
        import torch
        if dev.kind != "cuda" or torch.cuda.is_available():
            kinds.append("torch")
    except ImportError:
        pass
    return kinds


def _geomean(v):
    v = [x for x in v if x and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def run(device=None, only=None):
    """Measure every case on each device; print the table and the geomeans against their targets; return rows."""
    import gpk_array as xp
    devs = [xp.Device(device)] if device else xp.__array_namespace_info__().devices()
    rows, summary = [], []
    for dev in devs:
        if dev.kind == "cuda":
            import cupy
            sync = cupy.cuda.get_current_stream().synchronize
        else:
            sync = lambda: None  # noqa: E731
        base = _baselines(dev)
        per = {}
        for kind in base:
            try:
                table = cases(xp, dev, kind, kind)
            except ImportError:
                continue
            for name, ours, theirs, scalar in table:
                if only and name not in only:
                    continue
                r = per.setdefault(name, {"device": str(dev), "op": name, "scalar_index": scalar})
                if "gpk_us" not in r:
                    r["gpk_us"] = _per_call(ours, sync) * 1e6
                try:
                    r[f"{kind}_us"] = _per_call(theirs, sync) * 1e6
                except Exception as e:  # a call the baseline lacks: reported, not fatal
                    r[f"{kind}_us"] = None
                    r[f"{kind}_error"] = f"{type(e).__name__}: {e}"
        main = base[0]
        limit_geo, limit_one = TARGETS["cuda" if dev.kind == "cuda" else "cpu"]
        for r in per.values():
            for kind in base:
                if r.get(f"{kind}_us"):
                    r[f"ratio_{kind}"] = r["gpk_us"] / r[f"{kind}_us"]
            lim = SCALAR_INDEX_LIMIT if r["scalar_index"] else limit_one
            r["limit"] = lim
            r["over_limit"] = bool(lim and r.get(f"ratio_{main}", 0) > lim)
            rows.append(r)
        geo = {kind: _geomean([r.get(f"ratio_{kind}") for r in per.values()]) for kind in base}
        summary.append({"device": str(dev), "baseline": main, "geomean": geo, "target_geomean": limit_geo,
                        "target_per_call": limit_one,
                        "over_limit": [r["op"] for r in per.values() if r["over_limit"]]})
        hdr = "".join(f" {k + ' us':>10} {'x' + k:>7}" for k in base)
        print(f"\n{str(dev):8} {'call':26} {'gpk us':>8}{hdr}")
        for r in per.values():
            cols = "".join(f" {r.get(f'{k}_us') or float('nan'):10.2f} {r.get(f'ratio_{k}', float('nan')):7.2f}"
                           for k in base)
            print(f"{'':8} {r['op']:26} {r['gpk_us']:8.2f}{cols}{'  over' if r['over_limit'] else ''}")
        print("geomean " + ", ".join(f"{k} {v:.2f}x" for k, v in geo.items())
              + f" (target <= {limit_geo}x {main}" + (f", each <= {limit_one}x)" if limit_one else ")"))
    return {"rows": rows, "summary": summary}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device")
    ap.add_argument("--only", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    out = run(a.device, a.only)
    if a.json:
        from benchmarks.__main__ import _env
        with open(a.json, "w") as f:
            json.dump({"env": _env(), "results": {"overhead": out}}, f, indent=1)


if __name__ == "__main__":
    main()
