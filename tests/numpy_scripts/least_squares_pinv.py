"""Overdetermined least squares through the pseudo-inverse and through an SVD solve."""
np.random.seed(14)
m, n = 50, 5
A = np.random.randn(m, n)
x_true = np.arange(1, n + 1, dtype=float)
b = A @ x_true + 0.01 * np.random.randn(m)
x_pinv = np.linalg.pinv(A) @ b
U, s, Vt = np.linalg.svd(A, full_matrices=False)
x_svd = Vt.T @ ((U.T @ b) / s)
res = b - A @ x_pinv
result = {"x": x_pinv, "agree": np.abs(x_pinv - x_svd).max(), "residual_norm": np.linalg.norm(res),
          "orthogonality": np.abs(A.T @ res).max()}
