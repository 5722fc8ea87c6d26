"""``x.flags`` for arrays on a CUDA device: NumPy's flags object, read from the CuPy array's layout, with the
``writeable`` flag kept in the Array wrapper (CuPy has no read-only arrays; gpk_array's write paths check it through
``gpk_array._array.check_writeable``). On the CPU device ``x.flags`` is the NumPy array's own ``flags``.
"""
from .._array import readonly, set_writeable

__all__ = []

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
