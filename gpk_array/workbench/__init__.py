"""The kernel workbench: one controlled path from a kernel candidate to what gpk_array dispatches to.

    import gpk_array.workbench as wb
    wb.create("gemm", "fr96-512", dtype="float16", layout="tn", family="fr96", where="m=:1024")
    v, _ = wb.validate("fr96-512")            # float64 reference, tolerance contract, cheat-catching inputs (GPU)
    b, _ = wb.bench("fr96-512")               # beside the incumbent, cuBLASLt and torch, same run (GPU)
    wb.promote("fr96-512", v, b)              # the gate: PromotionRefused with every reason, or a registry record

The same as ``gpk kernels create|validate|bench|profile|promote|list|show|compare|doctor``. Without a GPU,
``validate``/``bench`` take ``dry_run=True`` and write planned evidence, which ``promote`` refuses.

- ``registry``: the tracked records dispatch reads (``gpk_array/_kernels/registry/*.json``), their schema and the
  compiled lookups; ``candidates``: workspaces and the metadata contract; ``checks``: validation plans, float64
  references, the error measure; ``evidence``: records, environment and fingerprints; ``gpu``: the device side;
  ``api``: the operations below.
"""
_API = ("validate", "bench", "profile", "promote", "gate", "list_candidates", "show", "compare", "doctor",
        "WorkbenchError", "PromotionRefused")
_CANDIDATES = ("create", "CandidateError")
__all__ = list(_API + _CANDIDATES)


def __getattr__(name):
    # lazy: gpk_array._kernels.gemm imports gpk_array.workbench.registry on its first use, without the rest
    if name in _API:
        from . import api
        return getattr(api, name)
    if name in _CANDIDATES:
        from . import candidates
        return getattr(candidates, name)
    raise AttributeError(f"module 'gpk_array.workbench' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
