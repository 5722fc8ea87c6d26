"""Site percolation on a grid: spanning detection by iterative label propagation, over occupation levels."""
def spans(grid):
    n = grid.shape[0]
    reach = np.zeros_like(grid)
    reach[0] = grid[0]
    while True:
        prev = reach
        grown = reach.copy()
        grown[1:] |= reach[:-1]
        grown[:-1] |= reach[1:]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        reach = grown & grid
        if np.array_equal(reach, prev):
            break
    return bool(reach[-1].any()), int(reach.sum())


rng = np.random.default_rng(77)
levels = np.linspace(0.4, 0.8, 5)
u = rng.random((5, 20, 20))
outcomes = []
sizes = []
for p, field in zip(levels, u):
    ok, size = spans(field < p)
    outcomes.append(ok)
    sizes.append(size)
result = {"spans": np.array(outcomes), "cluster_sizes": np.array(sizes), "occupancy": (u < 0.6).mean(axis=(1, 2))}
