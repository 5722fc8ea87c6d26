"""Thomas algorithm for a tridiagonal system (implicit heat step), checked against a dense solve."""
n = 50
main = np.full(n, 2.5)
off = np.full(n - 1, -1.0)
rhs = np.sin(np.linspace(0, np.pi, n))
c = np.zeros(n - 1)
d = np.zeros(n)
c[0] = off[0] / main[0]
d[0] = rhs[0] / main[0]
for i in range(1, n):
    denom = main[i] - off[i - 1] * c[i - 1]
    if i < n - 1:
        c[i] = off[i] / denom
    d[i] = (rhs[i] - off[i - 1] * d[i - 1]) / denom
x = np.zeros(n)
x[-1] = d[-1]
for i in range(n - 2, -1, -1):
    x[i] = d[i] - c[i] * x[i + 1]
A = np.diag(main) + np.diag(off, 1) + np.diag(off, -1)
dense = np.linalg.solve(A, rhs)
result = {"x": x, "err": np.abs(x - dense).max(), "diag_sum": np.trace(A), "tri": np.triu(A, 1).sum()}
