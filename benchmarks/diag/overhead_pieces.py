"""Where the namespace's host time per small call goes on a CUDA device: gpk_array's call beside the CuPy calls it
makes and the pieces around them (per call, best of 5 loops of 2000, 1000-element float32 arrays).

    python -m benchmarks.diag.overhead_pieces [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def _per_call(fn, sync):
    """Microseconds per call."""
    from benchmarks.overhead import _per_call as seconds
    return seconds(fn, sync, warmup=100) * 1e6


def run(out_json=None):
    import cupy
    import gpk_array as gp
    from gpk_array import _gpu
    from gpk_array._ops import statistical as st
    dev = next(d for d in gp.__array_namespace_info__().devices() if d.kind == "cuda")
    sync = cupy.cuda.get_current_stream().synchronize
    a = gp.asarray(np.arange(1000, dtype=np.float32), device=dev)
    ra = a._data
    m = gp.reshape(a, (40, 25))
    rm = m._data
    rb, row = ra.reshape(25, 40), ra[:40].copy()  # a row broadcast the _b2 kernel takes (40 % 4 == 0)
    from gpk_array._kernels import elementwise as ew
    cases = [
        ("gp.sum(a)", lambda: gp.sum(a)), ("statistical.sum(a) (the standard's)", lambda: st.sum(a)),
        ("cupy.sum(ra)", lambda: cupy.sum(ra)), ("ra.sum()", lambda: ra.sum()),
        ("ra.sum(axis=None, keepdims=False)", lambda: ra.sum(axis=None, keepdims=False)),
        ("ra.sum(axis=None, dtype=f32, keepdims=False)", lambda: ra.sum(axis=None, dtype=np.float32, keepdims=False)),
        ("Array._new(ra.sum(), dev)", lambda: gp.Array._new(ra.sum(), dev)),
        ("_gpu.reduce_floor('sum', f32)", lambda: _gpu.reduce_floor("sum", ra.dtype)),
        ("gp.max(m, axis=0)", lambda: gp.max(m, axis=0)), ("cupy.max(rm, axis=0)", lambda: cupy.max(rm, axis=0)),
        ("rm.max(axis=(0,), keepdims=False)", lambda: rm.max(axis=(0,), keepdims=False)),
        ("gp.add(a, a)", lambda: gp.add(a, a)), ("cupy.add(ra, ra)", lambda: cupy.add(ra, ra)),
        ("elementwise.binary('add', ra, ra) (our kernel)", lambda: ew.binary("add", ra, ra)),
        ("elementwise.binary('add', rb, row) (_b2)", lambda: ew.binary("add", rb, row)),
        ("cupy.add(rb, row)", lambda: cupy.add(rb, row)),
        ("gp.mean(a) (our kernel)", lambda: gp.mean(a)), ("cupy.mean(ra)", lambda: cupy.mean(ra)),
        ("gp.argmax(a) (our kernel)", lambda: gp.argmax(a)), ("cupy.argmax(ra)", lambda: cupy.argmax(ra)),
        ("gp.var(a) (our kernel)", lambda: gp.var(a)), ("cupy.var(ra)", lambda: cupy.var(ra)),
        ("a[10:20]", lambda: a[10:20]), ("ra[10:20]", lambda: ra[10:20]),
    ]
    _per_call(cases[0][1], sync)  # a first loop runs cold (clocks, caches): not reported
    rows = []
    for name, fn in cases:
        us = _per_call(fn, sync)
        rows.append({"call": name, "us": us})
        print(f"{name:48s} {us:8.2f} us", flush=True)
    if out_json:
        from benchmarks.__main__ import _env
        with open(out_json, "w") as f:
            json.dump({"env": _env(), "rows": rows}, f, indent=1)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    run(ap.parse_args(argv).json)


if __name__ == "__main__":
    sys.exit(main())
