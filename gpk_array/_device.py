"""Devices (standard section "Device Support"): the CPU, backed by NumPy, and CUDA GPUs, backed by CuPy.

Nothing here touches a GPU at import time; the default device is decided on first use.
"""

import numpy as np

from . import _config
from ._errors import DeviceError


class Device:
    """A device an array lives on: ``Device("cpu")`` or ``Device("cuda:0")``."""

    __slots__ = ("kind", "index", "xp", "_name")

    def __new__(cls, spec="cpu"):
        if isinstance(spec, Device):
            return spec
        key = _parse(spec)
        dev = _DEVICES.get(key)
        if dev is None:
            dev = object.__new__(cls)
            dev.kind, dev.index = key
            dev._name = "cpu" if dev.kind == "cpu" else f"cuda:{dev.index}"
            dev.xp = np if dev.kind == "cpu" else None
            if dev.kind == "cuda":
                dev.xp = _cuda_module(dev.index)
            _DEVICES[key] = dev
        return dev

    def __repr__(self):
        return f"Device({self._name!r})"

    def __str__(self):
        return self._name

    def __reduce__(self):
        return (Device, (self._name,))

    @property
    def is_cuda(self):
        """Whether this is a CUDA device (``kind == "cuda"``)."""
        return self.kind == "cuda"

    def synchronize(self):
        """Wait for all work queued on this device (no-op on the CPU)."""
        if self.kind == "cuda":
            with self.xp.cuda.Device(self.index):
                self.xp.cuda.get_current_stream().synchronize()


_DEVICES = {}


def _parse(spec):
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s == "cpu":
            return ("cpu", 0)
        if s in ("cuda", "gpu"):
            return ("cuda", 0)
        for prefix in ("cuda:", "gpu:"):
            if s.startswith(prefix) and s[len(prefix):].isdigit():
                return ("cuda", int(s[len(prefix):]))
    elif isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0:
        return ("cuda", spec)
    else:
        cls = type(spec).__module__ + "." + type(spec).__name__
        if cls == "cupy.cuda.device.Device":
            return ("cuda", spec.id)
    raise DeviceError(f"unknown device {spec!r}: use 'cpu' or 'cuda:N'")


def _cuda_module(index):
    n = cuda_device_count()
    if index >= n:
        raise DeviceError(f"device cuda:{index} is not available ({n} CUDA device(s) found)")
    import cupy
    return cupy


_count = None


def cuda_device_count():
    """Number of usable CUDA devices (0 when CuPy or the driver is missing)."""
    global _count
    if _count is None:
        try:
            import cupy
            _count = cupy.cuda.runtime.getDeviceCount() if cupy.is_available() else 0
        except Exception:
            _count = 0
    return _count


CPU = Device("cpu")
_default = None


def default_device():
    """``cuda:0`` when a GPU is usable, else the CPU; ``GPK_DEVICE`` overrides (e.g. ``GPK_DEVICE=cpu``)."""
    global _default
    if _default is None:
        env = _config.get("GPK_DEVICE")
        if env:
            _default = Device(env)
        else:
            _default = Device("cuda:0") if cuda_device_count() > 0 else CPU
    return _default


def set_default_device(device):
    """Change the process-wide default device (``None`` restores the automatic choice)."""
    global _default
    _default = None if device is None else Device(device)


def all_devices():
    return [CPU] + [Device(f"cuda:{i}") for i in range(cuda_device_count())]


def as_device(device):
    """Resolve a ``device=`` argument (None means the default device)."""
    if device is None:
        return default_device()
    if device.__class__ is Device:
        return device
    return Device(device)
