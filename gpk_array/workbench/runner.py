"""``python -m gpk_array.workbench.runner NAME [--dir DIR]``: run candidate NAME once per shape of its family on the
GPU (what ``gpk kernels profile --command "ncu ... {binary}"`` puts in place of ``{binary}``)."""
import argparse
import sys


def main(argv=None):
    """Run each shape of the candidate's family once (GEMM: its instance; routing: our kernels); exit status 0."""
    ap = argparse.ArgumentParser(prog="python -m gpk_array.workbench.runner", description=main.__doc__)
    ap.add_argument("name")
    ap.add_argument("--dir", default=None, help="workspace root (default: GPK_WORKBENCH_DIR or ~/.cache/...)")
    a = ap.parse_args(argv)
    import numpy as np

    from . import candidates, checks, gpu
    meta = candidates.load(a.name, a.dir)
    rng = np.random.default_rng(checks.SEED)
    if meta["kind"] == "gemm":
        for shape in meta["shapes"]:
            x, w, bias = (gpu._to_dev(v) if v is not None else None for v in gpu._gemm_operands(meta, shape, rng))
            if gpu._run_candidate(meta, x, w, bias, 0.0) is None:
                print(f"declined {shape}", file=sys.stderr)
    else:
        for op in meta["ops"]:
            for dt in meta["dtype"].split(","):
                for (size,) in meta["shapes"]:
                    gpu._ours(meta, op, [gpu._to_dev(v) for v in gpu._routing_inputs(meta, op, dt, size, rng)])
        gpu._cp().cuda.get_current_stream().synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
