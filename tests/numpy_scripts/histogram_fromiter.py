"""Collatz stopping times built with fromiter from a generator, summarized with bincount and vectorize."""
def steps(n):
    k = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        k += 1
    return k
times = np.fromiter((steps(n) for n in range(1, 400)), dtype=np.int64)
firsts = np.fromiter(range(10), dtype=float, count=5)
hist = np.bincount(times)
record = np.flatnonzero(times == times.max()) + 1
parity = np.vectorize(lambda t: t % 3 == 0)(times)
scale = np.vectorize(lambda t, s: t * s + 1.0)(times[:20], 0.5)
result = {"times": times, "firsts": firsts, "hist": hist, "record": record, "parity": parity.sum(),
          "scale": scale, "mean": times.mean()}
