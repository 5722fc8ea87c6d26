"""Plot GEMM TFLOP/s against size from a benchmark JSON: python -m benchmarks.plot RESULTS.json OUT.png

One panel per dtype: square sizes (powers of two as lines, the unaligned tails as crosses) and the GPT-2 shapes (by
M), gpk_array beside cuBLAS (CuPy; cuBLASLt TF32 for the tf32 rows) and torch, per-call times."""
import json
import sys


def plot(results_path, out_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.load(open(results_path))
    rows = data["results"]["gemm"]
    env = data.get("env", {})
    dtypes = sorted({r["dtype"] for r in rows})
    fig, axes = plt.subplots(2, len(dtypes), figsize=(5 * len(dtypes), 8), squeeze=False)
    for j, dt in enumerate(dtypes):
        cube = [r for r in rows if r["dtype"] == dt and r["m"] == r["k"] == r["n"]]
        square = sorted((r for r in cube if r["m"] & (r["m"] - 1) == 0), key=lambda r: r["m"])  # powers of two
        tails = sorted((r for r in cube if r["m"] & (r["m"] - 1)), key=lambda r: r["m"])       # 1000^3, 4095^3
        base = (square or tails or [{}])[0].get("baseline", "cupy.matmul")
        ax = axes[0][j]
        for key, label in (("ours_tflops", "gpk_array"),
                           ("cublas_cupy_tflops", "cuBLAS (CuPy)" if base == "cupy.matmul" else base),
                           ("torch_tflops", "torch")):
            line, = ax.plot([r["m"] for r in square], [r[key] or 0 for r in square], marker="o", label=label)
            ax.plot([r["m"] for r in tails], [r[key] or 0 for r in tails], ls="none", marker="x", ms=9,
                    color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dt}: square M=N=K (x: 1000, 4095)")
        ax.set_xlabel("n")
        ax.set_ylabel("TFLOP/s")
        ax.legend()
        ax = axes[1][j]
        for k, n in sorted({(r["k"], r["n"]) for r in rows if r["dtype"] == dt and r["m"] != r["k"]}):
            sel = sorted((r for r in rows if r["dtype"] == dt and (r["k"], r["n"]) == (k, n) and r["m"] != r["k"]),
                         key=lambda r: r["m"])
            line, = ax.plot([r["m"] for r in sel], [r["ours_tflops"] for r in sel], marker="o",
                            label=f"gpk K={k} N={n}")
            ax.plot([r["m"] for r in sel], [r["cublas_cupy_tflops"] for r in sel], ls="--", color=line.get_color(),
                    label=f"cuBLAS K={k} N={n}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{dt}: GPT-2 shapes, by M")
        ax.set_xlabel("M")
        ax.set_ylabel("TFLOP/s")
        ax.legend(fontsize=6)
    fig.suptitle(f"GEMM on {env.get('gpu', '?')}, commit {str(env.get('commit', '?'))[:10]}")
    fig.tight_layout()
    fig.savefig(out_path, dpi=90)


if __name__ == "__main__":
    plot(sys.argv[1], sys.argv[2])
