"""The direct CUDA call of one cached ``@gpk_array.kernel`` specialization.

``binder(kernel, spec, index, function)`` generates (once per specialization and device) a Python function of the
kernel's parameters that checks, in straight-line code, that a call's arguments have exactly that
specialization's signature (argument types, dtypes, ndim, layout, device, the launch class of
``api.launch_class``), evaluates the launch domain, packs the kernel's parameters into one buffer and launches
with ``cupy.cuda.driver.launchKernel`` (the buffer passed as ``CU_LAUNCH_PARAM_BUFFER_POINTER``, laid out as the
C ABI lays out the parameters: ``struct`` native alignment) on the current CuPy stream. It returns True when it
launched (or there was nothing to run) and None for anything else, which then takes ``Kernel._launch``: the
general path, whose checks and errors are the reference. None is also what a signature the binder does not
handle gets (complex numbers, debug mode).
"""
from __future__ import annotations

import struct
import threading

import numpy as np

from .. import _array
from .._array import Array
from .._jit.launch import ParamBuffer

UNROLL = 4                 # iterations per thread of a 1-D loop domain when it is large
UNROLL_MIN = 1 << 21       # ... from this many iterations (below it, one per thread keeps the SMs full)
MAX_GRID_X = 2**31 - 1

# struct format of a scalar parameter (C type of codegen's parameter): weak kinds and dtype names
_SCALAR_FMT = {"b": "?", "i": "q", "f": "d", "bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
               "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float16": "f", "bfloat16": "f",
               "float32": "f", "float64": "d"}
_PY_TYPE = {"b": "bool", "i": "int", "f": "float"}
_LAYOUT_TEST = {"C": "{d}._c_contiguous", "F": "(not {d}._c_contiguous and {d}._f_contiguous)",
                "S": "not ({d}._c_contiguous or {d}._f_contiguous)"}


def span(d):
    """(lowest, one past the highest) byte address array ``d`` (CuPy or NumPy) touches; (p, p) when empty."""
    p = d.data.ptr if not isinstance(d, np.ndarray) else d.__array_interface__["data"][0]
    if d.size == 0:
        return p, p
    lo = hi = p
    for n, s in zip(d.shape, d.strides):
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + d.itemsize


def no_alias(norm, writes):
    """Whether no array the kernel writes (positions ``writes``) overlaps another array argument."""
    arrays = [(i, span(a.value)) for i, a in enumerate(norm) if a.key[0] == "A"]
    if len(arrays) < 2:
        return True
    spans = dict(arrays)
    for i in writes:
        wi = spans.get(i)
        if wi is None:
            continue
        for j, sj in arrays:
            if j != i and sj[0] < wi[1] and wi[0] < sj[1]:
                return False
    return True


def binder(kernel, spec, index, function, cuda):
    """(source lines, namespace) of the direct-call function of ``spec`` on device ``index`` (``function``: its
    loaded CuPy Function; ``cuda``: ``cupy.cuda``, whose driver, runtime and current stream it calls), or None
    where the signature has a part it does not handle."""
    params = kernel.params
    key = spec.key
    lclass = key[len(params)] if len(key) > len(params) else ("R", 1, False)
    unroll, noalias = lclass[1], lclass[2]
    kind = kernel._info.domain[0]
    args = [f"a{i}" for i in range(len(params))]
    ns = {"Array": Array, "_arr": _array, "SPEC": spec, "K": kernel, "span": span, "error": struct.error,
          "GCS": cuda.get_current_stream, "LAUNCH": cuda.driver.launchKernel, "FPTR": function.ptr,
          "LOCK": threading.Lock(), "GETDEV": cuda.runtime.getDevice, "IDX": index, "RO": _array.readonly}
    lines = [f"def bind({', '.join(args)}, _geom=None):"]
    guard, vals, arrays = [], [], []
    for i, (p, k) in enumerate(zip(params, key)):
        a = args[i]
        if k[0] == "S":
            t = k[1]
            name = t.name if isinstance(t, np.dtype) else t
            if name not in _SCALAR_FMT:
                return None
            if isinstance(t, np.dtype):
                ns[f"T{i}"] = t.type
                guard.append(f"type({a}) is T{i}")
            else:
                guard.append(f"type({a}) is {_PY_TYPE[t]}")
            vals.append(a)
            continue
        dt, nd, layout = k[1], k[2], k[3]
        ns[f"DT{i}"] = dt
        guard.append(f"type({a}) is Array and {a}._device is DEV")
        arrays.append((i, nd, layout, dt.itemsize))
    lines.append(f"    if not ({' and '.join(guard)}):")
    lines.append("        return None")
    written_args = [args[i] for i in kernel._writes if key[i][0] == "A"]
    if written_args:   # a CUDA array whose flags.writeable was cleared: the general path raises
        lines.append(f"    if _arr._any_readonly and ({' or '.join(f'RO({a})' for a in written_args)}):")
        lines.append("        return None")
    if cuda.runtime.getDeviceCount() > 1:
        lines.append("    if GETDEV() != IDX:")
        lines.append("        return None")
    host_vals = list(args)
    for i, nd, layout, item in arrays:
        a, d = args[i], f"d{i}"
        lines.append(f"    {d} = {a}._data")
        test = _LAYOUT_TEST[layout].format(d=d)
        lines.append(f"    if not (({d}.dtype is DT{i} or {d}.dtype == DT{i}) and {d}.ndim == {nd} and {test}):")
        lines.append("        return None")
        lines.append(f"    p{i} = {d}.data.ptr")
        host_vals[i] = d
    # the launch class: no written array overlaps another array argument <=> noalias
    written = [i for i, *_ in arrays if i in kernel._writes]
    if written and len(arrays) > 1:
        for i, nd, layout, item in arrays:
            if layout == "S":
                lines.append(f"    b{i}, e{i} = span(d{i})")
            else:
                lines.append(f"    b{i} = p{i}; e{i} = p{i} + d{i}.nbytes")
        pairs = [f"(b{j} < e{i} and b{i} < e{j})" for i in written for j, *_ in arrays if j != i]
        lines.append(f"    if ({' or '.join(pairs)}) is {noalias}:")
        lines.append("        return None")
    elif not noalias:
        return None
    # the launch domain
    if kind == "range":
        lines.append(f"    r = HOST({', '.join(host_vals)})")
        lines.append("    n = len(range(*[int(v) for v in r]))")
        lines.append(f"    if (n >= {UNROLL_MIN}) is not {unroll > 1}:")
        lines.append("        return None")
        lines.append("    if _geom is None:")
        lines.append("        if n <= 0:")
        lines.append("            SPEC.calls += 1")
        lines.append("            return True")
        block = kernel._range_block()
        tile = block[0] * unroll
        lines.append(f"        g = ((-(-n // {tile}) if n < {MAX_GRID_X * tile} else {MAX_GRID_X}, 1, 1), BLOCK)")
        ns["BLOCK"] = block
    else:
        if unroll != 1:
            return None
        lines.append("    if _geom is None:")
        lines.append(f"        g = K._geometry([{', '.join(host_vals)}], None)")
        lines.append("        if g is None:")
        lines.append("            SPEC.calls += 1")
        lines.append("            return True")
        lines.append("        K._check_geometry(*g)")
    lines.append("    else:")
    lines.append("        g = _geom")
    lines.append("        if not g:")
    lines.append("            SPEC.calls += 1")
    lines.append("            return True")
    # the parameters, in codegen's order: per array its pointer, shape, strides (elements); per number its value
    pvals = []
    vi = iter(vals)
    arr_of = {i: (nd, item) for i, nd, _, item in arrays}
    fmt = ""
    for i, (p, k) in enumerate(zip(params, key)):
        if k[0] == "S":
            t = k[1]
            fmt += _SCALAR_FMT[t.name if isinstance(t, np.dtype) else t]
            pvals.append(next(vi))
            continue
        nd, item = arr_of[i]
        fmt += "P" + "q" * (2 * nd)
        if nd:
            lines.append(f"    sh{i} = d{i}._shape; st{i} = d{i}._strides")
        pvals.append(f"p{i}")
        pvals += [f"sh{i}[{j}]" for j in range(nd)]
        pvals += [f"st{i}[{j}] // {item}" for j in range(nd)]
    packed = ParamBuffer(fmt)
    ns.update(PACK=packed.pack, BUF=packed.buf, XADDR=packed.addr, PACKED=packed)
    lines.append("    (gx, gy, gz), (bx, by, bz) = g")
    lines.append("    with LOCK:")
    lines.append("        try:")
    lines.append(f"            PACK(BUF, 0, {', '.join(pvals)})")
    lines.append("        except error:")
    lines.append("            return None")
    lines.append("        LAUNCH(FPTR, gx, gy, gz, bx, by, bz, 0, GCS().ptr, 0, XADDR)")
    lines.append("    SPEC.calls += 1")
    lines.append("    return True")
    return lines, ns


def make_binder(kernel, spec, index, function, device, cuda=None):
    """``binder``'s function for arrays on ``device`` (a gpk_array Device), compiled; None where there is none."""
    from .._device import Device
    if cuda is None:
        import cupy
        cuda = cupy.cuda
    made = binder(kernel, spec, index, function, cuda) if isinstance(device, Device) else None
    if made is None:
        return None
    lines, ns = made
    ns["DEV"] = device
    ns["HOST"] = kernel._host_geom_fn() if kernel._info.domain[0] == "range" else None
    src = "\n".join(lines) + "\n"
    exec(compile(src, f"<gpk_array.kernel binder {spec.cname}>", "exec"), ns)  # noqa: S102 - our generated code
    fn = ns["bind"]
    fn.source = src
    return fn
