"""Weather Markov chain: stationary distribution by power iteration and by simulation."""
P = np.array([[0.7, 0.2, 0.1],
              [0.3, 0.5, 0.2],
              [0.2, 0.3, 0.5]])
pi = np.ones(3) / 3
for _ in range(200):
    pi = pi @ P
P50 = np.linalg.matrix_power(P, 50)
rng = np.random.default_rng(17)
state = 0
visits = np.zeros(3, dtype=np.int64)
u = rng.random(5000)
cum = np.cumsum(P, axis=1)
for k in range(5000):
    state = int(np.searchsorted(cum[state], u[k], side="right"))
    visits[state] += 1
result = {"stationary": pi, "P50_row": P50[0], "empirical": visits / visits.sum(),
          "detailed": np.allclose(pi @ P, pi)}
