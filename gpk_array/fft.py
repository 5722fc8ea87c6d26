"""The ``fft`` extension namespace (standard section "Fourier Transform Functions"), plus NumPy's two-dimensional
transforms ``fft2``, ``ifft2``, ``rfft2`` and ``irfft2`` (``numpy.fft``'s names, the n-dimensional ones over two
axes)."""
from ._ops.fft import (  # noqa: F401
    fft, fftfreq, fftn, fftshift, hfft, ifft, ifftn, ifftshift, ihfft, irfft, irfftn, rfft, rfftfreq, rfftn,
)


def _two(nd, name):
    def fn(a, s=None, axes=(-2, -1), norm=None, out=None):
        from ._numpy._util import finish, to_array
        x = to_array(a)
        r = nd(x, s=s, axes=axes, norm="backward" if norm is None else norm)
        return r if out is None else finish(r._data, r._device, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"NumPy's ``fft.{name}``: ``{nd.__name__}`` over ``axes`` (default the last two), computed on the "
                  "input's device; ``norm=None`` is \"backward\", ``out=`` an Array to write the result into.")
    return fn


fft2 = _two(fftn, "fft2")
ifft2 = _two(ifftn, "ifft2")
rfft2 = _two(rfftn, "rfft2")
irfft2 = _two(irfftn, "irfft2")
del _two
