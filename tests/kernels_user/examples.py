"""The six kernels of docs/kernels-python.md (issue 19, item 6), written once for both devices."""
import math

import gpk_array as gk

K = gk.kernel
TILE = 32
ROWS = 8      # a TILE x TILE tile is moved by TILE x ROWS threads, TILE / ROWS rows each
BLOCK = 256   # threads per block of the reduction


@gk.kernel
def saxpy(a, x, y, out):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@gk.kernel
def stencil(u, out):
    """Five-point Laplacian; the border is copied."""
    for i, j in gk.ndindex(out.shape):
        if i == 0 or j == 0 or i == u.shape[0] - 1 or j == u.shape[1] - 1:
            out[i, j] = u[i, j]
        else:
            out[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4 * u[i, j]


@gk.kernel
def histogram(x, lo, hi, counts):
    nbins = counts.shape[0]
    for i in range(x.shape[0]):
        b = int(math.floor((x[i] - lo) / (hi - lo) * nbins))
        if b >= 0 and b < nbins:
            K.atomic_add(counts, b, 1)


@gk.kernel
def transpose(a, out):
    """out = a.T through a shared TILE x (TILE + 1) tile (the +1 avoids bank conflicts)."""
    tile = K.shared((TILE, TILE + 1), a.dtype)
    tx = K.thread_id(0)
    ty = K.thread_id(1)
    x = K.block_id(0) * TILE + tx
    y0 = K.block_id(1) * TILE
    for k in range(0, TILE, ROWS):
        y = y0 + ty + k
        if y < a.shape[0] and x < a.shape[1]:
            tile[ty + k, tx] = a[y, x]
    K.barrier()
    x = K.block_id(1) * TILE + tx
    y0 = K.block_id(0) * TILE
    for k in range(0, TILE, ROWS):
        y = y0 + ty + k
        if y < out.shape[0] and x < out.shape[1]:
            out[y, x] = tile[tx, ty + k]


@gk.kernel
def block_sum(x, out):
    """out[0] += sum(x): a warp-shuffle reduction per warp, the warps' sums through shared memory."""
    partial = K.shared(BLOCK // 32, out.dtype)
    i = K.global_id(0)
    v = 0.0
    if i < x.shape[0]:
        v = x[i]
    for off in (16, 8, 4, 2, 1):
        v += K.shfl_down(v, off)
    lane = K.thread_id(0) % 32
    warp = K.thread_id(0) // 32
    if lane == 0:
        partial[warp] = v
    K.barrier()
    if warp == 0:
        v = partial[lane] if lane < BLOCK // 32 else 0.0
        for off in (16, 8, 4, 2, 1):
            v += K.shfl_down(v, off)
        if lane == 0:
            K.atomic_add(out, 0, v)


def gelu(v):
    return 0.5 * v * (1.0 + math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))


@gk.kernel
def bias_gelu(x, bias, out):
    for i, j in gk.ndindex(out.shape):
        out[i, j] = gelu(x[i, j] + bias[j])
