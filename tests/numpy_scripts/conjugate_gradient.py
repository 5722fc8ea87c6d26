"""Conjugate gradients for a symmetric positive definite system, compared with a direct solve."""
rng = np.random.default_rng(21)
n = 60
Q = rng.normal(size=(n, n))
A = Q @ Q.T + n * np.eye(n)
b = rng.normal(size=n)
x = np.zeros(n)
r = b - A @ x
p = r.copy()
rs = r @ r
norms = [np.sqrt(rs)]
for it in range(200):
    Ap = A @ p
    alpha = rs / (p @ Ap)
    x += alpha * p
    r -= alpha * Ap
    rs_new = r @ r
    norms.append(np.sqrt(rs_new))
    if np.sqrt(rs_new) < 1e-10:
        break
    p = r + (rs_new / rs) * p
    rs = rs_new
direct = np.linalg.solve(A, b)
result = {"x": x, "iterations": it + 1, "err": np.abs(x - direct).max(), "residuals": np.array(norms[:8])}
