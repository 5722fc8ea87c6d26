"""ndarray methods on the bytes and flags of the elements: ``getfield``, ``setfield``, ``byteswap``, ``setflags``,
and ``astype(casting="same_value")`` (installed on Array by methods.install); ``DeviceFlags``, ``x.flags`` of an
array on a CUDA device (NumPy's flags object read from the CuPy array's layout, its ``writeable`` flag kept in the
Array wrapper: CuPy has no read-only arrays, and gpk_array's write paths check it through
``gpk_array._array.check_writeable``). On the CPU device ``x.flags`` is the NumPy array's own.

On the CPU device they are NumPy's own; on a CUDA device they compute with the device's byte views (uint8 views of
a C-contiguous array), never through the host.
"""
import numpy as _np

from .. import _dtypes as _dt
from .._array import check_writeable, readonly, set_writeable
from ._util import data_or_scalar, new
from ._util import viewof as _viewof


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
            if src.dtype.kind == "f" and dt.kind in "iu":
                # out of range casts are undefined in C: CUDA saturates (2.0**63 to int64 gives 2**63 - 1, which
                # rounds back to 2.0**63), so the range is checked against bounds exact in every float type
                info = _np.iinfo(dt)
                same = same & (src >= float(info.min)) & (src < float(info.max // 2 + 1) * 2)
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
    check_writeable(self)
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
    if inplace:
        check_writeable(self)
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
    if align is not None and align and not self.flags.aligned:   # CuPy's flags have no ``aligned``
        raise ValueError("cannot set aligned flag of mis-aligned array to True")
    if write is not None:
        try:
            self.flags.writeable = bool(write)
        except AttributeError:
            raise ValueError(f"cannot change the writeable flag of an array on {self._device}") from None


# NumPy's flags object accepts these keys for item access (``x.flags["WRITEABLE"]``, ``x.flags["W"]``)
_KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
         "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
         "OWNDATA": "owndata", "O": "owndata", "WRITEABLE": "writeable", "W": "writeable",
         "ALIGNED": "aligned", "A": "aligned", "WRITEBACKIFCOPY": "writebackifcopy", "X": "writebackifcopy",
         "FNC": "fnc", "FORC": "forc", "BEHAVED": "behaved", "B": "behaved", "CARRAY": "carray", "CA": "carray",
         "FARRAY": "farray", "FA": "farray"}


class DeviceFlags:
    """NumPy's ``ndarray.flags`` for an Array on a CUDA device: ``c_contiguous``, ``f_contiguous``, ``owndata``,
    ``aligned``, ``writebackifcopy`` and the derived ``fnc``/``forc``/``behaved``/``carray``/``farray`` read from
    the array's layout; ``writeable`` settable (``x.flags.writeable = False`` makes every later write raise
    ``ValueError: assignment destination is read-only``, as NumPy's). Also by key: ``x.flags["WRITEABLE"]``."""

    __slots__ = ("_a",)

    def __init__(self, a):
        self._a = a

    @property
    def c_contiguous(self):
        """Whether the elements are contiguous in C (row-major) order."""
        return bool(self._a._data.flags.c_contiguous)

    @property
    def f_contiguous(self):
        """Whether the elements are contiguous in Fortran (column-major) order."""
        return bool(self._a._data.flags.f_contiguous)

    @property
    def owndata(self):
        """Whether the backing array owns its memory (False for a view)."""
        return bool(self._a._data.flags.owndata)

    @property
    def aligned(self):
        """Device memory is always aligned for its dtype: True."""
        return True

    @property
    def writebackifcopy(self):
        """Always False (no write-back copies on a device)."""
        return False

    @property
    def writeable(self):
        """Whether the array can be written: False after ``x.flags.writeable = False``, for a view of such an
        array, and for a broadcast view (a stride of 0 over an axis longer than 1, as NumPy's are read-only)."""
        a = self._a
        if readonly(a):
            return False
        d = a._data
        return not any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape))

    @writeable.setter
    def writeable(self, flag):
        set_writeable(self._a, bool(flag))

    @property
    def fnc(self):
        """F-contiguous and not C-contiguous."""
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self):
        """F-contiguous or C-contiguous."""
        return self.f_contiguous or self.c_contiguous

    @property
    def behaved(self):
        """Aligned and writeable."""
        return self.writeable

    @property
    def carray(self):
        """Behaved and C-contiguous."""
        return self.behaved and self.c_contiguous

    @property
    def farray(self):
        """Behaved, F-contiguous and not C-contiguous."""
        return self.behaved and self.fnc

    def _attr(self, key):
        try:
            return _KEYS[key.upper() if isinstance(key, str) else key]
        except (KeyError, AttributeError):
            raise KeyError(f"Unknown flag {key!r}") from None

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        name = self._attr(key)
        if name != "writeable":
            raise AttributeError(f"the flag {name.upper()} cannot be set on a device array")
        self.writeable = value

    def __eq__(self, other):
        if not isinstance(other, DeviceFlags):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _NAMES)

    __hash__ = None

    def __repr__(self):
        return "\n".join(f"  {n.upper()} : {getattr(self, n)}" for n in _NAMES)


_NAMES = ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned", "writebackifcopy")
