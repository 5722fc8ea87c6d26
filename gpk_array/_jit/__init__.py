"""User kernels from CUDA source: ``gpk_array.jit``, ``.cu`` files as modules, and the one compile cache
(``cache``) that every kernel gpk_array compiles at run time goes through. Nothing here is imported by
``import gpk_array``; ``api`` holds the public entry points, which import the rest on first call."""
