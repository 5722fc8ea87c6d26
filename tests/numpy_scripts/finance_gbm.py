"""Geometric Brownian motion paths and a Monte Carlo price of a European call vs Black-Scholes."""
import math

rng = np.random.default_rng(2023)
S0, K, r, sigma, T = 100.0, 105.0, 0.03, 0.2, 1.0
n_paths, n_steps = 20000, 50
dt = T / n_steps
Z = rng.standard_normal((n_paths, n_steps))
log_paths = np.cumsum((r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * Z, axis=1)
S = S0 * np.exp(log_paths)
payoff = np.maximum(S[:, -1] - K, 0.0)
price = math.exp(-r * T) * payoff.mean()
stderr = math.exp(-r * T) * payoff.std(ddof=1) / math.sqrt(n_paths)
d1 = (math.log(S0 / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * math.sqrt(T))
d2 = d1 - sigma * math.sqrt(T)
Phi = lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2)))  # noqa: E731
bs = S0 * Phi(d1) - K * math.exp(-r * T) * Phi(d2)
asian = math.exp(-r * T) * np.maximum(S.mean(axis=1) - K, 0).mean()
result = {"mc_price": price, "stderr": stderr, "bs": bs, "asian": asian,
          "terminal_quantiles": np.quantile(S[:, -1], [0.05, 0.5, 0.95])}
