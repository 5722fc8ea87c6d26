"""The kernel workbench: candidates, evidence, a promotion gate, and the registry that drives dispatch.

(The Python API is filled in by gpk_array.workbench.api; ``registry`` is the schema and loader dispatch uses.)
"""
