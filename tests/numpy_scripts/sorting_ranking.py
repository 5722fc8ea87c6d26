"""Ranks, percentiles of scores, top-k selection, searchsorted binning and lexicographic ordering."""
rng = np.random.default_rng(3)
scores = rng.normal(70, 10, size=200).round(3)
order = np.argsort(scores, kind="stable")
ranks = np.empty_like(order)
ranks[order] = np.arange(scores.size)
top5 = np.sort(scores)[::-1][:5]
bins = np.array([50, 60, 70, 80, 90])
grade_idx = np.searchsorted(bins, scores, side="right")
counts = np.bincount(grade_idx, minlength=bins.size + 1)
classes = rng.integers(0, 4, size=200)
lex = np.lexsort((scores, classes))
uniq, inv, cnt = np.unique(classes, return_inverse=True, return_counts=True)
part = np.partition(scores, 10)[:10]
result = {"ranks": ranks, "top5": top5, "grade_counts": counts, "lex_first": lex[:10],
          "class_counts": cnt, "inverse_head": inv[:10], "bottom10": np.sort(part),
          "median_rank": ranks[np.argsort(scores)[100]]}
