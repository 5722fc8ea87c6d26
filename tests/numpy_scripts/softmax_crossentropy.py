"""A dense layer, ReLU, numerically stable softmax and cross-entropy with its gradient."""
rng = np.random.default_rng(6)
X = rng.normal(size=(32, 10)).astype(np.float32)
W = (rng.normal(size=(10, 4)) * 0.1).astype(np.float32)
b = np.zeros(4, dtype=np.float32)
y = rng.integers(0, 4, size=32)
h = np.maximum(X @ W + b, 0)
z = h - h.max(axis=1, keepdims=True)
logsumexp = np.log(np.exp(z).sum(axis=1, keepdims=True))
log_probs = z - logsumexp
probs = np.exp(log_probs)
loss = -log_probs[np.arange(32), y].mean()
onehot = np.eye(4, dtype=np.float32)[y]
dz = (probs - onehot) / 32
dh = dz * (h > 0)
dW = X.T @ dh
result = {"loss": loss, "probs": probs, "dW": dW, "pred": probs.argmax(axis=1), "dtype": str(probs.dtype)}
