"""What ``validate`` checks, without a GPU: the plan (the family's shapes, the cheat-catching cases, the seeds and
the tolerance contract), the float64 references (NumPy on the host) and the error measure. gpu.py runs the plan on
the device; ``--dry-run`` writes it as planned evidence.

Error measure per shape: ``max_abs`` = max |out - ref| over the finite reference entries, ``scale`` = max |ref|
(1 where that is 0), ``rel`` = max_abs / scale; a shape passes when ``rel`` <= the dtype's tolerance and the output
is non-finite exactly where the reference is.
"""
from __future__ import annotations

import math

import numpy as np

SEED = 20
ACT = ("relu", "gelu", "gelu_tanh", "silu")


def _near(v, lo, hi, step, tile):
    """Values off the ``tile`` grid, multiples of ``step``, within [lo, hi] (None: open), nearest to ``v`` first
    (one past v before one short of it): the extents an in-class tail may take."""
    lo, hi = max(step, lo or step), hi
    raw = {v + step, v - step, v + tile // 2, v - tile // 2, lo, lo + step}
    if hi is not None:
        raw |= {hi, hi - step}
    out = {x // step * step for x in raw}
    out = [x for x in out if x >= lo and (hi is None or x <= hi) and x % tile]
    return sorted(out, key=lambda x: (abs(x - v), x < v))


def _in_class_tail(meta, tm, tn, align):
    """A shape inside the candidate's class (``where``) with M or N off the tile grid, N a multiple of ``align``:
    from the family's shapes, M and N both ragged where the class allows, else one of them; None where every shape
    of the class is whole tiles in M and N."""
    from .registry import where_holds
    where = meta["where"]
    best = None
    for m, n, k in meta["shapes"]:
        ms = _near(m, *where.get("m", [None, None]), 1, tm)
        ns = _near(n, *where.get("n", [None, None]), align, tn)
        for rank, pairs in ((0, [(a, b) for a in ms for b in ns]), (1, [(a, n) for a in ms]),
                            (1, [(m, b) for b in ns])):
            hit = next(([a, b, k] for a, b in pairs if where_holds(where, a, b, k)), None)
            if hit is not None and (best is None or rank < best[0]):
                best = (rank, hit)
                break
        if best is not None and best[0] == 0:
            break
    return None if best is None else best[1]


def gemm_plan(meta: dict) -> dict:
    """The validation plan of a GEMM candidate: every shape of its family, then the cheat-catching cases: tails
    (M and N one past whole tiles, N kept a multiple of 8, the instances' alignment), NaN/inf propagation, and an
    output that must not depend on the memory it overwrites (the output buffer filled with NaN, then with 7e3,
    before two runs whose results must be bit-identical). Each case says whether its shape is ``in_class`` (inside
    the candidate's ``where``: dispatch would send it there). Where neither fixed tail is in the class, one more
    tail inside it (``_in_class_tail``: the family's shapes moved off the tile grid) is added, and
    ``in_class_tail`` names it (or says why there is none: a class of whole tiles has no tail to take)."""
    from .registry import where_holds
    launch = meta.get("launch") or {}
    tile = launch.get("tile") or [128, 128, 64]
    align = max([8] + [int(v) for v in (launch.get("alignment") or {}).values()])
    m0, n0, k0 = meta["shapes"][0]
    cases = [{"case": "family", "shape": list(s)} for s in meta["shapes"]]
    tm, tn = int(tile[0]), int(tile[1])
    tail_n = ((2 * tn + 1) + 7) // 8 * 8
    cases.append({"case": "tail", "shape": [2 * tm + 1, tail_n, k0]})
    cases.append({"case": "tail", "shape": [tm - 1, tn + 8, k0 + 8]})
    inside = next((c["shape"] for c in cases[-2:] if where_holds(meta["where"], *c["shape"])), None)
    if inside is None:
        inside = _in_class_tail(meta, tm, tn, align)
        if inside is not None:
            cases.append({"case": "tail", "shape": inside})
    cases.append({"case": "nan_inf", "shape": [max(m0, 2), n0, k0]})
    cases.append({"case": "stale_memory", "shape": [m0, n0, k0], "fills": [float("nan"), 7e3]})
    for c in cases:
        c["in_class"] = where_holds(meta["where"], *c["shape"])
    dtype = meta["dtype"]
    return {"seed": SEED, "dtype": dtype, "cases": cases, "reference": "float64 NumPy on the host",
            "aliasing": "not applicable: the dispatch path writes a fresh output array",
            "in_class_tail": inside if inside is not None else
            f"none: no shape of the class {meta['where']} is off the {tm}x{tn} tile grid in M or N",
            "tolerance": _tol(meta, dtype), "tolerance_is": "relative to the output scale max|ref|"}


def routing_plan(meta: dict) -> dict:
    """The validation plan of an elementwise/reduction candidate: every op x dtype x size of its family, tails
    (sizes 1, 7, 4097, one past the first size, and an odd size from the candidate's threshold on: ``own_from``
    or one more, which is in its class), NaN/inf propagation, aliasing (elementwise: the output is the first
    input), stale memory (the output buffer filled with NaN, then 7e3). ``in_class``: the size is one the
    candidate gives our kernels (at least ``own_from``)."""
    cases = []
    dtypes = meta["dtype"].split(",")
    sizes = [s[0] for s in meta["shapes"]]
    own_from = meta["choice"]["own_from"]
    tails = list(dict.fromkeys((1, 7, 4097, sizes[0] + 1, own_from | 1)))
    for op in meta["ops"]:
        for dt in dtypes:
            for n in sizes:
                cases.append({"case": "family", "op": op, "dtype": dt, "size": n})
            for n in tails:
                cases.append({"case": "tail", "op": op, "dtype": dt, "size": n})
            cases.append({"case": "nan_inf", "op": op, "dtype": dt, "size": sizes[0]})
            if meta["kind"] == "elementwise":
                cases.append({"case": "aliasing", "op": op, "dtype": dt, "size": sizes[0]})
                cases.append({"case": "stale_memory", "op": op, "dtype": dt, "size": sizes[0],
                              "fills": [float("nan"), 7e3]})
    for c in cases:
        c["in_class"] = c["size"] >= own_from
    return {"seed": SEED, "dtype": meta["dtype"], "cases": cases, "reference": "float64 NumPy on the host",
            "axis_kind": meta.get("axis_kind"), "tolerance": {dt: _tol(meta, dt) for dt in dtypes},
            "in_class_tail": own_from | 1, "tolerance_is": "relative to the output scale max|ref|"}


def _tol(meta, dtype):
    from .candidates import tolerance_of
    from .evidence import TOLERANCE
    return tolerance_of(meta, dtype) if dtype in TOLERANCE else (0.0 if meta.get("tolerance") is None
                                                                 else float(meta["tolerance"]))


def plan(meta: dict) -> dict:
    """The validation plan of a candidate of any kind."""
    return gemm_plan(meta) if meta["kind"] == "gemm" else routing_plan(meta)


# --- references and errors -------------------------------------------------------------------------------------


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:  # W. J. Cody's rational approximations are in SciPy; without it math.erf per element
        return np.vectorize(math.erf, otypes=[np.float64])(x)


def activation(name, y):
    """float64 ``name`` of y (None: identity): relu, gelu (x Phi(x), erf), gelu_tanh, silu; gelu and silu take
    their limit -0 at -inf, as gpk_array's own paths do (the formulas alone give -inf * 0 = NaN)."""
    if name is None:
        return y
    with np.errstate(all="ignore"):
        if name == "relu":
            return np.maximum(y, 0.0)
        if name == "gelu":
            return 0.5 * np.maximum(y, -1e30) * (1.0 + _erf(y / math.sqrt(2.0)))  # the limit -0 at -inf
        if name == "gelu_tanh":
            return 0.5 * y * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * y ** 3)))
        if name == "silu":
            return np.maximum(y, -1e30) / (1.0 + np.exp(-y))
    raise ValueError(f"unknown activation {name!r}")


def gemm_reference(x, w, layout, bias=None, act=None):
    """float64 ``act(x @ op(w) + bias)`` of host arrays (w (K, N) for "nn", (N, K) for "tn")."""
    x64 = np.asarray(x, dtype=np.float64)
    w64 = np.asarray(w, dtype=np.float64)
    with np.errstate(all="ignore"):
        y = x64 @ (w64 if layout == "nn" else w64.T)
        if bias is not None:
            y = y + np.asarray(bias, dtype=np.float64)
    return activation(act, y)


def compare(out, ref, tol: float) -> dict:
    """The error record of ``out`` against the float64 ``ref``: max_abs, scale, rel, whether the non-finite
    entries match, and passed."""
    o = np.asarray(out, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if o.shape != r.shape:
        return {"passed": False, "why": f"shape {o.shape} against the reference's {r.shape}"}
    fin = np.isfinite(r)
    nonfinite_ok = bool(np.array_equal(np.isfinite(o), fin) and
                        np.array_equal(np.isnan(o[~fin]), np.isnan(r[~fin])) and
                        np.array_equal(np.sign(o[~fin & ~np.isnan(r)]), np.sign(r[~fin & ~np.isnan(r)])))
    if fin.any():
        err = np.abs(o[fin] - r[fin])
        max_abs = float(np.max(np.where(np.isnan(err), np.inf, err)))
        scale = float(np.max(np.abs(r[fin]))) or 1.0
    else:
        max_abs, scale = 0.0, 1.0
    rel = max_abs / scale
    out_rec = {"max_abs": max_abs, "scale": scale, "rel": rel, "tolerance": tol, "nonfinite_match": nonfinite_ok,
               "passed": bool(rel <= tol and nonfinite_ok)}
    if not out_rec["passed"]:
        out_rec["why"] = (f"rel error {rel:.3g} > {tol:g}" if rel > tol else
                          "non-finite entries differ from the reference's (NaN/inf not propagated as NumPy does)")
        if not nonfinite_ok:
            differ = ~((o == r) | (np.isnan(o) & np.isnan(r))) & ~(fin & np.isfinite(o))
            idx = np.argwhere(differ)
            out_rec["nonfinite_differ"] = {"count": int(len(idx)), "first": [
                {"index": [int(i) for i in ix], "got": float(o[tuple(ix)]), "want": float(r[tuple(ix)])}
                for ix in idx[:4]]}
    return out_rec


CHEATS = ("tail", "nan_inf", "stale_memory", "aliasing")


def summarize(results: list[dict]) -> dict:
    """passed, counts, and the worst rel error. Passed: at least one family case ran, none was declined, no case
    that ran failed, and no cheat case (CHEATS) was declined where that leaves it unchecked: inside the candidate's
    class (``in_class``: dispatch would send it there, so it must run) or where no case of its kind ran at all.
    A declined cheat case outside the class passes where another case of its kind ran (records without
    ``in_class``, written before it existed, are judged by that second rule alone)."""
    ran = [r for r in results if not r.get("declined")]
    fam = [r for r in ran if r["case"] == "family"]
    failed = [r for r in ran if not r.get("passed")]
    kinds_ran = {r["case"] for r in ran}
    unchecked = []
    for r in results:
        if r.get("declined") and r["case"] in CHEATS:
            if r.get("in_class"):
                unchecked.append(dict(r, why="declined inside the candidate's class (dispatch would send it "
                                             "there): the case is not checked"))
            elif r["case"] not in kinds_ran:
                unchecked.append(dict(r, why=f"declined, and no {r['case']} case ran: the check is not made"))
    bad = failed + unchecked
    return {"passed": bool(fam) and not bad and all(not r.get("declined") for r in results
                                                     if r["case"] == "family"),
            "cases": len(results), "declined": len(results) - len(ran), "failed": len(failed),
            "unchecked": len(unchecked),
            "worst_rel": max((r.get("rel", 0.0) for r in ran), default=None),
            "failures": [f"{r['case']} {_where(r)}: {r.get('why')}" for r in bad][:20]}


def _where(r):
    """What a result record was run on, for its line in ``failures``: a compile case's instance (GEMM) or op and
    dtype (routing), else its shape or size."""
    if r["case"] == "compile":
        return r.get("instance") or f"{r.get('op')} {r.get('dtype')}"
    return r.get("shape") or r.get("size")
