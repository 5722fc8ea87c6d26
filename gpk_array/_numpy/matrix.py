"""NumPy's ``matrix`` (always 2-D; ``*`` is the matrix product, ``**`` the matrix power; reductions along an axis
keep two dimensions), ``asmatrix`` and ``bmat``, on the arrays' device. NumPy discourages the class; it is here
so that NumPy code that still uses it (``np.matrix('1 2; 3 4')``, ``r_['r', ...]``) runs."""
import ast
import sys

import numpy as _np

from .._array import Array
from ._util import PY_SCALARS, to_array
from .types import ndarray

__all__ = ["matrix", "asmatrix", "bmat"]


def _from_string(text):
    """NumPy's matrix string syntax: rows separated by ';', entries by ',' or spaces."""
    rows = []
    for row in text.split(";"):
        entries = [ast.literal_eval(t) for part in row.split(",") for t in part.split()]
        if rows and len(entries) != len(rows[0]):
            raise ValueError("Rows not the same size.")
        rows.append(entries)
    return rows


def _two_d(d):
    """d (a backing array) as NumPy's matrix holds it: 0-d and 1-D as one row; more dimensions of length one
    dropped."""
    if d.ndim == 2:
        return d
    if d.ndim < 2:
        return d.reshape((1, -1) if d.ndim == 1 else (1, 1))
    shape = tuple(n for n in d.shape if n > 1)
    if len(shape) > 2:
        raise ValueError("shape too large to be a matrix.")
    return d.reshape(shape if len(shape) == 2 else (1,) * (2 - len(shape)) + shape)


def _mat(d, dev, base=None):
    m = object.__new__(matrix)
    m._data, m._device, m._base = _two_d(d), dev, base
    return m


def _wrap(r):
    """A result of an operation on the plain arrays, as a matrix where it is an array of at most two dimensions."""
    if isinstance(r, Array) and r.ndim <= 2 and r.ndim > 0:
        return _mat(r._data, r._device)
    return r


class matrix(ndarray):
    """NumPy's ``matrix(data, dtype=None, copy=True)``: a 2-D array (from an array-like or a string such as
    ``"1 2; 3 4"``) whose ``*`` is the matrix product and ``**`` the matrix power; ``.T``, ``.H`` (conjugate
    transpose), ``.I`` (inverse), ``.A`` (the array), ``.A1`` (flattened); indexing and reductions along an axis
    give matrices, reductions over everything a 0-d Array."""

    __array_priority__ = 10.0

    def __new__(cls, data, dtype=None, copy=True):
        from .._ops.creation import asarray
        if isinstance(data, str):
            data = _from_string(data)
        if isinstance(data, Array):
            a = data.astype(dtype) if dtype is not None else data
            if a.ndim > 2:
                raise ValueError("matrix must be 2-dimensional")
            d = a._data.copy() if copy and a is data else a._data
            return _mat(d, a._device, None if copy else data)
        a = asarray(data, dtype=dtype, copy=True if copy else None)
        if a.ndim > 2:
            raise ValueError("matrix must be 2-dimensional")
        return _mat(a._data, a._device)

    def __init__(self, *args, **kwargs):
        pass

    def _plain(self):
        return Array._new(self._data, self._device)

    # --- NumPy's matrix semantics ---------------------------------------------------------------------------
    def __mul__(self, other):
        from .linalg_funcs import dot
        if other.__class__ in PY_SCALARS or isinstance(other, _np.generic):
            return _wrap(self._plain() * other)
        return _wrap(dot(self._plain(), _plain_of(asmatrix(other))))

    def __rmul__(self, other):
        from .linalg_funcs import dot
        if other.__class__ in PY_SCALARS or isinstance(other, _np.generic):
            return _wrap(other * self._plain())
        return _wrap(dot(_plain_of(to_array(other)), self._plain()))

    def __imul__(self, other):
        self[:] = self * other
        return self

    def __pow__(self, n):
        from .. import linalg
        return _wrap(linalg.matrix_power(self._plain(), n))

    def __ipow__(self, n):
        self[:] = self ** n
        return self

    def __rpow__(self, other):
        return NotImplemented

    def __getitem__(self, key):
        r = self._plain()[key]
        if not isinstance(r, Array) or r.ndim == 0:
            return r
        if r.ndim == 1:
            column = isinstance(key, tuple) and len(key) > 1 and (key[1].__class__ is int or
                                                                  isinstance(key[1], _np.integer))
            return _mat(r._data.reshape((-1, 1) if column else (1, -1)), r._device, self)
        return _mat(r._data, r._device, self)

    def __repr__(self):
        r = repr(self._plain())
        return "matrix(" + r[len("array("):].replace("\n", "\n ") if r.startswith("array(") else r

    @property
    def T(self):
        """The transpose (a matrix)."""
        return _mat(self._data.T, self._device, self)

    @property
    def H(self):
        """The conjugate transpose (a matrix)."""
        return _wrap(self._plain().conj().T)

    @property
    def I(self):  # noqa: E743  (NumPy's name)
        """The inverse (the pseudo-inverse where the matrix is not square)."""
        from .. import linalg
        p = self._plain()
        return _wrap(linalg.inv(p) if p.shape[0] == p.shape[1] else linalg.pinv(p))

    @property
    def A(self):
        """The matrix as a 2-D Array (a view)."""
        return self._plain()

    @property
    def A1(self):
        """The matrix flattened to a 1-D Array."""
        return self._plain().reshape(-1)

    def getT(self):
        """``self.T``."""
        return self.T

    def getH(self):
        """``self.H``."""
        return self.H

    def getI(self):
        """``self.I``."""
        return self.I

    def getA(self):
        """``self.A``."""
        return self.A

    def getA1(self):
        """``self.A1``."""
        return self.A1

    def ravel(self, order="C"):
        """The elements as a 1 x N matrix."""
        return _wrap(self._plain().ravel(order).reshape(1, -1))

    def flatten(self, order="C"):
        """A copy of the elements as a 1 x N matrix."""
        return _wrap(self._plain().flatten(order).reshape(1, -1))

    def tolist(self):
        """The rows as nested lists."""
        return self._plain().tolist()


def _plain_of(x):
    return x._plain() if isinstance(x, matrix) else x


def _binary(name):
    def op(self, other):
        return _wrap(getattr(self._plain(), name)(_plain_of(other)))
    op.__name__ = name
    op.__doc__ = f"``{name}`` of the arrays, as a matrix."
    return op


def _unary(name):
    def op(self):
        return _wrap(getattr(self._plain(), name)())
    op.__name__ = name
    op.__doc__ = f"``{name}`` of the array, as a matrix."
    return op


def _reduction(name, keep=True):
    def op(self, axis=None, *args, **kwargs):
        p = self._plain()
        if axis is None:
            return getattr(p, name)(None, *args, **kwargs)
        if keep:
            return _wrap(getattr(p, name)(axis, *args, keepdims=True, **kwargs))
        from .._ops.manipulation import expand_dims
        return _wrap(expand_dims(getattr(p, name)(axis, *args, **kwargs), axis=axis))
    op.__name__ = name
    op.__doc__ = (f"``{name}`` over everything (a 0-d Array) or along axis (a matrix keeping both dimensions), as "
                  "NumPy's matrix.")
    return op


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__truediv__", "__rtruediv__", "__floordiv__",
           "__rfloordiv__", "__mod__", "__rmod__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
           "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__matmul__", "__rmatmul__"):
    setattr(matrix, _n, _binary(_n))
for _n in ("__neg__", "__pos__", "__abs__", "__invert__", "conj", "conjugate", "copy"):
    setattr(matrix, _n, _unary(_n))
for _n in ("sum", "mean", "prod", "max", "min", "std", "var", "any", "all", "ptp"):
    setattr(matrix, _n, _reduction(_n))
for _n in ("argmax", "argmin"):
    setattr(matrix, _n, _reduction(_n, keep=False))
matrix.__hash__ = None
del _n


def asmatrix(data, dtype=None):
    """``data`` as a matrix without a copy where it already is an array of that dtype (a view of its memory)."""
    return matrix(data, dtype=dtype, copy=False)


def bmat(obj, ldict=None, gdict=None):
    """A matrix built from blocks: nested lists of matrices/arrays, an array, or a string such as ``"A,B; C,D"``
    naming them (looked up in ldict/gdict, else in the caller's namespace)."""
    from .._ops.manipulation import concat
    if isinstance(obj, str):
        if gdict is None:
            frame = sys._getframe().f_back
            gdict, ldict = frame.f_globals, frame.f_locals
        names = {**(gdict or {}), **(ldict or {})}
        rows = [[names[t.strip()] for t in row.split(",")] for row in obj.split(";")]
        obj = rows
    if isinstance(obj, (list, tuple)):
        if obj and isinstance(obj[0], (list, tuple)):
            rows = [concat([_plain_of(asmatrix(b)) for b in row], axis=1) for row in obj]
            return _wrap(concat(rows, axis=0))
        return _wrap(concat([_plain_of(asmatrix(b)) for b in obj], axis=1))
    return asmatrix(obj)


def as_r_result(r, column):
    """``r_['r', ...]`` / ``r_['c', ...]``: the concatenation as a matrix (a 1-D one as a row, or a column)."""
    m = _mat(r._data, r._device)
    return m.T if column and r.ndim == 1 else m
