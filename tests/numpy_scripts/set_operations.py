"""Set operations on integer id arrays: unique, intersections, unions, differences, membership."""
rng = np.random.default_rng(9)
a = rng.integers(0, 50, 40)
b = rng.integers(25, 75, 40)
u, first, counts = np.unique(a, return_index=True, return_counts=True)
common, ia, ib = np.intersect1d(a, b, return_indices=True)
result = {"unique": u, "first": first, "counts": counts, "common": common, "ia": ia, "ib": ib,
          "union": np.union1d(a, b), "diff": np.setdiff1d(a, b), "xor": np.setxor1d(a, b),
          "isin": np.isin(a, b), "not_in": np.isin(a, b, invert=True).sum(),
          "dups": u[counts > 1]}
