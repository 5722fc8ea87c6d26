"""Errors raised by the kernel layer."""

from __future__ import annotations


class KernelCompileError(RuntimeError):
    """A CUDA kernel source failed to compile.

    ``log`` holds the compiler's log (NVRTC program log or nvcc's output); ``file``, ``options``,
    ``arch`` and ``backend`` say what was compiled and how. ``str(err)`` is a one-line summary
    followed by the log.
    """

    def __init__(self, message: str, log: str = "", *, file: str | None = None,
                 options: tuple = (), arch: str | None = None, backend: str | None = None):
        self.message = message
        self.log = log or ""
        self.file = file
        self.options = tuple(options)
        self.arch = arch
        self.backend = backend
        text = message if not self.log else f"{message}\n{self.log.rstrip()}"
        super().__init__(text)

    def __reduce__(self):
        return (_rebuild, (self.message, self.log, self.file, self.options, self.arch, self.backend))


def _rebuild(message, log, file, options, arch, backend):
    return KernelCompileError(message, log, file=file, options=options, arch=arch, backend=backend)
