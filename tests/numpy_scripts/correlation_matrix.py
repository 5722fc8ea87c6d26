"""Covariance and correlation of multivariate samples against the generating matrix."""
rng = np.random.default_rng(99)
true_cov = np.array([[1.0, 0.8, -0.3, 0.0],
                     [0.8, 2.0, 0.1, 0.4],
                     [-0.3, 0.1, 1.5, -0.5],
                     [0.0, 0.4, -0.5, 1.0]])
X = rng.multivariate_normal(np.zeros(4), true_cov, size=5000)
C = np.cov(X.T)
R = np.corrcoef(X, rowvar=False)
sd = np.sqrt(np.diag(true_cov))
true_R = true_cov / np.outer(sd, sd)
strongest = np.unravel_index(np.argmax(np.abs(np.triu(R, 1))), R.shape)
result = {"cov": C, "corr": R, "max_err": np.abs(R - true_R).max(), "strongest": np.array(strongest),
          "trace": np.trace(C)}
