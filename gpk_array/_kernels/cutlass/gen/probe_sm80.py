"""Host layout probe (SM80): CUTLASS's own Params constructor, compiled host-only with nvcc, records every
member offset of the SM80 instances' Params."""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from .emit import cutlass_include_dir

# --------------------------------------------------------------------------------------------------
# Host layout probe (SM80): CUTLASS's own Params constructor, compiled host-only with nvcc
# --------------------------------------------------------------------------------------------------
_PROBE_MEMBERS = ["problem_size", "grid_tiled_shape", "swizzle_log_tile", "mode", "batch_count",
                  "gemm_k_size", "batch_stride_D", "semaphore", "params_A", "params_B", "params_C",
                  "params_D", "output_op", "ptr_A", "ptr_B", "ptr_C", "ptr_D", "batch_stride_A",
                  "batch_stride_B", "batch_stride_C", "ptr_gather_A_indices",
                  "ptr_gather_B_indices", "ptr_scatter_D_indices"]

# (M, N, K, lda, ldb, ldc, ldd, alpha, beta, ptr_A, ptr_B, ptr_C, ptr_D); the first two measure the
# affine coefficients, the others check them; all are kept as golden dumps for the unit tests.
PROBE_CASES = [
    (256, 512, 128, 128, 136, 512, 520, 1.0, 0.0, 0x10000, 0x20000, 0x30000, 0x40000),
    (256, 512, 128, 192, 256, 640, 776, 1.0, 0.0, 0x10000, 0x20000, 0x30000, 0x40000),
    (1000, 3000, 4104, 4112, 4120, 3008, 3016, 0.5, 0.25,
     0x7f0000001000, 0x7f0000200000, 0x7f0000400000, 0x7f0000600000),
    (1, 3072, 768, 768, 768, 3072, 3072, 2.0, 1.0,
     0x7f0000800000, 0x7f0000a00000, 0x7f0000c00000, 0x7f0000c00000),
]


def _probe_source(entries: list[dict], src_dir: Path) -> str:
    lines = ["#include <cstdio>", "#include <cstring>", "#include <cstdint>", "#include <new>"]
    bodies = []
    for e in entries:
        text = (src_dir / e["file"]).read_text()
        # keep the includes and type definitions; drop the __global__ entry point
        cut = text.index('extern "C"')
        lines.append(text[:cut])
    lines.append("template <typename K> void dump(const char* key, int M, int N, int Kd, int64_t lda,")
    lines.append("    int64_t ldb, int64_t ldc, int64_t ldd, float alpha, float beta,")
    lines.append("    unsigned long long pa, unsigned long long pb, unsigned long long pc,")
    lines.append("    unsigned long long pd) {")
    lines.append("  typename K::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm,")
    lines.append("      cutlass::gemm::GemmCoord(M, N, Kd), 1, {alpha, beta}, (void const*)pa,")
    lines.append("      (void const*)pb, (void const*)pc, (void*)pd, int64_t(0), int64_t(0), int64_t(0), int64_t(0), "
                 "lda, ldb, ldc, ldd);")
    lines.append("  alignas(typename K::Params) unsigned char buf[sizeof(typename K::Params)];")
    lines.append("  std::memset(buf, 0, sizeof(buf));")
    lines.append("  auto* p = new (buf) typename K::Params(args, -1, -1);")
    lines.append("  dim3 g = p->get_grid_dims();")
    lines.append('  std::printf("{\\"key\\": \\"%s\\", \\"size\\": %zu, \\"align\\": %zu, '
                 '\\"smem\\": %zu, \\"threads\\": %d, \\"grid\\": [%u, %u, %u], \\"offsets\\": {",')
    lines.append("      key, sizeof(typename K::Params), alignof(typename K::Params),")
    lines.append("      sizeof(typename K::SharedStorage), int(K::kThreadCount), g.x, g.y, g.z);")
    for i, m in enumerate(_PROBE_MEMBERS):
        sep = "" if i == 0 else ", "
        lines.append(f'  std::printf("{sep}\\"{m}\\": [%td, %zu]", '
                     f"(unsigned char*)&p->{m} - buf, sizeof(p->{m}));")
    lines.append('  std::printf("}, \\"hex\\": \\"");')
    lines.append('  for (size_t i = 0; i < sizeof(buf); ++i) std::printf("%02x", buf[i]);')
    lines.append('  std::printf("\\"}\\n");')
    lines.append("}")
    lines.append("int main() {")
    for e in entries:
        for case in PROBE_CASES:
            M, N, K, lda, ldb, ldc, ldd, al, be, pa, pb, pc, pd = case
            bodies.append(f'  dump<{e["kernel_type"]}>("{e["key"]}", {M}, {N}, {K}, {lda}LL, {ldb}LL, '
                          f"{ldc}LL, {ldd}LL, {al}f, {be}f, {pa}ULL, {pb}ULL, {pc}ULL, {pd}ULL);")
    lines.extend(bodies)
    lines.append("  return 0;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _words(hexstr: str, off: int, size: int) -> list[int]:
    raw = bytes.fromhex(hexstr)[off:off + size]
    return [int.from_bytes(raw[i:i + 8], "little", signed=True) for i in range(0, size, 8)]


def probe_layout(entries: list[dict], src_dir: Path, nvcc: str = "nvcc") -> dict:
    """Compile and run the host probe; return {key: host_params dict}."""
    sm80 = [e for e in entries if e["arch"] < 90]
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_probe_") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text(_probe_source(sm80, src_dir))
        exe = Path(tmp) / "probe"
        cmd = [nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-DNDEBUG", "-O0",
               "-arch=sm_80", "-I", str(cutlass_include_dir()), "-o", str(exe), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode:
            raise RuntimeError("probe compile failed:\n" + r.stderr[-8000:])
        r = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    rows: dict[str, list[dict]] = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        rows.setdefault(d["key"], []).append(d)
    ld_index = {"params_A": 3, "params_B": 4, "params_C": 5, "params_D": 6}
    out = {}
    for key, dumps in rows.items():
        r1, r2 = dumps[0], dumps[1]
        offs = r1["offsets"]
        affine = {}
        for member, li in ld_index.items():
            off, size = offs[member]
            w1, w2 = _words(r1["hex"], off, size), _words(r2["hex"], off, size)
            l1, l2 = PROBE_CASES[0][li], PROBE_CASES[1][li]
            coeffs = []
            for i, (a1, a2) in enumerate(zip(w1, w2)):
                slope, rem = divmod(a2 - a1, l2 - l1)
                inter = a1 - slope * l1
                for case, rr in zip(PROBE_CASES[2:], dumps[2:]):
                    if rem or slope * case[li] + inter != _words(rr["hex"], off, size)[i]:
                        raise RuntimeError(f"{key}.{member}: not affine in the leading dimension")
                coeffs.append([slope, inter])
            affine[member] = coeffs
        out[key] = {
            "status": "probed",
            "params_size": r1["size"],
            "params_align": r1["align"],
            "smem_bytes": r1["smem"],
            "threads": r1["threads"],
            "offsets": {k: v[0] for k, v in offs.items()},
            "sizes": {k: v[1] for k, v in offs.items()},
            "iterator_affine_in_ld": affine,
            "golden": [{"case": list(c), "grid": rr["grid"], "hex": rr["hex"]}
                       for c, rr in zip(PROBE_CASES, dumps)],
        }
    return out
