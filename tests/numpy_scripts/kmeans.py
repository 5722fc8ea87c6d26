"""k-means clustering of three Gaussian blobs with a deterministic initialisation."""
rng = np.random.default_rng(5)
centers_true = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0]])
points = np.concatenate([c + rng.normal(scale=0.8, size=(150, 2)) for c in centers_true])
k = 3
centroids = points[[0, 150, 300]].copy()
for it in range(20):
    d2 = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    labels = np.argmin(d2, axis=1)
    new = np.array([points[labels == j].mean(axis=0) for j in range(k)])
    shift = np.linalg.norm(new - centroids)
    centroids = new
    if shift < 1e-9:
        break
inertia = np.sum(np.min(d2, axis=1))
result = {"centroids": centroids, "counts": np.bincount(labels, minlength=k), "inertia": inertia,
          "iterations": it}
