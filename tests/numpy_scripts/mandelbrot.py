"""Escape-time counts of the Mandelbrot set on a complex grid."""
w, h, max_iter = 120, 80, 40
re = np.linspace(-2.2, 0.8, w)
im = np.linspace(-1.2, 1.2, h)
c = re[None, :] + 1j * im[:, None]
z = np.zeros_like(c)
counts = np.zeros(c.shape, dtype=np.int32)
alive = np.ones(c.shape, dtype=bool)
for i in range(max_iter):
    z[alive] = z[alive] ** 2 + c[alive]
    escaped = np.abs(z) > 2.0
    newly = escaped & alive
    counts[newly] = i
    alive &= ~escaped
counts[alive] = max_iter
area = alive.mean() * (3.0 * 2.4)
result = {"counts": counts, "area": area, "hist": np.bincount(counts.ravel(), minlength=max_iter + 1)}
