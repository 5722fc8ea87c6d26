"""ufunc methods: reduce, accumulate, outer, reduceat, at; and NumPy's out= / where= call forms."""
x = np.arange(1, 13).reshape(3, 4)
table = np.multiply.outer(np.arange(1, 6), np.arange(1, 6))
diffs = np.subtract.outer(np.linspace(0, 1, 4), np.linspace(0, 1, 3))
segments = np.add.reduceat(np.arange(10), [0, 3, 7])
seg_max = np.maximum.reduceat(np.array([4, 1, 9, 2, 8, 3, 7]), [0, 2, 5])
counts = np.zeros(5)
np.add.at(counts, [0, 1, 1, 4, 4, 4], 1)
out = np.empty((3, 4))
np.multiply(x, 0.5, out=out)
masked = np.zeros((3, 4))
np.add(x, 100, out=masked, where=x % 2 == 0)
result = {
    "sum_rows": np.add.reduce(x, axis=1),
    "prod_cols": np.multiply.reduce(x, axis=0),
    "cumprod": np.multiply.accumulate(x, axis=1),
    "all_pos": np.logical_and.reduce(x > 0, axis=0),
    "any_big": np.logical_or.reduce(x > 10),
    "table": table,
    "diffs": diffs,
    "segments": segments,
    "seg_max": seg_max,
    "counts": counts,
    "out": out,
    "masked": masked,
    "max_all": np.maximum.reduce(x, axis=None),
    "hypot": np.hypot.reduce(np.array([3.0, 4.0, 12.0])),
}
