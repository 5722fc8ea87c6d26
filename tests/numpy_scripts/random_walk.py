"""Many 1-D random walks: mean squared displacement grows linearly with time."""
np.random.seed(42)
n_walkers, n_steps = 500, 200
steps = np.random.choice([-1, 1], size=(n_walkers, n_steps))
positions = np.cumsum(steps, axis=1)
msd = np.mean(positions ** 2, axis=0)
t = np.arange(1, n_steps + 1)
slope = np.sum(msd * t) / np.sum(t * t)
final = positions[:, -1]
result = {
    "msd": msd,
    "slope": slope,
    "final_mean": final.mean(),
    "final_std": final.std(),
    "max_excursion": np.abs(positions).max(axis=1),
    "returns_to_origin": np.count_nonzero(positions == 0, axis=1),
}
