"""Compile, cache and load the CUDA kernels in ``gpk_array/_kernels/cuda/``.

``get_function(cu_file, name, options)`` returns a ``cupy.RawKernel`` for the ``extern "C"`` kernel
``name`` of ``cuda/<cu_file>`` compiled with ``options`` for the current device. The first call in a
process looks for the cubin in the disk cache and loads it with ``cupy.RawModule(path=...)``; on a
miss it compiles the source to a cubin itself (NVRTC through CuPy's raw bindings, or nvcc when NVRTC
is not installed), writes the cubin to the cache atomically and loads that. Later calls are one dict
lookup.

Besides ``cuda/<file>.cu``, ``cu_file`` may name an emitted CUTLASS instance, ``cutlass/<file>.cu`` (see
``cutlass/MANIFEST.json``): it is compiled with the CUTLASS headers of the installed nvidia-cutlass wheel
(``<cutlass_library>/source/include``) and keyed by the file and that CUTLASS version; NVRTC also gets the CCCL
headers (nvcc finds them by itself) and the NVRTC spellings of two nvcc-only CUTLASS flags (``_NVRTC_OPTIONS``).

The disk cache lives in ``$GPK_CACHE_DIR/sm_<arch>/`` or ``~/.cache/gpk_array/kernels/sm_<arch>/``;
a cubin is named after the SHA-256 of the source (the ``.cu`` file and every ``.cuh`` header beside
it), the options, the arch, the CuPy version and the CUDA runtime version. The key deliberately
does not load NVRTC (to read its version or to see whether it is there): that alone costs about
250 ms, and a warm start must stay well under 100 ms.

Compiling needs no GPU when ``arch`` is given (``compile_cubin``, ``build``, ``prebuild(arch=...)``);
loading does.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .. import _config
from .errors import KernelCompileError

KERNELS_DIR = Path(__file__).resolve().parent
CUDA_DIR = KERNELS_DIR / "cuda"
CUTLASS_PREFIX = "cutlass/"   # cu_file names under KERNELS_DIR / "cutlass"

# Bump when the way cubins are built changes in a way the key does not see.
_FORMAT_VERSION = "1"
_BASE_OPTIONS = ("-std=c++17",)
_NOTE_AFTER_S = 1.0
# nvcc flags NVRTC rejects, and what NVRTC takes instead (None: drop). Only the CUTLASS instances use them.
# --expt-relaxed-constexpr lets device code call constexpr host functions (CUTLASS does); NVRTC's -default-device
# compiles every function without an execution space for the device, which covers those calls (NVRTC compiles
# device code only). -O3 is NVRTC's default optimization level already.
_NVRTC_OPTIONS = {"--expt-relaxed-constexpr": "-default-device", "-O3": None}

_lock = threading.RLock()
_functions: dict = {}        # (cu_file, name, options, device_id) -> cupy.RawKernel
_modules: dict = {}          # (cu_file, options, arch) -> cupy.RawModule
_sources: dict = {}          # cu_file -> bundled source text used for the key
_device_arch: dict = {}      # device_id -> "90"
_device_sms: dict = {}       # device_id -> multiprocessor count
_nvrtc_ok = None
_cuda_include = None
_cccl_include = None
_cutlass = None              # (include dir or None, version string)
_versions = None


# ----------------------------------------------------------------------------------------------
# sources and keys

def cu_files() -> list[str]:
    """The ``.cu`` files of the kernel layer, sorted."""
    return sorted(p.name for p in CUDA_DIR.glob("*.cu"))


def _is_cutlass(cu_file: str) -> bool:
    return cu_file.startswith(CUTLASS_PREFIX)


def source_path(cu_file: str) -> Path:
    """``cuda/<cu_file>``, or ``<cu_file>`` under gpk_array/_kernels for ``cutlass/<file>.cu``."""
    if _is_cutlass(cu_file):
        name = cu_file[len(CUTLASS_PREFIX):]
        if not name or "/" in name or name.startswith("."):
            raise FileNotFoundError(f"gpk_array: bad kernel source name {cu_file!r}")
        return KERNELS_DIR / "cutlass" / name
    return CUDA_DIR / cu_file


def read_source(cu_file: str) -> str:
    path = source_path(cu_file)
    if not path.is_file():
        raise FileNotFoundError(f"gpk_array: no kernel source {path}")
    return path.read_text()


def source_bundle(cu_file: str) -> str:
    """The text the cache key hashes: the ``.cu`` file plus every local header (sorted by name); for a CUTLASS
    instance the file plus the version of the CUTLASS headers it is compiled with."""
    text = _sources.get(cu_file)
    if text is None and _is_cutlass(cu_file):
        text = f"// file {cu_file}\n{read_source(cu_file)}\n// CUTLASS headers {cutlass_headers()[1]}\n"
        _sources[cu_file] = text
    if text is None:
        parts = [f"// file {cu_file}\n", read_source(cu_file)]
        for hdr in sorted(CUDA_DIR.glob("*.cuh")):
            parts.append(f"\n// header {hdr.name}\n")
            parts.append(hdr.read_text())
        text = "".join(parts)
        _sources[cu_file] = text
    return text


def _toolchain_versions() -> str:
    global _versions
    if _versions is None:
        try:
            import cupy
        except ImportError:  # compiling with nvcc needs no CuPy (CI's compile checks, prebuild)
            _versions = "cupy=none;cudart=none"
            return _versions
        try:
            rt = str(cupy.cuda.runtime.runtimeGetVersion())
        except Exception:  # pragma: no cover - cudart missing entirely
            rt = "unknown"
        _versions = f"cupy={cupy.__version__};cudart={rt}"
    return _versions


def normalize_arch(arch) -> str:
    """'90', 'sm_90', 90, '9.0' -> '90'; '90a' / 'sm_90a' keep the suffix."""
    s = str(arch).strip().lower()
    if s.startswith("sm_") or s.startswith("compute_"):
        s = s.split("_", 1)[1]
    s = s.replace(".", "")
    if not re.fullmatch(r"\d+[af]?", s):
        raise ValueError(f"gpk_array: bad CUDA arch {arch!r}")
    return s


def cache_key(source: str, options=(), arch="90", versions: str | None = None) -> str:
    """SHA-256 hex of everything that decides the cubin. The compiler backend is left out on
    purpose: NVRTC and nvcc builds of one source are interchangeable, and finding out which
    backend is available means loading NVRTC (about 250 ms), which a warm start must not pay."""
    h = hashlib.sha256()
    for part in (_FORMAT_VERSION, normalize_arch(arch),
                 versions if versions is not None else _toolchain_versions(),
                 "\0".join(_BASE_OPTIONS + tuple(options)), source):
        h.update(part.encode("utf-8"))
        h.update(b"\0\1\0")
    return h.hexdigest()


def cache_root() -> Path:
    env = _config.get("GPK_CACHE_DIR")
    if env is not None:
        return env
    return Path.home() / ".cache" / "gpk_array" / "kernels"


def cache_path(key: str, arch) -> Path:
    return cache_root() / f"sm_{normalize_arch(arch)}" / f"{key}.cubin"


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file, no file, or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ----------------------------------------------------------------------------------------------
# compilers

def cuda_include_dir() -> str | None:
    global _cuda_include
    if _cuda_include is None:
        found = None
        for env in ("CUDA_PATH", "CUDA_HOME"):
            p = os.environ.get(env)
            if p and (Path(p) / "include" / "cuda_fp16.h").is_file():
                found = str(Path(p) / "include")
                break
        if found is None:
            try:
                from cuda.pathfinder import find_nvidia_header_directory
                found = find_nvidia_header_directory("cudart")
            except Exception:
                found = None
        if found is None:
            for p in ("/usr/local/cuda/include",):
                if Path(p, "cuda_fp16.h").is_file():
                    found = p
        _cuda_include = found or ""
    return _cuda_include or None


def cccl_include_dir() -> str | None:
    """The CCCL headers (``cuda/std/...``, which CUTLASS includes under NVRTC): ``<cuda include>/cccl`` as CUDA 13
    lays them out, else wherever cuda.pathfinder finds them (a pip wheel)."""
    global _cccl_include
    if _cccl_include is None:
        found = None
        inc = cuda_include_dir()
        if inc and (Path(inc) / "cccl" / "cuda" / "std").is_dir():
            found = str(Path(inc) / "cccl")
        if found is None:
            try:
                from cuda.pathfinder import find_nvidia_header_directory
                found = find_nvidia_header_directory("cccl")
            except Exception:
                found = None
        _cccl_include = found or ""
    return _cccl_include or None


def cutlass_headers() -> tuple[str | None, str]:
    """(include dir, version) of the CUTLASS C++ headers in the installed nvidia-cutlass wheel
    (``<cutlass_library>/source/include``); (None, "none") when it is not installed. Imports nothing."""
    global _cutlass
    if _cutlass is None:
        inc, version = None, "none"
        try:
            import importlib.util
            spec = importlib.util.find_spec("cutlass_library")
        except Exception:
            spec = None
        if spec is not None and spec.origin:
            d = Path(spec.origin).resolve().parent / "source" / "include"
            vh = d / "cutlass" / "version.h"
            if vh.is_file():
                inc = str(d)
                nums = dict(re.findall(r"#define CUTLASS_(MAJOR|MINOR|PATCH) (\d+)", vh.read_text()))
                version = ".".join(nums.get(k, "?") for k in ("MAJOR", "MINOR", "PATCH"))
        _cutlass = (inc, version)
    return _cutlass


def source_include_dirs(cu_file: str) -> tuple[str, ...]:
    """Include directories a source needs beyond cuda/ and the CUDA headers (CUTLASS's, for its instances)."""
    if not _is_cutlass(cu_file):
        return ()
    inc = cutlass_headers()[0]
    if inc is None:
        raise KernelCompileError(f"gpk_array: {cu_file} needs the CUTLASS headers of the nvidia-cutlass package "
                                 "(pip install nvidia-cutlass==4.2.0.0), which is not installed", file=cu_file,
                                 backend="none")
    return (inc,)


def nvrtc_available() -> bool:
    global _nvrtc_ok
    if _nvrtc_ok is None:
        try:
            from cupy.cuda import nvrtc
            nvrtc.getVersion()
            _nvrtc_ok = True
        except Exception:
            _nvrtc_ok = False
    return _nvrtc_ok


def nvcc_path() -> str | None:
    p = shutil.which("nvcc")
    if p:
        return p
    for base in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if base and Path(base, "bin", "nvcc").is_file():
            return str(Path(base, "bin", "nvcc"))
    return None


def default_backend() -> str:
    forced = _config.get("GPK_KERNEL_BACKEND")
    if forced is not None:
        return forced
    if nvrtc_available():
        return "nvrtc"
    if nvcc_path():
        return "nvcc"
    return "nvrtc"  # fails with a clear KernelCompileError below


def _include_options(include_dirs=(), nvrtc: bool = False) -> list[str]:
    opts = [f"-I{CUDA_DIR}", *(f"-I{d}" for d in include_dirs)]
    inc = cuda_include_dir()
    if inc and (nvrtc or not include_dirs):  # nvcc with third-party headers: only the CUDA headers nvcc ships
        opts.append(f"-I{inc}")
    if nvrtc and include_dirs:  # third-party headers (CUTLASS) include libcu++; nvcc finds CCCL itself
        cccl = cccl_include_dir()
        if cccl:
            opts.append(f"-I{cccl}")
    return opts


def _nvrtc_options(options) -> list[str]:
    mapped = (_NVRTC_OPTIONS.get(o, o) for o in options)
    return [o for o in mapped if o is not None]


def _compile_nvrtc(source: str, options, arch: str, name: str, include_dirs=()) -> bytes:
    try:
        from cupy.cuda import nvrtc
    except Exception as e:  # pragma: no cover
        raise KernelCompileError(f"gpk_array: NVRTC is not importable: {e}", backend="nvrtc") from e
    opts = [f"--gpu-architecture=sm_{arch}", *_BASE_OPTIONS, *_include_options(include_dirs, nvrtc=True),
            *_nvrtc_options(options)]
    try:
        prog = nvrtc.createProgram(source, name, [], [])
    except Exception as e:
        raise KernelCompileError(f"gpk_array: NVRTC is not usable ({e}); install the CUDA NVRTC "
                                 f"library or nvcc", backend="nvrtc") from e
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as e:
            try:
                log = nvrtc.getProgramLog(prog)
            except Exception:
                log = ""
            raise KernelCompileError(f"gpk_array: NVRTC failed to compile {name} for sm_{arch} ({e})",
                                     log, file=name, options=tuple(options), arch=arch,
                                     backend="nvrtc") from None
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        try:
            nvrtc.destroyProgram(prog)
        except Exception:
            pass


def _compile_nvcc(source: str, options, arch: str, name: str, include_dirs=()) -> bytes:
    nvcc = nvcc_path()
    if nvcc is None:
        raise KernelCompileError("gpk_array: neither NVRTC nor nvcc is available to compile kernels",
                                 file=name, options=tuple(options), arch=arch, backend="nvcc")
    with tempfile.TemporaryDirectory(prefix="gpk_nvcc_") as tmp:
        src = Path(tmp) / Path(name).name
        src.write_text(source)
        out = Path(tmp) / "out.cubin"
        cmd = [nvcc, "-cubin", f"-arch=sm_{arch}", *_BASE_OPTIONS, *_include_options(include_dirs),
               *options, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not out.is_file():
            log = (proc.stdout or "") + (proc.stderr or "")
            raise KernelCompileError(f"gpk_array: nvcc failed to compile {name} for sm_{arch} "
                                     f"(exit {proc.returncode})", log, file=name,
                                     options=tuple(options), arch=arch, backend="nvcc")
        return out.read_bytes()


def compile_cubin(source: str, options=(), arch="90", backend: str | None = None,
                  name: str = "kernel.cu", include_dirs=()) -> bytes:
    """Compile CUDA C++ ``source`` to a cubin for ``sm_<arch>``; no GPU needed. ``include_dirs``: more header
    directories (``source_include_dirs(cu_file)``).

    Raises ``KernelCompileError`` with the compiler log on failure.
    """
    arch = normalize_arch(arch)
    backend = backend or default_backend()
    if backend == "nvrtc":
        return _compile_nvrtc(source, tuple(options), arch, name, tuple(include_dirs))
    if backend == "nvcc":
        return _compile_nvcc(source, tuple(options), arch, name, tuple(include_dirs))
    raise ValueError(f"gpk_array: unknown kernel backend {backend!r}")


def _compile_with_note(source, options, arch, backend, cu_file, note=True) -> tuple[bytes, float]:
    """Compile; if that takes longer than a second, say so on stderr (once)."""
    timer = threading.Timer(_NOTE_AFTER_S, lambda: print(
        f"gpk_array: compiling {cu_file} for sm_{arch} ...", file=sys.stderr, flush=True))
    timer.daemon = True
    t0 = time.perf_counter()
    if note:
        timer.start()
    try:
        cubin = compile_cubin(source, options, arch, backend, name=cu_file,
                              include_dirs=source_include_dirs(cu_file))
    finally:
        timer.cancel()
    return cubin, time.perf_counter() - t0


_path_locks: dict = {}


def _path_lock(path) -> threading.Lock:
    with _lock:
        lk = _path_locks.get(str(path))
        if lk is None:
            lk = _path_locks[str(path)] = threading.Lock()
        return lk


def backends_for(cu_file: str, backend: str | None = None) -> tuple[str, ...]:
    """The compilers to try for a source, in order. ``backend`` or GPK_KERNEL_BACKEND: that one alone. Our own
    kernels: ``default_backend()``. A CUTLASS instance: nvcc first (CUTLASS's own compiler, with the CUDA and CCCL
    headers it ships, so a CCCL copy elsewhere cannot mismatch), then NVRTC; whichever are installed."""
    if backend:
        return (backend,)
    forced = _config.get("GPK_KERNEL_BACKEND")
    if forced is not None:
        return (forced,)
    if not _is_cutlass(cu_file):
        return (default_backend(),)
    found = tuple(b for b in ("nvcc", "nvrtc") if (nvcc_path() if b == "nvcc" else nvrtc_available()))
    return found or ("nvrtc",)  # neither: NVRTC's clear KernelCompileError


def _compile_first(source, options, arch, backends, cu_file, note) -> bytes:
    """The cubin of the first backend that compiles the source; KernelCompileError with every log if none does."""
    errors = []
    for b in backends:
        try:
            return _compile_with_note(source, options, arch, b, cu_file, note)[0]
        except KernelCompileError as e:
            errors.append(e)
    if len(errors) == 1:
        raise errors[0]
    raise KernelCompileError("; ".join(e.message for e in errors), "\n".join(e.log for e in errors), file=cu_file,
                             options=tuple(options), arch=arch, backend="+".join(backends))


def build(cu_file: str, options=(), arch=None, backend: str | None = None, force: bool = False,
          note: bool = True) -> dict:
    """Make sure the cubin for (cu_file, options, arch) is in the disk cache; no GPU needed when
    ``arch`` is given. Returns ``{"file", "options", "arch", "path", "cached", "seconds"}``.
    ``note=False`` silences the progress line of a slow compile (prebuild prints its own)."""
    arch = normalize_arch(arch if arch is not None else device_arch())
    options = tuple(options)
    source = source_bundle(cu_file)
    key = cache_key(source, options, arch)
    path = cache_path(key, arch)
    t0 = time.perf_counter()
    if path.is_file() and not force:
        return {"file": cu_file, "options": options, "arch": arch, "path": str(path),
                "cached": True, "seconds": time.perf_counter() - t0}
    with _path_lock(path):  # one compile per cubin; different cubins compile in parallel
        if path.is_file() and not force:
            cached = True
        else:
            cubin = _compile_first(read_source(cu_file), options, arch, backends_for(cu_file, backend),
                                   cu_file, note)
            write_atomic(path, cubin)
            cached = False
    info = {"file": cu_file, "options": options, "arch": arch, "path": str(path),
            "cached": cached, "seconds": time.perf_counter() - t0}
    if not cached and _config.get("GPK_KERNEL_LOG"):
        _log_compile(info)
    return info


def _log_compile(info: dict) -> None:
    """GPK_KERNEL_LOG=path: one JSON line per module compiled (not found in the disk cache), to find what a
    workload compiles that ``prebuild`` did not build."""
    import json
    with open(_config.get("GPK_KERNEL_LOG"), "a") as f:
        f.write(json.dumps({k: info[k] for k in ("file", "options", "arch", "seconds")}) + "\n")


# ----------------------------------------------------------------------------------------------
# devices and loading

def current_device_id() -> int:
    import cupy
    return cupy.cuda.runtime.getDevice()


def device_arch(device_id: int | None = None) -> str:
    """Compute capability of a device as '90' (needs a GPU)."""
    if device_id is None:
        device_id = current_device_id()
    arch = _device_arch.get(device_id)
    if arch is None:
        import cupy
        arch = normalize_arch(cupy.cuda.Device(device_id).compute_capability)
        _device_arch[device_id] = arch
    return arch


def sm_count(device_id: int | None = None) -> int:
    if device_id is None:
        device_id = current_device_id()
    n = _device_sms.get(device_id)
    if n is None:
        import cupy
        n = int(cupy.cuda.Device(device_id).attributes["MultiProcessorCount"])
        _device_sms[device_id] = n
    return n


def get_module(cu_file: str, options=(), arch: str | None = None):
    """The ``cupy.RawModule`` for (cu_file, options) on the current device's arch."""
    import cupy
    options = tuple(options)
    arch = normalize_arch(arch) if arch is not None else device_arch()
    mkey = (cu_file, options, arch)
    mod = _modules.get(mkey)
    if mod is not None:
        return mod
    with _lock:
        mod = _modules.get(mkey)
        if mod is None:
            info = build(cu_file, options, arch)
            mod = cupy.RawModule(path=info["path"])
            _modules[mkey] = mod
    return mod


def get_function(cu_file: str, name: str, options=()):
    """The kernel ``name`` (an ``extern "C"`` name) of ``cuda/<cu_file>`` built with ``options``,
    as a ``cupy.RawKernel`` for the current device. Compiles (or loads the cached cubin) on first
    use; afterwards a dict lookup."""
    if type(options) is not tuple:
        options = tuple(options)
    dev = current_device_id()
    fkey = (cu_file, name, options, dev)
    fn = _functions.get(fkey)
    if fn is not None:
        return fn
    with _lock:
        fn = _functions.get(fkey)
        if fn is not None:
            return fn
        mod = get_module(cu_file, options)
        try:
            fn = mod.get_function(name)
        except Exception as e:
            if "CUDA_ERROR_NOT_FOUND" in str(e):
                raise RuntimeError(f"gpk_array: kernel {name!r} is not in {cu_file} built with "
                                   f"{' '.join(options) or 'no options'}") from e
            if not _is_driver_error(e):
                raise
            # A damaged cache file (or one the driver rejects): rebuild it once, then retry.
            arch = device_arch(dev)
            _modules.pop((cu_file, options, arch), None)
            build(cu_file, options, arch, force=True)
            mod = get_module(cu_file, options)
            fn = mod.get_function(name)
        _functions[(cu_file, name, options, dev)] = fn
    return fn


def _is_driver_error(e: Exception) -> bool:
    return type(e).__name__ in ("CUDADriverError", "CUDARuntimeError") or "CUDA_ERROR" in str(e)


_occupancy: dict = {}


def occupancy(fn, threads: int, shared_mem: int = 0, device_id: int | None = None) -> int:
    """Resident blocks per SM for kernel ``fn`` (a cupy.RawKernel) at ``threads`` per block."""
    dev = current_device_id() if device_id is None else device_id
    key = (id(fn), threads, shared_mem, dev)
    n = _occupancy.get(key)
    if n is None:
        from cupy_backends.cuda.api import driver
        n = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, int(threads),
                                                                 int(shared_mem)))
        n = max(1, n)
        _occupancy[key] = n
        _occupancy_keep.append(fn)  # keep fn alive so its id() is not reused
    return n


_occupancy_keep: list = []


def launch(fn, grid, block, args, shared_mem: int = 0, pdl: bool = False) -> None:
    """Launch ``fn`` on the current CuPy stream.

    ``pdl=True``: while the stream captures a CUDA graph on SM90 and later, a programmatic dependent
    launch (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): in the graph
    the kernel may start while the kernel before it is finishing, so it must execute
    ``griddepcontrol.wait`` (``gpk::pdl_wait()`` in gpk_common.cuh) before it reads anything an earlier
    kernel writes, and write nothing before that. Eager launches are host-bound (PDL gains nothing
    there and the ctypes call costs more than CuPy's); older GPUs and ``GPK_PDL=0``: an ordinary
    launch."""
    import cupy
    if isinstance(grid, int):
        grid = (grid,)
    if isinstance(block, int):
        block = (block,)
    stream = cupy.cuda.get_current_stream()
    if pdl and cupy.cuda.runtime.streamIsCapturing(stream.ptr) and _pdl_enabled():  # eager: one cheap query
        _launch_ex(fn, grid, block, args, shared_mem, stream.ptr)
        return
    fn(grid, block, args, shared_mem=shared_mem, stream=stream)


# -- programmatic dependent launches (cuLaunchKernelEx through ctypes) ------------------------------

_pdl_state: dict = {}   # device id -> bool; "lib" -> the driver library or False


def _pdl_enabled() -> bool:
    dev = current_device_id()
    ok = _pdl_state.get(dev)
    if ok is None:
        ok = (_config.get("GPK_PDL") and int(device_arch(dev)) >= 90
              and _driver_lib() is not None)
        _pdl_state[dev] = ok
    return ok


def _driver_lib():
    lib = _pdl_state.get("lib")
    if lib is None:
        import ctypes
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuLaunchKernelEx
        except (OSError, AttributeError):
            lib = False
        else:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            lib.cuGetErrorName.restype = ctypes.c_int
            lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _pdl_state["lib"] = lib
    return lib or None


_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
_ctypes_types: dict = {}


def _launch_types():
    if not _ctypes_types:
        import ctypes

        class Attr(ctypes.Structure):  # CUlaunchAttribute: id, 4 bytes of padding, a 64-byte value union
            _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int * 16)]

        class Config(ctypes.Structure):  # CUlaunchConfig
            _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                        ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(Attr)), ("num_attrs", ctypes.c_uint)]

        assert ctypes.sizeof(Attr) == 72 and ctypes.sizeof(Config) == 56
        import numpy as np
        _ctypes_types.update(Attr=Attr, Config=Config, scalars={
            np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
            np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.uint64): ctypes.c_uint64,
            np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double})
    return _ctypes_types


def pack_args(args):
    """The kernel-parameter values of ``args`` as ctypes objects (device arrays and None as pointers, NumPy
    scalars as their C types), in order."""
    import ctypes
    scalars = _launch_types()["scalars"]
    out = []
    for a in args:
        if a is None:
            out.append(ctypes.c_void_p(0))
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):
            out.append(ctypes.c_void_p(a.data.ptr))
        else:
            ct = scalars.get(getattr(a, "dtype", None))
            if ct is None:
                raise TypeError(f"gpk_array: kernel argument of type {type(a).__name__} (use a NumPy scalar "
                                "or a device array)")
            out.append(ct(a.item()))
    return out


def _launch_ex(fn, grid, block, args, shared_mem, stream_ptr):
    import ctypes
    t = _launch_types()
    vals = pack_args(args)
    params = (ctypes.c_void_p * max(1, len(vals)))(*[ctypes.addressof(v) for v in vals])
    attr = t["Attr"]()
    attr.id = _LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value[0] = 1
    g, b = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
    cfg = t["Config"]((ctypes.c_uint * 3)(*g), (ctypes.c_uint * 3)(*b), int(shared_mem), stream_ptr,
                      ctypes.pointer(attr), 1)
    lib = _driver_lib()
    rc = lib.cuLaunchKernelEx(ctypes.byref(cfg), fn.kernel.ptr, params, None)
    if rc:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"gpk_array: cuLaunchKernelEx({fn.name if hasattr(fn, 'name') else fn}) failed: "
                           f"{(name.value or b'?').decode()} ({rc})")


def clear_memory_cache() -> None:
    """Forget loaded modules and functions (the disk cache stays)."""
    with _lock:
        _functions.clear()
        _modules.clear()
        _sources.clear()
        _occupancy.clear()
        _occupancy_keep.clear()


# ----------------------------------------------------------------------------------------------
# cubin inspection (used by the compile check and tests)

def cubin_symbols(data: bytes) -> set[str]:
    """Names in the symbol tables of an ELF64 cubin (kernels appear under their extern "C" names)."""
    import struct
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    endian = "<" if data[5] == 1 else ">"
    e_shoff, = struct.unpack_from(endian + "Q", data, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        (sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, sh_addralign,
         sh_entsize) = struct.unpack_from(endian + "IIQQQQIIQQ", data, off)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_entsize))
    names: set[str] = set()
    for sh_type, sh_offset, sh_size, sh_link, sh_entsize in sections:
        if sh_type != 2 or not sh_entsize:  # SHT_SYMTAB
            continue
        str_off = sections[sh_link][1]
        for j in range(sh_size // sh_entsize):
            st_name, = struct.unpack_from(endian + "I", data, sh_offset + j * sh_entsize)
            if st_name:
                end = data.index(b"\0", str_off + st_name)
                names.add(data[str_off + st_name:end].decode("ascii", "replace"))
    return names
