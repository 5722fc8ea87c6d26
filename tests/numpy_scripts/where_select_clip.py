"""Element selection: where, select, piecewise, clip, choose, nonzero, take and put."""
x = np.linspace(-3, 3, 13)
sign = np.where(x > 0, 1, np.where(x < 0, -1, 0))
band = np.select([x < -1, x > 1], [-1.0, 1.0], default=0.0)
pw = np.piecewise(x, [x < 0, x >= 0], [lambda v: v ** 2, lambda v: np.sqrt(v)])
clipped = np.clip(x, -1.5, 2.0)
lower = np.clip(x, -1.0, None)
idx = np.nonzero(np.abs(x) < 1.1)[0]
choices = np.choose(np.array([0, 1, 2, 1]), [np.arange(4), np.arange(4) * 10, np.arange(4) * 100])
taken = np.take(x, [0, -1, 6])
arr = np.zeros(8)
np.put(arr, [1, 3, 5], [9.0, 8.0, 7.0])
cond = np.where(x > 2)
result = {"sign": sign, "band": band, "piecewise": pw, "clipped": clipped, "lower": lower, "idx": idx,
          "choices": choices, "taken": taken, "put": arr, "cond": cond[0], "round": np.round(x * 1.234, 2),
          "around": np.around(x, 1)}
