"""NumPy's functions of host-only dtypes (gpk_array/_hostdata.py): dates and business days (``datetime_as_string``,
``isnat``, ``busday_count``, ...), and the ``char``, ``strings`` and ``rec`` submodules (string operations, record
arrays). They compute with NumPy on the host; by the rule of host-only dtypes their results of host-only dtypes are
arrays on the CPU device and their results of standard dtypes are on the default device. Arrays of any device are
taken (a CUDA one's values are copied to the host). ``rec``'s record arrays are plain Arrays of a structured dtype:
fields are read as ``r['x']`` (NumPy's ``recarray`` attribute access ``r.x`` is not there).
"""
import types

import numpy as _np

from .. import _hostdata

__all__ = ["datetime_as_string", "datetime_data", "isnat", "busday_count", "busday_offset", "is_busday",
           "busdaycalendar", "char", "strings", "rec"]

busdaycalendar = _np.busdaycalendar
datetime_data = _np.datetime_data


def datetime_as_string(arr, unit=None, timezone="naive", casting="same_kind"):
    """NumPy's ``datetime_as_string``: dates as ISO 8601 strings (an array on the CPU device)."""
    return _hostdata.call(_np.datetime_as_string, arr, unit=unit, timezone=timezone, casting=casting)


def isnat(x, /):
    """NumPy's ``isnat``: which datetime64/timedelta64 values are NaT (a boolean array on the default device)."""
    return _hostdata.call(_np.isnat, x)


def _cal(weekmask, holidays, busdaycal):
    """The calendar keywords NumPy takes: a calendar, or a weekmask and holidays (NumPy refuses both)."""
    if busdaycal is not None:
        return {"busdaycal": busdaycal}
    return {"weekmask": weekmask, "holidays": [] if holidays is None else holidays}


def busday_count(begindates, enddates, weekmask="1111100", holidays=None, busdaycal=None):
    """NumPy's ``busday_count``: the valid days between two dates (end excluded), on the default device."""
    return _hostdata.call(_np.busday_count, begindates, enddates, **_cal(weekmask, holidays, busdaycal))


def busday_offset(dates, offsets, roll="raise", weekmask="1111100", holidays=None, busdaycal=None):
    """NumPy's ``busday_offset``: dates moved by a number of valid days (an array on the CPU device)."""
    return _hostdata.call(_np.busday_offset, dates, offsets, roll=roll, **_cal(weekmask, holidays, busdaycal))


def is_busday(dates, weekmask="1111100", holidays=None, busdaycal=None):
    """NumPy's ``is_busday``: which dates are valid days (a boolean array on the default device)."""
    return _hostdata.call(_np.is_busday, dates, **_cal(weekmask, holidays, busdaycal))


def _wrap(module, name, fn):
    def wrapper(*args, **kwargs):
        return _hostdata.call(fn, *args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = (f"NumPy's ``{module}.{name}`` on the host values of its arguments (host-only results on "
                       "the CPU device, standard dtypes on the default device).")
    return wrapper


class HostModule(types.ModuleType):
    """A namespace of NumPy's (``numpy.char``, ``numpy.strings``, ``numpy.rec``) whose functions take Arrays of any
    device and return Arrays by the rule of host-only dtypes; what is not a function (classes, constants) is
    NumPy's own object."""

    def __init__(self, name):
        super().__init__(f"gpk_array.{name}", self.__class__.__doc__)
        self._np_name = name

    @property
    def _np_module(self):
        # imported on first use: `import gpk_array` loads none of numpy.char / numpy.strings / numpy.rec
        import importlib
        return importlib.import_module(f"numpy.{self._np_name}")

    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("_np"):
            raise AttributeError(name)
        obj = getattr(self._np_module, name)
        if callable(obj) and not isinstance(obj, type):
            obj = _wrap(self._np_name, name, obj)
        setattr(self, name, obj)
        return obj

    def __dir__(self):
        return sorted(set(super().__dir__()) | {n for n in dir(self._np_module) if not n.startswith("_")})


char = HostModule("char")
strings = HostModule("strings")
rec = HostModule("rec")
