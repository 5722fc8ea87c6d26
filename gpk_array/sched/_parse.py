"""The arguments users pass, checked and parsed (sizes, seconds, fractions, devices), and byte counts formatted for
messages. Imports nothing of the scheduler (the CLI parses its sizes with :func:`parse_bytes` without loading it).
"""

import re

import numpy as np

__all__ = ["parse_bytes", "check_seconds", "check_fraction", "parse_device", "device_key", "fmt_bytes"]

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "kib": 2**10,
    "m": 10**6, "mb": 10**6, "mib": 2**20,
    "g": 10**9, "gb": 10**9, "gib": 2**30,
    "t": 10**12, "tb": 10**12, "tib": 2**40,
}


def parse_bytes(value, what="size"):
    """Bytes from an int, a float, or a string such as ``"512MiB"``, ``"1.5 GB"``."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a number of bytes, got {value!r}")
    if isinstance(value, (int, np.integer)):
        n = int(value)
    elif isinstance(value, (float, np.floating)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{what} must be finite, got {value!r}")
        n = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"cannot parse {what} {value!r} (examples: 1048576, '512MiB', '2GB')")
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    else:
        raise TypeError(f"{what} must be a number of bytes or a string like '512MiB', got {type(value).__name__}")
    if n < 0:
        raise ValueError(f"{what} must be >= 0, got {n}")
    return n


def check_seconds(value, what):
    """``value`` as a float of seconds >= 0 (None stays None); TypeError / ValueError naming ``what`` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number of seconds or None, got {type(value).__name__} {value!r}")
    v = float(value)
    if not v >= 0.0:  # (NaN too)
        raise ValueError(f"{what} must be >= 0 seconds or None, got {value!r}")
    return v


def check_fraction(value, what):
    """``value`` as a float in (0, 1]; TypeError / ValueError naming ``what`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number in (0, 1], got {type(value).__name__} {value!r}")
    v = float(value)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"{what} must be in (0, 1], got {value!r}")
    return v


def parse_device(device):
    """``("cpu", None)`` or ``("cuda", index)`` from 0, "cpu", "cuda", "cuda:1", a gpk_array or CuPy device."""
    if isinstance(device, bool):
        raise TypeError(f"not a device: {device!r}")
    if isinstance(device, (int, np.integer)):
        if device < 0:
            raise ValueError(f"device index must be >= 0, got {device}")
        return ("cuda", int(device))
    dev_id = getattr(device, "id", None)
    if isinstance(dev_id, int) and not isinstance(device, str) and "cupy" in type(device).__module__:
        return ("cuda", dev_id)
    text = str(device).strip().lower()
    m = re.search(r"(cpu|cuda)(?::(\d+))?", text)
    if m is None:
        raise ValueError(f"unknown device {device!r}: use 'cpu', 'cuda', 'cuda:N' or an index")
    if m.group(1) == "cpu":
        return ("cpu", None)
    return ("cuda", int(m.group(2) or 0))


def device_key(parsed):
    """The scheduler's key of a parsed device: ``"cpu"`` or ``"cuda:N"``."""
    return "cpu" if parsed[0] == "cpu" else f"cuda:{parsed[1]}"


def fmt_bytes(n):
    """``n`` bytes for a message: ``"1048576 B (1.00 MiB)"``."""
    n = int(n)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n} B ({n / size:.2f} {unit})"
    return f"{n} B"
