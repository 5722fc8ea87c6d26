#!/usr/bin/env bash
# The GPU machine's checks, in phases that each fit one device call (at most 10 minutes):
#     . .gpu/prelude.sh && bash scripts/gpu_session.sh PHASE      (carry [".gpu"]; stage with ../shared/gpu/stage.sh)
# PHASE:
#   tests    every GPU test (pytest -m gpu), then the sampler kernel under compute-sanitizer racecheck and memcheck
#   bench    the benchmarks users run: llm (greedy and sampled, per call), overhead (per-call cost beside CuPy and
#            torch), jit and pykernel (user kernels beside CuPy RawKernel), attention --quick
#   peers    the peers' suites on cuda:0 beside array_api_strict, torch and CuPy, the scikit-learn and SciPy probes
#   dask     tests/dask on cuda:0 and the Dask benchmark (dask and distributed staged in .gpu/)
#   probe    the NumPy probe (issue 30) on cuda:0, after prebuild fills the kernel cache (a fresh machine otherwise
#            spends minutes compiling gpk_array's .cu modules inside the probe); numpy-100's solutions travel as
#            .gpu/numpy100.ktx (git --git-dir /work/.mirror/rougier+numpy-100/repo show HEAD:source/exercises100.ktx)
# Every phase writes its printed output and JSON under $OUT (or ./gpu_out) and ends with a summary line per step.
set -uo pipefail
out="${OUT:-gpu_out}"
mkdir -p "$out"
phase="${1:?usage: scripts/gpu_session.sh tests|bench|peers|dask|probe}"
# GPK_COMMIT first: the device copy's .git can be stale (it named an older commit than the tree it ran)
commit="${GPK_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
summary="$out/summary_$phase.txt"
: > "$summary"

step() {  # step NAME SECONDS COMMAND...: run with a time limit, keep the output, record the status and the tail
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - start))s: $(tail -n 1 "$out/$name.txt")" | tee -a "$summary"
}

echo "phase $phase at $commit" | tee -a "$summary"
case "$phase" in
tests)
    step gpu_tests 330 python3 -m pytest -q -n 10 -m gpu tests -p no:cacheprovider
    grep -E "^(FAILED|ERROR)" "$out/gpu_tests.txt" | head -40 >> "$summary"
    step racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest -q -m gpu \
        tests/llm/test_sampling_kernel.py -k "ties or bit_exact" -p no:cacheprovider
    step memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
        tests/llm/test_sampling_kernel.py -k "ties or bit_exact" -p no:cacheprovider
    ;;
bench)
    step llm 300 python3 -m benchmarks llm --json "$out/llm.json"
    step overhead 120 python3 -m benchmarks overhead --json "$out/overhead.json"
    step jit 60 python3 -m benchmarks jit --json "$out/jit.json"
    step pykernel 60 python3 -m benchmarks pykernel --json "$out/pykernel.json"
    step attention 50 python3 -m benchmarks.attention_bench --quick --json "$out/attention.json"
    ;;
peers)
    step peers_sklearn 150 python3 -m conformance.peers sklearn --device cuda:0 --subset full \
        --compare array_api_strict,torch,cupy -n 8 --json "$out/peers_sklearn_cuda.json"
    step peers_extra 120 python3 -m conformance.peers extra --device cuda:0 --subset full \
        --compare array_api_strict,torch,cupy -n 8 --extra-tests .gpu/aae --json "$out/peers_extra_cuda.json"
    step scipy_probe 220 python3 -m conformance.scipy_probe --device cuda:0 --dtype float64 float32 \
        --json "$out/scipy_probe_cuda.json"
    step sklearn_probe 100 python3 -m conformance.sklearn_probe --device cuda:0 --compare torch,cupy \
        --json "$out/sklearn_probe_cuda.json"
    ;;
dask)
    python3 -m pip install -q --no-deps -e . > /dev/null 2>&1 || true   # the dask.array.backends entry point
    step dask_tests 240 python3 -m pytest -q -rs tests/dask -p no:cacheprovider
    step dask_bench 240 python3 -m benchmarks dask --json "$out/dask_bench.json"
    ;;
probe)
    step prebuild 200 python3 -m gpk_array._kernels.prebuild --jobs 16
    step numpy_probe_1 170 python3 -m conformance.numpy_probe --device cuda:0 --numpy100 .gpu/numpy100.ktx \
        --timeout 120 --part 1/2 --json "$out/numpy_probe_cuda_1.json"
    step numpy_probe_2 170 python3 -m conformance.numpy_probe --device cuda:0 --timeout 120 --part 2/2 \
        --json "$out/numpy_probe_cuda_2.json"
    ;;
*)
    echo "unknown phase $phase" >&2
    exit 2
    ;;
esac
cat "$summary"
