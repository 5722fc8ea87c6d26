"""Emit the pinned CUTLASS GEMM instances under gpk_array/_kernels/cutlass/ (source only); the manifest and
``--check``. Run as ``python scripts/gen_cutlass.py`` or ``python -m gpk_array._kernels.cutlass.gen``
(DESIGN.md: how and why)."""
from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path

from .families import (
    COMPILE_FLAGS, COMPILE_TEST_KEY, CUTLASS_VERSION, HASH_SEED, LAYOUTS, MANIFEST, NVCC_VERSION_FOR_EMITTER,
    OPTION_REGISTRY_CC, OUT_DIR,
)
from .emit import emit_all
from .probe_sm80 import probe_layout
from .probe_sm90 import probe_sm90_layout

# --------------------------------------------------------------------------------------------------
# Manifest and --check
# --------------------------------------------------------------------------------------------------
def _settings() -> dict:
    return {"cutlass_version": CUTLASS_VERSION, "python_hash_seed": HASH_SEED,
            "nvcc_version_for_emitter": NVCC_VERSION_FOR_EMITTER,
            "option_registry_cc": OPTION_REGISTRY_CC,
            "layouts": {tag: v["doc"]["B"] for tag, v in LAYOUTS.items()},
            "compile_flags": COMPILE_FLAGS, "compile_test_key": COMPILE_TEST_KEY,
            "include_dirs": ["<cutlass_library>/source/include", "<cuda>/include"]}


def _comparable(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "host_params"}


def write(out_dir: Path, probe: bool, probe_sm90: bool = False, families: list[str] | None = None) -> dict:
    old = {}
    if (out_dir / MANIFEST).is_file():
        old = {e["key"]: e for e in json.loads((out_dir / MANIFEST).read_text())["instances"]}
    entries = emit_all(out_dir)
    probed = probe_layout(entries, out_dir) if probe else {}
    if probe_sm90:
        probed.update(probe_sm90_layout(entries, out_dir, families=families))
    for e in entries:
        if e["key"] in probed:
            e["host_params"] = probed[e["key"]]
        elif e["key"] in old and old[e["key"]]["sha256"] == e["sha256"] and "host_params" in old[e["key"]]:
            e["host_params"] = old[e["key"]]["host_params"]
        elif e["arch"] >= 90:
            e["host_params"] = {"status": "not probed: run scripts/gen_cutlass.py --probe-sm90"}
        else:
            e["host_params"] = {"status": "not probed: run scripts/gen_cutlass.py --probe"}
    manifest = {"generator": "scripts/gen_cutlass.py", "settings": _settings(), "instances": entries}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def check(out_dir: Path) -> int:
    path = out_dir / MANIFEST
    if not path.is_file():
        print(f"missing {path}")
        return 1
    manifest = json.loads(path.read_text())
    bad = 0
    if manifest.get("settings") != _settings():
        print("settings in MANIFEST.json differ from the script's pinned settings")
        bad += 1
    with tempfile.TemporaryDirectory(prefix="gpk_cutlass_check_") as tmp:
        fresh = {e["key"]: e for e in emit_all(Path(tmp), header_dir=out_dir)}
    recorded = {e["key"]: e for e in manifest["instances"]}
    for key in sorted(set(fresh) | set(recorded)):
        f, r = fresh.get(key), recorded.get(key)
        if f is None or r is None:
            print(f"{key}: {'not emitted any more' if f is None else 'missing from MANIFEST.json'}")
            bad += 1
            continue
        if _comparable(f) != _comparable(r):
            print(f"{key}: regenerated entry differs from MANIFEST.json")
            bad += 1
        on_disk = out_dir / r["file"]
        if not on_disk.is_file() or hashlib.sha256(on_disk.read_bytes()).hexdigest() != r["sha256"]:
            print(f"{key}: {r['file']} on disk does not match its recorded sha256")
            bad += 1
    print(f"check: {len(fresh)} instances, {bad} mismatches")
    return 1 if bad else 0


def main(argv=None) -> int:
    """The command line of scripts/gen_cutlass.py: emit (default), --check, --probe, --probe-sm90."""
    ap = argparse.ArgumentParser(description="Emit the pinned CUTLASS GEMM instances under gpk_array/_kernels/cutlass/ "
                                             "(source only).")
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare")
    ap.add_argument("--probe", action="store_true", help="record the SM80 Params layout (needs nvcc)")
    ap.add_argument("--probe-sm90", action="store_true",
                    help="record the SM90 Params layout and TMA encode arguments (needs nvcc, no GPU)")
    ap.add_argument("--families", default=None,
                    help="with --probe-sm90: comma-separated SM90 families to probe (default: all)")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.check:
        return check(args.out)
    fams = args.families.split(",") if args.families else None
    manifest = write(args.out, args.probe, args.probe_sm90, fams)
    for e in manifest["instances"]:
        print(f"{e['key']:32s} {e['file']:36s} {e['bytes']:6d} B  {e['host_params']['status']}")
    return 0
