"""Numerical tolerances from finfo: relative rank of a matrix, machine-epsilon steps, float32 against float64
round-off, and the complex-valued roots np.emath gives for negative inputs."""
rng = np.random.default_rng(2)
A = rng.normal(size=(8, 5)) @ rng.normal(size=(5, 8))
S = np.linalg.svd(A, compute_uv=False)
tol = S.max() * max(A.shape) * np.finfo(A.dtype).eps
rank = int((S > tol).sum())
x32 = np.ones(4, dtype=np.float32)
eps32 = np.finfo(np.float32).eps
steps = x32 + eps32 * np.arange(4)
limits = [float(np.finfo(t).max) for t in (np.float16, np.float32, np.float64)]
ints = [np.iinfo(t).max for t in (np.int8, np.int16, np.uint32)]
disc = np.array([4.0, -9.0, 0.25, -2.0])
roots = np.emath.sqrt(disc)
logs = np.emath.log10(np.array([-100.0, 1000.0]))
quad = (-1 + np.emath.sqrt(1 - 4 * np.array([1.0, -2.0]))) / 2
result = {"rank": rank, "tol": tol, "steps": steps, "dtype32": steps.dtype == np.float32, "limits": limits,
          "ints": ints, "roots": roots, "logs": logs, "quad": quad, "asin": np.emath.arcsin(np.array([2.0, 0.5]))}
