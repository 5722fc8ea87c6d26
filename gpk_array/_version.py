"""The version of the standard the namespace answers to: 2025.12 unless set to 2024.12.

``GPK_ARRAY_API_VERSION=2024.12`` in the environment, or ``gpk_array.set_array_api_version("2024.12")``,
selects 2024.12 where the two versions differ (``__array_namespace_info__().devices()`` returns a list there).
"""
from . import _config

SUPPORTED = _config.ARRAY_API_VERSIONS
try:
    _current = _config.get("GPK_ARRAY_API_VERSION")
except ValueError as e:
    raise ImportError(str(e)) from None


def get():
    return _current


def set_array_api_version(version):
    """Select the standard's version (2024.12 or 2025.12) where their behaviour differs."""
    global _current
    if version not in SUPPORTED:
        raise ValueError(f"unsupported array API version {version!r}: use one of {SUPPORTED}")
    _current = version
    import gpk_array
    gpk_array.__array_api_version__ = version
