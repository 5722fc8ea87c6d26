"""Flat and multi-dimensional indices of a 3-D volume: unravel_index/ravel_multi_index, ndindex loops,
ndenumerate, and fromfunction for a distance field."""
np.random.seed(9)
vol = np.random.rand(4, 5, 6)
peak = np.unravel_index(np.argmax(vol), vol.shape)
top = np.argsort(vol.ravel(), kind="stable")[-5:]
coords = np.unravel_index(top, vol.shape)
back = np.ravel_multi_index(coords, vol.shape)
flat_f = np.ravel_multi_index((1, 2, 3), vol.shape, order="F")
counts = np.zeros((4, 5))
for i, j in np.ndindex(4, 5):
    counts[i, j] = (vol[i, j] > 0.5).sum()
big = [idx for idx, v in np.ndenumerate(vol[0]) if v > 0.9]
dist = np.fromfunction(lambda i, j, k: np.sqrt((i - 2) ** 2 + (j - 2) ** 2 + (k - 3) ** 2), (4, 5, 6))
result = {"peak": np.array(peak), "value": vol[peak], "coords": np.stack(coords), "back": back, "flat_f": flat_f,
          "counts": counts, "big": np.array(big), "dist": dist, "nearest": dist[vol > 0.95]}
