"""Evidence records as a GPU machine would write them, for the gate's CPU tests: the environment of an H200 (or
another GPU), and validation/bench records with declared figures. The gate reads only these fields."""
import copy

from gpk_array.workbench import evidence

H200 = {"gpu": {"name": "NVIDIA H200", "compute_capability": "90", "sm_count": 132, "clock_mhz": 1980,
                "driver": "13.0", "device": 0},
        "toolchain": {"cuda_runtime": "13.0", "nvrtc": "13.0", "nvcc": "13.0, V13.0.88", "cutlass": "4.2.0.0",
                      "cupy": "14.2.0", "numpy": "2.4.6", "gpk_array": "0.1.0", "python": "3.11.7"},
        "host": {"machine": "x86_64", "system": "Linux", "cpus": 16}}


def env(**gpu):
    e = copy.deepcopy(H200)
    e["gpu"].update(gpu)
    return e


def validation(meta, passed=True, planned=False, environment=None):
    results = [{"case": "family", "shape": s, "max_abs": 1e-3, "scale": 4.0, "rel": 2.5e-4, "tolerance": 5e-2,
                "nonfinite_match": True, "passed": True} for s in meta["shapes"]]
    if not passed:
        results[0].update(passed=False, rel=0.3, why="rel error 0.3 > 0.05")
    summary = {"passed": passed, "cases": len(results), "declined": 0, "failed": 0 if passed else 1,
               "worst_rel": max(r["rel"] for r in results),
               "failures": [] if passed else ["family 512x3072x768: rel error 0.3 > 0.05"]}
    return evidence.record("validation", meta, ["test"], planned, env=environment or env(), results=results,
                           summary=summary)


def bench(meta, ratio, incumbent="cublaslt", planned=False, environment=None):
    rows = [{"shape": s, "incumbent": incumbent, "candidate": {"gpu": {"median_us": 10.0}},
             "incumbent_t": {"gpu": {"median_us": 10.0 * ratio}}, "ratio_vs_incumbent": ratio,
             "ratio_vs_cublaslt": ratio} for s in meta["shapes"]]
    return evidence.record("bench", meta, ["test"], planned, env=environment or env(), rows=rows,
                           summary={"median_ratio_vs_incumbent": ratio, "shapes_counted": len(rows),
                                    "shapes": len(rows)})


def routing_bench(meta, ratio, incumbent_from, environment=None):
    n = meta["choice"]["own_from"]
    rows = []
    for (size,) in meta["shapes"]:
        cand = "ours" if size >= n else "cupy"
        inc = "ours" if size >= incumbent_from else "cupy"
        rows.append({"op": "add", "dtype": "float16", "shape": [size], "candidate_choice": cand,
                     "incumbent_choice": inc, "ours": {"median_us": 10.0}, "cupy": {"median_us": 10.0 * ratio},
                     "ratio_vs_incumbent": ratio if cand != inc else 1.0, "decision_differs": cand != inc})
    from gpk_array.workbench import api
    return evidence.record("bench", meta, ["test"], False, env=environment or env(), rows=rows,
                           summary=api.bench_summary(rows, meta["kind"]))
