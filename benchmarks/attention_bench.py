"""Attention on a GPU: gpk_array's fused kernel (cuda/attention.cu) against its previous path and torch's
scaled_dot_product_attention, in the same run.

    python -m benchmarks attention [--json OUT]      (or python -m benchmarks.attention_bench [--quick])

Rows (float16 unless named; causal unless "full"): 1x12x1024x64 and 8x12x1024x64 (GPT-2 124M's prefill shapes; the
issue's target is at most torch's time), the same non-causal, bfloat16, head dim 128 (1x16x1024x128, 8x16x1024x128)
and GPT-2's layout (q, k, v strided views of one fused (B, T, 3, H, D) projection). Columns: GPU microseconds per
call of ours (CUDA events around batches of back-to-back calls, the median batch), of each CTA height of ours for
D = 64 (64 and 128 queries per CTA: the evidence for attention.choose_block_m), of the GEMM + softmax + GEMM path
(GPK_FLASH_ATTENTION=0's), of torch (when it imports: its default SDPA backend on contiguous (B, H, T, D) inputs),
our GPU TFLOP/s (causal counts half the score matrix), host microseconds per call of ours (the time to issue a call
with nothing to wait on), and the largest error against float64 on the first batch x head (relative to max |ref|).

``run()`` prints the table and returns the rows (dicts).
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

SHAPES = [  # (B, H, T, D, dtype, causal, layout)
    (1, 12, 1024, 64, "float16", True, "bhtd"),
    (8, 12, 1024, 64, "float16", True, "bhtd"),
    (1, 12, 1024, 64, "float16", True, "fused qkv"),
    (8, 12, 1024, 64, "float16", True, "fused qkv"),
    (1, 12, 1024, 64, "float16", False, "bhtd"),
    (8, 12, 1024, 64, "float16", False, "bhtd"),
    (8, 12, 1024, 64, "bfloat16", True, "bhtd"),
    (1, 16, 1024, 128, "float16", True, "bhtd"),
    (8, 16, 1024, 128, "float16", True, "bhtd"),
    (1, 12, 4096, 64, "float16", True, "bhtd"),
]
QUICK = SHAPES[:2]


def _gpu_us(cupy, fn, reps=25, target_s=2e-3):
    """Median GPU microseconds per call over batches of back-to-back calls (CUDA events around each batch)."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    fn()
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = max(cupy.cuda.get_elapsed_time(start, end) * 1e-3, 1e-7)
    batch = int(min(500, max(1, target_s // one)))
    for _ in range(batch):
        fn()
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / batch)
    return float(np.median(times))


def _host_us(cupy, fn, n=200):
    fn()
    cupy.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t = (time.perf_counter() - t0) * 1e6 / n
    cupy.cuda.get_current_stream().synchronize()
    return t


def _reference(q, k, v, causal, scale):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ v.astype(np.float64)


def _host16(cupy, a):
    import ml_dtypes
    if a.dtype.itemsize == 2 and a.dtype != np.float16:
        return cupy.asnumpy(cupy.ascontiguousarray(a.view(cupy.uint16))).view(ml_dtypes.bfloat16)
    return cupy.asnumpy(a)


def _torch():
    try:
        import torch
        if torch.cuda.is_available():
            return torch
    except Exception:  # noqa: BLE001
        pass
    return None


def _row(cupy, torch, B, H, T, D, dtype, causal, layout):
    from gpk_array import _gpu
    from gpk_array._kernels import attention as attn
    from gpk_array._kernels import loader
    rng = np.random.default_rng(0)
    scale = 1 / math.sqrt(D)
    dt = np.float16 if dtype == "float16" else None
    if layout == "fused qkv":
        raw = cupy.asarray(rng.standard_normal((B, T, 3, H, D), dtype=np.float32))
        qkv = raw.astype(cupy.float16)   # (float16 rows only)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    else:
        raw = [cupy.asarray(rng.standard_normal((B, H, T, D), dtype=np.float32)) for _ in range(3)]
        if dt:
            q, k, v = (a.astype(cupy.float16) for a in raw)
        else:   # bfloat16: rounded on the host (CuPy has no float32 -> bfloat16 cast), moved as bits
            import ml_dtypes
            q, k, v = (cupy.asarray(cupy.asnumpy(a).astype(ml_dtypes.bfloat16).view(np.uint16)).view(
                np.dtype(ml_dtypes.bfloat16)) for a in raw)
    row = {"shape": f"{B}x{H}x{T}x{D}", "dtype": dtype, "causal": causal, "layout": layout}
    ours = lambda: attn.attention(q, k, v, causal, scale)  # noqa: E731
    if ours() is None:
        row["error"] = "the fused kernel declined"
        return row
    row["ours_us"] = _gpu_us(cupy, ours)
    row["ours_host_us"] = _host_us(cupy, ours)
    if D == 64:
        for bm in attn.BLOCK_M[64]:
            row[f"ours_bm{bm}_us"] = _gpu_us(cupy, lambda bm=bm: attn.attention(q, k, v, causal, scale, block_m=bm))
    row["block_m"] = attn.choose_block_m(D, B * H, T, loader.sm_count())
    flash = _gpu.FLASH_ATTENTION
    _gpu.FLASH_ATTENTION = False
    try:
        old = lambda: _gpu.scaled_dot_product_attention(q, k, v, None, causal, scale)  # noqa: E731
        row["gemm_path_us"] = _gpu_us(cupy, old) if old() is not None else None
    finally:
        _gpu.FLASH_ATTENTION = flash
    if torch is not None:
        import torch.nn.functional as F
        if dt:   # torch gets contiguous (B, H, T, D) inputs, its fastest layout
            tq, tk, tv = (torch.from_dlpack(cupy.ascontiguousarray(a)) for a in (q, k, v))
        else:
            tq, tk, tv = (torch.from_dlpack(cupy.ascontiguousarray(a.view(cupy.uint16))).view(torch.bfloat16)
                          for a in (q, k, v))
        theirs = lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)  # noqa: E731

        def t_us():
            theirs()
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(25):
                s.record()
                for _ in range(20):
                    theirs()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) * 1e3 / 20)
            return float(np.median(times))
        row["torch_us"] = t_us()
        row["ours_over_torch"] = row["ours_us"] / row["torch_us"]
    flops = 4.0 * B * H * T * T * D * (0.5 if causal else 1.0)
    row["ours_tflops"] = flops / (row["ours_us"] * 1e-6) / 1e12
    y = ours()
    cupy.cuda.get_current_stream().synchronize()
    h = [_host16(cupy, a[0, 0]).astype(np.float64) for a in (q, k, v)]
    want = _reference(*h, causal, scale)
    got = _host16(cupy, y[0, 0]).astype(np.float64)
    row["max_rel_err"] = float(np.abs(got - want).max() / np.abs(want).max())
    return row


def run(quick: bool = False) -> list[dict]:
    """Measure every row of SHAPES (QUICK: the two target rows), print the table, return the rows."""
    import cupy
    torch = _torch()
    rows = []
    for shape in (QUICK if quick else SHAPES):
        try:
            rows.append(_row(cupy, torch, *shape))
        except Exception as e:  # noqa: BLE001 - one failing row must not lose the others
            rows.append({"shape": "x".join(map(str, shape[:4])), "dtype": shape[4], "causal": shape[5],
                         "layout": shape[6], "error": f"{type(e).__name__}: {e}"})
        cupy.get_default_memory_pool().free_all_blocks()
    _print(rows)
    return rows


def _f(x, fmt="{:8.1f}"):
    return fmt.format(x) if isinstance(x, (int, float)) else f"{'-':>8}"


def _print(rows):
    print(f"{'shape':16s} {'dtype':8s} {'mask':6s} {'layout':9s} {'ours us':>8} {'bm64':>8} {'bm128':>8} "
          f"{'gemm us':>8} {'torch us':>8} {'ours/t':>7} {'TFLOP/s':>8} {'host us':>8} {'err':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['shape']:16s} {r['dtype']:8s} {'causal' if r['causal'] else 'full':6s} {r['layout']:9s} "
                  f"ERROR {r['error']}")
            continue
        print(f"{r['shape']:16s} {r['dtype']:8s} {'causal' if r['causal'] else 'full':6s} {r['layout']:9s} "
              f"{_f(r['ours_us'])} {_f(r.get('ours_bm64_us'))} {_f(r.get('ours_bm128_us'))} "
              f"{_f(r.get('gemm_path_us'))} {_f(r.get('torch_us'))} {_f(r.get('ours_over_torch'), '{:7.2f}')} "
              f"{_f(r['ours_tflops'])} {_f(r['ours_host_us'])} {_f(r['max_rel_err'], '{:8.1e}')}")
    print("targets (issue 21): causal 1x12x1024x64 and 8x12x1024x64 float16 at most torch's time (ours/t <= 1)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the two target rows")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = run(a.quick)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
