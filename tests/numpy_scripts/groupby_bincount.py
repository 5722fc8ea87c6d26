"""Group-by aggregation of sales records with bincount, add.at and unique inverse indices."""
rng = np.random.default_rng(100)
n = 1000
store = rng.integers(0, 8, n)
product = rng.integers(0, 5, n)
amount = rng.gamma(2.0, 20.0, n).round(2)
totals = np.bincount(store, weights=amount, minlength=8)
counts = np.bincount(store, minlength=8)
means = totals / counts
table = np.zeros((8, 5))
np.add.at(table, (store, product), amount)
keys, inv = np.unique(store * 10 + product, return_inverse=True)
group_max = np.full(keys.size, -np.inf)
np.maximum.at(group_max, inv, amount)
best_store = int(np.argmax(totals))
share = table / table.sum(axis=1, keepdims=True)
result = {"totals": totals, "means": means, "table": table, "group_max": group_max, "best": best_store,
          "share": share, "n_groups": keys.size}
