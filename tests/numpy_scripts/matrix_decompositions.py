"""QR, SVD, Cholesky, determinant and inverse of random matrices, checked by reconstruction."""
rng = np.random.default_rng(12)
A = rng.normal(size=(6, 4))
Q, R = np.linalg.qr(A)
U, s, Vt = np.linalg.svd(A, full_matrices=False)
M = A.T @ A + np.eye(4)
L = np.linalg.cholesky(M)
Minv = np.linalg.inv(M)
sign, logdet = np.linalg.slogdet(M)
result = {
    "qr_err": np.abs(Q @ R - A).max(),
    "orth_err": np.abs(Q.T @ Q - np.eye(4)).max(),
    "singular_values": s,
    "svd_err": np.abs((U * s) @ Vt - A).max(),
    "chol_err": np.abs(L @ L.T - M).max(),
    "det": np.linalg.det(M),
    "logdet": logdet,
    "inv_err": np.abs(Minv @ M - np.eye(4)).max(),
    "rank": np.linalg.matrix_rank(A),
    "cond": s[0] / s[-1],
    "fro": np.linalg.norm(A),
    "nuc": np.linalg.norm(A, "nuc"),
    "abs_R_diag": np.abs(np.diag(R)),
}
