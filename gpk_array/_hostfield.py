"""A numeric field of a host-only (structured) array moved to a CUDA default device (gpk_array/_hostdata.py).

On the CPU device ``x['age']`` is a NumPy view of the records, as in NumPy. On a CUDA default device it is a copy
on the device, a ``FieldArray``: writes through it (``x['age'][mask] += 1``, ``f = x['age']; f[0] = 3``,
``f *= 2``, ``f.fill(0)``, ``f.sort()``) are also written back to the records, so the common NumPy idioms give
NumPy's records. What is not written back: writes through a further view of it (``x['age'][1:][0] = 3``), ``out=``
arguments, and changes made to the records after the field was read (the copy does not see them).
"""
from ._array import Array


class FieldArray(Array):
    """A field of an array of a structured dtype, copied to a CUDA device; writes through it reach the records
    too (see gpk_array/_hostfield.py for what does not)."""

    __slots__ = ("_src", "_key")

    def _write_back(self):
        self._src._data[self._key] = self._data.get()

    def _plain(self):
        """A plain Array on the same device data (the functions' out= and fast paths take exact Arrays)."""
        return Array._new(self._data, self._device)

    def __setitem__(self, key, value):
        Array.__setitem__(self._plain(), key, value)
        self._write_back()


def _inplace(name):
    op = getattr(Array, name)

    def method(self, other):
        r = op(self._plain(), other)
        if r is NotImplemented:
            return r
        self._write_back()
        return self
    method.__name__ = name
    method.__doc__ = f"``{name}`` on the device copy, written back to the records."
    return method


def _mutating(name):
    op = getattr(Array, name)

    def method(self, *args, **kwargs):
        r = op(self._plain(), *args, **kwargs)
        self._write_back()
        return r
    method.__name__ = name
    method.__doc__ = f"NumPy's in-place ``{name}`` on the device copy, written back to the records."
    return method


for _name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"):
    setattr(FieldArray, _name, _inplace(_name))
for _name in ("fill", "sort", "partition", "put"):
    if hasattr(Array, _name):
        setattr(FieldArray, _name, _mutating(_name))
del _name


def field(data, device, src, key):
    """A FieldArray holding a device copy (data) of field ``key`` of the host-only Array src."""
    obj = object.__new__(FieldArray)
    obj._data = data
    obj._device = device
    obj._src = src
    obj._key = key
    return obj
