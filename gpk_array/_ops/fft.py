"""The fft extension (standard section "Fourier Transform Functions").

Results keep the input's precision: complex64 for float32/complex64 input, complex128 for double precision.
"""
import operator

from .. import _dtypes as _dt
from .._device import as_device
from ._common import as_array, new, normalize_axes, normalize_axis, oom_guard

_NORMS = ("backward", "ortho", "forward")


def _norm(norm):
    if norm is None:  # NumPy's spelling of the default
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
    return norm


_SINGLE = (_dt.F16, _dt.BF16, _dt.D("float32"), _dt.C64)


def _input(x):
    """x's data as the backend's FFT takes it (16-bit floats widened to float32)."""
    d = x._data
    return d.astype(_dt.F32) if d.dtype in (_dt.F16, _dt.BF16) else d


def _result(r, x, real_out):
    """The transform r in x's precision: float32/complex64 for single-precision inputs, else double."""
    single = x.dtype in _SINGLE
    out_dt = (_dt.D("float32") if single else _dt.F64) if real_out else (_dt.C64 if single else _dt.C128)
    return new(r.astype(out_dt, copy=False), x._device)

_WHAT = {
    "fft": "The one-dimensional discrete Fourier transform of ``x`` along ``axis``",
    "ifft": "The one-dimensional inverse discrete Fourier transform of ``x`` along ``axis``",
    "rfft": "The one-dimensional discrete Fourier transform of the real ``x`` along ``axis`` (the ``n // 2 + 1``"
            " non-negative frequencies)",
    "irfft": "The inverse of ``rfft``: a real result of length ``n`` (default ``2 * (m - 1)``) along ``axis``",
    "hfft": "The discrete Fourier transform of a signal with Hermitian symmetry (a real result) along ``axis``",
    "ihfft": "The inverse of ``hfft`` along ``axis`` (a real input, the non-negative frequencies)",
    "fftn": "The n-dimensional discrete Fourier transform over ``axes`` (sizes ``s``)",
    "ifftn": "The n-dimensional inverse discrete Fourier transform over ``axes`` (sizes ``s``)",
    "rfftn": "The n-dimensional discrete Fourier transform of a real input over ``axes``, the last one halved",
    "irfftn": "The inverse of ``rfftn``: a real result over ``axes`` (sizes ``s``)",
    "fftfreq": "The sample frequencies of an ``fft`` of length ``n`` and sample spacing ``d``",
    "rfftfreq": "The non-negative sample frequencies of an ``rfft`` of length ``n`` and sample spacing ``d``",
}


def _doc(name):
    what = _WHAT[name]
    if name.endswith("freq"):
        return (f"{what}, float64 unless ``dtype`` says otherwise, on ``device`` (standard: Fourier transform "
                f"functions, ``fft.{name}``).")
    return (f"{what}; ``norm`` is \"backward\", \"ortho\" or \"forward\". Single-precision input gives a "
            f"single-precision result (standard: Fourier transform functions, ``fft.{name}``).")


def _one(name, real_in, real_out):
    @oom_guard
    def fn(x, /, n=None, axis=-1, norm="backward"):
        x = as_array(x)
        if x.ndim == 0:
            raise ValueError(f"{name} needs at least one dimension")
        axis = normalize_axis(axis, x.ndim)
        if n is not None and operator.index(n) < 1:
            raise ValueError(f"{name}: n must be positive, got {n}")
        r = getattr(x._device.xp.fft, name)(_input(x), n=n, axis=axis, norm=_norm(norm))
        return _result(r, x, real_out)
    fn.__name__ = fn.__qualname__ = name
    fn.__wrapped__.__qualname__ = name  # oom_guard's inner function: what introspection unwraps to
    fn.__doc__ = _doc(name)
    return fn


def _many(name, real_out):
    @oom_guard
    def fn(x, /, s=None, axes=None, norm="backward"):
        x = as_array(x)
        if axes is not None:
            axes = normalize_axes(axes, x.ndim)
        if s is not None:
            s = tuple(s)
            if axes is None:
                axes = tuple(range(x.ndim - len(s), x.ndim))
            s = tuple(x.shape[a] if v == -1 else v for v, a in zip(s, axes))
        data = _input(x)
        xfft = x._device.xp.fft
        if name in ("rfftn", "irfftn") and axes is not None and list(axes) != sorted(axes):
            r = _real_nd_by_parts(xfft, name, data, s, axes, _norm(norm))
        else:
            r = getattr(xfft, name)(data, s=s, axes=axes, norm=_norm(norm))
        return _result(r, x, real_out)
    fn.__name__ = fn.__qualname__ = name
    fn.__wrapped__.__qualname__ = name  # oom_guard's inner function: what introspection unwraps to
    fn.__doc__ = _doc(name)
    return fn


def _real_nd_by_parts(xfft, name, data, s, axes, norm):
    """rfftn / irfftn over axes in any order, as the standard defines them: the real transform on axes[-1], the
    complex one over the others (CuPy's cuFFT plans return a wrong shape for unsorted axes)."""
    head, last = axes[:-1], axes[-1]
    s_head, n_last = (None, None) if s is None else (s[:-1], s[-1])
    if name == "rfftn":
        r = xfft.rfft(data, n=n_last, axis=last, norm=norm)
        return xfft.fftn(r, s=s_head, axes=head, norm=norm) if head else r
    r = xfft.ifftn(data, s=s_head, axes=head, norm=norm) if head else data
    return xfft.irfft(r, n=n_last, axis=last, norm=norm)


fft = _one("fft", False, False)
ifft = _one("ifft", False, False)
rfft = _one("rfft", True, False)
irfft = _one("irfft", False, True)
hfft = _one("hfft", False, True)
ihfft = _one("ihfft", True, False)
fftn = _many("fftn", False)
ifftn = _many("ifftn", False)
rfftn = _many("rfftn", False)
irfftn = _many("irfftn", True)


def _freq(name):
    @oom_guard
    def fn(n, /, d=1.0, *, dtype=None, device=None):
        n = operator.index(n)
        if n < 1:
            raise ValueError(f"{name}: n must be positive, got {n}")
        dev = as_device(device)
        dt = _dt.F64 if dtype is None else _dt.to_dtype(dtype)
        return new(getattr(dev.xp.fft, name)(n, d=d).astype(dt, copy=False), dev)
    fn.__name__ = fn.__qualname__ = name
    fn.__wrapped__.__qualname__ = name  # oom_guard's inner function: what introspection unwraps to
    fn.__doc__ = _doc(name)
    return fn


fftfreq = _freq("fftfreq")
rfftfreq = _freq("rfftfreq")


@oom_guard
def fftshift(x, /, axes=None):
    """The zero-frequency term moved to the middle of ``axes`` (all axes when None) (standard: Fourier transform
    functions, ``fft.fftshift``)."""
    x = as_array(x)
    return new(x._device.xp.fft.fftshift(x._data, axes=normalize_axes(axes, x.ndim)), x._device)


@oom_guard
def ifftshift(x, /, axes=None):
    """The inverse of ``fftshift`` over ``axes`` (all axes when None) (standard: Fourier transform functions,
    ``fft.ifftshift``)."""
    x = as_array(x)
    return new(x._device.xp.fft.ifftshift(x._data, axes=normalize_axes(axes, x.ndim)), x._device)


__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

