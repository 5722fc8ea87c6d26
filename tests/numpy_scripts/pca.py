"""Principal component analysis of correlated Gaussian data via the covariance eigendecomposition."""
rng = np.random.default_rng(11)
cov = np.array([[3.0, 1.2, 0.4], [1.2, 2.0, 0.3], [0.4, 0.3, 0.5]])
data = rng.multivariate_normal([1.0, -2.0, 0.5], cov, size=1000)
centered = data - data.mean(axis=0)
C = np.cov(centered, rowvar=False)
vals, vecs = np.linalg.eigh(C)
order = np.argsort(vals)[::-1]
vals = vals[order]
vecs = vecs[:, order]
signs = np.sign(vecs[0, :])
vecs = vecs * signs
explained = vals / vals.sum()
projected = centered @ vecs[:, :2]
result = {"eigenvalues": vals, "explained": explained, "components": vecs,
          "projected_var": projected.var(axis=0, ddof=1)}
