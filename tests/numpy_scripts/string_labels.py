# Class labels as strings next to numeric features: masks from label comparisons, label encoding, per-class
# statistics, sorting by name, string operations.
rng = np.random.default_rng(11)
classes = np.array(["setosa", "versicolor", "virginica"])
labels = classes[rng.integers(0, 3, 60)]
X = rng.normal(size=(60, 4)) + (labels == "virginica")[:, None] * 2.0

uniq, codes = np.unique(labels, return_inverse=True)
onehot = np.eye(len(uniq))[codes]
centroids = np.stack([X[labels == c].mean(axis=0) for c in uniq])
dist = np.linalg.norm(X[:, None, :] - centroids[None, :, :], axis=-1)
pred = uniq[np.argmin(dist, axis=1)]
accuracy = np.mean(pred == labels)
confusion = np.zeros((3, 3), dtype=int)
np.add.at(confusion, (codes, np.searchsorted(uniq, pred)), 1)
order = np.argsort(labels, kind="stable")
upper = np.char.upper(uniq)
short = np.array([s[:3] for s in labels.tolist()])
mask = np.isin(labels, ["setosa", "virginica"])
joined = np.concatenate([uniq, ["unknown"]])

result = {
    "uniq": uniq, "codes": codes, "onehot_sum": onehot.sum(axis=0), "centroids": centroids, "pred": pred,
    "accuracy": accuracy, "confusion": confusion, "order": order, "sorted_labels": labels[order][:10],
    "upper": upper, "short": short[:6], "mask_count": int(mask.sum()), "joined": joined,
    "lengths": np.char.str_len(uniq), "x_virginica": X[labels == "virginica", 0],
}
