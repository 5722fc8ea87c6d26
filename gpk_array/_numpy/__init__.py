"""NumPy-compatible names beside the standard's (issue 6): where the standard is silent, behave like NumPy 2."""
__all__ = []


def install(array_cls):
    """Add NumPy's ndarray methods and attributes to the Array class."""
