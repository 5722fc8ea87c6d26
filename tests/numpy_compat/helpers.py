"""Helpers of the NumPy-compatibility tests: gpk_array results compared with NumPy's, value for value."""
import numpy

import gpk_array


def to_numpy(r):
    """A gpk_array result as NumPy data (recursively through tuples, lists and dicts)."""
    if isinstance(r, gpk_array.Array):
        return numpy.asarray(r.to_device("cpu"))
    if isinstance(r, tuple):
        return tuple(to_numpy(v) for v in r)
    if isinstance(r, list):
        return [to_numpy(v) for v in r]
    if isinstance(r, dict):
        return {k: to_numpy(v) for k, v in r.items()}
    return r


def to_gpk(v, device):
    """NumPy inputs as gpk_array Arrays on device (recursively); everything else unchanged."""
    if isinstance(v, numpy.ndarray):
        return gpk_array.asarray(v, device=device)
    if isinstance(v, tuple):
        return tuple(to_gpk(i, device) for i in v)
    if isinstance(v, list):
        return [to_gpk(i, device) for i in v]
    return v


def _tol(dtype, device):
    dt = numpy.dtype(dtype)
    if dt in (numpy.float16,):
        return 1e-2
    if dt in (numpy.float32, numpy.complex64):
        return 2e-5 if str(device) == "cpu" else 1e-4
    return 1e-12 if str(device) == "cpu" else 1e-9


def assert_match(got, want, device="cpu", rtol=None, atol=0.0, check_dtype=True, what=""):
    """got (a gpk_array result) equals want (NumPy's): same structure, shapes, dtypes and values."""
    got = to_numpy(got)
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{what}: expected a sequence, got {type(got).__name__}"
        assert len(got) == len(want), f"{what}: lengths differ: {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_match(g, w, device, rtol, atol, check_dtype, f"{what}[{i}]")
        return
    if isinstance(want, dict):
        assert set(got) == set(want), f"{what}: keys differ"
        for k in want:
            assert_match(got[k], want[k], device, rtol, atol, check_dtype, f"{what}[{k!r}]")
        return
    if isinstance(want, (bool, str)) or want is None:
        assert got == want, f"{what}: {got!r} != {want!r}"
        return
    w = numpy.asarray(want)
    g = numpy.asarray(got)
    assert g.shape == w.shape, f"{what}: shapes differ: {g.shape} != {w.shape}"
    if check_dtype and isinstance(want, (numpy.ndarray, numpy.generic)):
        assert g.dtype == w.dtype, f"{what}: dtypes differ: {g.dtype} != {w.dtype}"
    if w.dtype.kind in "fc" or g.dtype.kind in "fc":
        tol = _tol(w.dtype if w.dtype.kind in "fc" else g.dtype, device)
        if rtol is not None:
            # a tolerance asked for holds, except that float32 results on a GPU get at least _tol's (its exp, log,
            # ... are a few ulps from the host's: 3e-7 relative is already past 1e-7)
            single = numpy.dtype(g.dtype) in (numpy.float32, numpy.complex64) and str(device) != "cpu"
            tol = max(rtol, tol) if single else rtol
        if str(device) != "cpu":
            # CUDA arithmetic may flush subnormal results to zero (a product of 1.2e-38 and 0.5 in float32):
            # values below the smallest normal number agree to within it
            real = numpy.finfo(w.dtype if w.dtype.kind in "fc" else g.dtype)
            atol = max(atol, float(real.smallest_normal))
        numpy.testing.assert_allclose(g, w, rtol=tol, atol=atol, equal_nan=True, err_msg=what)
    else:
        numpy.testing.assert_array_equal(g, w, err_msg=what)


def both(name, *args, device="cpu", module=None, **kwargs):
    """Call name on gpk_array (inputs moved to device) and on NumPy; return (ours, numpy's)."""
    gm = gpk_array if module is None else _sub(gpk_array, module)
    nm = numpy if module is None else _sub(numpy, module)
    want = getattr(nm, name)(*args, **kwargs)
    got = getattr(gm, name)(*to_gpk(list(args), device), **{k: to_gpk(v, device) for k, v in kwargs.items()})
    return got, want


def _sub(mod, path):
    for p in path.split("."):
        mod = getattr(mod, p)
    return mod


def compare(name, *args, device="cpu", module=None, rtol=None, atol=0.0, check_dtype=True, **kwargs):
    got, want = both(name, *args, device=device, module=module, **kwargs)
    assert_match(got, want, device, rtol, atol, check_dtype, what=name)
    return got
