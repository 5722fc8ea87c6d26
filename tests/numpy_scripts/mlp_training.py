"""A two-layer network trained on XOR-like data with full-batch gradient descent."""
np.random.seed(0)
X = np.random.uniform(-1, 1, size=(256, 2))
y = ((X[:, 0] * X[:, 1]) > 0).astype(float)[:, None]
W1 = np.random.randn(2, 16) * 0.5
b1 = np.zeros(16)
W2 = np.random.randn(16, 1) * 0.5
b2 = np.zeros(1)
lr = 0.5
losses = []
for epoch in range(300):
    h = np.tanh(X @ W1 + b1)
    out = 1 / (1 + np.exp(-(h @ W2 + b2)))
    loss = np.mean((out - y) ** 2)
    losses.append(loss)
    d_out = 2 * (out - y) / len(X) * out * (1 - out)
    dW2 = h.T @ d_out
    db2 = d_out.sum(axis=0)
    dh = d_out @ W2.T * (1 - h ** 2)
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    W1 -= lr * dW1
    b1 -= lr * db1
    W2 -= lr * dW2
    b2 -= lr * db2
acc = np.mean((out > 0.5) == (y > 0.5))
result = {"loss": np.array(losses[::30]), "final_loss": losses[-1], "accuracy": acc, "W2": W2.ravel()}
