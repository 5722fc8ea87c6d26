"""2-D diffusion of a hot square with the five-point Laplacian and reflecting borders."""
n = 40
u = np.zeros((n, n))
u[15:25, 15:25] = 100.0
D, dt = 0.2, 1.0
totals = []
for step in range(150):
    p = np.pad(u, 1, mode="edge")
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u
    u = u + D * dt * lap
    totals.append(u.sum())
centre = np.unravel_index(np.argmax(u), u.shape)
result = {"u": u, "total": np.array(totals), "peak": u.max(), "centre": np.array(centre),
          "profile": u[n // 2]}
