"""Order statistics, averages, correlations, histograms and signal helpers with NumPy's signatures.

On the CPU these call NumPy itself; on a CUDA device CuPy's implementations, except where CuPy lacks a function or
differs from NumPy: nanpercentile/nanquantile (sorts and gathers), cov/corrcoef (NumPy's algorithm; CuPy's cov
mishandles aweights=), keepdims= of median/percentile/quantile, histogram's uniform edges, and convolve/correlate of
short inputs (direct sums; CuPy's may go through FFTs) are computed here with device operations.
"""
import numpy as _np

from .. import _dtypes as _dt
from ._util import PY_SCALARS, data, data_or_scalar, dev_of, finish, new, normalize_axis, oom_guard, opt_data, \
    to_array

__all__ = ["median", "nanmedian", "percentile", "quantile", "nanpercentile", "nanquantile", "average", "cov",
           "corrcoef", "histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "bincount", "digitize",
           "interp", "convolve", "correlate", "gradient", "trapezoid"]


def _axis(axis):
    return tuple(axis) if axis.__class__ is list else axis


@oom_guard
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along axis (NaN if the slice holds a NaN)."""
    x = to_array(a)
    xp = x._device.xp
    ow = bool(overwrite_input) and x._data.ndim > 0  # NumPy's partition in place (the input "may be modified")
    if xp is _np:
        r = xp.median(x._data, axis=_axis(axis), overwrite_input=ow, keepdims=keepdims)
    else:
        ax = _axis(axis)
        for a in (ax if isinstance(ax, tuple) else () if ax is None else (ax,)):
            normalize_axis(a, x._data.ndim)  # NumPy's AxisError and wording (CuPy's median says "Axis overrun")
        r = _keep(xp.asarray(xp.median(x._data, axis=ax, overwrite_input=ow)), x._data.shape, axis, keepdims)
    return finish(xp.asarray(r), x._device, out)


def _keep(r, shape, axis, keepdims):
    """r (a reduction over axis of an array of shape, possibly with leading q dimensions) with the reduced axes
    kept as length 1 when keepdims: computed here, as CuPy's keepdims= loses dimensions for axis=None."""
    if not keepdims:
        return r
    axes = range(len(shape)) if axis is None else [normalize_axis(a, len(shape)) for a in
                                                    (axis if isinstance(axis, (tuple, list)) else (axis,))]
    kept = tuple(1 if i in set(axes) else n for i, n in enumerate(shape))
    lead = r.shape[:r.ndim - (len(shape) - len(set(axes)))]
    return r.reshape(lead + kept)


@oom_guard
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along axis, ignoring NaNs."""
    x = to_array(a)
    xp = x._device.xp
    r = xp.nanmedian(x._data, axis=_axis(axis), overwrite_input=bool(overwrite_input), keepdims=keepdims)
    return finish(xp.asarray(r), x._device, out)


def _q(q, dev):
    if q.__class__ in PY_SCALARS or isinstance(q, _np.generic):
        return q
    return data(q, dev)


def _quantile(fname, a, q, axis, out, method, keepdims, weights, interpolation, overwrite_input=False):
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    if interpolation is not None:
        method = interpolation
    qq = _q(q, dev)
    if xp is _np:
        kw = {} if weights is None else {"weights": data(weights, dev)}
        r = getattr(_np, fname)(x._data, qq, axis=_axis(axis), method=method, keepdims=keepdims,
                                overwrite_input=bool(overwrite_input), **kw)
    else:
        if weights is not None:
            raise TypeError(f"{fname} with weights= exists only on the host (NumPy)")
        if not isinstance(qq, (int, float)):
            qq = qq.astype(_np.float64, copy=False)
        d, ax = x._data, _axis(axis)
        kept = _kept_shape(d.shape, ax)
        if ax is not None and kept is not None and all(n == 1 for n in kept):
            # CuPy gathers from the wrong row (reading past the data) when the kept dimensions all have length 1:
            # reduce over everything, then give the result the kept dimensions
            r = xp.asarray(getattr(xp, fname)(d, qq, axis=None, method=method))
            r = r.reshape(r.shape + kept)
        else:
            r = getattr(xp, fname)(d, qq, axis=ax, method=method, overwrite_input=bool(overwrite_input))
        r = xp.asarray(r)
        if d.dtype.kind in "fc":  # (overwrite_input permutes values within their slices only)
            # NumPy's: NaN where the slice holds a NaN (CuPy's sort puts NaNs last and interpolates past them)
            r = xp.where(xp.isnan(d).any(axis=ax), xp.asarray(_np.nan, dtype=r.dtype), r)
        r = _keep(r, d.shape, axis, keepdims)
    return finish(xp.asarray(r), dev, out)


def _kept_shape(shape, axis):
    """The dimensions a reduction over axis keeps (None for an invalid axis: the backend then raises)."""
    try:
        axes = {normalize_axis(a, len(shape)) for a in (axis if isinstance(axis, tuple) else (axis,))}
    except Exception:  # noqa: BLE001 - the backend's own error is the one to show
        return None
    return tuple(n for i, n in enumerate(shape) if i not in axes)


@oom_guard
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None, interpolation=None):
    """q-th percentiles (0..100) along axis; q's shape comes first in the result."""
    return _quantile("percentile", a, q, axis, out, method, keepdims, weights, interpolation, overwrite_input)


@oom_guard
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
    """q-th quantiles (0..1) along axis; q's shape comes first in the result."""
    return _quantile("quantile", a, q, axis, out, method, keepdims, weights, interpolation, overwrite_input)


def _nanquantile_device(xp, d, q, axis, keepdims):
    """Linear-interpolated quantiles ignoring NaNs, on the device: sort (NaNs last), gather around q*(n-1)."""
    orig_ndim = d.ndim
    if axis is None:
        d = d.reshape(-1)
        axes = tuple(range(orig_ndim))
        ax = 0
    else:
        ax = normalize_axis(axis, d.ndim)
        axes = (ax,)
    if d.dtype.kind in "biu":
        d = d.astype(_np.float64)
    s = xp.sort(xp.moveaxis(d, ax, -1), axis=-1)
    n = xp.sum(~xp.isnan(s), axis=-1, keepdims=True)
    qa = xp.asarray(q, dtype=s.dtype)
    qshape = qa.shape
    qf = qa.reshape(-1)
    pos = qf * (n - 1).astype(s.dtype)
    lo = xp.floor(pos)
    t = pos - lo
    lo_i = xp.clip(lo.astype(_np.int64), 0, s.shape[-1] - 1 if s.shape[-1] else 0)
    hi_i = xp.clip(lo_i + 1, 0, xp.maximum(n - 1, 0))
    va = xp.take_along_axis(s, lo_i, axis=-1)
    vb = xp.take_along_axis(s, hi_i, axis=-1)
    diff = vb - va
    r = xp.where(t >= 0.5, vb - diff * (1 - t), va + diff * t)
    r = xp.where(n == 0, xp.asarray(_np.nan, dtype=s.dtype), r)
    r = xp.moveaxis(r, -1, 0).reshape(qshape + r.shape[:-1])
    if keepdims:
        shape = list(d.shape) if axis is not None else [1] * orig_ndim
        for a in axes:
            shape[a] = 1
        r = r.reshape(qshape + tuple(shape))
    return r


def _nanq(fname, a, q, axis, out, method, keepdims, scale):
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    qq = _q(q, dev)
    if xp is _np:
        r = getattr(_np, fname)(x._data, qq, axis=_axis(axis), method=method, keepdims=keepdims)
        return finish(_np.asarray(r), dev, out)
    if method != "linear":
        raise TypeError(f"{fname} with method={method!r} exists only on the host (NumPy); the device computes "
                        "method='linear'")
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{fname} over several axes is computed only on the host (NumPy)")
    qd = (xp.asarray(qq, dtype=_np.float64) if not isinstance(qq, (int, float)) else xp.asarray(float(qq))) / scale
    return finish(_nanquantile_device(xp, x._data, qd, axis, keepdims), dev, out)


@oom_guard
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """Percentiles ignoring NaNs."""
    return _nanq("nanpercentile", a, q, axis, out, method, keepdims, 100.0)


@oom_guard
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """Quantiles ignoring NaNs."""
    return _nanq("nanquantile", a, q, axis, out, method, keepdims, 1.0)


@oom_guard
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average along ``axis`` (an int, a tuple or None); with ``returned=True`` also the sum of weights.

    NumPy 2's rules on both devices (computed with the device's operations, not the backend's ``average``, whose
    CuPy version takes neither axis tuples nor ``keepdims``): ``weights`` of ``a``'s shape, or of the shape of
    ``a`` along ``axis`` (1-D for one axis); integer and bool inputs average in float64; weights summing to zero
    raise ZeroDivisionError (on CUDA that check reads one bool back to the host)."""
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    d = x._data
    if axis is not None:
        axis = _np.lib.array_utils.normalize_axis_tuple(_axis(axis), d.ndim, argname="axis")
    if weights is None:
        avg = xp.mean(d, axis=axis, keepdims=keepdims) if d.dtype.kind not in "biu" else \
            xp.mean(d.astype(_np.float64), axis=axis, keepdims=keepdims)
        if returned:
            n = d.size / avg.size if avg.size else _np.nan
            return new(xp.asarray(avg), dev), new(xp.full(avg.shape, n, dtype=avg.dtype), dev)
        return new(xp.asarray(avg), dev)
    w = data(weights, dev)
    if d.dtype.kind in "biu" or d.dtype == _np.bool_:
        rdt = _np.result_type(d.dtype, w.dtype, _np.float64)
    else:
        rdt = _np.result_type(d.dtype, w.dtype)
    if d.shape != w.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.shape != tuple(d.shape[ax] for ax in axis):
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        w = xp.transpose(w, tuple(int(i) for i in _np.argsort(axis))) if w.ndim > 1 else w
        w = w.reshape(tuple(s if ax in axis else 1 for ax, s in enumerate(d.shape)))
    w = w.astype(rdt, copy=False)
    scl = xp.sum(w, axis=axis, dtype=rdt, keepdims=keepdims)
    if bool(xp.any(scl == 0.0)):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = xp.sum(xp.multiply(d.astype(rdt, copy=False), w), axis=axis, keepdims=keepdims) / scl
    if returned:
        if scl.shape != avg.shape:
            scl = xp.broadcast_to(scl, avg.shape).copy()
        return new(xp.asarray(avg), dev), new(xp.asarray(scl), dev)
    return new(xp.asarray(avg), dev)


@oom_guard
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """Covariance matrix of the variables (rows, or columns when rowvar=False)."""
    x = to_array(m, dev_of(m, y))
    dev = x._device
    dt = None if dtype is None else _dt.to_dtype(dtype)
    if dev.xp is _np:
        r = _np.cov(x._data, opt_data(y, dev), rowvar, bias, ddof, opt_data(fweights, dev), opt_data(aweights, dev),
                    dtype=dt)
        return new(_np.asarray(r), dev)
    return new(_cov_device(dev.xp, x._data, opt_data(y, dev), rowvar, bias, ddof, opt_data(fweights, dev),
                           opt_data(aweights, dev), dt), dev)


def _cov_device(xp, m, y, rowvar, bias, ddof, fweights, aweights, dtype):
    """NumPy's cov algorithm with the device's operations (CuPy's cov mishandles aweights=)."""
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = _np.result_type(m.dtype, _np.float64) if y is None else \
            _np.result_type(m.dtype, y.dtype, _np.float64)
    X = m.astype(dtype, copy=True).reshape((1, -1) if m.ndim < 2 else m.shape)
    if not rowvar and X.shape[0] != 1:
        X = X.T
    if X.shape[0] == 0:
        return xp.empty((0, 0), dtype=dtype)
    if y is not None:
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
        Y = y.astype(dtype, copy=False).reshape((1, -1) if y.ndim < 2 else y.shape)
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = xp.concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        if fweights.ndim > 1 or fweights.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and fweights")
        w = fweights.astype(_np.float64, copy=False)
    if aweights is not None:
        if aweights.ndim > 1 or aweights.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = aweights.astype(_np.float64, copy=False)
        w = aw if w is None else w * aw
    if w is None:
        avg = xp.mean(X, axis=1)
        fact = X.shape[1] - ddof
    else:
        w_sum = xp.sum(w)
        avg = (X @ w.astype(X.dtype, copy=False)) / w_sum.astype(X.dtype)
        ws = float(w_sum)
        if ddof == 0:
            fact = ws
        elif aweights is None:
            fact = ws - ddof
        else:
            fact = ws - ddof * float(xp.sum(w * aw)) / ws
    if fact <= 0:
        import warnings
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    X = X - avg[:, None]
    XT = (X if w is None else X * w.astype(X.dtype, copy=False)).T
    c = X @ XT.conj()
    with _np.errstate(divide="ignore", invalid="ignore"):
        c = c * (1.0 / fact if fact else _np.inf)
    return xp.squeeze(c)


@oom_guard
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients."""
    a = to_array(x, dev_of(x, y))
    dev = a._device
    xp = dev.xp
    dt = None if dtype is None else _dt.to_dtype(dtype)
    if xp is _np:
        return new(_np.asarray(_np.corrcoef(a._data, opt_data(y, dev), rowvar, dtype=dt)), dev)
    c = _cov_device(xp, a._data, opt_data(y, dev), rowvar, False, None, None, None, dt)
    if c.ndim == 0:
        return new(c / c, dev)
    sd = xp.sqrt(xp.diagonal(c).real)
    c = c / sd[:, None] / sd[None, :]
    if c.dtype.kind == "c":
        c = xp.clip(c.real, -1, 1) + 1j * xp.clip(c.imag, -1, 1)
    else:
        c = xp.clip(c, -1, 1)
    return new(c, dev)


def _bins(bins, dev):
    if isinstance(bins, str):
        if dev.xp is not _np and bins not in _ESTIMATORS:
            raise TypeError(f"histogram bins={bins!r} (an estimator) exists only on the host (NumPy); pass a "
                            "number of bins or the edges")
        return bins
    if bins.__class__ is int or isinstance(bins, _np.integer):
        return int(bins)
    return data(bins, dev)


_ESTIMATORS = ("auto", "fd", "doane", "scott", "rice", "sturges", "sqrt")


def _estimated_bins(xp, d, name, range, weights):
    """The number of equal bins NumPy's estimator ``name`` chooses for d (on a device: its statistics computed
    there, a few numbers read back)."""
    if weights is not None:
        raise TypeError("Automated estimation of the number of bins is not supported for weighted data")
    d = d.reshape(-1)
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
        if lo > hi:
            raise ValueError("max must be larger than min in range parameter.")
        d = d[(d >= lo) & (d <= hi)]
    elif d.size:
        lo, hi = float(d.min()), float(d.max())
        if not (_np.isfinite(lo) and _np.isfinite(hi)):
            raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    else:
        lo, hi = 0.0, 1.0
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    n = d.size
    if n == 0:
        return 1
    ptp = float(d.max()) - float(d.min())
    f = d.astype(_np.float64) if d.dtype.kind in "biu" else d

    def fd():
        q75, q25 = (float(v) for v in xp.percentile(f, xp.asarray([75.0, 25.0])))
        return 2.0 * (q75 - q25) * n ** (-1.0 / 3.0)

    def sturges():
        return ptp / (_np.log2(n) + 1.0)

    def doane():
        if n <= 2:
            return 0.0
        sg1 = _np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
        sigma = float(xp.std(f))
        if sigma <= 0.0:
            return 0.0
        g1 = float(xp.mean(((f - xp.mean(f)) / sigma) ** 3))
        return ptp / (1.0 + _np.log2(n) + _np.log2(1.0 + abs(g1) / sg1))

    if name == "auto":  # NumPy 2.4's rule: FD, at least half the sqrt width (a bound on the count), at most Sturges
        width = min(max(fd(), ptp / _np.sqrt(n) / 2), sturges())
    else:
        width = {"fd": fd, "sturges": sturges, "doane": doane,
                 "scott": lambda: (24.0 * _np.pi ** 0.5 / n) ** (1.0 / 3.0) * float(xp.std(f)),
                 "rice": lambda: ptp / (2.0 * n ** (1.0 / 3)), "sqrt": lambda: ptp / _np.sqrt(n)}[name]()
    if not width:
        return 1
    if d.dtype.kind in "biu" and width < 1:
        width = 1
    return int(_np.ceil((hi - lo) / width))


def _range(rng):
    if rng is None:
        return None
    return tuple(float(v) if not isinstance(v, (tuple, list)) else tuple(float(w) for w in v) for v in rng)


@oom_guard
def histogram(a, bins=10, range=None, density=None, weights=None):
    """Counts (or densities) of a's values in bins; returns (hist, bin_edges)."""
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    b = _bins(bins, dev)
    if xp is not _np and isinstance(b, str):
        b = _estimated_bins(xp, x._data, b, range, weights)
    if xp is not _np and isinstance(b, int):
        # NumPy's edges (linspace as arange * step + start, two roundings); CuPy's own linspace rounds once (a fused
        # multiply-add) and can move a value sitting on an edge into the bin below
        b = _uniform_edges(xp, x._data, b, range)
        range = None
    h, e = xp.histogram(x._data, bins=b, range=_range(range), density=bool(density),
                        weights=opt_data(weights, dev))
    return new(h, dev), new(e, dev)


def _uniform_edges(xp, d, n, range):
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    if range is None:
        lo, hi = (float(d.min()), float(d.max())) if d.size else (0.0, 1.0)
    else:
        lo, hi = float(range[0]), float(range[1])
        if lo > hi:
            raise ValueError("max must be larger than min in range parameter.")
    if not (_np.isfinite(lo) and _np.isfinite(hi)):
        raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    dt = d.dtype if d.dtype.kind in "fc" else _np.dtype(_np.float64)
    step = (hi - lo) / n
    e = xp.arange(n + 1, dtype=_np.float64) * step
    e = e + lo
    e[-1] = hi
    return e.astype(dt, copy=False)


@oom_guard
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The bin edges histogram would use."""
    x = to_array(a)
    dev = x._device
    xp = dev.xp
    b = _bins(bins, dev)
    if xp is _np:
        return new(_np.histogram_bin_edges(x._data, b, _range(range), opt_data(weights, dev)), dev)
    if isinstance(b, str):
        b = _estimated_bins(xp, x._data, b, range, weights)
    if not isinstance(b, int):
        return new(b, dev)   # the edges given, as NumPy returns them (their dtype kept)
    if range is None:
        lo, hi = (float(x._data.min()), float(x._data.max())) if x._data.size else (0.0, 1.0)
    else:
        lo, hi = float(range[0]), float(range[1])
    return new(_uniform_edges(xp, x._data, b, (lo, hi)), dev)


def _nd_bins(bins, dev):
    if isinstance(bins, (list, tuple)):
        return [b if isinstance(b, (int, _np.integer)) else data(b, dev) for b in bins]
    return _bins(bins, dev)


@oom_guard
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """2-D histogram of samples (x, y); returns (H, xedges, yedges)."""
    dev = dev_of(x, y)
    xp = dev.xp
    if isinstance(bins, (list, tuple, _np.ndarray)) and len(bins) not in (1, 2) or \
            (bins.__class__.__name__ == "Array" and bins.ndim == 1 and len(bins) != 2):
        edges = data(bins, dev)
        b = [edges, edges]
    else:
        b = _nd_bins(bins, dev)
    h, ex, ey = xp.histogram2d(data(x, dev), data(y, dev), bins=b, range=range, density=density,
                               weights=opt_data(weights, dev))
    return new(h, dev), new(ex, dev), new(ey, dev)


@oom_guard
def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """D-dimensional histogram; returns (H, edges)."""
    s = to_array(sample)
    dev = s._device
    h, edges = dev.xp.histogramdd(s._data, bins=_nd_bins(bins, dev), range=range, density=density,
                                  weights=opt_data(weights, dev))
    return new(h, dev), [new(e, dev) for e in edges]


@oom_guard
def bincount(x, /, weights=None, minlength=0):
    """Occurrences of each non-negative integer (weighted sums with weights=)."""
    a = to_array(x)
    dev = a._device
    r = dev.xp.bincount(a._data, weights=opt_data(weights, dev), minlength=int(minlength))
    return new(r, dev)


@oom_guard
def digitize(x, bins, right=False):
    """Indices of the bins each value falls in."""
    a = to_array(x, dev_of(x, bins))
    dev = a._device
    return new(dev.xp.digitize(a._data, data(bins, dev), right=right).astype(_dt.I64, copy=False), dev)


@oom_guard
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x."""
    dev = dev_of(x, xp, fp)
    m = dev.xp
    a = data(x, dev)
    r = m.interp(a, data(xp, dev), data(fp, dev), left=left, right=right, period=period)
    return new(m.asarray(r), dev)


@oom_guard
def convolve(a, v, mode="full"):
    """Discrete linear convolution of two 1-D sequences."""
    dev = dev_of(a, v)
    xp = dev.xp
    x, y = data(a, dev), data(v, dev)
    if xp is _np or min(x.size, y.size) > _DIRECT_MAX or x.ndim != 1 or y.ndim != 1:
        return new(xp.convolve(x, y, mode=mode), dev)
    return new(direct_convolve(xp, x, y, mode), dev)


# the shorter input's length up to which the device convolves directly (one multiply-add pass per element of it)
_DIRECT_MAX = 128


def direct_convolve(xp, a, v, mode="full"):
    """NumPy's direct convolution of 1-D a and v with device operations. CuPy's convolve may go through FFTs,
    which leaves rounding noise where NumPy's sums are exact (a zero comes out as 3e-16)."""
    if a.size == 0 or v.size == 0:
        raise ValueError("v cannot be empty" if v.size == 0 else "a cannot be empty")
    if v.size > a.size:
        a, v = v, a
    n, m = a.size, v.size
    dt = _np.result_type(a.dtype, v.dtype)
    if dt == _np.bool_:
        dt = _np.dtype(_np.bool_)
    a = a.astype(dt, copy=False)
    v = v.astype(dt, copy=False)
    f = xp.zeros(n + m - 1, dtype=dt)
    for j in range(m):
        f[j:j + n] += v[j] * a
    if mode == "full":
        return f
    if mode == "same":
        s = (m - 1) // 2
        return f[s:s + n].copy()
    if mode == "valid":
        return f[m - 1:n].copy()
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")


@oom_guard
def correlate(a, v, mode="valid"):
    """Cross-correlation of two 1-D sequences."""
    dev = dev_of(a, v)
    xp = dev.xp
    x, y = data(a, dev), data(v, dev)
    if xp is _np or min(x.size, y.size) > _DIRECT_MAX or x.ndim != 1 or y.ndim != 1:
        return new(xp.correlate(x, y, mode=mode), dev)
    if y.size > x.size:
        # NumPy swaps the inputs and reverses the result (its conjugate, for complex ones)
        r = direct_convolve(xp, y, x[::-1].conj() if x.dtype.kind == "c" else x[::-1], mode)[::-1]
        return new((r.conj() if r.dtype.kind == "c" else r).copy(), dev)
    return new(direct_convolve(xp, x, y[::-1].conj() if y.dtype.kind == "c" else y[::-1], mode), dev)


@oom_guard
def gradient(f, *varargs, axis=None, edge_order=1):
    """Second-order central differences inside, first- or second-order one-sided at the edges."""
    x = to_array(f)
    dev = x._device
    va = [data_or_scalar(v, dev) if not isinstance(v, _np.generic) else v.item() for v in varargs]
    r = dev.xp.gradient(x._data, *va, axis=axis, edge_order=edge_order)
    if isinstance(r, (list, tuple)):
        return tuple(new(v, dev) for v in r) if len(r) != 1 else new(r[0], dev)
    return new(r, dev)


@oom_guard
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of y by the trapezoidal rule."""
    a = to_array(y, dev_of(y, x))
    dev = a._device
    r = dev.xp.trapezoid(a._data, x=opt_data(x, dev), dx=dx, axis=axis)
    return new(dev.xp.asarray(r), dev)
