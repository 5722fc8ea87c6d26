"""The process's ``@gpk_array.kernel`` specializations as a whole: the kernels that made one (``kernels``),
``cache_info()`` over all of them and ``warmup(kernel, signatures)``, which makes declared specializations ahead."""
from __future__ import annotations


class _Registry:
    """The kernels of this process that have made a specialization (weakly held), for gpk_array.kernel.cache_info."""

    def __init__(self):
        import weakref
        self._kernels = weakref.WeakSet()

    def add(self, k):
        self._kernels.add(k)

    def kernels(self):
        return list(self._kernels)


kernels = _Registry()


def cache_info():
    """All kernels of this process: ``{"kernels": n, "specializations": n, "hits": n, "misses": n, "per_kernel":
    {name: Kernel.cache_info()}}``, plus what each provider in ``gpk_array._pykernel.CACHE_INFO_PROVIDERS``
    (the compile cache on disk) reports, under its name."""
    from . import CACHE_INFO_PROVIDERS
    per = {}
    for k in kernels.kernels():
        name = k.__qualname__
        while name in per:
            name += "'"
        per[name] = k.cache_info()
    out = {"kernels": len(per), "specializations": sum(v["specializations"] for v in per.values()),
           "hits": sum(v["hits"] for v in per.values()), "misses": sum(v["misses"] for v in per.values()),
           "per_kernel": per}
    for name, provider in list(CACHE_INFO_PROVIDERS.items()):
        out[name] = provider()
    return out


def warmup(kernel, signatures, max_workers=None):
    """Make the specializations of ``kernel`` for ``signatures`` ahead of the first real call: each signature is a
    tuple of example arguments (arrays of the dtype, ndim, layout and device the calls will have, and numbers of
    their kinds). On CUDA the kernels are generated, compiled (in parallel threads) and loaded; on the CPU device
    the specialization is only entered. Returns the specializations, in order."""
    from .api import Kernel
    if not isinstance(kernel, Kernel):
        raise TypeError(f"gpk_array.kernel.warmup: {kernel!r} is not a @gpk_array.kernel function")
    todo = []
    for sig in signatures:
        if not isinstance(sig, tuple):
            raise TypeError("gpk_array.kernel.warmup: each signature is a tuple of example arguments")
        norm, key, spec, device = kernel._prepare(sig)
        todo.append((spec, device))

    def build(item):
        spec, device = item
        s = str(device)
        if s == "cpu":
            return spec
        import cupy
        from .backend import compile_and_load
        idx = int(s.split(":")[1]) if ":" in s else 0
        source = spec.source
        with cupy.cuda.Device(idx):
            fn = compile_and_load(source, spec.cname, spec.identity)
        if spec.function is None:
            spec.function = {}
        spec.function[idx] = fn
        return spec

    if len(todo) <= 1:
        return [build(t) for t in todo]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max_workers or min(8, len(todo))) as ex:
        return list(ex.map(build, todo))
