"""The CUTLASS GEMM generator: emits the pinned instances of gpk_array/_kernels/cutlass/ (the .cu sources and
MANIFEST.json) with the CUTLASS Python emitter, and probes their host Params layouts. A development tool: nothing at
run time imports it. Entry point ``python scripts/gen_cutlass.py [--check | --probe | --probe-sm90]`` (or
``python -m gpk_array._kernels.cutlass.gen``); DESIGN.md says how and why.

- ``families``: the pinned settings and the instance table (FAMILIES), registry keys and file names;
- ``emit``: the emitter, pinned and driven as a source generator, one .cu file and manifest entry per instance;
- ``probe_sm80``, ``probe_sm90`` (its fixed C++ in ``probe_sm90.cpp``): CUTLASS's own host code compiled with nvcc
  (host only, no GPU) to record each instance's Params layout and goldens;
- ``cli``: the manifest, ``--check`` and the command line.
"""
