"""Jacobi iterations for the 2-D Poisson equation with a point source and zero boundary."""
n = 32
h = 1.0 / (n + 1)
f = np.zeros((n, n))
f[n // 2, n // 2] = 1.0 / h ** 2
u = np.zeros((n + 2, n + 2))
for it in range(400):
    u_new = u.copy()
    u_new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + h ** 2 * f)
    delta = np.abs(u_new - u).max()
    u = u_new
residual = (4 * u[1:-1, 1:-1] - u[:-2, 1:-1] - u[2:, 1:-1] - u[1:-1, :-2] - u[1:-1, 2:]) / h ** 2 - f
result = {"u_centre": u[n // 2 + 1, n // 2 + 1], "delta": delta, "residual": np.abs(residual).max(),
          "profile": u[n // 2 + 1, ::4], "symmetric": np.allclose(u, u.T)}
