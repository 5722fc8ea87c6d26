"""Exception classes of gpk_array."""


class GpkArrayError(Exception):
    """Base class of gpk_array's own errors."""


class OutOfMemoryError(MemoryError, GpkArrayError):
    """An allocation on a device (or within a scheduler context's budget) cannot be met."""


class DeviceError(ValueError, GpkArrayError):
    """A device is unknown or unusable, or arrays on different devices were mixed."""
