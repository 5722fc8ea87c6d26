"""Gradient descent with momentum and Adam on the Rosenbrock function."""
def grad(p):
    x, y = p
    return np.array([-2 * (1 - x) - 400 * x * (y - x ** 2), 200 * (y - x ** 2)])


def f(p):
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2


p = np.array([-1.5, 2.0])
v = np.zeros(2)
path = []
for i in range(3000):
    v = 0.9 * v - 1e-4 * grad(p)
    p = p + v
    if i % 500 == 0:
        path.append(f(p))
q = np.array([-1.5, 2.0])
m = np.zeros(2)
s = np.zeros(2)
b1, b2, lr, eps = 0.9, 0.999, 0.02, 1e-8
for t in range(1, 2001):
    gq = grad(q)
    m = b1 * m + (1 - b1) * gq
    s = b2 * s + (1 - b2) * gq ** 2
    q = q - lr * (m / (1 - b1 ** t)) / (np.sqrt(s / (1 - b2 ** t)) + eps)
result = {"momentum_p": p, "momentum_f": f(p), "path": np.array(path), "adam_q": q, "adam_f": f(q)}
