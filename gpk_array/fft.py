"""The ``fft`` extension namespace (standard section "Fourier Transform Functions")."""
from ._ops.fft import (  # noqa: F401
    fft, fftfreq, fftn, fftshift, hfft, ifft, ifftn, ifftshift, ihfft, irfft, irfftn, rfft, rfftfreq, rfftn,
)
