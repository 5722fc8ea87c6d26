"""2-D Ising model: checkerboard Metropolis sweeps with precomputed uniform numbers."""
np.random.seed(10)
L, beta, sweeps = 24, 0.5, 60
spins = np.where(np.random.rand(L, L) < 0.5, -1, 1)
ii, jj = np.indices((L, L))
masks = [((ii + jj) % 2) == c for c in (0, 1)]
mags = []
for s in range(sweeps):
    for m in masks:
        nb = np.roll(spins, 1, 0) + np.roll(spins, -1, 0) + np.roll(spins, 1, 1) + np.roll(spins, -1, 1)
        dE = 2 * spins * nb
        accept = (np.random.rand(L, L) < np.exp(-beta * dE)) & m
        spins = np.where(accept, -spins, spins)
    mags.append(abs(spins.mean()))
energy = -np.mean(spins * (np.roll(spins, 1, 0) + np.roll(spins, 1, 1)))
result = {"spins": spins, "magnetisation": np.array(mags), "energy": energy}
