"""A growable sample buffer with ndarray.resize (in place, zero-filled) and np.resize (repeating), checking views
through .base and array types through isinstance."""
rng = np.random.default_rng(17)
buf = np.zeros(4)
n = 0
for chunk in range(6):
    vals = rng.normal(size=3)
    if n + 3 > buf.shape[0]:
        buf.resize(2 * buf.shape[0], refcheck=False)
    buf[n:n + 3] = vals
    n += 3
data = buf[:n]
tiled = np.resize(np.arange(5), (3, 4))
grid = np.arange(12.0)
square = grid.reshape(3, 4)
checks = [isinstance(buf, np.ndarray), data.base is buf, square.base is grid, grid.base is None,
          square[1:].base is grid, (square * 2).base is None, square.T.base is grid]
square[0, 0] = 100.0
result = {"buf": buf, "capacity": buf.shape[0], "mean": data.mean(), "tiled": tiled, "checks": checks,
          "grid0": grid[0]}
