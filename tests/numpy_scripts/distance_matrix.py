"""Pairwise distances by broadcasting and by the Gram trick; nearest neighbours and k-NN classification."""
rng = np.random.default_rng(55)
A = rng.random((120, 3))
B = rng.random((40, 3))
D = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
G = np.sqrt(np.maximum((A ** 2).sum(1)[:, None] + (B ** 2).sum(1)[None, :] - 2 * A @ B.T, 0))
nn = D.argmin(axis=1)
k = 5
knn = np.argsort(D, axis=1)[:, :k]
labels_B = (B[:, 0] > 0.5).astype(int)
votes = labels_B[knn].sum(axis=1)
pred = (votes > k // 2).astype(int)
truth = (A[:, 0] > 0.5).astype(int)
DA = np.sqrt(((A[:, None] - A[None]) ** 2).sum(-1))
np.fill_diagonal(DA, np.inf)
result = {"nn": nn, "gram_err": np.abs(D - G).max(), "knn_acc": (pred == truth).mean(),
          "closest_pair": np.array(np.unravel_index(np.argmin(DA), DA.shape)), "min_dist": DA.min(),
          "mean_dist": D.mean()}
