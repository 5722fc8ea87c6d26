"""Dominant eigenpair by power iteration with Rayleigh quotients, checked against eigvalsh."""
rng = np.random.default_rng(0)
A = rng.normal(size=(30, 30))
A = (A + A.T) / 2 + 30 * np.eye(30)
v = np.ones(30) / np.sqrt(30)
history = []
for _ in range(100):
    w = A @ v
    v = w / np.linalg.norm(w)
    history.append(v @ A @ v)
lam = v @ A @ v
exact = np.linalg.eigvalsh(A)[-1]
result = {"lambda": lam, "exact": exact, "history": np.array(history[:10]), "residual": np.linalg.norm(A @ v - lam * v)}
