"""The ``linalg`` extension namespace (standard section "Linear Algebra Extension")."""
from ._ops.linalg_ext import (  # noqa: F401
    cholesky, cross, det, diagonal, eig, eigh, eigvals, eigvalsh, inv, matmul, matrix_norm, matrix_power,
    matrix_transpose, norm, outer, slogdet, solve, svdvals, tensordot, trace, vecdot, vector_norm,
)
from ._numpy.linalg import (  # noqa: E402,F401  NumPy's signatures (the standard's call forms still work)
    LinAlgError, cond, lstsq, matrix_rank, multi_dot, pinv, qr, svd, tensorinv, tensorsolve,
)
