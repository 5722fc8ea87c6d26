"""Batched linear maps: rotations applied with matvec, projections with vecmat, and per-axis reductions kept at full
rank with apply_over_axes."""
angles = np.linspace(0, np.pi, 6)
c, s = np.cos(angles), np.sin(angles)
R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
v = np.array([1.0, 0.5])
rotated = np.matvec(R, v)
row_proj = np.vecmat(np.array([1.0, -1.0]), R)
norms = np.linalg.norm(rotated, axis=-1)
rng = np.random.default_rng(8)
cube = rng.random((3, 4, 5))
totals = np.apply_over_axes(np.sum, cube, [0, 2])
centered = cube - np.apply_over_axes(np.mean, cube, [1, 2])
result = {"rotated": rotated, "row_proj": row_proj, "norms": norms, "totals": totals,
          "centered_means": centered.mean(axis=(1, 2)), "explicit": (R @ v[:, None])[..., 0]}
