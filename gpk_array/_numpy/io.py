"""File and buffer I/O: .npy/.npz (save, savez, savez_compressed, load), text (savetxt, loadtxt, genfromtxt),
raw binary (fromfile, frombuffer; ``Array.tofile``/``tobytes``).

Files live on the host, so data goes through a host copy in both directions; loading puts the result on the
default device (or ``device=``). Data NumPy reads with a host-only dtype (strings, structured records, dates;
gpk_array/_hostdata.py) is put on the CPU device, whatever the default device; object arrays raise a TypeError.
"""
import numpy as _np

from .._array import Array
from .. import _hostdata
from .._dtypes import HOST_KINDS as _HOST_KINDS
from .._device import as_device
from .._ops.creation import asarray as _std_asarray
from ._util import host

__all__ = ["save", "savez", "savez_compressed", "load", "savetxt", "loadtxt", "genfromtxt", "fromfile",
           "frombuffer", "fromstring"]


def _to_device(h, device):
    if h.dtype.kind in _HOST_KINDS:  # strings, records, dates: on the CPU device (gpk_array/_hostdata.py)
        return _hostdata.host_array(h, device)
    return _std_asarray(h, device=as_device(device))


def _host(x):
    if x.__class__ is Array:
        return host(x)
    if isinstance(x, (list, tuple)):
        return _np.asarray([_host(v) for v in x]) if any(v.__class__ is Array for v in x) else _np.asarray(x)
    return _np.asarray(x)


def save(file, arr, allow_pickle=True, **kwargs):
    """Write arr to a .npy file (a host copy is written)."""
    _np.save(file, _host(arr), allow_pickle=allow_pickle, **kwargs)


def savez(file, *args, allow_pickle=True, **kwds):
    """Write several arrays to an uncompressed .npz archive."""
    _np.savez(file, *[_host(a) for a in args], allow_pickle=allow_pickle, **{k: _host(v) for k, v in kwds.items()})


def savez_compressed(file, *args, allow_pickle=True, **kwds):
    """Write several arrays to a compressed .npz archive."""
    _np.savez_compressed(file, *[_host(a) for a in args], allow_pickle=allow_pickle,
                         **{k: _host(v) for k, v in kwds.items()})


class NpzFile:
    """The arrays of an .npz archive, read lazily by name and put on the device on access."""

    def __init__(self, npz, device):
        self._npz = npz
        self._device = device
        self.files = list(npz.files)

    def __getitem__(self, key):
        return _to_device(self._npz[key], self._device)

    def __contains__(self, key):
        return key in self._npz.files

    def __iter__(self):
        return iter(self.files)

    def __len__(self):
        return len(self.files)

    def keys(self):
        return list(self.files)

    def values(self):
        return [self[k] for k in self.files]

    def items(self):
        return [(k, self[k]) for k in self.files]

    def get(self, key, default=None):
        return self[key] if key in self else default

    def close(self):
        self._npz.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"NpzFile({self.files!r})"


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *, device=None, **kwargs):
    """Read a .npy file (an Array) or an .npz archive (a lazy mapping of Arrays)."""
    r = _np.load(file, mmap_mode=mmap_mode, allow_pickle=allow_pickle, fix_imports=fix_imports, encoding=encoding,
                 **kwargs)
    if isinstance(r, _np.lib.npyio.NpzFile):
        return NpzFile(r, device)
    if isinstance(r, _np.ndarray):
        return _to_device(_np.array(r) if mmap_mode is not None else r, device)
    return r


def savetxt(fname, X, fmt="%.18e", delimiter=" ", newline="\n", header="", footer="", comments="# ",
            encoding=None):
    """Write a 1-D or 2-D array as text."""
    _np.savetxt(fname, _host(X), fmt=fmt, delimiter=delimiter, newline=newline, header=header, footer=footer,
                comments=comments, encoding=encoding)


def loadtxt(fname, dtype=float, comments="#", delimiter=None, converters=None, skiprows=0, usecols=None,
            unpack=False, ndmin=0, encoding=None, max_rows=None, *, quotechar=None, like=None, device=None):
    """Read a text table into an Array (tuple of columns with unpack=True)."""
    r = _np.loadtxt(fname, dtype=dtype, comments=comments, delimiter=delimiter, converters=converters,
                    skiprows=skiprows, usecols=usecols, unpack=unpack, ndmin=ndmin, encoding=encoding,
                    max_rows=max_rows, quotechar=quotechar)
    if isinstance(r, tuple):
        return tuple(_to_device(v, device) for v in r)
    return _to_device(r, device)


def genfromtxt(fname, dtype=float, *args, device=None, **kwargs):
    """Read a text table with missing values (NumPy's genfromtxt) into an Array."""
    r = _np.genfromtxt(fname, dtype, *args, **kwargs)
    if isinstance(r, tuple):
        return tuple(_to_device(v, device) for v in r)
    return _to_device(r, device)


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None, device=None):
    """Read raw binary (or sep-separated text) data from a file."""
    return _to_device(_np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset), device)


def frombuffer(buffer, dtype=float, count=-1, offset=0, *, like=None, device=None):
    """Interpret a bytes-like object as a 1-D array (copied to the device; on the CPU a view of the buffer)."""
    return _to_device(_np.frombuffer(buffer, dtype=dtype, count=count, offset=offset), device)


def fromstring(string, dtype=float, count=-1, *, sep, like=None, device=None):
    """Parse numbers separated by sep from a string."""
    return _to_device(_np.fromstring(string, dtype=dtype, count=count, sep=sep), device)
