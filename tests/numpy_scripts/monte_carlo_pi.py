"""Estimate pi by throwing points into the unit square, with a running estimate."""
rng = np.random.default_rng(2024)
n = 20000
pts = rng.random((n, 2))
inside = np.sum(pts ** 2, axis=1) <= 1.0
running = 4.0 * np.cumsum(inside) / np.arange(1, n + 1)
estimate = 4.0 * inside.mean()
err = abs(estimate - np.pi)
result = {"estimate": estimate, "error": err, "running": running[::1000], "n_inside": int(inside.sum())}
