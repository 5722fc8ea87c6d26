"""Threshold a noisy image with Otsu's method; bounding box and centroid of the foreground."""
rng = np.random.default_rng(13)
yy, xx = np.indices((50, 70))
img = 60 + 20 * rng.standard_normal((50, 70))
img[(yy - 20) ** 2 / 100 + (xx - 40) ** 2 / 300 < 1] += 100
img = np.clip(img, 0, 255)
hist, edges = np.histogram(img, bins=64, range=(0, 256))
centers = (edges[:-1] + edges[1:]) / 2
w0 = np.cumsum(hist)
w1 = w0[-1] - w0
m0 = np.cumsum(hist * centers)
mu0 = m0 / np.maximum(w0, 1)
mu1 = (m0[-1] - m0) / np.maximum(w1, 1)
between = w0 * w1 * (mu0 - mu1) ** 2
thr = centers[np.argmax(between)]
mask = img > thr
coords = np.argwhere(mask)
bbox = np.concatenate([coords.min(axis=0), coords.max(axis=0)])
centroid = coords.mean(axis=0)
result = {"threshold": thr, "area": np.count_nonzero(mask), "bbox": bbox, "centroid": centroid,
          "row_profile": mask.sum(axis=1), "where_first": np.where(mask.any(axis=0))[0][:5]}
