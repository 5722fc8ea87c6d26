from ..conftest import device  # noqa: F401  (the cpu / cuda:0 device fixture)
