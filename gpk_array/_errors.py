"""Exception classes of gpk_array."""


class GpkArrayError(Exception):
    """Base class of gpk_array's own errors."""


class OutOfMemoryError(MemoryError, GpkArrayError):
    """An allocation on a device (or within a scheduler context's budget) cannot be met."""


class DeviceError(ValueError, GpkArrayError):
    """A device is unknown or unusable, or arrays on different devices were mixed."""


class TruthValueError(ValueError, TypeError, GpkArrayError):
    """``bool(x)`` of an array without exactly one element: NumPy's ValueError (the truth value is ambiguous), also a
    TypeError, as gpk_array raised before and as ``int(x)``/``float(x)`` raise."""


class HostOnlyError(TypeError, GpkArrayError):
    """Device memory was asked for something only host memory gives: an implicit conversion to NumPy
    (``numpy.asarray(x)`` of an array on a CUDA device), or a NumPy function or ufunc gpk_array has no device
    implementation of. Nothing is ever copied to the host implicitly; ``x.to_device("cpu")`` does it explicitly.
    (gpk_array.scipy catches it to hand a SciPy function to CuPy's ``cupyx.scipy`` instead.)"""


class KernelCompileError(RuntimeError, GpkArrayError):
    """A CUDA kernel source failed to compile (``gpk_array.jit``, ``.cu`` imports, gpk_array's own kernels).

    ``log`` holds the compiler's log (NVRTC program log or nvcc's output); ``file``, ``options``, ``arch`` and
    ``backend`` say what was compiled and how; ``line`` is the number of the first line the log reports an error
    on (None when it names none) and ``source_line`` that line's text. ``str(err)`` is a one-line summary, the
    offending line, then the log.
    """

    def __init__(self, message: str, log: str = "", *, file: str | None = None,
                 options: tuple = (), arch: str | None = None, backend: str | None = None,
                 line: int | None = None, source_line: str | None = None):
        self.message = message
        self.log = log or ""
        self.file = file
        self.options = tuple(options)
        self.arch = arch
        self.backend = backend
        self.line = line
        self.source_line = source_line
        text = message
        if line is not None:
            text += f"\n  line {line}: {source_line.strip() if source_line else ''}"
        if self.log:
            text += "\n" + self.log.rstrip()
        super().__init__(text)

    def __reduce__(self):
        return (_rebuild_compile_error, (self.message, self.log, self.file, self.options, self.arch, self.backend,
                                         self.line, self.source_line))


def _rebuild_compile_error(message, log, file, options, arch, backend, line=None, source_line=None):
    return KernelCompileError(message, log, file=file, options=options, arch=arch, backend=backend, line=line,
                              source_line=source_line)
