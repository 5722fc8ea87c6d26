"""Descriptive statistics of a sample: moments, skewness, kurtosis, quantiles, z-scores, outliers."""
np.random.seed(5)
x = np.concatenate([np.random.gamma(2.0, 1.5, 300), np.array([25.0, 30.0])])
mean = x.mean()
std = x.std(ddof=1)
z = (x - mean) / std
m2 = np.mean((x - mean) ** 2)
skew = np.mean((x - mean) ** 3) / m2 ** 1.5
kurt = np.mean((x - mean) ** 4) / m2 ** 2 - 3
q1, med, q3 = np.percentile(x, [25, 50, 75])
iqr = q3 - q1
outliers = np.flatnonzero((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr))
result = {"mean": mean, "std": std, "skew": skew, "kurtosis": kurt, "quartiles": np.array([q1, med, q3]),
          "outliers": outliers, "max_z": z.max(), "var": np.var(x), "sem": std / np.sqrt(x.size),
          "ptp": np.ptp(x), "mode_bin": np.argmax(np.histogram(x, bins=20)[0])}
