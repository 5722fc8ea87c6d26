"""Logistic regression by batch gradient descent on synthetic, linearly separable-ish data."""
rng = np.random.default_rng(7)
n, d = 400, 3
X = rng.normal(size=(n, d))
true_w = np.array([1.5, -2.0, 0.5])
logits = X @ true_w + 0.3
y = (rng.random(n) < 1 / (1 + np.exp(-logits))).astype(float)
Xb = np.hstack([X, np.ones((n, 1))])
w = np.zeros(d + 1)
lr = 0.1
losses = []
for it in range(300):
    p = 1.0 / (1.0 + np.exp(-Xb @ w))
    grad = Xb.T @ (p - y) / n
    w -= lr * grad
    eps = 1e-12
    losses.append(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
pred = (1.0 / (1.0 + np.exp(-Xb @ w))) > 0.5
accuracy = np.mean(pred == (y > 0.5))
result = {"w": w, "loss": np.array(losses), "accuracy": accuracy}
