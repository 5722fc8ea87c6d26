"""NumPy's window functions: ``bartlett``, ``blackman``, ``hamming``, ``hanning``, ``kaiser``.

Each is a float64 array of ``M`` points computed on the default device (``device=`` picks another) with the
device's array operations, by NumPy's formulas: an empty array for ``M < 1``, ``[1.0]`` for ``M == 1``.
"""
import math

import numpy as _np

from ._util import dev_arg, new, oom_guard

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _points(M, device):
    """The device and M as a float (NumPy converts M to float64 too)."""
    m = float(M)
    dev = dev_arg(device)
    return dev, m


def _trivial(dev, m):
    if m < 1:
        return new(dev.xp.zeros(0, dtype=_np.float64), dev)
    if m == 1:
        return new(dev.xp.ones(1, dtype=_np.float64), dev)
    return None


def _cosine(M, device, terms):
    """sum_k c_k cos(k pi n / (M - 1)) over n = 1 - M, 3 - M, ..., M - 1 (the symmetric cosine windows)."""
    dev, m = _points(M, device)
    r = _trivial(dev, m)
    if r is not None:
        return r
    xp = dev.xp
    n = xp.arange(1 - m, m, 2, dtype=_np.float64)
    out = xp.full(n.shape, terms[0], dtype=_np.float64)
    for k, c in enumerate(terms[1:], start=1):
        out = out + c * xp.cos(k * math.pi * n / (m - 1))
    return new(out, dev)


@oom_guard
def bartlett(M, *, device=None):
    """The Bartlett (triangular) window of ``M`` points, as NumPy's ``bartlett``."""
    dev, m = _points(M, device)
    r = _trivial(dev, m)
    if r is not None:
        return r
    xp = dev.xp
    n = xp.arange(1 - m, m, 2, dtype=_np.float64)
    return new(xp.where(n <= 0, 1 + n / (m - 1), 1 - n / (m - 1)), dev)


@oom_guard
def blackman(M, *, device=None):
    """The Blackman window of ``M`` points (``0.42 + 0.5 cos + 0.08 cos 2``), as NumPy's ``blackman``."""
    return _cosine(M, device, (0.42, 0.5, 0.08))


@oom_guard
def hamming(M, *, device=None):
    """The Hamming window of ``M`` points (``0.54 + 0.46 cos``), as NumPy's ``hamming``."""
    return _cosine(M, device, (0.54, 0.46))


@oom_guard
def hanning(M, *, device=None):
    """The Hann window of ``M`` points (``0.5 + 0.5 cos``), as NumPy's ``hanning``."""
    return _cosine(M, device, (0.5, 0.5))


@oom_guard
def kaiser(M, beta, *, device=None):
    """The Kaiser window of ``M`` points and shape ``beta`` (``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)``,
    ``a = (M - 1) / 2``), as NumPy's ``kaiser``; I0 is the device's ``i0``."""
    dev, m = _points(M, device)
    b = float(beta)
    if m == 1:
        return new(dev.xp.ones(1, dtype=_np.float64), dev)
    xp = dev.xp
    n = xp.arange(0, m, dtype=_np.float64)
    alpha = (m - 1) / 2.0
    num = xp.i0(b * xp.sqrt(1 - ((n - alpha) / alpha) ** 2.0))
    return new(num / xp.i0(xp.asarray(b, dtype=_np.float64)), dev)
