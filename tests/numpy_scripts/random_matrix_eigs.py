"""Eigenvalues of a random symmetric (GOE-like) matrix: semicircle histogram and level spacings."""
np.random.seed(1)
n = 200
H = np.random.normal(size=(n, n))
H = (H + H.T) / np.sqrt(2 * n)
ev = np.linalg.eigvalsh(H)
hist, edges = np.histogram(ev, bins=10, range=(-2, 2), density=True)
centers = (edges[:-1] + edges[1:]) / 2
semicircle = np.sqrt(np.clip(4 - centers ** 2, 0, None)) / (2 * np.pi)
bulk = ev[n // 4: 3 * n // 4]
spacings = np.diff(bulk)
spacings /= spacings.mean()
result = {"extremes": (ev[0], ev[-1]), "hist": hist, "semicircle_err": np.abs(hist - semicircle).max(),
          "spacing_var": spacings.var(), "trace": np.trace(H), "frob": np.linalg.norm(H, "fro") ** 2 / n}
