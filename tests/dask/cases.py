"""Dask expressions run on gpk_array chunks and on NumPy chunks (the oracle), shared by the synchronous tests
(test_dask_array.py) and the LocalCluster test (test_cluster.py).

Each case takes Dask arrays ``a`` (12 x 6, chunks 4 x 3) and ``b`` (6 x 5, chunks 3 x 5), built from the same
float64 data, and returns a Dask array; its chunks must stay gpk_array Arrays on the input's device and its value
must equal what Dask computes with NumPy chunks.
"""
import numpy

import dask.array as da

SHAPE_A, CHUNKS_A = (12, 6), (4, 3)
SHAPE_B, CHUNKS_B = (6, 5), (3, 5)


def data():
    """The float64 inputs (NumPy arrays): a with a few negative entries, b."""
    rng = numpy.random.default_rng(20261202)
    return rng.standard_normal(SHAPE_A), rng.standard_normal(SHAPE_B)


def _reductions():
    out = []
    for name in ("sum", "mean", "var", "std", "max", "min", "prod", "any", "all"):
        for axis in (None, 0, 1, (0, 1)):
            for keepdims in (False, True):
                out.append((f"{name}-axis{axis}-keep{keepdims}",
                            lambda a, b, n=name, ax=axis, k=keepdims: getattr(a, n)(axis=ax, keepdims=k)))
    for name in ("argmax", "argmin", "cumsum", "cumprod"):
        for axis in (0, 1):
            out.append((f"{name}-axis{axis}", lambda a, b, n=name, ax=axis: getattr(a, n)(axis=ax)))
    out.append(("nansum", lambda a, b: da.nansum(da.where(a > 1, numpy.nan, a), axis=0)))
    out.append(("nanmean", lambda a, b: da.nanmean(da.where(a > 1, numpy.nan, a), axis=1, keepdims=True)))
    out.append(("var-ddof1", lambda a, b: a.var(axis=0, ddof=1)))
    out.append(("mean-float32", lambda a, b: a.astype("float32").mean(axis=0)))
    return out


CASES = [
    # elementwise: operators, NumPy ufuncs, dask.array's functions, where
    ("add-scalar", lambda a, b: a + 1.5),
    ("mul-self", lambda a, b: a * a - a / 3),
    ("exp", lambda a, b: da.exp(a)),
    ("numpy-sin", lambda a, b: numpy.sin(a)),
    ("numpy-add-kw", lambda a, b: numpy.add(a, 2.0, dtype="float64")),
    ("maximum", lambda a, b: da.maximum(a, 0.25)),
    ("where", lambda a, b: da.where(a > 0, a, -a)),
    ("abs-neg", lambda a, b: abs(-a)),
    ("astype", lambda a, b: a.astype("float32") * 2),
    ("compare", lambda a, b: (a > 0.5) | (a < -0.5)),
    ("broadcast-row", lambda a, b: a - a.mean(axis=0)),
    # linear algebra
    ("matmul", lambda a, b: a @ b),
    ("matmul-T", lambda a, b: a.T @ a),
    ("tensordot", lambda a, b: da.tensordot(a, b, axes=((1,), (0,)))),
    ("tensordot-0", lambda a, b: da.tensordot(a, a, axes=((0,), (0,)))),
    ("dot", lambda a, b: da.dot(a, b)),
    ("einsum", lambda a, b: da.einsum("ij,jk->ik", a, b)),
    # layout
    ("rechunk", lambda a, b: a.rechunk((5, 4))),
    ("rechunk-rows", lambda a, b: a.rechunk((12, 1))),
    ("slice", lambda a, b: a[1:10:2, ::-2]),
    ("slice-int", lambda a, b: a[3]),
    ("fancy", lambda a, b: a[[0, 5, 11, 2]]),
    ("bool-mask-rows", lambda a, b: a[numpy.arange(12) % 3 == 0]),
    ("transpose", lambda a, b: a.T + 0),
    ("reshape", lambda a, b: a.reshape((72,))),
    ("reshape-split", lambda a, b: a.reshape((12, 2, 3))),
    ("concatenate", lambda a, b: da.concatenate([a, a[:, :2]], axis=1)),
    ("stack", lambda a, b: da.stack([a, 2 * a], axis=0)),
    ("map_blocks", lambda a, b: a.map_blocks(lambda x: x * 2 + 1)),
    ("map_blocks-sum", lambda a, b: a.map_blocks(lambda x: x.sum(axis=0, keepdims=True), chunks=(1, 3))),
    ("blockwise-outer", lambda a, b: da.outer(a[:, 0], b[0])),
    ("take", lambda a, b: da.take(a, [5, 1, 1, 9], axis=0)),
] + _reductions()
