"""Launch arguments for the emitted SM80 CUTLASS GEMM instances (hand-written, not generated).

The ``.cu`` files next to this module are the output of ``scripts/gen_cutlass.py``; MANIFEST.json
describes each of them. For an SM80 (CUTLASS 2.x ``GemmUniversal``) instance the kernel takes one
argument, ``GemmKernel::Params``, by value. CUTLASS builds it on the host from ``Arguments`` with
arithmetic only; this module repeats that arithmetic in Python so no host C++ is needed:

* the base part (problem size, tiled grid shape, swizzle log tile, mode, batch count, gemm_k_size) is
  computed here from the pinned tile shape and swizzle recorded in the manifest;
* the four tile-iterator parameter blocks are affine in their leading dimension; their per-instance
  constants, and every member offset, were measured by ``gen_cutlass.py --probe`` with CUTLASS's own
  Params constructor and are read from the manifest.

Nothing here touches the GPU or imports CuPy. ``build_sm80_launch`` returns the grid, block, dynamic
shared memory size and the raw Params bytes; ``params_scalar`` wraps the bytes as a NumPy structured
scalar, the form in which CuPy passes a struct argument to a RawKernel.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MANIFEST_PATH = Path(__file__).resolve().parent / "MANIFEST.json"

_ELEMENT_BITS = {"f16": 16, "bf16": 16}
_GEMM_MODE_KGEMM = 0          # cutlass::gemm::GemmUniversalMode::kGemm
_CACHELINE_BYTES = 128


@dataclass(frozen=True)
class LaunchArgs:
    kernel: str                  # extern "C" name in the emitted .cu
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int              # dynamic shared memory bytes (also the max-dynamic-smem attribute)
    params: bytes                # GemmKernel::Params, passed by value as the only argument


@lru_cache(maxsize=1)
def load_manifest(path: str | None = None) -> dict:
    return json.loads(Path(path or MANIFEST_PATH).read_text())


def instance(key: str, manifest: dict | None = None) -> dict:
    """The manifest entry with registry key ``key`` (e.g. ``gemm/f16/tn/small/sm80``)."""
    for e in (manifest or load_manifest())["instances"]:
        if e["key"] == key:
            return e
    raise KeyError(key)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _log_tile(swizzle_n: int, tiled_n: int) -> int:
    # GemmIdentityThreadblockSwizzle<N>::get_log_tile
    if swizzle_n >= 8 and tiled_n >= 6:
        return 3
    if swizzle_n >= 4 and tiled_n >= 3:
        return 2
    if swizzle_n >= 2 and tiled_n >= 2:
        return 1
    return 0


def sm80_schedule(entry: dict, m: int, n: int, k: int) -> dict:
    """Tiled shape, swizzle log tile, gemm_k_size and launch grid of one SM80 GEMM (split-K 1)."""
    tm, tn, _ = entry["tile"]
    bits = _ELEMENT_BITS[entry["dtype"]]
    tiled = [_ceil_div(m, tm), _ceil_div(n, tn), 1]
    log_tile = _log_tile(entry["swizzle_n"], tiled[1])
    # UniversalParamsBase::init_grid_tiled_shape, mode kGemm, batch_count 1. A is K-contiguous
    # (row-major), so K aligned to a 128-byte cache line raises the K alignment to a cache line.
    cacheline_elems = _CACHELINE_BYTES // (bits // 8)
    align_k = max(128 // bits, cacheline_elems if k % cacheline_elems == 0 else 1)
    gemm_k_size = _ceil_div(k, align_k) * align_k
    if gemm_k_size:
        tiled[2] = _ceil_div(k, gemm_k_size)
    tile = 1 << log_tile
    grid = (tiled[0] * tile, _ceil_div(tiled[1], tile), tiled[2])
    return {"tiled": tuple(tiled), "log_tile": log_tile, "gemm_k_size": gemm_k_size, "grid": grid}


def sm80_unsupported(entry: dict, m: int, n: int, k: int, lda: int, ldb: int, ldc: int, ldd: int,
                     ptrs: tuple[int, ...] = ()) -> str | None:
    """Why this instance cannot run the problem (None if it can)."""
    if entry.get("arch") != 80 or entry.get("host_params", {}).get("status") != "probed":
        return "not a probed SM80 instance"
    if min(m, n, k) <= 0:
        return "empty problem"
    align = entry["alignment"]["A"]
    bits = _ELEMENT_BITS[entry["dtype"]]
    if k % align or n % align:
        return f"K and N must be multiples of {align}"
    if lda < k or ldb < k or ldc < n or ldd < n:
        return "leading dimension smaller than the row"
    if any(ld % align for ld in (lda, ldb, ldc, ldd)):
        return f"leading dimensions must be multiples of {align}"
    if any(p % (align * bits // 8) for p in ptrs):
        return f"pointers must be {align * bits // 8}-byte aligned"
    if max(m, n, k) >= 2**31:
        return "problem size does not fit int32"
    return None


def build_sm80_launch(entry: dict, m: int, n: int, k: int, ptr_a: int, ptr_b: int, ptr_c: int,
                      ptr_d: int, lda: int | None = None, ldb: int | None = None,
                      ldc: int | None = None, ldd: int | None = None, alpha: float = 1.0,
                      beta: float = 0.0) -> LaunchArgs:
    """Launch arguments for D(m, n) = alpha * A(m, k) @ B(n, k)^T + beta * C(m, n).

    A, C, D are row-major with leading dimensions lda, ldc, ldd (defaults k, n, n); B is the (n, k)
    row-major weight with leading dimension ldb (default k). Pointers are device addresses (ints).
    ptr_c is not read when beta == 0 but must still be a valid, aligned address (pass ptr_d).
    """
    lda = k if lda is None else lda
    ldb = k if ldb is None else ldb
    ldc = n if ldc is None else ldc
    ldd = n if ldd is None else ldd
    why = sm80_unsupported(entry, m, n, k, lda, ldb, ldc, ldd, (ptr_a, ptr_b, ptr_c, ptr_d))
    if why:
        raise ValueError(f"{entry.get('key')}: {why}")
    hp = entry["host_params"]
    off = hp["offsets"]
    sched = sm80_schedule(entry, m, n, k)
    buf = bytearray(hp["params_size"])
    struct.pack_into("<3i", buf, off["problem_size"], m, n, k)
    struct.pack_into("<3i", buf, off["grid_tiled_shape"], *sched["tiled"])
    struct.pack_into("<i", buf, off["swizzle_log_tile"], sched["log_tile"])
    struct.pack_into("<i", buf, off["mode"], _GEMM_MODE_KGEMM)
    struct.pack_into("<i", buf, off["batch_count"], 1)
    struct.pack_into("<i", buf, off["gemm_k_size"], sched["gemm_k_size"])
    # batch_stride_D, semaphore: zero (no batching, no serial split-K)
    for member, ld in (("params_A", lda), ("params_B", ldb), ("params_C", ldc), ("params_D", ldd)):
        words = [a * ld + b for a, b in hp["iterator_affine_in_ld"][member]]
        if len(words) * 8 != hp["sizes"][member]:
            raise ValueError(f"{entry['key']}: {member} size does not match the manifest")
        struct.pack_into(f"<{len(words)}q", buf, off[member], *words)
    # LinearCombination::Params: float alpha, float beta, then four null scalar pointers
    struct.pack_into("<2f", buf, off["output_op"], alpha, beta)
    for member, ptr in (("ptr_A", ptr_a), ("ptr_B", ptr_b), ("ptr_C", ptr_c), ("ptr_D", ptr_d)):
        struct.pack_into("<Q", buf, off[member], ptr)
    # batch strides and gather/scatter index pointers: zero
    return LaunchArgs(kernel=entry["kernel"], grid=sched["grid"], block=(hp["threads"], 1, 1),
                      shared_mem=hp["smem_bytes"], params=bytes(buf))


def params_scalar(raw: bytes):
    """Wrap Params bytes as an 8-byte aligned NumPy structured scalar (CuPy passes it by value)."""
    import numpy

    if len(raw) % 8:
        raise ValueError("Params size must be a multiple of 8")
    dtype = numpy.dtype([("words", "<u8", (len(raw) // 8,))], align=True)
    return numpy.frombuffer(raw, dtype=dtype)[0]
