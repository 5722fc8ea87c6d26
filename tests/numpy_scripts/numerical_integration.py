"""Quadrature rules (trapezoid, Simpson, Gauss-Legendre by hand) and a cumulative integral."""
f = lambda x: np.exp(-x ** 2) * np.cos(3 * x)  # noqa: E731
a, b = 0.0, 2.0
errors = []
for n in (8, 16, 32, 64):
    x = np.linspace(a, b, n + 1)
    y = f(x)
    h = (b - a) / n
    trap = h * (y[0] / 2 + y[1:-1].sum() + y[-1] / 2)
    simpson = h / 3 * (y[0] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum() + y[-1])
    errors.append([trap, simpson, np.trapezoid(y, x)])
nodes = np.array([-0.906179845938664, -0.538469310105683, 0.0, 0.538469310105683, 0.906179845938664])
weights = np.array([0.236926885056189, 0.478628670499366, 0.568888888888889, 0.478628670499366,
                    0.236926885056189])
gauss = (b - a) / 2 * np.sum(weights * f((b - a) / 2 * nodes + (a + b) / 2))
x = np.linspace(a, b, 201)
y = f(x)
cumulative = np.concatenate([[0.0], np.cumsum((y[1:] + y[:-1]) / 2 * np.diff(x))])
result = {"rules": np.array(errors), "gauss": gauss, "cumulative": cumulative[::20]}
