"""NumPy's classic polynomial helpers (coefficients highest power first): polyfit, polyval, roots, poly,
polyder, polyint, polyadd, polysub, polymul, polydiv, and the ``poly1d`` class."""
import numpy as _np

from .._array import Array
from .._device import CPU
from ._util import data, data_or_scalar, dev_of, new, oom_guard, to_array

__all__ = ["polyfit", "polyval", "roots", "poly", "polyder", "polyint", "polyadd", "polysub", "polymul", "polydiv",
           "poly1d"]


def _coeffs(p, dev=None):
    if isinstance(p, poly1d):
        p = p.coeffs
    return to_array(p, dev)


@oom_guard
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree deg; coefficients highest power first."""
    dev = dev_of(x, y)
    xp = dev.xp
    xd = data(x, dev).astype(_np.float64) if data(x, dev).dtype.kind in "biu" else data(x, dev)
    yd = data(y, dev)
    wd = None if w is None else data(w, dev)
    if xp is _np:
        r = _np.polyfit(xd, yd, int(deg), rcond=rcond, full=full, w=wd, cov=cov)
    else:
        r = xp.polyfit(xd, yd, int(deg), rcond=rcond, full=full, w=wd, cov=cov)
    if isinstance(r, tuple):
        return tuple(new(xp.asarray(v), dev) if not isinstance(v, int) else v for v in r)
    return new(r, dev)


@oom_guard
def polyval(p, x):
    """Value of the polynomial p at x (Horner's scheme); at a poly1d x, the composed polynomial p(x(t))."""
    if isinstance(x, poly1d):
        y = 0
        for pv in _coeffs(p, x.coeffs._device):
            y = y * x + pv
        return y
    dev = dev_of(p.coeffs if isinstance(p, poly1d) else p, x)
    c = _coeffs(p, dev)._data
    xv = data_or_scalar(x, dev)
    xp = dev.xp
    if xv.__class__ in (int, float, complex, bool):
        xv = xp.asarray(xv)
    y = xp.zeros_like(xv, dtype=_np.result_type(c.dtype, xv.dtype))
    for i in range(c.shape[0]):
        y = y * xv + c[i]
    return new(y, dev)


@oom_guard
def roots(p):
    """Roots of the polynomial with coefficients p (eigenvalues of the companion matrix); real when all are."""
    c = _coeffs(p)
    dev = c._device
    xp = dev.xp
    h = c._data if dev is CPU else c._data.get()
    h = _np.atleast_1d(h)
    nz = _np.nonzero(h)[0]
    if len(nz) == 0:
        return new(xp.asarray(_np.array([], dtype=_np.float64)), dev)
    trailing = len(h) - nz[-1] - 1
    h = h[int(nz[0]):int(nz[-1]) + 1]
    n = len(h)
    if n > 1:
        comp = xp.diag(xp.ones(n - 2, dtype=_np.float64), -1)
        comp[0, :] = xp.asarray(-h[1:] / h[0])
        if xp is _np:
            r = _np.linalg.eigvals(comp)
        else:
            from .._ops.linalg_ext import eigvals
            r = eigvals(new(comp, dev))._data
            if bool(xp.all(r.imag == 0)):
                r = r.real
    else:
        r = xp.zeros((0,), dtype=_np.float64)
    if trailing:
        r = xp.concatenate([r, xp.zeros(trailing, dtype=r.dtype)])
    return new(r, dev)


@oom_guard
def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (or a square matrix's characteristic one)."""
    z = to_array(seq_of_zeros)
    dev = z._device
    xp = dev.xp
    d = z._data
    if d.ndim == 2 and d.shape[0] == d.shape[1] and d.shape[0]:
        from .._ops.linalg_ext import eigvals
        d = eigvals(z)._data
    dt = d.dtype if d.dtype.kind in "fc" else _np.dtype(_np.float64)
    d = d.astype(dt, copy=False)
    a = xp.ones((1,), dtype=dt)
    one = xp.ones((1,), dtype=dt)
    for k in range(d.shape[0]):
        a = _conv(xp, a, xp.concatenate([one, -d[k:k + 1]]))
    if a.dtype.kind == "c":
        pos = d[d.imag > 0] if d.dtype.kind == "c" else d[:0]
        neg = d[d.imag < 0] if d.dtype.kind == "c" else d[:0]
        if pos.shape == neg.shape and bool(xp.all(xp.sort(pos) == xp.sort(xp.conj(neg)))):
            a = a.real.copy()
    return new(a, dev)


def _conv(xp, a, b):
    """Full convolution as NumPy's (direct sums), also on a device whose convolve goes through FFTs."""
    from .statistics import _DIRECT_MAX, direct_convolve
    if xp is _np or min(a.size, b.size) > _DIRECT_MAX:
        return xp.convolve(a, b)
    return direct_convolve(xp, a, b)


@oom_guard
def polyder(p, m=1):
    """Derivative of order m."""
    c = _coeffs(p)
    xp = c._device.xp
    d = c._data
    for _ in range(int(m)):
        n = d.shape[0] - 1
        d = d[:-1] * xp.arange(n, 0, -1) if n > 0 else xp.zeros((1,), dtype=d.dtype)
    return poly1d(new(d, c._device)) if isinstance(p, poly1d) else new(d, c._device)


@oom_guard
def polyint(p, m=1, k=None):
    """Antiderivative of order m with integration constants k (zeros by default)."""
    c = _coeffs(p)
    xp = c._device.xp
    d = c._data.astype(_np.result_type(c._data.dtype, _np.float64))
    ks = [0.0] * int(m) if k is None else (list(k) if isinstance(k, (list, tuple)) else [k] * int(m))
    for i in range(int(m)):
        n = d.shape[0]
        d = xp.concatenate([d / xp.arange(n, 0, -1), xp.asarray([ks[i]], dtype=d.dtype)])
    return poly1d(new(d, c._device)) if isinstance(p, poly1d) else new(d, c._device)


def _align(a1, a2):
    dev = dev_of(a1.coeffs if isinstance(a1, poly1d) else a1, a2.coeffs if isinstance(a2, poly1d) else a2)
    x = _coeffs(a1, dev)._data
    y = _coeffs(a2, dev)._data
    xp = dev.xp
    n = max(x.shape[0], y.shape[0])
    dt = _np.result_type(x.dtype, y.dtype)
    x = xp.concatenate([xp.zeros(n - x.shape[0], dtype=dt), x.astype(dt)])
    y = xp.concatenate([xp.zeros(n - y.shape[0], dtype=dt), y.astype(dt)])
    return dev, x, y


def polyadd(a1, a2):
    """Sum of two polynomials (coefficient arrays, highest power first, or ``poly1d``; a ``poly1d`` result if either
    is one)."""
    dev, x, y = _align(a1, a2)
    r = new(x + y, dev)
    return poly1d(r) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else r


def polysub(a1, a2):
    """Difference ``a1 - a2`` of two polynomials (coefficient arrays, highest power first, or ``poly1d``)."""
    dev, x, y = _align(a1, a2)
    r = new(x - y, dev)
    return poly1d(r) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else r


def polymul(a1, a2):
    """Product of two polynomials (coefficient arrays, highest power first, or ``poly1d``): the convolution of the
    coefficients."""
    dev = dev_of(a1.coeffs if isinstance(a1, poly1d) else a1, a2.coeffs if isinstance(a2, poly1d) else a2)
    r = new(_conv(dev.xp, _coeffs(a1, dev)._data, _coeffs(a2, dev)._data), dev)
    return poly1d(r) if isinstance(a1, poly1d) or isinstance(a2, poly1d) else r


@oom_guard
def polydiv(u, v):
    """Quotient and remainder of the polynomial division ``u / v`` (coefficient arrays, highest power first, or
    ``poly1d``; ``poly1d`` results if either is one), by NumPy's long division; leading remainder terms within
    1e-8 of zero are dropped, as NumPy's (the count is read back from the device)."""
    truepoly = isinstance(u, poly1d) or isinstance(v, poly1d)
    dev = dev_of(u.coeffs if isinstance(u, poly1d) else u, v.coeffs if isinstance(v, poly1d) else v)
    xp = dev.xp
    a = _coeffs(u, dev)._data
    b = _coeffs(v, dev)._data
    a = a.reshape(-1) + 0.0
    b = b.reshape(-1) + 0.0
    dt = (a[:1] + b[:1]).dtype
    m = a.shape[0] - 1
    n = b.shape[0] - 1
    scale = 1.0 / b[0]
    q = xp.zeros((max(m - n + 1, 1),), dtype=dt)
    r = a.astype(dt, copy=True)
    for k in range(m - n + 1):
        d = scale * r[k]
        q[k] = d
        r[k:k + n + 1] -= d * b
    lead = xp.abs(r[:-1]) <= 1e-8
    if lead.shape[0]:
        keep = ~lead
        first = int(xp.where(xp.any(keep), xp.argmax(keep), lead.shape[0]))
        r = r[first:]
    q, r = new(q, dev), new(r, dev)
    if truepoly:
        return poly1d(q), poly1d(r)
    return q, r


class poly1d:
    """A one-dimensional polynomial: ``poly1d([1, 2, 3])(x) == x**2 + 2*x + 3``; ``r=True`` takes roots."""

    __hash__ = None

    def __init__(self, c_or_r, r=False, variable=None):
        if isinstance(c_or_r, poly1d):
            self.coeffs = c_or_r.coeffs
            self.variable = c_or_r.variable if variable is None else variable
            return
        c = poly(c_or_r) if r else to_array(c_or_r)
        d = c._data.reshape(-1) if c._data.ndim == 0 else c._data
        if d.ndim != 1:
            raise ValueError("Polynomial must be 1d only.")
        nz = d != 0
        xp = c._device.xp
        if d.shape[0] and bool(xp.any(nz)):
            first = int(xp.argmax(nz))
            d = d[first:]
        elif d.shape[0]:
            d = d[-1:]
        else:
            d = xp.zeros((1,), dtype=d.dtype)
        self.coeffs = new(d, c._device)
        self.variable = "x" if variable is None else variable

    @property
    def c(self):
        """The coefficients, highest power first (also ``coef``, ``coefficients``, ``coeffs``)."""
        return self.coeffs

    coef = coefficients = c

    @property
    def order(self):
        """The degree of the polynomial."""
        return self.coeffs.shape[0] - 1

    @property
    def o(self):
        """The degree of the polynomial (``order``)."""
        return self.order

    @property
    def roots(self):
        """The roots of the polynomial (also ``r``), from the companion matrix's eigenvalues."""
        return roots(self.coeffs)

    r = roots

    def __call__(self, val):
        if isinstance(val, poly1d):
            res = _as_poly(0, val)
            for c in (self.coeffs._data.tolist() if self.coeffs._device is CPU else self.coeffs._data.get().tolist()):
                res = res * val + c
            return res
        return polyval(self.coeffs, val)

    def __len__(self):
        return self.order

    def __array__(self, dtype=None, copy=None):
        return _np.asarray(self.coeffs, dtype=dtype)

    def __repr__(self):
        vals = self.coeffs._data if self.coeffs._device is CPU else self.coeffs._data.get()
        return f"poly1d({_np.array2string(vals, separator=', ')})"

    def __str__(self):
        vals = self.coeffs._data if self.coeffs._device is CPU else self.coeffs._data.get()
        return str(_np.poly1d(vals, variable=self.variable))

    def __neg__(self):
        return poly1d(-self.coeffs)

    def __pos__(self):
        return self

    def __add__(self, other):
        return polyadd(self, other if isinstance(other, poly1d) else _as_poly(other, self))

    __radd__ = __add__

    def __sub__(self, other):
        return polysub(self, other if isinstance(other, poly1d) else _as_poly(other, self))

    def __rsub__(self, other):
        return polysub(_as_poly(other, self), self)

    def __mul__(self, other):
        if isinstance(other, (int, float, complex)):
            return poly1d(self.coeffs * other)
        return polymul(self, other if isinstance(other, poly1d) else _as_poly(other, self))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if _np.isscalar(other):
            return poly1d(self.coeffs / other)
        return polydiv(self, poly1d(other))

    def __rtruediv__(self, other):
        if _np.isscalar(other):
            return poly1d(other / self.coeffs)
        return polydiv(poly1d(other), self)

    def __pow__(self, n):
        if not isinstance(n, int) or n < 0:
            raise ValueError("Power to non-negative integers only.")
        res = _as_poly(1, self)
        for _ in range(n):
            res = res * self
        return res

    def __eq__(self, other):
        if not isinstance(other, poly1d):
            return NotImplemented
        a, b = self.coeffs, other.coeffs
        return a.shape == b.shape and bool((a._data == data(b, a._device)).all())

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __getitem__(self, power):
        n = self.order
        if power > n or power < 0:
            return 0
        return self.coeffs[n - power]

    def __iter__(self):
        return iter(self.coeffs)

    def deriv(self, m=1):
        """The ``m``-th derivative, a ``poly1d``."""
        return polyder(self, m)

    def integ(self, m=1, k=0):
        """The ``m``-th antiderivative with integration constant(s) ``k``, a ``poly1d``."""
        return polyint(self, m, k)


def _as_poly(v, like):
    if isinstance(v, Array):
        return poly1d(v)
    return poly1d(to_array([v] if isinstance(v, (int, float, complex)) else v, like.coeffs._device))
