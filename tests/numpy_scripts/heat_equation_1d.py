"""Explicit finite differences for the 1-D heat equation with fixed ends."""
nx, nt = 101, 500
L = 1.0
dx = L / (nx - 1)
alpha = 0.01
dt = 0.4 * dx ** 2 / alpha
x = np.linspace(0, L, nx)
u = np.sin(np.pi * x) + 0.5 * np.sin(3 * np.pi * x)
history = []
for n in range(nt):
    un = u.copy()
    u[1:-1] = un[1:-1] + alpha * dt / dx ** 2 * (un[2:] - 2 * un[1:-1] + un[:-2])
    u[0] = 0.0
    u[-1] = 0.0
    if n % 100 == 0:
        history.append(u.copy())
exact = np.exp(-alpha * np.pi ** 2 * dt * nt) * np.sin(np.pi * x) + \
    0.5 * np.exp(-alpha * 9 * np.pi ** 2 * dt * nt) * np.sin(3 * np.pi * x)
result = {"u": u, "history": np.array(history), "max_err": np.max(np.abs(u - exact))}
