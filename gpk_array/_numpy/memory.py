"""ndarray methods on the bytes and flags of the elements: ``getfield``, ``setfield``, ``byteswap``, ``setflags``,
and ``astype(casting="same_value")`` (installed on Array by methods.install).

On the CPU device they are NumPy's own; on a CUDA device they compute with the device's byte views (uint8 views of
a C-contiguous array), never through the host.
"""
import numpy as _np

from .. import _dtypes as _dt
from ._util import data_or_scalar, new


def _viewof(r, parent):
    from .methods import _viewof as v
    return v(r, parent)


def astype_same_value(self, d, dt, order):
    """NumPy 2.4's ``casting="same_value"``: the cast, raising ValueError where a value does not survive it (a
    round trip back to the source dtype differs; NaN to a float type survives; any value casts to bool). On a CUDA
    device the check reads one bool back to the host."""
    xp = self._device.xp
    src = d
    if d.dtype.kind == "c" and dt.kind != "c":
        if bool(xp.any(d.imag != 0)):
            raise ValueError(f"could not cast 'same_value' {d.dtype} to {dt}: imag is not 0")
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part", _np.exceptions.ComplexWarning,
                      stacklevel=3)
        src = d.real
    with _np.errstate(all="ignore"):
        r = src.astype(dt, order=order, copy=True)
        if dt.kind != "b" and src.dtype != dt:
            back = r.astype(src.dtype)
            same = back == src
            if src.dtype.kind in "fc" and dt.kind in "fc":
                same = same | (xp.isnan(src) & xp.isnan(back))
            elif src.dtype.kind in "iuf" and dt.kind in "iu":
                same = same & ((src < 0) == (r < 0))  # -1 to uint32 and back is -1 again
            if not bool(xp.all(same)):
                raise ValueError(f"could not cast 'same_value' {src.dtype} to {dt}: a value changes")
    return new(r, self._device)


def _field_bytes(xp, d):
    """d's bytes as uint8 of shape d.shape + (itemsize,), a view of a C-contiguous copy where d is not one."""
    c = d if d.flags.c_contiguous else xp.ascontiguousarray(d)
    return c, c.reshape(-1).view(xp.uint8).reshape(d.shape + (d.dtype.itemsize,))


def _field_check(d, dt, offset):
    offset = int(offset)
    if not 0 <= offset <= d.dtype.itemsize - dt.itemsize:
        raise ValueError(f"Need 0 <= offset <= {d.dtype.itemsize - dt.itemsize} for requested type but received "
                         f"offset = {offset}")
    return offset


def getfield(self, dtype, offset=0):
    """The bytes at ``offset`` of each element read as ``dtype`` (NumPy's ``x.getfield``): a view on the CPU device
    (as NumPy's), on CUDA a view where the field is the whole element, else a copy."""
    dt = _dt.to_dtype(dtype)
    d = self._data
    if self._device.xp is _np:
        return _viewof(new(d.getfield(dt, offset), self._device), self)
    offset = _field_check(d, dt, offset)
    xp = self._device.xp
    if dt.itemsize == d.dtype.itemsize and d.flags.c_contiguous:
        return _viewof(new(d.view(dt), self._device), self)
    _, b = _field_bytes(xp, d)
    f = xp.ascontiguousarray(b[..., offset:offset + dt.itemsize])
    return new(f.reshape(-1).view(dt).reshape(d.shape), self._device)


def setfield(self, val, dtype, offset=0):
    """Write ``val`` (broadcast) into the bytes at ``offset`` of each element, as ``dtype`` (NumPy's
    ``x.setfield``), on the array's device."""
    dt = _dt.to_dtype(dtype)
    d = self._data
    dev = self._device
    if dev.xp is _np:
        d.setfield(data_or_scalar(val, dev), dt, offset)
        return None
    offset = _field_check(d, dt, offset)
    xp = dev.xp
    v = data_or_scalar(val, dev)
    v = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(v).astype(dt), d.shape))
    c, b = _field_bytes(xp, d)
    b[..., offset:offset + dt.itemsize] = v.reshape(-1).view(xp.uint8).reshape(d.shape + (dt.itemsize,))
    if c is not d:
        d[...] = c
    return None


def byteswap(self, inplace=False):
    """The elements with their bytes reversed (each half of a complex separately), NumPy's ``x.byteswap``; with
    ``inplace=True`` the array itself is swapped and returned."""
    d = self._data
    dev = self._device
    if dev.xp is _np:
        r = d.byteswap(inplace)
        return self if inplace else new(r, dev)
    xp = dev.xp
    unit = d.dtype.itemsize // 2 if d.dtype.kind == "c" else d.dtype.itemsize
    if unit == 1:
        return self if inplace else new(d.copy(), dev)
    c = xp.ascontiguousarray(d)
    b = c.reshape(-1).view(xp.uint8).reshape(-1, unit)[:, ::-1]
    r = xp.ascontiguousarray(b).reshape(-1).view(d.dtype).reshape(d.shape)
    if inplace:
        d[...] = r
        return self
    return new(r, dev)


def setflags(self, write=None, align=None, uic=None):
    """NumPy's ``x.setflags``: ``write`` sets ``flags.writeable``; ``align=True`` holds already (gpk_array's memory
    is aligned) and ``uic=True`` is refused, as NumPy refuses it for arrays that are not writeback copies."""
    if uic:
        raise ValueError("cannot set WRITEBACKIFCOPY flag to True")
    if align is not None and align and not self._data.flags.aligned:
        raise ValueError("cannot set aligned flag of mis-aligned array to True")
    if write is not None:
        try:
            self.flags.writeable = bool(write)
        except AttributeError:
            raise ValueError(f"cannot change the writeable flag of an array on {self._device}") from None
