"""Sample moments of many distributions from one Generator, compared with their theoretical values."""
rng = np.random.default_rng(314)
n = 20000
samples = {
    "normal": rng.normal(2.0, 3.0, n),
    "uniform": rng.uniform(-1, 3, n),
    "exponential": rng.exponential(2.0, n),
    "gamma": rng.gamma(3.0, 2.0, n),
    "beta": rng.beta(2.0, 5.0, n),
    "poisson": rng.poisson(4.0, n),
    "binomial": rng.binomial(10, 0.3, n),
    "lognormal": rng.lognormal(0.0, 0.5, n),
}
theory = {"normal": (2.0, 9.0), "uniform": (1.0, 16 / 12), "exponential": (2.0, 4.0), "gamma": (6.0, 12.0),
          "beta": (2 / 7, 10 / (49 * 8)), "poisson": (4.0, 4.0), "binomial": (3.0, 2.1),
          "lognormal": (np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25))}
stats = np.array([[samples[k].mean(), samples[k].var()] for k in samples])
expected = np.array([theory[k] for k in samples])
ints = rng.integers(0, 6, size=n)
result = {"stats": stats, "rel_err": np.abs(stats - expected) / expected, "ints": np.bincount(ints),
          "choice": rng.choice(np.arange(10.0), 5, replace=False), "perm": rng.permutation(10),
          "standard": rng.standard_normal(5)}
