"""Evaluate a 2-D surface on meshgrids: extrema, numerical gradients, level-set area, sparse grids."""
x = np.linspace(-3, 3, 61)
y = np.linspace(-2, 2, 41)
X, Y = np.meshgrid(x, y)
Z = np.exp(-(X ** 2 + Y ** 2) / 2) * np.cos(2 * X) + 0.1 * X * Y
gy, gx = np.gradient(Z, y, x)
imax = np.unravel_index(np.argmax(Z), Z.shape)
imin = np.unravel_index(np.argmin(Z), Z.shape)
xs, ys = np.meshgrid(x, y, sparse=True)
Zs = np.exp(-(xs ** 2 + ys ** 2) / 2) * np.cos(2 * xs) + 0.1 * xs * ys
XI, YI = np.meshgrid(x[:3], y[:2], indexing="ij")
cell = (x[1] - x[0]) * (y[1] - y[0])
result = {"zmax": Z.max(), "argmax": (x[imax[1]], y[imax[0]]), "argmin": (x[imin[1]], y[imin[0]]),
          "grad_norm_max": np.sqrt(gx ** 2 + gy ** 2).max(), "area_above": np.count_nonzero(Z > 0.5) * cell,
          "sparse_equal": np.allclose(Z, Zs), "ij": XI + 10 * YI, "grid": np.mgrid[0:3, 0:2].sum(axis=0)}
