"""A linear solver that checks itself with np.testing: residuals, symmetry, tolerances, and the exceptions the
assertions raise on purpose."""
rng = np.random.default_rng(5)
n = 30
M = rng.normal(size=(n, n))
A = M @ M.T + n * np.eye(n)
b = rng.normal(size=n)
x = np.linalg.solve(A, b)
np.testing.assert_allclose(A @ x, b, rtol=1e-9, atol=1e-9)
np.testing.assert_array_equal(A, A.T)
np.testing.assert_array_almost_equal(np.linalg.inv(A) @ b, x, decimal=8)
np.testing.assert_array_less(0, np.linalg.eigvalsh(A))
np.testing.assert_equal(x.shape, (n,))
np.testing.assert_almost_equal(np.trace(A), np.sum(np.diag(A)))
np.testing.assert_approx_equal(np.linalg.det(A / n), np.prod(np.linalg.eigvalsh(A / n)), significant=7)
np.testing.assert_(np.all(np.isfinite(x)), "solution has non-finite values")
caught = []
try:
    np.testing.assert_allclose(x, x + 1e-3)
except AssertionError as e:
    caught.append("Mismatched elements: 30 / 30" in str(e))
try:
    np.testing.assert_array_equal(np.arange(3), [0, 1, 3])
except AssertionError as e:
    caught.append("Mismatched elements: 1 / 3" in str(e))
with np.testing.assert_raises(ValueError):
    np.dot(np.ones(3), np.ones(4))
caught.append(issubclass(np.linalg.LinAlgError, ValueError))
with np.testing.assert_raises_regex(ValueError, "shape"):
    np.reshape(np.arange(5), (2, 2))
result = {"x": x, "caught": caught, "residual": np.abs(A @ x - b).max()}
