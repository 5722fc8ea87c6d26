"""Fused neural-network ops: linear (+ bias + activation), layer norm, softmax, GELU, attention.

Each op is written once, on the backing arrays (``xp`` is NumPy on the CPU, CuPy on a CUDA device).
Precision: float16 and bfloat16 inputs are computed in float32 where accuracy needs it (reductions,
activations, attention scores) and the result is cast back to the input dtype. Matrix products of
``linear`` stay in the input dtype on CUDA (cuBLAS accumulates in float32) and run in float32 on the CPU
(NumPy has no fast half-precision GEMM).

CUDA kernels plug in at one place, ``_fused(device, name)``: when ``gpk_array._gpu`` defines a function
of that name it is called with CuPy arrays, and returns a CuPy array, or None when it does not cover the
case at hand (dtype, layout, size), in which case the plain xp code below runs, with its matrix products
through ``gpk_array._gpu.matmul``. The signatures:

    _gpu.linear(x2d, w, bias, activation)          x2d (N, in), w (out, in), bias (out,) or None -> (N, out)
    _gpu.layer_norm(x, weight, bias, eps)          over the last axis; weight/bias (C,) or None
    _gpu.add_layer_norm(x, r, weight, bias, eps)   (x + r, layer_norm(x + r))
    _gpu.add_layer_norm_linear(x2d, r2d, ln_w, ln_b, eps, w, b, activation)   (x + r, linear(layer_norm(x + r)))
    _gpu.softmax(x, axis)
    _gpu.gelu(x, activation)                       activation is "gelu" (erf) or "gelu_tanh"
    _gpu.bias_add_inplace(out, bias)               returns out
    _gpu.scaled_dot_product_attention(q, k, v, mask, causal, scale)
    _gpu.self_attention(qkv, num_heads, causal, scale)   qkv (..., T, 3 * num_heads * D) -> (..., T, num_heads * D)
    _gpu.kv_cache_attention(qkv, cache, positions, kv_len, scale)

A decode step captured in a CUDA graph (gpk_array.llm.engine) runs all of this inside a stream capture,
where CuPy refuses cuBLAS calls (NotImplementedError from its cublas setStream): the step captures only when
these kernels and ``_gpu.matmul`` launch their own kernels, or call cuBLAS without CuPy's wrappers.
"""
import math
import operator

import numpy as np

from .. import _dtypes as _dt
from .. import _promotion
from .._errors import DeviceError
from ._common import Array, as_array, axis_error, new, oom_guard

__all__ = ["add_layer_norm", "add_layer_norm_linear", "bias_add_inplace", "gelu", "kv_cache_attention", "layer_norm",
           "linear", "linear_bias_gelu", "scaled_dot_product_attention", "self_attention", "softmax"]

ACTIVATIONS = (None, "gelu", "gelu_tanh", "relu", "silu")
_LOW = (_dt.F16,) + ((_dt.BF16,) if _dt.BF16 is not None else ())
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


_gpu_mod = None


def _gpu():
    """gpk_array._gpu, imported on first use (it loads the kernel modules) and kept."""
    global _gpu_mod
    if _gpu_mod is None:
        from .. import _gpu as mod
        _gpu_mod = mod
    return _gpu_mod


def _fused(dev, name):
    """The CUDA kernel gpk_array._gpu offers for op ``name`` on ``dev``, or None (then plain xp code runs)."""
    if dev.kind != "cuda":
        return None
    return getattr(_gpu(), name, None)


def _matmul(dev):
    """The matrix product of the plain code: gpk_array._gpu's GEMM dispatch on CUDA, the backend's elsewhere."""
    return _gpu().matmul if dev.kind == "cuda" else dev.xp.matmul


def _operands(op, *arrays):
    """(backing arrays, device) of Arrays or None, all on one device and of a real floating dtype."""
    dev = next((a._device for a in arrays if a.__class__ is Array), None)  # array-likes follow the Arrays
    out = []
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        a = as_array(a, dev)
        if dev is None:
            dev = a._device
        elif a._device is not dev:
            raise DeviceError(f"{op}: arrays are on different devices: {dev} and {a._device}")
        if _dt.kind(a._data.dtype) != "f":
            raise TypeError(f"{op} needs real floating-point arrays, got dtype {a._data.dtype}")
        out.append(a._data)
    return out, dev


def _result_dtype(*datas):
    dt = None
    for d in datas:
        if d is not None:
            if dt is None:
                dt = d.dtype
            elif d.dtype != dt:  # the promotion table only where the dtypes differ
                dt = _promotion.result_dtype(dt, d.dtype)
    return dt


def _wide(a, xp):
    """a in float32 if it is float16 / bfloat16, else a itself."""
    return a.astype(xp.float32) if a.dtype in _LOW else a


def _erf(x, xp):
    if xp is np:
        try:
            from scipy.special import erf
        except ImportError:
            return _erf_approx(x, np)
        return erf(x)
    from cupyx.scipy.special import erf
    return erf(x)


def _erf_approx(x, xp):
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26), for when SciPy is missing."""
    a = xp.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return xp.sign(x) * (1.0 - poly * xp.exp(-a * a))


def _activate(y, activation, xp):
    """activation(y) on a float32/float64 backing array."""
    if activation is None:
        return y
    if activation == "relu":
        return xp.maximum(y, 0)
    # silu and gelu below -1e30 are their limit -0 (y * 0 would be NaN at -inf), as every CUDA path gives
    if activation == "silu":
        return xp.maximum(y, -1e30) * (0.5 + 0.5 * xp.tanh(0.5 * y))  # y * sigmoid(y), without overflow in exp
    if activation == "gelu":
        return 0.5 * xp.maximum(y, -1e30) * (1.0 + _erf(y * (1.0 / math.sqrt(2.0)), xp))
    if activation == "gelu_tanh":
        return 0.5 * y * (1.0 + xp.tanh(_SQRT_2_OVER_PI * (y + 0.044715 * (y * y * y))))
    raise ValueError(f"unknown activation {activation!r}: use one of {ACTIVATIONS}")


def _softmax(s, axis, xp):
    """softmax of a float32/float64 backing array (in place on temporaries)."""
    e = xp.exp(s - s.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


# --- linear --------------------------------------------------------------------------------------------


@oom_guard
def linear(x, weight, bias=None, activation=None):
    """``activation(x @ weight.T + bias)``, weight laid out (out_features, in_features) as in
    ``torch.nn.functional.linear``. activation: None, "gelu", "gelu_tanh", "relu" or "silu"."""
    (x, w, b), dev = _operands("linear", x, weight, bias)
    _check_linear("linear", x, w, b, activation)
    return new(_linear_data(x, w, b, activation, dev), dev)


def _check_linear(op, x, w, b, activation):
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}: use one of {ACTIVATIONS}")
    if w.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-dimensional (out_features, in_features), got shape {w.shape}")
    if x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"{op}: x of shape {x.shape} does not match weight of shape {w.shape}")
    if b is not None and b.shape != (w.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({w.shape[0]},), got {b.shape}")


def _linear_data(x, w, b, activation, dev):
    """linear on checked backing arrays: the device's fused kernel, else the plain code; (..., out_features)."""
    dt = _result_dtype(x, w, b)
    x2 = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])   # a view: skip it where it changes nothing
    y = None
    kernel = _fused(dev, "linear")
    if kernel is not None:
        y = kernel(_as(x2, dt), _as(w, dt), None if b is None else _as(b, dt), activation)
    if y is None:
        y = _linear(x2, w, b, activation, dt, dev)
    return y if x.ndim == 2 else y.reshape(x.shape[:-1] + (w.shape[0],))


def _as(a, dt):
    """a in dtype dt (no copy, no call when it already is)."""
    return a if a.dtype == dt else a.astype(dt)


def _linear(x2, w, b, activation, dt, dev):
    xp = dev.xp
    ct = _dt.F32 if dt in _LOW and dev.kind == "cpu" else dt  # NumPy has no fast half-precision GEMM
    y = _matmul(dev)(x2.astype(ct, copy=False), w.astype(ct, copy=False).T)
    if activation is None:
        if b is not None:
            y += b.astype(y.dtype, copy=False)  # one rounding, as in float32 then cast
        return y.astype(dt, copy=False)
    y = _wide(y, xp)
    if b is not None:
        y += b.astype(y.dtype, copy=False)
    return _activate(y, activation, xp).astype(dt, copy=False)


def linear_bias_gelu(x, weight, bias, *, approximate="none"):
    """``gelu(x @ weight.T + bias)``: ``linear`` with a GELU epilogue (approximate "none" or "tanh")."""
    return linear(x, weight, bias, activation=_gelu_name(approximate))


def _gelu_name(approximate):
    if approximate == "none":
        return "gelu"
    if approximate == "tanh":
        return "gelu_tanh"
    raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


@oom_guard
def bias_add_inplace(out, bias):
    """``out += bias`` in place, bias broadcast along the last axis; returns out."""
    if out.__class__ is not Array:
        raise TypeError(f"bias_add_inplace: out must be a gpk_array Array, got {type(out).__name__}")
    (o, b), dev = _operands("bias_add_inplace", out, bias)
    if b.ndim != 1 or o.ndim < 1 or b.shape[0] != o.shape[-1]:
        raise ValueError(f"bias_add_inplace: bias of shape {b.shape} does not match out of shape {o.shape}")
    kernel = _fused(dev, "bias_add_inplace")
    if kernel is None or kernel(o, b) is None:
        o += b.astype(o.dtype, copy=False)
    return out


# --- normalization and activations ---------------------------------------------------------------------


@oom_guard
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Layer normalization over the last axis, then ``* weight + bias`` (each of shape (C,) or None)."""
    (x, w, b), dev = _operands("layer_norm", x, weight, bias)
    _check_norm("layer_norm", x, w, b)
    return new(_layer_norm_data(x, w, b, eps, dev), dev)


def _check_norm(op, x, w, b):
    c = x.shape[-1] if x.ndim else 0
    for name, p in (("weight", w), ("bias", b)):
        if p is not None and p.shape != (c,):
            raise ValueError(f"{op}: {name} must have shape ({c},), got {p.shape}")


def _layer_norm_data(x, w, b, eps, dev):
    """layer_norm on checked backing arrays: the device's kernel, else the plain code."""
    kernel = _fused(dev, "layer_norm")
    y = kernel(x, w, b, float(eps)) if kernel is not None else None
    if y is None:
        xp = dev.xp
        h = _wide(x, xp)
        h = h - h.mean(axis=-1, keepdims=True)
        var = (h * h).mean(axis=-1, keepdims=True)
        h *= 1.0 / xp.sqrt(var + eps)
        if w is not None:
            h *= w.astype(h.dtype, copy=False)
        if b is not None:
            h += b.astype(h.dtype, copy=False)
        y = h.astype(_result_dtype(x, w, b), copy=False)
    return y


def _add_layer_norm_data(x, r, w, b, eps, dev):
    """(x + r, layer_norm(x + r)) on checked backing arrays: the device's kernel, else the sum and layer_norm."""
    kernel = _fused(dev, "add_layer_norm")
    out = kernel(x, r, w, b, float(eps)) if kernel is not None else None
    if out is None:
        s = x + r
        out = s, _layer_norm_data(s, w, b, eps, dev)
    return out


@oom_guard
def add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5):
    """``s = x + residual`` and ``layer_norm(s, weight, bias, eps)``, both returned: the residual stream of a
    pre-LN transformer block and the next sublayer's input, in one kernel on CUDA."""
    (x, r, w, b), dev = _operands("add_layer_norm", x, residual, weight, bias)
    _check_residual("add_layer_norm", x, r)
    _check_norm("add_layer_norm", x, w, b)
    s, y = _add_layer_norm_data(x, r, w, b, eps, dev)
    return new(s, dev), new(y, dev)


def _check_residual(op, x, r):
    if r is not None and (x.shape != r.shape or x.dtype != r.dtype):
        raise ValueError(f"{op}: x {x.shape} {x.dtype} and residual {r.shape} {r.dtype} must match")


@oom_guard
def add_layer_norm_linear(x, residual, ln_weight, ln_bias, weight, bias=None, activation=None, eps=1e-5):
    """``s = x + residual`` (x itself when residual is None) and ``linear(layer_norm(s, ln_weight, ln_bias, eps),
    weight, bias, activation)``, both returned: a pre-LN transformer sublayer's input projection. On CUDA, a few
    rows (a decode step) take one kernel; otherwise it is add_layer_norm followed by linear."""
    op = "add_layer_norm_linear"
    (x, r, lw, lb, w, b), dev = _operands(op, x, residual, ln_weight, ln_bias, weight, bias)
    _check_residual(op, x, r)
    _check_norm(op, x, lw, lb)
    _check_linear(op, x, w, b, activation)
    kernel = _fused(dev, op)
    if kernel is not None and _result_dtype(x, r, lw, lb, w, b) == x.dtype:
        c = x.shape[-1]
        out = kernel(x.reshape(-1, c), None if r is None else r.reshape(-1, c), lw, lb, float(eps), w, b, activation)
        if out is not None:
            return new(out[0].reshape(x.shape), dev), new(out[1].reshape(x.shape[:-1] + (w.shape[0],)), dev)
    s, h = (x, _layer_norm_data(x, lw, lb, eps, dev)) if r is None else _add_layer_norm_data(x, r, lw, lb, eps, dev)
    return new(s, dev), new(_linear_data(h, w, b, activation, dev), dev)


@oom_guard
def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along axis, computed stably (in float32 for half-precision inputs)."""
    (x,), dev = _operands("softmax", x)
    if x.ndim == 0:
        raise ValueError("softmax needs at least one dimension")
    if not -x.ndim <= axis < x.ndim:
        raise axis_error(axis, x.ndim)
    y = None
    kernel = _fused(dev, "softmax")
    if kernel is not None:
        y = kernel(x, axis)
    if y is None:
        y = _softmax(_wide(x, dev.xp), axis, dev.xp).astype(x.dtype, copy=False)
    return new(y, dev)


@oom_guard
def gelu(x, approximate="none"):
    """GELU: ``x * Phi(x)`` (approximate="none", with erf) or its tanh approximation ("tanh", GPT-2's gelu_new).

    gelu(-inf) is the limit -0 ("none"; silu likewise in ``linear``), on every path and device; "tanh" follows its
    formula (NaN at -inf, as torch's)."""
    activation = _gelu_name(approximate)
    (x,), dev = _operands("gelu", x)
    y = None
    kernel = _fused(dev, "gelu")
    if kernel is not None:
        y = kernel(x, activation)
    if y is None:
        y = _activate(_wide(x, dev.xp), activation, dev.xp).astype(x.dtype, copy=False)
    return new(y, dev)


# --- attention -----------------------------------------------------------------------------------------


@oom_guard
def scaled_dot_product_attention(q, k, v, *, causal=True, mask=None, scale=None):
    """``softmax(q @ k^T * scale + masking) @ v`` over the last two axes.

    q: (..., Lq, D), k: (..., Lk, D), v: (..., Lk, Dv), batch axes broadcast; scale defaults to 1/sqrt(D).
    mask: boolean, broadcastable to (..., Lq, Lk), True where a query may attend a key.
    causal: query i may attend keys j <= i + (Lk - Lq), i.e. the queries are the last Lq positions of the
    keys (the same as torch's is_causal when Lq == Lk; right for decoding against a KV cache).
    A query that may attend no key gets the mean of v rather than NaN.
    """
    (q, k, v), dev = _operands("scaled_dot_product_attention", q, k, v)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError("scaled_dot_product_attention needs q, k, v with at least 2 dimensions")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: shapes q {q.shape}, k {k.shape}, v {v.shape} do not match")
    m = None
    if mask is not None:
        mask = as_array(mask, dev)
        if mask._device is not dev:
            raise DeviceError(f"mask is on {mask._device}, q on {dev}")
        if mask._data.dtype != _dt.BOOL:
            raise TypeError(f"mask must be boolean (True = attend), got dtype {mask._data.dtype}")
        m = mask._data
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    y = None
    kernel = _fused(dev, "scaled_dot_product_attention")
    if kernel is not None:
        y = kernel(q, k, v, m, bool(causal), scale)
    if y is None:
        y = _attention(q, k, v, m, causal, scale, dev)
    return new(y, dev)


def _attention(q, k, v, mask, causal, scale, dev):
    xp, matmul = dev.xp, _matmul(dev)
    dt = _result_dtype(q, k, v)
    q, k, v = _wide(q, xp), _wide(k, xp), _wide(v, xp)
    lq, lk = q.shape[-2], k.shape[-2]
    # scores^T = k @ q^T: only the (small, for decoding) q is transposed, never the long k
    s = xp.swapaxes(matmul(k, xp.swapaxes(q * scale, -1, -2)), -1, -2)
    if causal:
        keep = xp.arange(lk)[None, :] <= xp.arange(lq)[:, None] + (lk - lq)
        mask = keep if mask is None else mask & keep
    if mask is not None:
        s = xp.where(mask, s, float(np.finfo(s.dtype).min))
    p = _softmax(s, -1, xp)
    return matmul(p.astype(v.dtype, copy=False), v).astype(dt, copy=False)


@oom_guard
def self_attention(qkv, num_heads, *, causal=True, scale=None):
    """Multi-head self-attention of a fused projection, the step between GPT-2's ``c_attn`` and ``c_proj``.

    qkv: (..., T, 3 * C), the queries, keys and values of T tokens side by side (each C = num_heads * D wide, head
    h in columns [h * D, (h + 1) * D) of its third). Returns (..., T, C): for every head
    ``softmax(q @ k^T * scale [+ causal mask]) @ v`` (as ``scaled_dot_product_attention``; scale defaults to
    1/sqrt(D)), the heads side by side again. The same as splitting qkv, moving the heads in front of T,
    ``scaled_dot_product_attention`` and moving them back, in one call: on CUDA the fused attention kernel reads the
    heads from qkv in place and writes them in the output's order, with no copies.
    """
    (x,), dev = _operands("self_attention", qkv)
    h = operator.index(num_heads)
    if x.ndim < 2:
        raise ValueError(f"self_attention needs qkv of at least 2 dimensions (..., T, 3 * C), got shape {x.shape}")
    if h < 1 or x.shape[-1] % (3 * h) or x.shape[-1] == 0:
        raise ValueError(f"self_attention: the last axis of qkv ({x.shape[-1]}) is not 3 * num_heads * head_dim "
                         f"for num_heads={h}")
    d = x.shape[-1] // (3 * h)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    y = None
    kernel = _fused(dev, "self_attention")
    if kernel is not None:
        y = kernel(x, h, bool(causal), scale)
    if y is None:
        xp = dev.xp
        lead, t = x.shape[:-2], x.shape[-2]
        heads = x.reshape(lead + (t, 3, h, d))
        q, k, v = (xp.swapaxes(heads[..., i, :, :], -2, -3) for i in range(3))   # (..., H, T, D) views
        y = xp.swapaxes(_attention(q, k, v, None, causal, scale, dev), -2, -3).reshape(lead + (t, h * d))
    return new(y, dev)


@oom_guard
def kv_cache_attention(qkv, cache, positions, kv_len, scale):
    """One new token per sequence attends its KV cache (a decode step of a transformer).

    qkv: (B, 3, H, D), each sequence's new query, key and value; cache: (2, Bc, H, L, D) Array with Bc >= B,
    keys then values, sequence b in cache row b; positions: (B,) integer slot of each new token; kv_len: slots
    [0, kv_len) may be attended. The keys and values are written into ``cache`` (in place) at their slots, then
    each query attends the slots up to its own. A position outside [0, L) writes nothing (the positions stay on
    the device, unchecked, so a step can run in a CUDA graph); a negative one attends no slot and gets zeros.
    Returns (B, H, D).
    """
    (qkv, c), dev = _operands("kv_cache_attention", qkv, cache)
    if cache.__class__ is not Array:
        raise TypeError("kv_cache_attention: cache must be a gpk_array Array (it is written in place)")
    pos = as_array(positions, dev)
    if pos._device is not dev:
        raise DeviceError(f"kv_cache_attention: positions are on {pos._device}, qkv on {dev}")
    if qkv.ndim != 4 or qkv.shape[1] != 3 or c.ndim != 5 or c.shape[0] != 2:
        raise ValueError(f"kv_cache_attention: qkv must be (B, 3, H, D) and cache (2, Bc, H, L, D), got {qkv.shape} "
                         f"and {c.shape}")
    B, _, H, D = qkv.shape
    if c.shape[2] != H or c.shape[4] != D or c.shape[1] < B or pos.shape != (B,):
        raise ValueError(f"kv_cache_attention: qkv {qkv.shape}, cache {c.shape} and positions {pos.shape} do not match")
    if c.dtype != qkv.dtype:
        raise TypeError(f"kv_cache_attention: cache dtype {c.dtype} differs from qkv dtype {qkv.dtype}")
    kv_len = int(kv_len)
    if not 0 < kv_len <= c.shape[3]:
        raise ValueError(f"kv_cache_attention: kv_len must be in [1, {c.shape[3]}], got {kv_len}")
    p = pos._data.astype(np.int64, copy=False)
    kernel = _fused(dev, "kv_cache_attention")
    y = kernel(qkv, c, p, kv_len, float(scale)) if kernel is not None else None
    if y is None:
        y = _kv_cache_attention(qkv, c, p, kv_len, float(scale), dev)
    return new(y, dev)


def _kv_cache_attention(qkv, c, p, kv_len, scale, dev):
    xp, matmul = dev.xp, _matmul(dev)
    B = qkv.shape[0]
    valid = (p >= 0) & (p < c.shape[3])
    rows = xp.arange(B)[valid]
    c[0, rows, :, p[valid]] = qkv[valid, 1]  # (n, H, D) at each row's slot
    c[1, rows, :, p[valid]] = qkv[valid, 2]
    q = _wide(qkv[:, 0], xp)[:, :, None, :] * scale                  # (B, H, 1, D)
    k, v = _wide(c[0, :B, :, :kv_len], xp), _wide(c[1, :B, :, :kv_len], xp)   # (B, H, kv_len, D)
    s = matmul(q, xp.swapaxes(k, -1, -2))                            # (B, H, 1, kv_len)
    keep = xp.arange(kv_len)[None, None, None, :] <= p[:, None, None, None]
    s = xp.where(keep, s, float(np.finfo(s.dtype).min))
    y = matmul(_softmax(s, -1, xp), v)[:, :, 0]
    y = y * (p >= 0)[:, None, None]  # a query without any slot: zeros
    return y.astype(qkv.dtype, copy=False)
