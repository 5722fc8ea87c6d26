"""Build, load and launch the emitted SM90 CUTLASS GEMM instances from Python (no host C++ at run time).

    y = linear_tn_sm90(x, w)            # y = x @ w.T, x (M, K), w (N, K), float16 or bfloat16 CuPy arrays
    y = linear_tn_sm90(x, w, alpha=0.5, beta=1.0, c=c)   # alpha * x @ w.T + beta * c
    y = matmul_nn_sm90(a, b)            # y = a @ b, a (M, K), b (K, N) row-major ("nn": families ppt, coopt)
    y = linear_tn_sm90(x, w, bias=b, activation="gelu")  # gelu(x @ w.T + b) in one kernel (fused epilogue)
    y = linear_tn_sm90(x32, w32)        # float32 arrays: the TF32 instances (gemm/tf32/<tn|nn>/<family>/sm90)

The instance's cubin (sm_90a, so CC 9.0 devices only) is compiled once and kept in the loader's disk
cache (``$GPK_CACHE_DIR/sm_90a/``, default ``~/.cache/gpk_array/kernels/sm_90a/``) under a key of the
``.cu`` text, flags and pinned CUTLASS version; it does not depend on CuPy or the runtime version, so a
cubin prebuilt on a machine without a GPU (``python -m gpk_array._kernels.cutlass.launch_sm90
--prebuild``, ~30-50 s per instance with nvcc on two cores) loads on the GPU machine as it is, which
then needs neither nvcc nor the CUTLASS headers. Compiling needs the CUTLASS headers (nvidia-cutlass
4.2.0.0) and nvcc (preferred: CUTLASS's own compiler) or NVRTC (with a two-line ``std::`` shim).

The launch: Params bytes from ``params_sm90.build_sm90_launch`` (TMA descriptors from the driver),
the max-dynamic-shared-memory attribute set once per function, then ``cuLaunchKernel`` through ctypes
on the current CuPy stream with a pointer to the 128-byte aligned Params (cluster 1x1x1: an ordinary
launch; a larger cluster, as the "xl" family's 2x1x1: ``cuLaunchKernelEx`` with
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, the grid being CUTLASS's get_grid_shape, a multiple of the cluster). Params are
cached per (pointers, shapes, scalars), so a repeated call costs one dict lookup plus the launch.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
import time
from pathlib import Path

from ... import _config
from .. import loader
from . import params_sm90 as P

KDIR = Path(__file__).resolve().parent
SHIPPED_DIR = KDIR / "cubin"
ARCH = "90a"
# CUTLASS's flags (MANIFEST settings.compile_flags) minus -std=c++17, which the loader always adds
# CUTLASS_ENABLE_GDC_FOR_SM90: CUTLASS's kernels execute griddepcontrol.wait before their first global read and
# griddepcontrol.launch_dependents after the mainloop, so a launch with programmatic stream serialization (PDL,
# ``pdl_for``) may start while the kernel before it finishes; launched without that attribute they run as before.
_GDC = "-DCUTLASS_ENABLE_GDC_FOR_SM90"
_NVCC_FLAGS = ("--expt-relaxed-constexpr", "-DNDEBUG", "-O3", _GDC)
_NVRTC_FLAGS = ("--expt-relaxed-constexpr", "-DNDEBUG", _GDC)
# NVRTC has no host standard library; CUTLASS's SM90 headers use these two from std:: (ARCHITECTURE.md)
NVRTC_SHIM = ("#include <cuda/std/type_traits>\n"
              "namespace std { using cuda::std::is_pointer_v; using cuda::std::void_t; }\n")
_FORMAT = "sm90-1"
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
# Base families launched with programmatic dependent launch (their cubins are built with CUTLASS's GDC, _GDC): on
# the H200, 20 back-to-back calls in a CUDA graph (s8, .gpu/diag_pdl.py, benchmarks/results/
# h200_2026-11-30_s8_diag_pdl_be63a72.*): ppt 8.19 -> 7.08 us at 512x768x3072, 11.94 -> 10.33 at 1024x768x3072,
# 59.85 -> 58.98 at 8192x768x3072; fr96 7.70 -> 6.84, fr64 8.54 -> 7.47 (512x3072x768, 1.04x cuBLAS), fr192 10.20 ->
# 9.68. Not coopt: 199 -> 211 us at 4096^3 (its next grid's CTAs, launched early, wait on SMs the persistent grid
# still wants); nor the families not measured. Fused instances follow their base family. GPK_PDL=0: none.
PDL_FAMILIES = ("ppt", "fr96", "fr64", "fr192")
PDL = _config.get("GPK_PDL")
_PORTABLE_CLUSTER_SIZE = 8      # up to 8 CTAs per cluster need no opt-in


# cuda.h's launch structures (CUDA 12+), for cuLaunchKernelEx; tests/kernels/cuda_launch_layout.c checks
# sizeof/offsetof against the header.
class ClusterDim(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class LaunchAttributeValue(ctypes.Union):
    """CUlaunchAttributeValue: a 64-byte union (8-byte aligned: some members hold pointers)."""
    _fields_ = [("pad", ctypes.c_char * 64), ("clusterDim", ClusterDim), ("_align", ctypes.c_uint64)]


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: CUlaunchAttributeID id (a 4-byte enum), 4 bytes of padding, the value union."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", LaunchAttributeValue)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]

_lock = threading.RLock()
_functions: dict = {}       # (key, device) -> (RawKernel, CUfunction int)
_params_cache: dict = {}    # launch tuple -> (LaunchArgs, ctypes buffer, kernelParams array)
_PARAMS_CACHE_MAX = 512
_driver: dict = {}


class CutlassUnavailable(RuntimeError):
    """The SM90 instance can be neither loaded from the cache nor compiled here."""


def cutlass_include_dir() -> Path | None:
    """The CUTLASS headers to compile with: $GPK_CUTLASS_INCLUDE, else the nvidia-cutlass wheel's (the loader's)."""
    env = _config.get("GPK_CUTLASS_INCLUDE")
    if env is not None:
        return env
    inc = loader.cutlass_headers()[0]
    return Path(inc) if inc else None


def _entry(key: str) -> dict:
    return P.instance(key)


def cubin_key(key: str, arch: str = ARCH) -> str:
    """Cache key of an instance's cubin: its .cu text, the flags and the pinned CUTLASS version, and the text of
    the hand-written headers it includes (MANIFEST ``local_headers``: gpk_epilogue.h for the fused gelu/silu
    instances; the other instances' keys are as before)."""
    e = _entry(key)
    manifest = P.load_manifest()
    h = hashlib.sha256()
    parts = [_FORMAT, loader.normalize_arch(arch), manifest["settings"]["cutlass_version"],
             "\0".join(_NVCC_FLAGS), (KDIR / e["file"]).read_text()]
    for hdr in e.get("local_headers", ()):
        parts += [hdr["file"], (KDIR / hdr["file"]).read_text()]
    for part in parts:
        h.update(part.encode())
        h.update(b"\0\1\0")
    return h.hexdigest()


def cubin_path(key: str, arch: str = ARCH) -> Path:
    return loader.cache_path(cubin_key(key, arch), arch)


def shipped_path(key: str, arch: str = ARCH) -> Path:
    """Where the package ships the instance's prebuilt cubin (``cutlass/cubin/<cubin_key>.cubin``): the
    name holds the hash of the .cu text, flags and CUTLASS version, so a changed instance never loads a
    stale cubin (it is then built into the cache as before). ``--ship`` writes them."""
    return SHIPPED_DIR / f"{cubin_key(key, arch)}.cubin"


def build(key: str, arch: str = ARCH, backend: str | None = None, force: bool = False) -> dict:
    """Make sure the instance's cubin is in the disk cache (no GPU needed). Returns
    {"key", "path", "cached", "seconds", "backend"}."""
    e = _entry(key)
    path = cubin_path(key, arch)
    t0 = time.perf_counter()
    if not force:
        for p in (shipped_path(key, arch), path):
            if p.is_file():
                return {"key": key, "path": str(p), "cached": True, "seconds": 0.0, "backend": None}
    inc = cutlass_include_dir()
    if inc is None:
        raise CutlassUnavailable(
            f"gpk_array: no cubin for {key} in {path.parent} and no CUTLASS headers to compile it "
            "(pip install nvidia-cutlass==4.2.0.0, or set GPK_CUTLASS_INCLUDE, or prebuild the cubin "
            "elsewhere with python -m gpk_array._kernels.cutlass.launch_sm90 --prebuild and copy "
            "$GPK_CACHE_DIR/sm_90a/ over)")
    if backend is None:
        backend = _config.get("GPK_CUTLASS_BACKEND") or ("nvcc" if loader.nvcc_path() else "nvrtc")
    source = (KDIR / e["file"]).read_text()
    # -I KDIR: the hand-written headers beside the instances (gpk_epilogue.h); the source is compiled from a copy
    if backend == "nvcc":
        opts = _NVCC_FLAGS + (f"-I{inc}", f"-I{KDIR}")
    else:
        source = NVRTC_SHIM + source
        opts = _NVRTC_FLAGS + (f"-I{inc}", f"-I{KDIR}")
    with loader._path_lock(path):
        cubin = loader.compile_cubin(source, opts, arch, backend, name=e["file"])
        if e["kernel"] not in loader.cubin_symbols(cubin):
            raise CutlassUnavailable(f"gpk_array: {e['file']} compiled without kernel {e['kernel']}")
        loader.write_atomic(path, cubin)
    return {"key": key, "path": str(path), "cached": False, "seconds": time.perf_counter() - t0,
            "backend": backend}


def _lib():
    lib = _driver.get("lib")
    if lib is None:
        lib = _declare(ctypes.CDLL("libcuda.so.1"))
        _driver["lib"] = lib
    return lib


def _declare(lib):
    """Set the prototypes of the entry points used here on a driver library (or a test's stand-in)."""
    lib.cuLaunchKernel.restype = ctypes.c_int
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.cuLaunchKernelEx.restype = ctypes.c_int
    lib.cuLaunchKernelEx.argtypes = [ctypes.POINTER(LaunchConfig), ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_void_p]
    lib.cuFuncSetAttribute.restype = ctypes.c_int
    lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.cuGetErrorName.restype = ctypes.c_int
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    if hasattr(lib, "cuMemsetD8Async"):      # stream-K workspaces (a test's stand-in may lack it)
        lib.cuMemsetD8Async.restype = ctypes.c_int
        lib.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    return lib


def _check(rc: int, what: str) -> None:
    if rc:
        name = ctypes.c_char_p()
        _lib().cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"gpk_array: {what} failed: {(name.value or b'?').decode()} ({rc})")


def get_function(key: str):
    """(cupy.RawKernel, CUfunction handle) of the instance on the current device, with its dynamic
    shared memory limit raised to the instance's SharedStorage size. Needs a CC 9.0 GPU."""
    dev = loader.current_device_id()
    hit = _functions.get((key, dev))
    if hit is not None:
        return hit
    with _lock:
        hit = _functions.get((key, dev))
        if hit is not None:
            return hit
        arch = loader.device_arch(dev)
        if arch != "90":
            raise CutlassUnavailable(f"gpk_array: {key} is built for sm_90a; this device is sm_{arch}")
        import cupy
        e = _entry(key)
        info = build(key)
        try:
            mod = cupy.RawModule(path=info["path"])
            fn = mod.get_function(e["kernel"])
        except cupy.cuda.driver.CUDADriverError as err:   # e.g. a driver too old for the shipped cubin
            raise CutlassUnavailable(f"gpk_array: the driver cannot load {info['path']} ({key}): {err}") from err
        handle = int(fn.kernel.ptr)
        _check(_lib().cuFuncSetAttribute(handle, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         int(e["host_params"]["smem_bytes"])),
               f"cuFuncSetAttribute(max dynamic smem) for {key}")
        cl = e["host_params"]["cluster"]
        if cl[0] * cl[1] * cl[2] > _PORTABLE_CLUSTER_SIZE:
            _check(_lib().cuFuncSetAttribute(handle, _CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                   f"cuFuncSetAttribute(non-portable cluster size) for {key}")
        hit = (fn, handle, mod)
        _functions[(key, dev)] = hit
    return hit


def check_cluster_grid(la: P.LaunchArgs) -> None:
    """A cluster launch needs a non-empty grid whose extents are multiples of the cluster's."""
    if any(g <= 0 for g in la.grid) or any(g % c for g, c in zip(la.grid, la.cluster)):
        raise ValueError(f"gpk_array: grid {la.grid} is not a non-empty multiple of cluster {la.cluster} "
                         "(sm_count below the cluster size?)")


def pdl_for(key: str) -> bool:
    """Whether instance ``key`` is launched with programmatic stream serialization (PDL_FAMILIES, GPK_PDL)."""
    return PDL and key.split("/")[3].split("_bias")[0] in PDL_FAMILIES


def _packed(la: P.LaunchArgs, pdl: bool = False):
    """(buffer, kernelParams, launch config or None): a 128-byte aligned copy of the Params, the
    kernelParams array pointing at it (the driver copies the Params at launch), and for a cluster > 1 or ``pdl``
    the CUlaunchConfig with its attributes (hStream set per launch): CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION for a
    cluster, then CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (1) with ``pdl``: the kernel may start
    before the one ahead of it on the stream completes; it waits (griddepcontrol.wait, _GDC) before reading."""
    raw = ctypes.create_string_buffer(len(la.params) + 128)
    addr = (ctypes.addressof(raw) + 127) & ~127
    ctypes.memmove(addr, la.params, len(la.params))
    kp = (ctypes.c_void_p * 1)(addr)
    cfg = None
    clustered = tuple(la.cluster) != (1, 1, 1)
    if clustered:
        check_cluster_grid(la)
    n = int(clustered) + int(bool(pdl))
    if n:
        attr = (LaunchAttribute * n)()
        i = 0
        if clustered:
            attr[0].id = _CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr[0].value.clusterDim = ClusterDim(*la.cluster)
            i = 1
        if pdl:
            attr[i].id = _CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            ctypes.c_int.from_address(ctypes.addressof(attr[i].value)).value = 1
        g, b = la.grid, la.block
        cfg = LaunchConfig(g[0], g[1], g[2], b[0], b[1], b[2], la.shared_mem, None,
                           ctypes.cast(attr, ctypes.POINTER(LaunchAttribute)), n)
        cfg._keep = attr      # the attribute array lives as long as the config
    return raw, kp, cfg


def zero_workspace(la: P.LaunchArgs, stream_ptr: int) -> None:
    """Clear the part of a stream-K launch's workspace that CUTLASS's initialize_workspace clears (the reduction
    barriers: LaunchArgs.workspace_zero) on ``stream_ptr``, ahead of the kernel; nothing without a workspace."""
    off, nbytes = la.workspace_zero
    if la.workspace_bytes and nbytes:
        _check(_lib().cuMemsetD8Async(la.workspace + off, 0, nbytes, stream_ptr), "cuMemsetD8Async(workspace)")


def launch(key: str, la: P.LaunchArgs, packed=None, stream_ptr: int | None = None) -> None:
    """Launch an instance with prepared LaunchArgs on ``stream_ptr`` (default: current CuPy stream):
    cuLaunchKernel for cluster 1x1x1, cuLaunchKernelEx with the cluster dimension attribute otherwise. A stream-K
    launch with a workspace (split-K) has its barriers zeroed first on the same stream (``zero_workspace``)."""
    _, handle, _ = get_function(key)
    if stream_ptr is None:
        import cupy
        stream_ptr = cupy.cuda.get_current_stream().ptr
    if la.workspace_bytes:
        zero_workspace(la, stream_ptr)
    fn, args = _driver_args(handle, la, packed or _packed(la, pdl_for(key)), stream_ptr)
    clustered = "" if tuple(la.cluster) == (1, 1, 1) else f", cluster {la.cluster}"
    _check(fn(*args), f"{fn.__name__}({la.kernel}{clustered})")


def _driver_args(handle: int, la: P.LaunchArgs, packed, stream_ptr: int):
    """(driver entry point, its arguments) that launch ``la`` on ``stream_ptr``: cuLaunchKernel for a 1x1x1
    cluster, else cuLaunchKernelEx with the packed launch config (whose hStream is set here)."""
    raw, kp, cfg = packed
    if cfg is None:
        g, b = la.grid, la.block
        return _lib().cuLaunchKernel, (handle, g[0], g[1], g[2], b[0], b[1], b[2], la.shared_mem, stream_ptr,
                                       kp, None)
    cfg.hStream = stream_ptr
    return _lib().cuLaunchKernelEx, (ctypes.byref(cfg), handle, kp, None)


# 128x128x64 cluster 1x1x1 cooperative; 128x256x64 cluster 2x1x1 cooperative; 128x128x64 cluster 2x1x1
# ping-pong (these three store D from registers); with CUTLASS's TMA epilogue (D through shared memory
# and a TMA store, C by TMA load; N, ldc, ldd multiples of 8, C and D 16-byte aligned): "ppt" 128x128x64
# ping-pong and "coopt" 256x128x64 cooperative, both cluster 2x1x1
FAMILIES = ("large", "xl", "pp", "ppt", "coopt")
# families emitted per operand layout ("tn": B the (N, K) weight; "nn": B (K, N) row-major, as matmul has it)
LAYOUT_FAMILIES = {"tn": FAMILIES, "nn": ("ppt", "coopt")}
# Fused epilogues (linear with bias and activation in one kernel, "tn" only): D = act(x @ w.T + bias), fp32
# compute, bias an (N,) row of D's type, no C, alpha 1, beta 0. Base families that have them and the
# activations (None: bias only); the instance is "<base>_bias" or "<base>_bias_<activation>"
# (gemm/<dtype>/tn/ppt_bias_gelu/sm90, ...). gelu is erf-based (torch's default: x Phi(x), our
# gpk::epilogue::Gelu in cutlass/gpk_epilogue.h, within 4e-7 max(1, |x|) in fp32), gelu_tanh torch's
# approximate="tanh" (CUTLASS GELU_taylor, tanh.approx.f32), silu x * sigmoid(x) (our gpk::epilogue::Silu:
# ex2.approx and rcp.approx). The fused ppt instances stage their output in 64x128 subtiles (two per tile; the bare
# ppt in CUTLASS's auto 64x32): the families' epi_tile in gen/families.py.
FUSED_FAMILIES = ("ppt",)
ACTIVATIONS = (None, "gelu", "gelu_tanh", "relu", "silu")


def fused_key(dtype, family: str = "ppt", activation: str | None = None) -> str:
    """Registry key of the fused bias/activation instance of a base family ("ppt") for a dtype."""
    if activation == "identity":
        activation = None
    if activation not in ACTIVATIONS:
        raise ValueError(f"gpk_array: SM90 fused activation must be one of {ACTIVATIONS}, not {activation!r}")
    if family not in FUSED_FAMILIES:
        raise ValueError(f"gpk_array: SM90 fused epilogues exist for the families {FUSED_FAMILIES}, not {family!r}")
    base = default_key(dtype, family, "tn")
    if "/tf32/" in base:
        raise TypeError("gpk_array: the fused SM90 epilogues take float16 or bfloat16, not float32")
    epi = "bias" if activation is None else f"bias_{activation}"
    return base.replace(f"/tn/{family}/", f"/tn/{family}_{epi}/")


# float32 operands on the TF32 tensor cores (registry dtype "tf32"): "tn" ppt (ping-pong 128x128x32) and coopt
# (cooperative 256x128x32), both cluster 2x1x1 with the TMA epilogue; "nn" pp (ping-pong 128x128x32) and coop
# (cooperative 256x128x32), cluster 2x1x1, which CUTLASS runs as B^T A^T (params_sm90.swaps_ab) with a
# register-sourced mainloop and a direct-store transposed epilogue (no TMA epilogue for that layout in CUTLASS)
TF32_LAYOUT_FAMILIES = {"tn": ("ppt", "coopt"), "nn": ("pp", "coop")}
# array dtype name -> registry dtype
DTYPE_CODES = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32"}


def layout_families(dtype: str, layout: str) -> tuple:
    """The families emitted for a registry dtype ("f16", "bf16", "tf32") and layout; () if none."""
    table = TF32_LAYOUT_FAMILIES if dtype == "tf32" else LAYOUT_FAMILIES
    return tuple(table.get(layout, ()))


def default_key(dtype, family: str | None = None, layout: str = "tn") -> str:
    """Registry key of the instance for an array dtype (float16, bfloat16; float32 -> the TF32 instances),
    family (None: the layout's first: "large" / "ppt" for 16-bit "tn" / "nn", "ppt" / "pp" for float32) and
    layout."""
    name = getattr(dtype, "name", str(dtype))
    if layout not in LAYOUT_FAMILIES:
        raise ValueError(f"gpk_array: SM90 layout must be one of {tuple(LAYOUT_FAMILIES)}, not {layout!r}")
    code = DTYPE_CODES.get(name)
    if code is None:
        raise TypeError(f"gpk_array: the SM90 CUTLASS GEMM takes float16, bfloat16 or float32 (TF32), not {name}")
    fams = layout_families(code, layout)
    if family is None:
        family = fams[0]
    if family not in fams:
        raise ValueError(f"gpk_array: SM90 family for {code} layout {layout!r} must be one of {fams}, "
                         f"not {family!r}")
    return f"gemm/{code}/{layout}/{family}/sm90"


def _rows(a, name: str) -> int:
    """Leading dimension (elements) of a 2-D array whose rows are contiguous."""
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D")
    isz = a.itemsize
    if a.shape[1] > 1 and a.strides[1] != isz:
        raise ValueError(f"{name} must have contiguous rows")
    if a.shape[0] > 1 and (a.strides[0] % isz or a.strides[0] < 0):
        raise ValueError(f"{name} has an unsupported row stride")
    return a.strides[0] // isz if a.shape[0] > 1 else max(a.shape[1], 1)


def prepare(x, w, out, alpha, beta, c, key, sm_count, max_swizzle=1, raster="heuristic", bias_ptr=0,
            splits=1, reduction="deterministic"):
    """(LaunchArgs, packed) for the call, cached by everything that decides the Params bytes.
    x: A (M, K); w: B as the instance's layout stores it ((N, K) for "tn", (K, N) for "nn");
    bias_ptr: the bias row's address for a fused-epilogue instance (0: none).
    splits, reduction: a stream-K instance's split-K decomposition (``params_sm90.is_stream_k``); where it needs a
    workspace (``params_sm90.sm90_workspace``), one is allocated here (CuPy, current device) and kept with the
    prepared launch (one per cached entry: launches of one prepared entry must not overlap on different streams);
    ``launch`` zeroes its barriers before each kernel."""
    m, k = x.shape
    n = out.shape[1]
    lda, ldb, ldd = _rows(x, "x"), _rows(w, "w"), _rows(out, "out")
    cc = out if c is None else c
    ldc = _rows(cc, "c")
    ptrs = (x.data.ptr, w.data.ptr, cc.data.ptr, out.data.ptr)
    ck = (key, m, n, k, ptrs, lda, ldb, ldc, ldd, float(alpha), float(beta), sm_count, max_swizzle,
          raster, bias_ptr, splits, reduction, loader.current_device_id())
    hit = _params_cache.get(ck)
    if hit is None:
        e = _entry(key)
        ws_buf, ws_ptr = None, 0
        if P.is_stream_k(e):
            nbytes = P.sm90_workspace(e, m, n, k, sm_count, splits, max_swizzle, raster)["bytes"]
            if nbytes:
                import cupy
                ws_buf = cupy.empty(nbytes, dtype=cupy.uint8)    # CuPy allocations are 256-byte aligned
                ws_ptr = ws_buf.data.ptr
        la = P.build_sm90_launch(e, m, n, k, ptrs[0], ptrs[1], ptrs[2], ptrs[3], lda, ldb, ldc, ldd,
                                 float(alpha), float(beta), sm_count=sm_count, max_swizzle=max_swizzle,
                                 raster=raster, device_id=ck[-1], bias=bias_ptr, splits=splits,
                                 reduction=reduction, workspace=ws_ptr)
        packed = _packed(la, pdl_for(key))
        packed[0]._gpk_workspace = ws_buf     # the workspace lives as long as the prepared launch
        hit = (la, packed)
        if len(_params_cache) >= _PARAMS_CACHE_MAX:
            _params_cache.clear()
        _params_cache[ck] = hit
    return hit


def linear_tn_sm90(x, w, out=None, alpha=1.0, beta=0.0, c=None, key: str | None = None,
                   max_swizzle: int = 1, raster: str = "heuristic", family: str | None = None,
                   bias=None, activation: str | None = None, splits: int = 1, reduction: str = "deterministic"):
    """out = alpha * x @ w.T + beta * c on the current CuPy stream, with the SM90 CUTLASS instance;
    with ``bias`` or ``activation``: out = activation(x @ w.T + bias) in one kernel (fused epilogue).

    x: (M, K), w: (N, K), c and out: (M, N), all float16 or all bfloat16 CuPy arrays with contiguous
    rows (leading dimensions may be padded: K, lda, ldb multiples of 8; A and B 16-byte aligned).
    c is read only when beta != 0 (it may be out itself). ``family``: default "large" ("ppt" for float32,
    and when fused); see FAMILIES. float32 arrays run on the TF32 tensor cores (operands rounded to TF32,
    float32 accumulation and output; families "ppt" and "coopt", both with the TMA epilogue: K, N, lda, ldb,
    ldc, ldd multiples of 4, all four pointers 16-byte aligned). Fused (``bias`` a contiguous (N,) array of
    x's dtype, element-aligned, or None: zeros; ``activation`` one of None, "gelu", "gelu_tanh", "relu", "silu";
    float16/bfloat16): family "ppt" (or a fused instance by ``key``, e.g. fr96_bias_gelu), alpha 1, beta 0, no c; N,
    ldd multiples of 8 and out 16-byte aligned (TMA store). ``splits``, ``reduction``: a stream-K instance's split-K
    decomposition (candidate co128sk, by ``key``; ``prepare``). Raises ValueError for what the instance cannot run
    (``params_sm90.sm90_unsupported``); the caller falls back to cuBLAS."""
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"gpk_array: shapes {x.shape} and {w.shape} do not make x @ w.T")
    if bias is None and activation is None:
        return _gemm(x, w, w.shape[0], out, alpha, beta, c,
                     key or default_key(x.dtype, family, "tn"), "tn", max_swizzle, raster,
                     splits=splits, reduction=reduction)
    if alpha != 1 or beta != 0 or c is not None:
        raise ValueError("gpk_array: the fused SM90 epilogue computes activation(x @ w.T + bias): "
                         "no alpha, beta or c")
    n = w.shape[0]
    key = key or fused_key(x.dtype, family or "ppt", activation)
    if P.fused_of(_entry(key)) is None:
        raise ValueError(f"gpk_array: {key} is not a fused-epilogue instance")
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] != n or bias.dtype != x.dtype:
            raise ValueError(f"gpk_array: bias must be ({n},) {x.dtype}")
        if n > 1 and bias.strides[0] != bias.itemsize:
            raise ValueError("gpk_array: bias must be contiguous")
    return _gemm(x, w, n, out, 1.0, 0.0, None, key, "tn", max_swizzle, raster, bias=bias)


def matmul_nn_sm90(a, b, out=None, alpha=1.0, beta=0.0, c=None, key: str | None = None,
                   max_swizzle: int = 1, raster: str = "heuristic", family: str | None = None):
    """out = alpha * a @ b + beta * c on the current CuPy stream, with an SM90 "nn" CUTLASS instance.

    a: (M, K), b: (K, N) (matmul's layout: b's rows, of N elements, contiguous), c and out: (M, N), all
    float16 or all bfloat16 CuPy arrays with contiguous rows (leading dimensions may be padded: K, N, lda,
    ldb, ldc, ldd multiples of 8; all four pointers 16-byte aligned). ``family``: "ppt" (ping-pong
    128x128x64, the default) or "coopt" (cooperative 256x128x64), both cluster 2x1x1 with the TMA epilogue.
    float32 arrays run on the TF32 tensor cores: families "pp" (ping-pong 128x128x32, default) and "coop"
    (cooperative 256x128x32), cluster 2x1x1, which CUTLASS runs as b.T @ a.T with B through registers and a
    direct-store epilogue (K, N, lda, ldb multiples of 4; a and b 16-byte aligned, c and out 4-byte aligned).
    c is read only when beta != 0 (it may be out itself). Raises ValueError for what the instance
    cannot run (``params_sm90.sm90_unsupported``); the caller falls back to cuBLAS."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"gpk_array: shapes {a.shape} and {b.shape} do not make a @ b")
    return _gemm(a, b, b.shape[1], out, alpha, beta, c, key or default_key(a.dtype, family, "nn"), "nn",
                 max_swizzle, raster)


def _gemm(x, w, n, out, alpha, beta, c, key, layout, max_swizzle, raster, bias=None, splits=1,
          reduction="deterministic"):
    """The shared body of linear_tn_sm90 and matmul_nn_sm90: x (M, K), w the B operand in ``layout``;
    bias: the (N,) row of a fused-epilogue instance (or None)."""
    if x.dtype != w.dtype:
        raise TypeError("gpk_array: both operands must have the same dtype")
    code = DTYPE_CODES.get(x.dtype.name)
    if code != _entry(key)["dtype"]:
        # float32 arrays need a "tf32" instance, float16 an "f16" one, ...
        raise TypeError(f"gpk_array: {key} does not take {x.dtype.name} operands")
    if P.layout_of(_entry(key)) != layout:
        raise ValueError(f"gpk_array: {key} is not a {layout!r} instance")
    m = x.shape[0]
    if out is None:
        import cupy
        out = cupy.empty((m, n), dtype=x.dtype)
    if out.shape != (m, n) or out.dtype != x.dtype:
        raise ValueError(f"gpk_array: out must be ({m}, {n}) {x.dtype}")
    if beta != 0:
        if c is None:
            raise ValueError("gpk_array: beta != 0 needs c")
        if c.shape != (m, n) or c.dtype != x.dtype:
            raise ValueError(f"gpk_array: c must be ({m}, {n}) {x.dtype}")
    elif c is not None and c.shape != (m, n):
        raise ValueError(f"gpk_array: c must be ({m}, {n})")
    if m == 0 or n == 0:
        return out
    if x.shape[1] == 0:
        if P.fused_of(_entry(key)) is not None:
            raise ValueError("gpk_array: K == 0: nothing for the fused SM90 epilogue to run")
        out[...] = 0 if beta == 0 else beta * c
        return out
    sms = loader.sm_count()
    la, packed = prepare(x, w, out, alpha, beta, c if beta != 0 else None, key, sms, max_swizzle, raster,
                         0 if bias is None else bias.data.ptr, splits, reduction)
    launch(key, la, packed)
    return out


# ---- repeated calls (the namespace's path, gpk_array/_kernels/gemm.py): one dict lookup, one driver call -------
_calls: dict = {}       # (key, pointers, shapes, strides, device, stream) -> (driver entry point, its args, keep-alive)
_templates: dict = {}   # (key, m, n, k, lda, ldb, ldd, sm_count, device) -> LaunchArgs encoded for other pointers
_CALLS_MAX = 1024


def set_pointers(entry: dict, params_addr: int, ptrs: tuple[int, int, int, int], bias: int = 0) -> None:
    """Point a Params buffer (at host address ``params_addr``, 128-byte aligned) built for other operands of
    the same shapes and strides at new ones (A, B, C, D, and a fused instance's bias row): each TMA descriptor
    through ``cuTensorMapReplaceAddress`` (an instance that swaps A and B holds B's descriptor first; a fused
    one has no C), the direct-store epilogue's C and D pointers and the bias pointer by value. Every other
    byte (shapes, strides, boxes, scheduler) depends on the shapes only, so the result equals a fresh build."""
    from . import tma
    hp = entry["host_params"]
    a, b, c, d = ptrs
    if P.swaps_ab(entry):
        a, b = b, a
    fused = P.fused_of(entry) is not None
    for name, ptr in (("A", a), ("B", b), ("C", None if fused else c), ("D", d)):
        off = hp["descriptors"].get(name)
        if off is not None:
            if ptr is not None:
                tma.replace_address(params_addr + off, ptr)
            continue
        field = hp["offsets"].get(f"epilogue.ptr_{name}")
        if field is not None:
            ctypes.c_uint64.from_address(params_addr + field).value = ptr
    if fused:
        ctypes.c_uint64.from_address(params_addr + hp["offsets"]["epilogue.thread.bias_ptr"]).value = bias


def _call_entry(key, x, w, out, bias, dev, stream):
    e = _entry(key)
    m, k = x.shape
    n = out.shape[1]
    try:
        lda, ldb, ldd = _rows(x, "x"), _rows(w, "w"), _rows(out, "out")
    except ValueError:
        return None
    ptrs = (x.data.ptr, w.data.ptr, out.data.ptr, out.data.ptr)
    pbias = 0 if bias is None else bias.data.ptr
    sms = loader.sm_count(dev)
    if P.sm90_unsupported(e, m, n, k, lda, ldb, ldd, ldd, ptrs, sms, bias_ptr=pbias if P.fused_of(e) else None):
        return None
    _, handle, _ = get_function(key)
    tk = (key, m, n, k, lda, ldb, ldd, sms, dev)
    la = _templates.get(tk)
    fresh = la is None
    if fresh:
        la = P.build_sm90_launch(e, m, n, k, *ptrs, lda, ldb, ldd, ldd, 1.0, 0.0, sm_count=sms, device_id=dev,
                                 bias=pbias)
        if len(_templates) >= _CALLS_MAX:
            _templates.clear()
        _templates[tk] = la
    packed = _packed(la, pdl_for(key))
    if not fresh:
        set_pointers(e, packed[1][0], ptrs, pbias)
    # a packed config of its own per entry (so per stream): its hStream is set once, never changed
    return _driver_args(handle, la, packed, stream) + (packed,)


def gemm_into(key: str, x, w, out, device: int | None = None, bias=None) -> bool:
    """``out = x @ op(w)`` (alpha 1, beta 0) with instance ``key`` on the current CuPy stream, for repeated
    calls: the launch (Params, descriptors, the driver call's arguments) is cached per operand pointers,
    shapes, strides, device and stream; a new pointer set of known shapes patches a cached Params
    (``set_pointers``) instead of encoding it again. x (M, K); w as the instance's layout stores B ((N, K)
    for "tn", (K, N) for "nn"); out (M, N), all of the instance's dtype (not checked here: the caller's
    selection did). Returns False, launching nothing, where the instance cannot run these operands
    (``params_sm90.sm90_unsupported``: alignment, strides, sizes). ``device``: the current device's id, if the
    caller has it. ``bias``: the (N,) bias row of a fused-epilogue instance (None: zeros), which computes
    ``act(x @ w.T + bias)``."""
    import cupy
    dev = cupy.cuda.runtime.getDevice() if device is None else device
    stream = cupy.cuda.get_current_stream().ptr
    ck = (key, x.data.ptr, w.data.ptr, out.data.ptr, x.shape, w.shape, out.shape, x.strides, w.strides,
          out.strides, dev, stream, None if bias is None else bias.data.ptr)
    hit = _calls.get(ck)
    if hit is None:
        hit = _call_entry(key, x, w, out, bias, dev, stream)
        if hit is None:
            return False
        if len(_calls) >= _CALLS_MAX:
            _calls.clear()
        _calls[ck] = hit
    rc = hit[0](*hit[1])
    if rc:
        _check(rc, f"launch of {key}")
    return True


def is_candidate(key: str) -> bool:
    """Is the instance a candidate (MANIFEST ``candidate``: emitted and probed, launchable by key, but in no dispatch
    rule, not shipped and not prebuilt until a GPU sweep promotes it)?"""
    return bool(_entry(key).get("candidate"))


def instance_keys(candidates: bool = False) -> list[str]:
    """Registry keys of every launchable SM90 instance in the manifest: the shipped ones, or with ``candidates``
    the candidates only (``is_candidate``)."""
    return [e["key"] for e in P.load_manifest()["instances"]
            if e["arch"] == 90 and e["host_params"].get("status") == "probed"
            and bool(e.get("candidate")) == candidates]


def _main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="prebuild the SM90 CUTLASS cubins into the disk cache")
    ap.add_argument("--prebuild", action="store_true")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--backend", choices=["nvcc", "nvrtc"], default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ship", action="store_true",
                    help="copy every instance's cubin (built first where missing) into cutlass/cubin/, the "
                         "package's shipped set, and remove shipped cubins no instance names any more "
                         "(candidates are never shipped)")
    ap.add_argument("--candidates", action="store_true",
                    help="list or --prebuild the candidate instances (MANIFEST candidate) instead of the shipped ones")
    args = ap.parse_args(argv)
    if args.ship and args.candidates:
        ap.error("candidates are not shipped: promote one first (drop its candidate mark in gen/families.py)")
    keys = instance_keys(candidates=args.candidates)
    if args.ship:
        import shutil
        SHIPPED_DIR.mkdir(exist_ok=True)
        keep = set()
        for k in keys:
            info = build(k, backend=args.backend, force=args.force)
            dst = shipped_path(k)
            keep.add(dst.name)
            if Path(info["path"]) != dst:
                shutil.copyfile(info["path"], dst)
            print(f"{k}: shipped {dst.name}")
        for old in SHIPPED_DIR.glob("*.cubin"):
            if old.name not in keep:
                old.unlink()
                print(f"removed stale {old.name}")
        return 0
    if not args.prebuild:
        for k in keys:
            p, q = shipped_path(k), cubin_path(k)
            print(f"{k}: {'shipped' if p.is_file() else (str(q) + (' present' if q.is_file() else ' missing'))}")
        return 0
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        for r in ex.map(lambda k: build(k, backend=args.backend, force=args.force), keys):
            print(f"{r['key']}: {'cached' if r['cached'] else 'built'} {r['seconds']:.1f} s "
                  f"({r['backend'] or '-'}) -> {r['path']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
