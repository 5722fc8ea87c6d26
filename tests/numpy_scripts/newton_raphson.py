"""Vectorised Newton iterations: cube roots of many numbers and roots of Kepler's equation."""
targets = np.linspace(0.5, 100, 50)
x = targets / 3.0
for _ in range(30):
    x = x - (x ** 3 - targets) / (3 * x ** 2)
cube_err = np.abs(x - np.cbrt(targets)).max()
M = np.linspace(0, 2 * np.pi, 40)
e = 0.6
E = M.copy()
iters = 0
while True:
    dE = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
    E -= dE
    iters += 1
    if np.max(np.abs(dE)) < 1e-13 or iters > 50:
        break
result = {"cube_roots": x, "cube_err": cube_err, "E": E, "iterations": iters,
          "kepler_residual": np.abs(E - e * np.sin(E) - M).max()}
