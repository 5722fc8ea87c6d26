"""Evidence records of the workbench: the machine they were measured on (GPU name, compute capability, SM count,
clock, driver; CUDA runtime, NVRTC, CUTLASS, CuPy, NumPy and gpk_array versions), a fingerprint of the toolchain and
GPU, and the JSON files validate/bench/profile write.

``env`` also holds ``commit``, the git commit of the tree (``commit()``), recorded beside the fingerprint.

An evidence record is a JSON object::

    {"schema": 1, "type": "validation" | "bench" | "profile", "planned": false,
     "candidate": {"name", "kind", "hash", "selector"}, "command": [...argv...], "created": "2026-12-02T03:00:00Z",
     "env": {...}, "fingerprint": {"id": "<16 hex>", "fields": {...}}, "shapes": [...], ...figures...}

``planned: true`` marks what ``--dry-run`` writes on a machine without a GPU: the shapes, inputs and tolerances a
real run would use, and no figures; ``promote`` refuses it. The fingerprint covers what makes a measurement
non-portable (GPU name, compute capability, SM count, driver, CUDA runtime, NVRTC, CUTLASS, CuPy); the clock is
recorded but not part of it (it moves from run to run).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys

from .. import _config

SCHEMA = 1
FINGERPRINT_FIELDS = ("gpu_name", "compute_capability", "sm_count", "driver", "cuda_runtime", "nvrtc", "cutlass",
                      "cupy")
# Relative to the output scale (max |reference|): the tolerance contract of validate, per dtype.
TOLERANCE = {"float32": 1e-4, "tf32": 1e-3, "float16": 5e-2, "bfloat16": 8e-2, "float64": 1e-10}


class EvidenceError(ValueError):
    """An evidence file that cannot be read or is not an evidence record."""


def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dist_version(name):
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version(name)
    except (ImportError, PackageNotFoundError):
        return None


def nvcc_version():
    """``nvcc --version``'s release line (e.g. "13.0, V13.0.48"), or None where nvcc is not on PATH."""
    exe = shutil.which("nvcc")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if "release" in line:
            return line.split("release", 1)[1].strip()
    return out.strip().splitlines()[-1] if out.strip() else None


def gpu_info(device: int = 0) -> dict | None:
    """Name, compute capability, SM count, clock (MHz) and driver of CUDA device ``device`` through CuPy, or None
    where there is no usable GPU (no CuPy, no driver, no device)."""
    try:
        import cupy
        if not cupy.is_available():
            return None
        rt = cupy.cuda.runtime
        p = rt.getDeviceProperties(device)
        drv = rt.driverGetVersion()
        clock = p.get("clockRate")
        return {"name": p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"]),
                "compute_capability": f"{p['major']}{p['minor']}", "sm_count": int(p["multiProcessorCount"]),
                "clock_mhz": None if not clock else int(clock) // 1000,
                "driver": f"{drv // 1000}.{(drv % 1000) // 10}", "device": device}
    except Exception:  # noqa: BLE001 - any failure of the probe means: no usable GPU here
        return None


def toolchain() -> dict:
    """CUDA runtime, NVRTC, nvcc, CUTLASS, CuPy, NumPy, gpk_array and Python versions (None: not installed)."""
    out = {"cuda_runtime": None, "nvrtc": None, "nvcc": nvcc_version(), "cutlass": _dist_version("nvidia-cutlass"),
           "cupy": None, "numpy": None, "gpk_array": None, "python": platform.python_version()}
    import numpy
    out["numpy"] = numpy.__version__
    import gpk_array
    out["gpk_array"] = gpk_array.__version__
    try:
        import cupy
        out["cupy"] = cupy.__version__
        try:
            v = cupy.cuda.runtime.runtimeGetVersion()
            out["cuda_runtime"] = f"{v // 1000}.{(v % 1000) // 10}"
        except Exception:  # noqa: BLE001
            pass
        try:
            major, minor = cupy.cuda.nvrtc.getVersion()
            out["nvrtc"] = f"{major}.{minor}"
        except Exception:  # noqa: BLE001
            pass
    except ImportError:
        pass
    return out


def _checkout_root() -> pathlib.Path:
    """The directory above the gpk_array package: the repository root when gpk_array runs from a checkout."""
    return pathlib.Path(__file__).resolve().parents[2]


def commit() -> str:
    """The commit of the tree the evidence was made with: ``GPK_COMMIT`` when set (a copied tree without ``.git``
    names its commit there), else ``git rev-parse HEAD`` of the checkout gpk_array is imported from (only where
    that directory has a ``.git``: an installed package inside someone else's repository is not that commit),
    else "unknown". Never raises."""
    env = _config.get("GPK_COMMIT")
    if env:
        return env.strip()
    root = _checkout_root()
    try:
        if not (root / ".git").exists():
            return "unknown"
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                           timeout=10)
        head = r.stdout.strip()
        return head if r.returncode == 0 and head else "unknown"
    except Exception:  # noqa: BLE001 - no git, a broken checkout, a timeout: the record says "unknown"
        return "unknown"


def environment(device: int = 0) -> dict:
    """``{"gpu": gpu_info() or None, "toolchain": toolchain(), "host": ..., "commit": commit()}``: what an evidence
    record stores (the commit is recorded, not part of the fingerprint)."""
    return {"gpu": gpu_info(device), "toolchain": toolchain(),
            "host": {"machine": platform.machine(), "system": platform.system(), "cpus": os.cpu_count()},
            "commit": commit()}


def fingerprint(env: dict) -> dict:
    """``{"id": 16 hex digits, "fields": {...}}`` of an ``environment()``: the SHA-256 of FINGERPRINT_FIELDS."""
    gpu = env.get("gpu") or {}
    tc = env.get("toolchain") or {}
    fields = {"gpu_name": gpu.get("name"), "compute_capability": gpu.get("compute_capability"),
              "sm_count": gpu.get("sm_count"), "driver": gpu.get("driver"), "cuda_runtime": tc.get("cuda_runtime"),
              "nvrtc": tc.get("nvrtc"), "cutlass": tc.get("cutlass"), "cupy": tc.get("cupy")}
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]
    return {"id": digest, "fields": fields}


def fingerprint_diff(a: dict, b: dict) -> list[str]:
    """The fingerprint fields that differ between two fingerprints, as "field: A -> B"."""
    fa, fb = a.get("fields", {}), b.get("fields", {})
    return [f"{k}: {fa.get(k)} -> {fb.get(k)}" for k in FINGERPRINT_FIELDS if fa.get(k) != fb.get(k)]


def record(type_: str, candidate: dict, command, planned: bool, env: dict | None = None, **content) -> dict:
    """A new evidence record of ``type_`` for ``candidate`` (its metadata with ``hash``), ``command`` the exact argv
    that made it; ``content`` holds the shapes and figures."""
    env = environment() if env is None else env
    return {"schema": SCHEMA, "type": type_, "planned": bool(planned),
            "candidate": {"name": candidate["name"], "kind": candidate["kind"], "hash": candidate["hash"],
                          "selector": candidate["selector"]},
            "command": list(command), "created": utc_now(), "env": env, "fingerprint": fingerprint(env), **content}


def write(rec: dict, directory) -> pathlib.Path:
    """Write ``rec`` as ``<directory>/<type>-<created>-<fingerprint>.json`` (a new file each time); its path."""
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    stamp = rec["created"].replace(":", "").replace("-", "")
    tag = "planned" if rec["planned"] else rec["fingerprint"]["id"][:8]
    path = d / f"{rec['type']}-{stamp}-{tag}.json"
    i = 1
    while path.exists():
        path = d / f"{rec['type']}-{stamp}-{tag}-{i}.json"
        i += 1
    path.write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path


def read(path) -> dict:
    """The evidence record in ``path``; EvidenceError when it is missing, not JSON or not an evidence record."""
    p = pathlib.Path(path)
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvidenceError(f"{p}: no such evidence file") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise EvidenceError(f"{p}: not a readable evidence record ({e})") from None
    if not isinstance(rec, dict) or rec.get("schema") != SCHEMA or rec.get("type") not in (
            "validation", "bench", "profile"):
        raise EvidenceError(f"{p}: not an evidence record of schema {SCHEMA} (type validation, bench or profile)")
    for f in ("candidate", "fingerprint", "env", "planned", "command"):
        if f not in rec:
            raise EvidenceError(f"{p}: evidence record without {f!r}")
    return rec


def command_line() -> list[str]:
    """The current process's argv with the interpreter, as evidence stores it."""
    return [sys.executable] + list(sys.argv)
