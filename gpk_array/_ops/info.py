"""Inspection API (standard section "Inspection"): ``__array_namespace_info__``."""
from .. import _dtypes as _dt
from .. import _version
from .._device import all_devices, as_device, default_device

_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
          "numeric")


class Info:
    """What this namespace supports, per device."""

    __slots__ = ()

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return default_device()

    def default_dtypes(self, *, device=None):
        if device is not None:
            as_device(device)
        return {"real floating": _dt.F64, "complex floating": _dt.C128, "integral": _dt.I64,
                "indexing": _dt.I64}

    def devices(self):
        devs = all_devices()
        return tuple(devs) if _version.get() >= "2025.12" else devs

    def dtypes(self, *, device=None, kind=None):
        if device is not None:
            as_device(device)
        std = [d for d in _dt.ALL if d not in (_dt.F16, _dt.BF16)]
        if kind is None:
            return {_dt.name_of(d): d for d in std}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out = {}
        for k in kinds:
            if isinstance(k, str):
                if k not in _KINDS:
                    raise ValueError(f"unknown dtype kind {k!r}")
                letters = _dt.CATEGORIES[k]
                out.update({_dt.name_of(d): d for d in std if _dt.kind(d) in letters})
            else:
                d = _dt.to_dtype(k)
                out[_dt.name_of(d)] = d
        return out


_INFO = Info()


def __array_namespace_info__():
    """The namespace's inspection object (standard: info.__array_namespace_info__)."""
    return _INFO
