"""Polynomial fits of increasing degree to noisy data; residuals and a held-out error."""
np.random.seed(21)
x = np.linspace(-1, 1, 60)
y_true = 0.5 * x ** 3 - x + 0.3
y = y_true + np.random.normal(0, 0.05, x.size)
train = np.arange(x.size) % 3 != 0
test = ~train
errs = []
coefs = []
for deg in range(1, 7):
    p = np.polyfit(x[train], y[train], deg)
    coefs.append(np.pad(p, (6 - deg, 0)))
    errs.append(np.mean((np.polyval(p, x[test]) - y[test]) ** 2))
best = int(np.argmin(errs)) + 1
p3 = np.poly1d(np.polyfit(x, y, 3))
result = {"test_mse": np.array(errs), "best_degree": best, "coefs": np.array(coefs),
          "p3_roots": np.sort(p3.roots.real), "p3_at_half": p3(0.5), "deriv": p3.deriv().coeffs}
