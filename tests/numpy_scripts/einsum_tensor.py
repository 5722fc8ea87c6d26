"""Tensor contractions with einsum, tensordot, kron, outer and inner; a batched bilinear form."""
rng = np.random.default_rng(1)
A = rng.normal(size=(3, 4))
B = rng.normal(size=(4, 5))
T = rng.normal(size=(2, 3, 4))
x = rng.normal(size=(6, 4))
M = rng.normal(size=(4, 4))
result = {
    "matmul": np.einsum("ij,jk->ik", A, B),
    "trace": np.einsum("ii", M),
    "diag": np.einsum("ii->i", M),
    "batched_quad": np.einsum("ni,ij,nj->n", x, M, x),
    "tensordot": np.tensordot(T, B, axes=([2], [0])),
    "tensordot2": np.tensordot(T, A, axes=2),
    "kron": np.kron(np.eye(2), A[:2, :2]),
    "outer": np.outer(A[0], B[:, 0]),
    "inner": np.inner(A, A),
    "vdot": np.vdot(A, A),
    "dot": np.dot(A, B),
    "transpose_sum": np.einsum("ijk->kj", T),
    "matmul_op": (A @ B).sum(axis=0),
}
