"""Assembling and splitting arrays: stacks, concatenation, splits, block matrices, reshapes."""
a = np.arange(6).reshape(2, 3)
b = np.arange(6, 12).reshape(2, 3)
v = np.array([100, 200, 300])
parts = np.array_split(np.arange(10), 3)
halves = np.split(np.arange(12).reshape(4, 3), 2)
cols = np.hsplit(np.arange(12).reshape(3, 4), [1, 3])
blk = np.block([[np.eye(2), np.zeros((2, 2))], [np.ones((1, 2)), np.full((1, 2), 7.0)]])
result = {
    "vstack": np.vstack([a, b, v]),
    "hstack": np.hstack([a, b]),
    "dstack": np.dstack([a, b]),
    "stack1": np.stack([a, b], axis=1),
    "column_stack": np.column_stack([v, v * 2]),
    "concat_none": np.concatenate([a, b], axis=None),
    "concat1": np.concatenate((a, b), 1),
    "parts": [p.sum() for p in parts],
    "halves": [h.shape for h in halves],
    "cols": [c.shape for c in cols],
    "block": blk,
    "reshaped": np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1).reshape(4, -1),
    "atleast": np.atleast_2d(v).shape,
    "expand": np.expand_dims(v, 0).shape,
    "squeeze": np.squeeze(np.ones((1, 3, 1))).shape,
    "moveaxis": np.moveaxis(np.zeros((2, 3, 4)), 0, -1).shape,
    "r_": np.r_[0:3, 10, [20, 30]],
    "c_": np.c_[v, v],
}
