"""Ordinary least squares through the normal equations; R^2 and standard errors."""
np.random.seed(3)
n = 200
x1 = np.random.uniform(0, 10, n)
x2 = np.random.normal(5, 2, n)
noise = np.random.normal(0, 1.0, n)
y = 2.0 + 0.7 * x1 - 1.2 * x2 + noise
X = np.column_stack([np.ones(n), x1, x2])
XtX = X.T @ X
beta = np.linalg.solve(XtX, X.T @ y)
resid = y - X @ beta
sigma2 = resid @ resid / (n - X.shape[1])
se = np.sqrt(np.diag(sigma2 * np.linalg.inv(XtX)))
r2 = 1 - np.sum(resid ** 2) / np.sum((y - y.mean()) ** 2)
result = {"beta": beta, "se": se, "r2": r2, "resid_quantiles": np.percentile(resid, [5, 50, 95])}
