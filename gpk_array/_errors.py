"""Exception classes of gpk_array."""


class GpkArrayError(Exception):
    """Base class of gpk_array's own errors."""


class OutOfMemoryError(MemoryError, GpkArrayError):
    """An allocation on a device (or within a scheduler context's budget) cannot be met."""


class DeviceError(ValueError, GpkArrayError):
    """A device is unknown or unusable, or arrays on different devices were mixed."""


class HostOnlyError(TypeError, GpkArrayError):
    """Device memory was asked for something only host memory gives: an implicit conversion to NumPy
    (``numpy.asarray(x)`` of an array on a CUDA device), or a NumPy function or ufunc gpk_array has no device
    implementation of. Nothing is ever copied to the host implicitly; ``x.to_device("cpu")`` does it explicitly.
    (gpk_array.scipy catches it to hand a SciPy function to CuPy's ``cupyx.scipy`` instead.)"""
