"""A 2-D Laplacian with nditer: multi_index neighbours read per element, the output written through readwrite."""
np.random.seed(3)
field = np.random.rand(6, 7)
lap = np.zeros_like(field)
it = np.nditer(field, flags=["multi_index"])
for v in it:
    i, j = it.multi_index
    up = field[(i - 1) % 6, j]
    down = field[(i + 1) % 6, j]
    left = field[i, (j - 1) % 7]
    right = field[i, (j + 1) % 7]
    lap[i, j] = up + down + left + right - 4 * v
vectorized = (np.roll(field, 1, 0) + np.roll(field, -1, 0) + np.roll(field, 1, 1) + np.roll(field, -1, 1)
              - 4 * field)
clipped = field.copy()
with np.nditer(clipped, op_flags=["readwrite"]) as it:
    for x in it:
        x[...] = min(float(x), 0.5)
result = {"lap": lap, "max_err": np.abs(lap - vectorized).max(), "clipped": clipped,
          "order_k": np.array([float(x) for x in np.nditer(field.T[:3, :2])])}
