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

import ast
import re
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
    lclass = key[len(params)] if len(key) > len(params) else ("R", 1, False, False)
    _, unroll, noalias, cover = lclass
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
                lines.append(f"    e{i} = p{i} + d{i}.size * {item}")
        lo = {i: (f"b{i}" if layout == "S" else f"p{i}") for i, _, layout, _ in arrays}
        pairs = [f"({lo[j]} < e{i} and {lo[i]} < e{j})" for i in written for j, *_ in arrays if j != i]
        lines.append(f"    if ({' or '.join(pairs)}) is {noalias}:")
        lines.append("        return None")
    elif not noalias:
        return None
    # the launch domain
    shape_of = None
    if kind == "range":
        shape_of = _shape_domain(kernel, key)
        if shape_of is not None:   # range(x.shape[k]) alone in the kernel: n read from x directly
            i, axis = shape_of
            lines.append(f"    n = d{i}.size" if key[i][2] == 1 else f"    n = d{i}._shape[{axis}]")
        else:
            lines.append(f"    r = HOST({', '.join(host_vals)})")
            lines.append("    n = len(range(*[int(v) for v in r]))")
        lines.append(f"    if n {'<' if unroll > 1 else '>='} {UNROLL_MIN}:")
        lines.append("        return None")
        block = kernel._range_block()
        tile = block[0] * unroll
        most = MAX_GRID_X * tile          # the most iterations a covering launch has threads for
        if cover:
            lines.append(f"    if _geom is not None or n > {most}:")
            lines.append("        return None")
            lines.append("    if n <= 0:")
            lines.append("        SPEC.calls += 1")
            lines.append("        return True")
            lines.append(f"    gx = -(-n // {tile}); gy = gz = 1; bx = {block[0]}; by = {block[1]}; bz = {block[2]}")
        else:
            lines.append("    if _geom is None:")
            lines.append(f"        if n <= {most}:")
            lines.append("            return None")
            lines.append(f"        gx = {MAX_GRID_X}; gy = gz = 1; bx = {block[0]}; by = {block[1]}; bz = {block[2]}")
            _explicit(lines)
    else:
        if unroll != 1:
            return None
        hv = f"[{', '.join(host_vals)}]"
        lines.append("    if _geom is None:")
        if kind == "ndindex":
            lines.append(f"        if K._covers(K._domain_dims({hv}), 1) is not {cover}:")
            lines.append("            return None")
        elif cover:
            return None
        lines.append(f"        g = K._geometry({hv}, None)")
        lines.append("        if g is None:")
        lines.append("            SPEC.calls += 1")
        lines.append("            return True")
        lines.append("        K._check_geometry(*g)")
        lines.append("        (gx, gy, gz), (bx, by, bz) = g")
        if cover:
            lines.append("    else:")
            lines.append("        return None")
        else:
            _explicit(lines)
    # the parameters, in codegen's order: per array its pointer, shape, strides (elements); per number its value.
    # A shape or stride the kernel's body never reads (a C-contiguous array is indexed from its shape, a 1-D one
    # from nothing) is passed as 0.
    src = spec.source
    body = src[src.index("{", src.index(f" {spec.cname}(")):]
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
        shapes = [re.search(rf"\b{p}_s{j}\b", body) is not None for j in range(nd)]
        strides = [re.search(rf"\b{p}_t{j}\b", body) is not None for j in range(nd)]
        if nd == 1 and shapes[0]:
            shapes[0] = False
            sizes = ["n" if kind == "range" and shape_of is not None and shape_of[0] == i else f"d{i}.size"]
        else:
            sizes = [f"sh{i}[{j}]" if u else "0" for j, u in enumerate(shapes)]
        if any(shapes):
            lines.append(f"    sh{i} = d{i}._shape")
        if any(strides):
            lines.append(f"    st{i} = d{i}._strides")
        pvals.append(f"p{i}")
        pvals += sizes
        pvals += [f"st{i}[{j}] // {item}" if u else "0" for j, u in enumerate(strides)]
    packed = ParamBuffer(fmt)
    ns.update(PACK=packed.pack, BUF=packed.buf, XADDR=packed.addr, PACKED=packed)
    lines.append("    with LOCK:")
    scalar_fmts = [_SCALAR_FMT[k[1].name if isinstance(k[1], np.dtype) else k[1]] for k in key[:len(params)]
                   if k[0] == "S"]
    if any(f in "bBhHiIqQ" for f in scalar_fmts):   # an integer out of its C type's range: the general path's error
        lines.append("        try:")
        lines.append(f"            PACK(BUF, 0, {', '.join(pvals)})")
        lines.append("        except error:")
        lines.append("            return None")
    else:
        lines.append(f"        PACK(BUF, 0, {', '.join(pvals)})")
    lines.append("        LAUNCH(FPTR, gx, gy, gz, bx, by, bz, 0, GCS().ptr, 0, XADDR)")
    lines.append("    SPEC.calls += 1")
    lines.append("    return True")
    return lines, ns


def _explicit(lines):
    """The branch of a call with an explicit geometry (``k[(total, block)]``: checked, or () for nothing to run)."""
    lines.append("    else:")
    lines.append("        if not _geom:")
    lines.append("            SPEC.calls += 1")
    lines.append("            return True")
    lines.append("        (gx, gy, gz), (bx, by, bz) = _geom")


def _shape_domain(kernel, key):
    """(array argument index, axis) when the kernel is only ``for i in range(x.shape[axis]): ...`` with x an array
    parameter (the bound then needs no host evaluation), else None."""
    fi = kernel._info.main
    node = kernel._info.domain[1]
    body = [st for st in fi.tree.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                                              and isinstance(st.value.value, str))]
    if body != [node] or len(node.iter.args) != 1:
        return None
    b = node.iter.args[0]
    if not (isinstance(b, ast.Subscript) and isinstance(b.value, ast.Attribute) and b.value.attr == "shape"
            and isinstance(b.value.value, ast.Name) and isinstance(b.slice, ast.Constant)
            and type(b.slice.value) is int):
        return None
    name = b.value.value.id
    if name not in kernel.params:
        return None
    i = kernel.params.index(name)
    axis = b.slice.value
    if key[i][0] != "A" or not 0 <= axis < key[i][2]:
        return None
    return i, axis


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
