"""The array object (standard section "Array Object").

An ``Array`` holds a backing array (``numpy.ndarray`` on the CPU device, ``cupy.ndarray`` on a CUDA device)
and its ``Device``. Meaning (promotion, validation, errors) lives in gpk_array; the backing library computes.
"""
import numpy as np

from . import _dtypes as _dt
from . import _hooks
from ._device import CPU, Device, as_device
from ._errors import TruthValueError
from . import _hostdata  # a lazy submodule (gpk_array/_lazy.py): run on the first host-only array
from ._dtypes import HostData as _HostData

_ndarray = np.ndarray
_py_scalars = (bool, int, float, complex)


class Array:
    """An n-dimensional array on a device. Create one with ``gpk_array.asarray`` and friends."""

    # _base: the Array a view was taken from (set by indexing and NumPy's view methods; read by ``x.base``)
    # _ro: True once ``x.flags.writeable = False`` on a CUDA device (CuPy arrays have no read-only flag; on the
    # CPU device the flag is NumPy's own); unset otherwise. Read through ``readonly`` / ``check_writeable``.
    __slots__ = ("_data", "_device", "_base", "_ro", "__weakref__")
    # NumPy's protocols (NEP 13 __array_ufunc__, NEP 18 __array_function__) are installed by gpk_array/__init__
    # from gpk_array/_protocols.py; the priority makes NumPy's operators defer to ours where they consult it
    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        raise TypeError("gpk_array.Array cannot be constructed directly: use gpk_array.asarray()")

    @staticmethod
    def _new(data, device):
        """Wrap a backing array (``numpy.ndarray`` for the CPU device, ``cupy.ndarray`` for a CUDA one) as an Array
        on ``device``, without a copy; reports the allocation to the scheduler's hook when one is installed."""
        if device is CPU and data.__class__ is not _ndarray:
            if data.__class__ is _HostData:  # a host-only dtype's data, or a result computed from it
                return _hostdata.wrap(data)
            data = np.asarray(data)
        obj = object.__new__(Array)
        obj._data = data
        obj._device = device
        if _hooks.alloc_hook is not None:
            _hooks.alloc_hook(data, device)
        return obj

    # --- attributes -------------------------------------------------------------------------------
    @property
    def dtype(self):
        """The data type of the elements (standard: array attribute ``dtype``), one of gpk_array's dtype objects
        (``gpk_array.float32``, ..., ``gpk_array.bfloat16``)."""
        return self._data.dtype

    @property
    def device(self):
        """The ``Device`` the array's memory is on (standard: array attribute ``device``)."""
        return self._device

    @property
    def ndim(self):
        """The number of dimensions (standard: array attribute ``ndim``)."""
        return self._data.ndim

    @property
    def shape(self):
        """The shape, a tuple of ints (standard: array attribute ``shape``; no dimension is ever unknown).
        NumPy's settable ``shape`` replaces it at import (``gpk_array._numpy.install``)."""
        return self._data.shape

    @property
    def size(self):
        """The number of elements, the product of the shape (standard: array attribute ``size``)."""
        return self._data.size

    @property
    def T(self):
        """The transpose of a 2-dimensional array (standard: array attribute ``T``), other ranks raising
        ``ValueError``. ``gpk_array._numpy.install`` replaces it at import with NumPy's ``T``, which reverses
        every axis for any number of dimensions (the standard only says other ranks *should* raise)."""
        if self._data.ndim != 2:
            raise ValueError(f"x.T requires a 2-dimensional array, got {self._data.ndim} dimension(s); "
                             "use permute_dims or matrix_transpose")
        return Array._new(self._data.T, self._device)

    @property
    def mT(self):
        """The last two axes swapped, a stack of transposed matrices (standard: array attribute ``mT``); needs
        at least 2 dimensions."""
        if self._data.ndim < 2:
            raise ValueError(f"x.mT requires at least 2 dimensions, got {self._data.ndim}")
        return Array._new(self._data.swapaxes(-1, -2), self._device)

    def __array_namespace__(self, *, api_version=None):
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12",
                                                           "2025.12"):
            raise ValueError(f"unsupported array API version {api_version!r}")
        import gpk_array
        return gpk_array

    def to_device(self, device, /, *, stream=None):
        """A copy of the array on ``device`` (a ``Device`` or a string such as ``"cpu"``, ``"cuda:0"``), or the
        array itself when it is already there (standard: array method ``to_device``). ``stream``: a CuPy stream
        to copy from a CUDA device to the CPU on (other values, integer handles included, are accepted and the
        copy runs on the current stream)."""
        from ._ops.creation import _transfer
        return _transfer(self, as_device(device), copy=None, stream=stream)

    # --- conversion to Python scalars -------------------------------------------------------------
    def _scalar(self, what):
        if self._data.size != 1:
            raise TypeError(f"only arrays with one element can be converted to a Python {what}, "
                            f"got shape {self._data.shape}")
        return self._data.reshape(()).item() if self._device is CPU else self._data.get().reshape(()).item()

    def __bool__(self):
        if self._data.size != 1:
            raise TruthValueError(f"the truth value of an array with {self._data.size} elements (shape "
                                  f"{self._data.shape}) is ambiguous: use any() or all()")
        v = self._scalar("bool")
        return bool(v)

    def __int__(self):
        v = self._scalar("int")
        if isinstance(v, complex):
            raise TypeError("cannot convert a complex array to int")
        return int(v)

    def __float__(self):
        d = self._data
        if self._device is CPU and d.size == 1:  # fast path: the value, as _scalar reads it
            v = d.item()
            if v.__class__ is float:
                return v
        else:
            v = self._scalar("float")
        if isinstance(v, complex):
            raise TypeError("cannot convert a complex array to float")
        return float(v)

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if _dt.kind(self._data.dtype) not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, got dtype {self._data.dtype}")
        return int(self._scalar("int"))

    # --- interop ----------------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if self._device is not CPU:
            from ._errors import HostOnlyError
            raise HostOnlyError(f"implicit conversion of an array on {self._device} to NumPy is not allowed: "
                                "use x.to_device('cpu') first")
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != self._data.dtype:
            if copy is False:
                raise ValueError("a dtype change needs a copy, but copy=False")
            return self._data.astype(dtype)
        return self._data

    @property
    def __cuda_array_interface__(self):
        if self._device is CPU:
            raise AttributeError("__cuda_array_interface__ exists only on arrays on a CUDA device")
        return self._data.__cuda_array_interface__

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from ._ops.creation import _dlpack_export
        return _dlpack_export(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # --- indexing: __getitem__ and __setitem__ are installed with the operators (gpk_array._ops.indexing's
    # getitem and setitem, called directly) ---------------------------------------------------------------

    def __len__(self):
        try:
            return len(self._data)
        except TypeError:
            raise TypeError("len() of a 0-dimensional array") from None

    def __iter__(self):
        # not a generator function: iter() itself raises for a 0-d array (numpy.iterable(x) is then False)
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._data.shape[0]))

    # --- printing: __repr__ and __str__ are NumPy's style, installed by gpk_array._numpy ------------------
    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self._scalar("scalar"), spec)
        return format(str(self), spec)

    def __reduce__(self):
        from ._ops.creation import _rebuild
        host = self._data if self._device is CPU else self._data.get()
        return (_rebuild, (host, str(self._device)))

    def __copy__(self):
        if _hooks.prealloc_hook is not None:
            _hooks.prealloc_hook(self._data.nbytes, self._device)
        return Array._new(self._data.copy(), self._device)

    def __deepcopy__(self, memo):
        if _hooks.prealloc_hook is not None:
            _hooks.prealloc_hook(self._data.nbytes, self._device)
        return Array._new(self._data.copy(), self._device)


# --- read-only arrays on CUDA devices (``x.flags.writeable = False``) ---------------------------------------------
# NumPy's flag lives in the ndarray; CuPy's arrays have none, so on a CUDA device the flag lives in the Array
# wrapper (``_ro``) and every gpk_array write path calls check_writeable first: __setitem__, in-place operators
# and out= (through the elementwise functions' out handling), fill, put, copyto, sort, ... A view (an Array with
# ``_base``) of a read-only array is read-only too. _any_readonly stays False until the first flag is cleared, so
# the check costs one global read on arrays of a program that never makes one.
_any_readonly = False
_READONLY_MSG = "assignment destination is read-only"


def readonly(x):
    """Whether Array x on a CUDA device is read-only: its own flag, or that of an array it is a view of."""
    while x is not None:
        if getattr(x, "_ro", False):
            return True
        x = getattr(x, "_base", None)
    return False


def check_writeable(x):
    """Raise NumPy's ``ValueError: assignment destination is read-only`` when x (an Array about to be written) is
    read-only. CPU arrays are left to NumPy's own flag, which raises the same; call this before device writes."""
    if _any_readonly and x._device is not CPU and readonly(x):
        raise ValueError(_READONLY_MSG)


def check_writeable_any(x):
    """check_writeable for both devices (for writes that replace the backing array, which NumPy's flag would not
    see: ``x.resize``)."""
    if x._device is CPU:
        if not x._data.flags.writeable:
            raise ValueError(_READONLY_MSG)
    else:
        check_writeable(x)


def set_writeable(x, flag):
    """``x.flags.writeable = flag`` for an Array on a CUDA device (NumPy's rules: a view of a read-only array
    cannot be made writeable)."""
    global _any_readonly
    if flag:
        if readonly(getattr(x, "_base", None)):
            raise ValueError("cannot set WRITEABLE flag to True of this array")
        x._ro = False
    else:
        _any_readonly = True
        x._ro = True


def _install_operators():
    """Operators of the standard, delegating to the elementwise functions (one place for their semantics)."""
    from ._ops import elementwise as ew
    from ._ops import linalg_basic as la
    from ._ops.indexing import getitem as _getitem
    from ._ops.indexing import setitem as _setitem

    def forward(fn):
        def op(self, other):
            if other.__class__ is not Array and other.__class__ not in _py_scalars:
                if not _array_like(other):
                    return NotImplemented
            return fn(self, other)
        op.__name__ = fn.__name__
        return op

    def reflected(fn):
        def op(self, other):
            if other.__class__ is not Array and other.__class__ not in _py_scalars:
                if not _array_like(other):
                    return NotImplemented
            return fn(other, self)
        return op

    def inplace(fn):
        def op(self, other):
            if other.__class__ is not Array and other.__class__ not in _py_scalars:
                if not _array_like(other):
                    return NotImplemented
            fn(self, other, out=self)
            return self
        return op

    binary = {
        "add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide,
        "floordiv": ew.floor_divide, "mod": ew.remainder, "pow": ew.pow,
        "and": ew.bitwise_and, "or": ew.bitwise_or, "xor": ew.bitwise_xor,
        "lshift": ew.bitwise_left_shift, "rshift": ew.bitwise_right_shift,
    }
    Array.__getitem__ = _getitem
    Array.__setitem__ = _setitem
    for name, fn in binary.items():
        setattr(Array, f"__{name}__", getattr(fn, "operator", None) or forward(fn))
        setattr(Array, f"__r{name}__", reflected(fn))
        setattr(Array, f"__i{name}__", inplace(fn))
    setattr(Array, "__matmul__", forward(la.matmul))
    setattr(Array, "__rmatmul__", reflected(la.matmul))

    def imatmul(self, other):
        check_writeable(self)
        res = la.matmul(self, other)
        if res.shape != self.shape:
            raise ValueError(f"in-place matmul would change the shape {self.shape} to {res.shape}")
        if res.dtype != self.dtype:
            raise TypeError(f"in-place matmul would change the dtype {self.dtype} to {res.dtype}")
        self._data[...] = res._data
        return self
    Array.__imatmul__ = imatmul

    for name, fn in {"eq": ew.equal, "ne": ew.not_equal, "lt": ew.less, "le": ew.less_equal,
                     "gt": ew.greater, "ge": ew.greater_equal}.items():
        setattr(Array, f"__{name}__", getattr(fn, "operator", None) or forward(fn))
    Array.__hash__ = _hash
    Array.__neg__ = lambda self: ew.negative(self)
    Array.__pos__ = lambda self: ew.positive(self)
    Array.__abs__ = lambda self: ew.abs(self)
    Array.__invert__ = lambda self: ew.bitwise_invert(self)


def _hash(self):
    """hash() of a 0-d array: the hash of its Python value, as ``hash(numpy.float64(v))`` is ``hash(v)``, so that
    reductions and scalar indexing (which give 0-d Arrays where NumPy gives scalars) work as dict keys and set
    members (``{a.argmax(): 1}``; equal values hash equal: ``{0: 1}[a.argmax()]``). Reads the value from the device
    (a synchronization on CUDA). Arrays of one or more dimensions are unhashable, as NumPy's ndarray."""
    if self._data.ndim:
        raise TypeError(f"unhashable type: '{type(self).__name__}'")
    return hash(self._scalar("scalar"))


def _array_like(x):
    """Whether an operator's operand that is neither an Array nor a built-in Python scalar is one the operators
    take: sequences, NumPy arrays and scalars, CUDA arrays, and instances of subclasses of int, float and complex
    (``finfo(float32).eps``), which count as Python scalars, and instances of subclasses of Array (``x.view(Sub)``,
    a structured array's field on a CUDA device)."""
    return isinstance(x, (list, tuple, np.ndarray, np.generic, int, float, complex, Array)) or \
        hasattr(x, "__cuda_array_interface__")


__all__ = ["Array", "Device"]
