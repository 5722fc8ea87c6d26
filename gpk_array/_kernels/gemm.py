"""The CUTLASS GEMM registry and its selection rules: SM90 instances (wgmma + TMA, the default on CC 9.0 devices
where the rule below says they beat cuBLAS) and SM80 instances (mma.sync + cp.async, CUTLASS 2.x ``GemmUniversal``,
opt-in), launched from Python on the current CuPy stream.

The SM90 selection rules below (plain GEMM families, fused epilogues, the few-row and split-K rules) are records of
the kernel registry, ``gpk_array/_kernels/registry/gemm_sm90*.json`` (``gpk_array.workbench.registry``: each record a
selector, a shape class, a choice and the benchmark results it rests on), compiled at import into one Python function
per selector; the rules below are what those records say. A registry file that fails validation is ignored (with a
warning naming the file and the field) and its problems go to cuBLASLt. ``gpk kernels promote`` adds records.

SM90 (``select_sm90``, ``gemm_sm90``; instances and launch in ``cutlass/launch_sm90.py``): float16 / bfloat16,
layouts "nn" (``a @ b``, b (K, N) row-major) and "tn" (``x @ w.T``, w (N, K) row-major), keys
``gemm/<f16|bf16>/<nn|tn>/<ppt|coopt>/sm90``. Shape rule (``sm90_family``): "ppt" (ping-pong 128x128x64) for
M >= 4096, N >= 2048, K <= 1024; every other problem goes to cuBLAS. ``forced=True`` (the ``GPK_GEMM=cutlass``
checking mode) takes ppt/coopt for every covered problem.

TF32 (float32 with TF32 allowed, ``select_sm90(..., tf32=True)``): ``gemm/tf32/tn/ppt/sm90`` for problems of at
least half a wave of 128x128 tiles and under 2^35 multiply-adds; never "nn" (CUTLASS runs tf32 with an N-major B
through registers). Fused bias/activation for ``linear`` (``select_sm90_fused``, ``linear_sm90``):
``gemm/<dt>/tn/ppt_<epilogue>/sm90`` where the ppt rule holds (gelu_tanh from TANH_PPT_MIN_M rows), and for
gelu/silu (no cuBLASLt epilogue) on every covered problem, up to FEW_ROWS_MAX rows on fr96 or fr192
(``_few_rows_family``).

Each rule takes our instance only where GPU-only times (CUDA graphs of 20 calls) on the H200 showed it ahead of
cuBLASLt's heuristic choice; the registry records cite those results, and docs/measurements.md summarizes them.

SM80, the rest of this docstring:

They compute ``D (M, N) = alpha * X (M, K) @ W (N, K)^T + beta * C (M, N)`` in float16 or bfloat16 with float32
accumulation: the layout of ``torch.nn.functional.linear`` ("tn": X and W both K-contiguous). The instances are the
``.cu`` files of ``cutlass/`` (emitted by ``scripts/gen_cutlass.py``, described by ``cutlass/MANIFEST.json``); their
launch arguments (grid, block, shared memory, the ``Params`` struct passed by value) come from ``cutlass/params.py``,
which repeats CUTLASS's host arithmetic and is checked byte for byte against CUTLASS's own constructor.

- ``REGISTRY``: registry key (``gemm/<dtype>/<layout>/<shape-family>/<arch>``, e.g. ``gemm/f16/tn/large/sm80``) ->
  manifest entry, for every SM80 instance whose Params layout was probed.
- ``select(dtype, layout, m, n, k, arch)``: the key for a problem on a device of compute capability ``arch``, or
  None, and then the caller uses cuBLAS. Nothing is ever run that the instance cannot run exactly.
- ``linear_tn(x, w, out=None, alpha=1.0, beta=0.0, c=None, key=None)``: the GEMM on CuPy arrays.
- ``variants()``: the (cu_file, options) modules, for ``prebuild``; ``compile_options()``.

Shape rule (``select``): "large" (128x256x64 tile, 3 stages, 256 threads, 144 KiB of shared memory, 1 block per SM
on an H200) when ``ceil(M / 128) * ceil(N / 256) >= LARGE_MIN_TILES`` (128: about one full wave of large tiles on a
GPU of 108 to 132 SMs), else "small" (64x64x64, 5 stages, 128 threads, 80 KiB), which keeps more SMs busy on small
and skinny problems. A family whose shared memory does not fit the arch's opt-in limit is not chosen (then "small",
if it fits). This rule is a first guess: ``python -m benchmarks cutlass`` reports which instance wins per shape.

Coverage (else None): float16 / bfloat16 only, layout "tn" only, M, N, K > 0, K and N multiples of 8 (the pinned
16-byte alignment), each of M*K, N*K, M*N below 2**31 elements and a grid within CUDA's limits, a device of compute
capability 8.0 or later whose shared memory holds the instance (``SMEM_OPTIN``; unknown archs: None). ``linear_tn``
further needs unit column strides, row strides that are multiples of 8, 16-byte aligned pointers, and an output
that overlaps neither input (it may be C itself).

Not used by default: ``gpk_array/_gpu.py`` routes linear and matmul here only with ``GPK_GEMM=cutlass``, until an
H200 run shows them faster than cuBLAS (``benchmarks/cutlass_bench.py``).
"""

from __future__ import annotations

import math
import threading
from functools import lru_cache

from . import loader
from .cutlass import params as P

LAYOUT = "tn"
LARGE_MIN_TILES = 128
# Largest dynamic shared memory a block may opt in to, per compute capability (CUDA C programming guide, table of
# technical specifications), in bytes. An instance is offered on an arch only when its smem_bytes fit.
SMEM_OPTIN = {80: 163 << 10, 86: 99 << 10, 87: 163 << 10, 89: 99 << 10, 90: 227 << 10,
              100: 227 << 10, 103: 227 << 10, 110: 227 << 10, 120: 99 << 10, 121: 99 << 10}
_INT32 = 2 ** 31
_GRID_YZ_MAX = 65535
_DTYPE_CODES = {"float16": "f16", "bfloat16": "bf16", "f16": "f16", "bf16": "bf16"}


def _registry() -> dict:
    out = {}
    for e in P.load_manifest()["instances"]:
        if e.get("arch") == 80 and e.get("host_params", {}).get("status") == "probed":
            out[e["key"]] = e
    return out


REGISTRY: dict = _registry()


def compile_options() -> tuple:
    """The manifest's compile flags less ``-std=`` (the loader adds it) and less ``-arch`` (the loader's)."""
    flags = P.load_manifest()["settings"]["compile_flags"]
    return tuple(f for f in flags if not f.startswith(("-std=", "-arch")))


def cu_file(key: str) -> str:
    """The loader's name for an instance's source: ``cutlass/<file>.cu``."""
    return loader.CUTLASS_PREFIX + REGISTRY[key]["file"]


def variants() -> list[tuple[str, tuple]]:
    """Every (cu_file, options) module of the registry, for prebuild."""
    return sorted({(cu_file(k), compile_options()) for k in REGISTRY})


_dtype_memo: dict = {}
_TF32_CODES = {"float32": "tf32"}   # float32 where TF32 is allowed (select_sm90's tf32=True)
_tf32_memo: dict = {}


def dtype_name(dtype) -> str | None:
    """'f16' / 'bf16' for a NumPy/CuPy dtype (or those names), else None."""
    return _code(dtype, _DTYPE_CODES, _dtype_memo)


def _code(dtype, codes: dict, memo: dict) -> str | None:
    """codes[name] for a dtype or anything numpy.dtype() takes (its name; or the code itself, a key of codes), else
    None; memoized per dtype object, so a repeated call is one dict lookup (numpy's dtype.name and str(dtype) run
    Python code: about 9 us per TF32 matmul on the H200 when select_sm90 read them on every call)."""
    try:
        return memo[dtype]
    except (KeyError, TypeError):
        pass
    if isinstance(dtype, str) and dtype in codes:
        return codes[dtype]
    try:
        import numpy
        code = codes.get(numpy.dtype(dtype).name)
    except TypeError:
        return None
    if len(memo) < 64:
        memo[dtype] = code
    return code


def _arch_number(arch) -> int | None:
    try:
        return int(loader.normalize_arch(arch).rstrip("af"))
    except (ValueError, TypeError):
        return None


def _fits(entry: dict, m: int, n: int, k: int) -> bool:
    if P.sm80_unsupported(entry, m, n, k, k, k, n, n) is not None:
        return False
    if m * k >= _INT32 or n * k >= _INT32 or m * n >= _INT32:
        return False
    grid = P.sm80_schedule(entry, m, n, k)["grid"]
    return grid[0] < _INT32 and grid[1] <= _GRID_YZ_MAX and grid[2] <= _GRID_YZ_MAX


def family(m: int, n: int) -> str:
    """The shape rule: 'large' when the problem has at least LARGE_MIN_TILES tiles of 128x256, else 'small'."""
    return "large" if math.ceil(m / 128) * math.ceil(n / 256) >= LARGE_MIN_TILES else "small"


def select(dtype, layout, m: int, n: int, k: int, arch) -> str | None:
    """The registry key of the instance for D(m, n) = X(m, k) @ W(n, k)^T on a device of compute capability ``arch``
    (80, '90', 'sm_90a', ...), or None when no instance covers it (then the caller uses cuBLAS)."""
    dt = dtype_name(dtype)
    a = _arch_number(arch)
    if dt is None or layout != LAYOUT or a is None or a < 80 or a not in SMEM_OPTIN:
        return None
    m, n, k = int(m), int(n), int(k)
    for fam in (("large", "small") if family(m, n) == "large" else ("small",)):
        key = f"gemm/{dt}/{LAYOUT}/{fam}/sm80"
        entry = REGISTRY.get(key)
        if entry is not None and entry["host_params"]["smem_bytes"] <= SMEM_OPTIN[a]:
            return key if _fits(entry, m, n, k) else None
    return None


# ----------------------------------------------------------------------------------------------------------------
# launching

_lock = threading.Lock()
_ready: dict = {}        # (key, device id) -> (cupy.RawKernel with its smem attribute set, smem limit of the device)


def _function(key: str, entry: dict):
    """The instance's kernel on the current device: compiled (or loaded from the disk cache) by the loader, its
    max-dynamic-shared-memory attribute raised to the instance's need once."""
    dev = loader.current_device_id()
    hit = _ready.get((key, dev))
    if hit is not None:
        return hit
    with _lock:
        hit = _ready.get((key, dev))
        if hit is None:
            fn = loader.get_function(cu_file(key), entry["kernel"], compile_options())
            from cupy.cuda import runtime
            limit = int(runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, dev))
            smem = entry["host_params"]["smem_bytes"]
            if smem <= limit:
                fn.max_dynamic_shared_size_bytes = smem
            hit = _ready[(key, dev)] = (fn, limit)
    return hit


@lru_cache(maxsize=1024)
def _template(key: str, m: int, n: int, k: int, lda: int, ldb: int, ldc: int, ldd: int, alpha: float,
              beta: float):
    """Launch arguments with null pointers (patched per call) for one problem; cached, so a repeated shape costs
    a copy and four stores."""
    import numpy
    la = P.build_sm80_launch(REGISTRY[key], m, n, k, 0, 0, 0, 0, lda, ldb, ldc, ldd, alpha, beta)
    offs = REGISTRY[key]["host_params"]["offsets"]
    slots = tuple(offs[f"ptr_{x}"] // 8 for x in "ABCD")
    words = numpy.frombuffer(la.params, dtype="<u8")
    return la, words, slots, numpy.dtype([("words", "<u8", (words.size,))], align=True)


def launch_args(key: str, m: int, n: int, k: int, lda: int, ldb: int, ldc: int, ldd: int, alpha: float,
                beta: float, ptrs: tuple[int, int, int, int]):
    """(LaunchArgs, Params) for instance ``key``: the Params bytes of ``params.build_sm80_launch`` with the four
    pointers (A, B, C, D) in place, as a size-1 NumPy structured array. CuPy passes a size-1 NumPy array by value:
    it hands the driver a pointer to its bytes, which cuLaunchKernel copies as the kernel's one parameter.
    The caller has checked the problem with ``params.sm80_unsupported``."""
    la, words, slots, dtype = _template(key, m, n, k, lda, ldb, ldc, ldd, float(alpha), float(beta))
    params = words.copy()
    for slot, ptr in zip(slots, ptrs):
        params[slot] = ptr
    return la, params.view(dtype)


def _row_stride(a, rows: int, cols: int) -> int | None:
    """Row stride in elements of a 2-D array with unit column stride (any value when it has one row), else None."""
    item = a.dtype.itemsize
    s0, s1 = a.strides
    if cols > 1 and s1 != item:
        return None
    if rows == 1:
        return cols
    if s0 <= 0 or s0 % item:
        return None
    return s0 // item


def _extent(a, ld: int) -> tuple[int, int]:
    """[first byte, end) of the memory a (rows, cols) operand with row stride ld spans."""
    rows, cols = a.shape
    start = a.data.ptr
    return start, start + ((rows - 1) * ld + cols) * a.dtype.itemsize


def _overlap(r1, r2) -> bool:
    return r1[0] < r2[1] and r2[0] < r1[1]


def linear_tn(x, w, out=None, alpha=1.0, beta=0.0, c=None, key=None):
    """``alpha * x @ w.T + beta * c`` for CuPy arrays x (M, K) and w (N, K) of one dtype (float16 or bfloat16),
    c (M, N) or None, through a CUTLASS SM80 instance; D (M, N) in the same dtype, written into ``out`` if given.

    ``key=None``: the instance ``select`` picks for the current device; returns None for anything not covered (the
    caller falls back to cuBLAS). ``key`` given (e.g. ``'gemm/f16/tn/small/sm80'``): that instance, and ValueError
    where it cannot run the problem. Shape mismatches raise ValueError either way. Runs on the current CuPy stream;
    capturable in a CUDA graph (one kernel launch, nothing else)."""
    import cupy

    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"linear_tn: x {x.shape} and w {w.shape} must be (M, K) and (N, K)")
    m, k = x.shape
    n = w.shape[0]
    if beta != 0 and c is None:
        raise ValueError("linear_tn: beta != 0 needs c")
    for name, a in (("c", c), ("out", out)):
        if a is not None and a.shape != (m, n):
            raise ValueError(f"linear_tn: {name} must have shape {(m, n)}, got {a.shape}")

    def refuse(why):
        if key is not None:
            raise ValueError(f"linear_tn {key}: {why}")
        return None

    dt = dtype_name(x.dtype)
    if dt is None or any(a is not None and a.dtype != x.dtype for a in (w, c, out)):
        return refuse(f"dtypes must all be float16 or all bfloat16, got {x.dtype}, {w.dtype}")
    if min(m, n, k) == 0:
        return refuse("empty problem")
    arch = loader.device_arch()
    if key is None:
        use = select(dt, LAYOUT, m, n, k, arch)
        if use is None:
            return None
    else:
        use = key
        entry = REGISTRY.get(key)
        if entry is None or entry["dtype"] != dt:
            raise ValueError(f"linear_tn: no instance {key!r} for dtype {dt}")
        if (_arch_number(arch) or 0) < 80:
            raise ValueError(f"linear_tn {key}: needs compute capability 8.0 or later, the device has sm_{arch}")
        if not _fits(entry, m, n, k):
            raise ValueError(f"linear_tn {key}: cannot run M={m}, N={n}, K={k} "
                             f"({P.sm80_unsupported(entry, m, n, k, k, k, n, n) or 'too large'})")
    entry = REGISTRY[use]

    lda, ldb = _row_stride(x, m, k), _row_stride(w, n, k)
    if lda is None or ldb is None:
        return refuse("x and w need unit column strides and positive row strides")
    if out is None:
        out = cupy.empty((m, n), dtype=x.dtype)
    ldd = _row_stride(out, m, n)
    ldc = ldd if c is None else _row_stride(c, m, n)
    if ldd is None or ldc is None:
        return refuse("out and c need unit column strides and positive row strides")
    ptr_c = out.data.ptr if c is None else c.data.ptr
    d_span = _extent(out, ldd)
    if _overlap(d_span, _extent(x, lda)) or _overlap(d_span, _extent(w, ldb)):
        return refuse("out overlaps x or w")
    if c is not None and _overlap(d_span, _extent(c, ldc)) and (ptr_c, ldc) != (out.data.ptr, ldd):
        return refuse("out overlaps c other than being c itself")
    why = P.sm80_unsupported(entry, m, n, k, lda, ldb, ldc, ldd,
                             (x.data.ptr, w.data.ptr, ptr_c, out.data.ptr))
    if why:
        return refuse(why)

    fn, smem_limit = _function(use, entry)
    if entry["host_params"]["smem_bytes"] > smem_limit:
        return refuse(f"needs {entry['host_params']['smem_bytes']} bytes of shared memory, the device allows "
                      f"{smem_limit}")
    la, arg = launch_args(use, m, n, k, lda, ldb, ldc, ldd, alpha, beta,
                          (x.data.ptr, w.data.ptr, ptr_c, out.data.ptr))
    loader.launch(fn, la.grid, la.block, (arg,), shared_mem=la.shared_mem)
    return out


# ----------------------------------------------------------------------------------------------------------------
# SM90

SM90_LAYOUTS = ("nn", "tn")
_NEVER = 1 << 62         # a floor no problem reaches: no record takes the class
_FUSED_ACTIVATIONS = (None, "gelu", "gelu_tanh", "relu", "silu")
_EPILOGUE = {None: "bias", "gelu": "bias_gelu", "gelu_tanh": "bias_gelu_tanh", "relu": "bias_relu",
             "silu": "bias_silu"}
FEW_ROWS_FUSED = ("gelu", "silu")   # the activations with shipped fr96 and fr192 instances (the forced mode's choice)


def _even(v: int) -> int:
    return v + (v & 1)


def _few_rows(m: int, n: int, wave_sms: int, narrow: str, wide: str) -> str:
    """The registry's ``few_rows`` choice: ``narrow`` (128x96 tiles, 1x2x1 clusters) or ``wide`` (128x192, 2x1x1),
    the fewer waves of ``wave_sms`` tiles times the tile's area, ties to ``wide``."""
    rows = -(-m // 128)
    waves96 = -(-(rows * _even(-(-n // 96))) // wave_sms)
    waves192 = -(-(_even(rows) * -(-n // 192)) // wave_sms)
    return wide if 2 * waves192 <= waves96 else narrow


def _load_rules():
    """The registry's GEMM records compiled into the lookups below (gpk_array.workbench.registry), and the
    constants derived from them (each the least bound any record that picks one of our kernels needs)."""
    global _PLAIN, _PLAIN_KEY, _FUSED, SM90_MIN_M, TF32_MIN_TILES, FUSED_ALWAYS, FEW_ROWS_MAX, WAVE_SMS, TANH_PPT_MIN_M
    global _FUSED_MIN_M
    from ..workbench import registry
    t = registry.compiled(_few_rows)
    _PLAIN, _PLAIN_KEY, _FUSED = t["plain"], t["plain_key"], t["fused"]
    pr, fr = t["plain_records"], t["fused_records"]
    half = [r for (dt, _), rs in pr.items() if dt != "tf32" for r in rs]
    SM90_MIN_M = registry.lower_bound(half, "m", _NEVER)
    TF32_MIN_TILES = registry.lower_bound([r for (dt, _), rs in pr.items() if dt == "tf32" for r in rs],
                                          "tiles128", _NEVER)
    few = [r for rs in fr.values() for r in rs if "few_rows" in r["choice"]]
    FEW_ROWS_MAX = max((r["where"].get("m", [None, None])[1] or 0 for r in few), default=1024)
    WAVE_SMS = few[0]["choice"]["few_rows"]["wave_sms"] if few else 132
    # activations whose records cover every shape (a record without bounds, or from one row): no cheap floor
    FUSED_ALWAYS = tuple(a for a in _FUSED_ACTIVATIONS if a is not None and
                         registry.lower_bound([r for (_, e), rs in fr.items() if e == _EPILOGUE[a] for r in rs],
                                              "m", _NEVER) <= 1)
    _FUSED_MIN_M = {a: registry.lower_bound([r for (_, e), rs in fr.items() if e == _EPILOGUE[a] for r in rs], "m",
                                            _NEVER) for a in _FUSED_ACTIVATIONS}
    # a bias-free linear takes the plain "tn" records
    _FUSED_MIN_M[None] = min(_FUSED_MIN_M[None], registry.lower_bound(
        [r for (dt, lay), rs in pr.items() if dt != "tf32" and lay == "tn" for r in rs], "m", _NEVER))
    TANH_PPT_MIN_M = _FUSED_MIN_M["gelu_tanh"]


_load_rules()


def sm90_may_take(m: int, n: int, itemsize: int, min_m: int = SM90_MIN_M) -> bool:
    """A necessary condition of ``sm90_family`` (not forced) from M, N and the element size alone (16-bit: M of
    at least ``min_m``, by default the registry's least row floor ``SM90_MIN_M``; TF32: at least
    ``TF32_MIN_TILES`` 128x128 tiles), cheap enough to keep the checks of the SM90 path off every small GEMM's host
    time."""
    if itemsize == 2:
        return m >= min_m
    return -(-m // 128) * -(-n // 128) >= TF32_MIN_TILES


def sm90_fused_may_take(m: int, n: int, itemsize: int, activation) -> bool:
    """``sm90_may_take`` for ``select_sm90_fused`` (not forced): 16-bit, M of at least the least row floor of the
    activation's records (a bias-free linear: also the plain "tn" records'); else the activations that every
    shape takes (FUSED_ALWAYS) or the plain TF32 condition."""
    if itemsize == 2:
        try:
            return m >= _FUSED_MIN_M[activation]
        except (KeyError, TypeError):
            return False
    return activation in FUSED_ALWAYS or sm90_may_take(m, n, itemsize)


def _fused_min_m(activation) -> int:
    """The least row count at which any registry record for ``activation``'s fused epilogue picks our kernel."""
    return _FUSED_MIN_M.get(activation, _NEVER)


def sm90_family(m: int, n: int, k: int, forced: bool = False, dt: str = "f16", layout: str = "nn",
                min_m: int | None = None) -> str | None:
    """The SM90 family for an (M, N, K) problem of dtype code ``dt`` ("f16", "bf16", "tf32") in ``layout``, or
    None where cuBLASLt serves it: the first record of the registry's ``gemm_sm90`` table for the selector
    ``gemm/<dt>/<layout>/sm90`` whose shape class holds (compiled once per process into one function per
    selector). ``min_m`` (16-bit): replaces the row floor of the records (the rows must reach it, and the rest
    of the record's bounds hold as if they did). ``forced`` (the ``GPK_GEMM=cutlass`` checking mode, not a
    dispatch rule): ppt, or coopt from 4096x4096 (16-bit); TF32 ppt on "tn" only."""
    if forced:
        if dt == "tf32":
            return "ppt" if layout == "tn" else None
        return "coopt" if m >= 4096 and n >= 4096 else "ppt"
    fn = _PLAIN.get((dt, layout))
    if fn is None:
        return None
    if min_m is None or dt == "tf32":
        return fn(m, n, k)
    return fn(max(m, SM90_MIN_M), n, k) if m >= min_m else None


def select_sm90(dtype, layout: str, m: int, n: int, k: int, forced: bool = False, tf32: bool = False) -> str | None:
    """The registry key of the SM90 instance for the problem (D (m, n) = A (m, k) @ B in ``layout``), or None.
    float32 only with ``tf32`` (the caller's precision setting allows TF32)."""
    dt = dtype_name(dtype)
    if dt is None and tf32:
        dt = _code(dtype, _TF32_CODES, _tf32_memo)
    if dt is None or layout not in SM90_LAYOUTS or min(m, n, k) <= 0:
        return None
    if forced:
        fam = sm90_family(m, n, k, forced, dt, layout)
        return None if fam is None else f"gemm/{dt}/{layout}/{fam}/sm90"
    try:
        return _PLAIN_KEY[dt, layout](m, n, k)
    except KeyError:
        return None


def _few_rows_family(m: int, n: int) -> str:
    """fr96 (128x96 tiles) or fr192 (128x192): the fewer waves of WAVE_SMS tiles times the tile's area, ties to
    fr192 (512x3072: one wave of 128 fr96 tiles against one of 64 twice as large: fr96; 1024x3072: two against
    one: fr192). Tiles as CUTLASS schedules them: whole clusters, so fr96 (1x2x1) runs an even number of column
    tiles and fr192 (2x1x1) an even number of row tiles (128 rows x 16384: 2 x 86 fr96 tiles against 2 x 86 of
    fr192, one wave against two: fr96)."""
    return _few_rows(m, n, WAVE_SMS, "fr96", "fr192")


def select_sm90_fused(dtype, m: int, n: int, k: int, activation, forced: bool = False) -> str | None:
    """The fused-epilogue instance for activation(x (m, k) @ w.T + bias), or None (cuBLASLt's epilogue, else
    GEMM then elementwise): the first record of the registry's ``gemm_sm90_fused`` table for the selector
    ``linear/<dt>/tn/<epilogue>/sm90`` whose shape class holds. ``forced``: fr96/fr192 for gelu/silu up to
    FEW_ROWS_MAX rows, ppt otherwise."""
    dt = dtype_name(dtype)
    if dt is None or min(m, n, k) <= 0 or activation not in _FUSED_ACTIVATIONS:
        return None
    epi = _EPILOGUE[activation]
    if forced:
        fam = _few_rows_family(m, n) if activation in FEW_ROWS_FUSED and m <= FEW_ROWS_MAX else "ppt"
        return f"gemm/{dt}/tn/{fam}_{epi}/sm90"
    try:
        return _FUSED[dt, epi](m, n, k)
    except KeyError:
        return None


_sm90 = None
_sm90_devices: dict = {}


def sm90_device(device_id: int) -> bool:
    """Whether the SM90 instances (sm_90a cubins) run on this device: compute capability 9.0 exactly."""
    ok = _sm90_devices.get(device_id)
    if ok is None:
        ok = _sm90_devices[device_id] = loader.device_arch(device_id) == "90"
    return ok


def gemm_sm90(x, w, layout: str, forced: bool = False, tf32: bool = False):
    """``x @ w`` (layout "nn": w (K, N)) or ``x @ w.T`` (layout "tn": w (N, K)) for CuPy arrays of one dtype
    (float16 or bfloat16; float32 with ``tf32``) with contiguous rows, x (..., K) (C-contiguous when it has more
    than 2 dims: its leading dims are flattened), through the SM90 instance ``select_sm90`` picks, into a new (M, N)
    array; None where none covers the problem or cuBLAS is faster (the caller uses cuBLAS). The shape rule is
    decided first, from the shapes alone; only a chosen instance looks at the device (``_run_sm90``). Raises
    launch_sm90.CutlassUnavailable where the instance can be neither loaded nor built."""
    if x.dtype != w.dtype:
        return None
    k = x.shape[-1]
    kw, n = w.shape if layout == "nn" else w.shape[::-1]
    if kw != k:
        raise ValueError(f"gemm_sm90: x {x.shape} and w {w.shape} do not match for layout {layout!r}")
    m = x.size // k if k else 0
    key = select_sm90(x.dtype, layout, m, n, k, forced, tf32)
    if key is None:
        return None
    return _run_sm90(key, x if x.ndim == 2 else x.reshape(m, k), w, m, n, None)


def linear_sm90(x, w, bias, activation, forced: bool = False):
    """``activation(x @ w.T + bias)`` (x (M, K), w (N, K), bias (N,) or None; float16/bfloat16) in one fused-epilogue
    SM90 kernel where ``select_sm90_fused`` picks one, else None."""
    m, k = x.shape
    n = w.shape[0]
    if x.dtype != w.dtype or w.shape[1] != k:
        return None
    # the kernel reads the bias as N consecutive elements: a strided or broadcast (stride 0) view is declined
    if bias is not None and (bias.dtype != x.dtype or bias.shape != (n,) or
                             (n > 1 and bias.strides[0] != bias.itemsize)):
        return None
    key = select_sm90_fused(x.dtype, m, n, k, activation, forced)
    return None if key is None else _run_sm90(key, x, w, m, n, bias)


def _run_sm90(key, x, w, m, n, bias):
    """Instance ``key`` into a new (m, n) array on the current device, or None: not a CC 9.0 device, an operand
    on another device (CuPy and cuBLASLt raise for those), or operands the instance cannot take."""
    global _sm90
    import cupy
    dev = cupy.cuda.runtime.getDevice()
    if not sm90_device(dev):
        return None
    for a in (x, w, bias):
        if a is not None and a.data.device_id != dev:
            return None
    if _sm90 is None:
        from .cutlass import launch_sm90
        _sm90 = launch_sm90
    out = cupy.empty((m, n), dtype=x.dtype)
    return out if _sm90.gemm_into(key, x, w, out, dev, bias) else None
