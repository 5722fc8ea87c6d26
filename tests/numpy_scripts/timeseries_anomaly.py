"""Anomaly detection in a seasonal time series with missing values: rolling z-scores and NaN-aware stats."""
rng = np.random.default_rng(42)
t = np.arange(365)
series = 10 + 3 * np.sin(2 * np.pi * t / 7) + rng.normal(0, 0.5, t.size)
series[[50, 120, 300]] += np.array([6.0, -7.0, 5.0])
series[rng.choice(t.size, 20, replace=False)] = np.nan
weekly = np.array([np.nanmean(series[d::7]) for d in range(7)])
deseason = series - weekly[t % 7]
mu = np.nanmean(deseason)
sd = np.nanstd(deseason)
z = (deseason - mu) / sd
anomalies = np.flatnonzero(np.abs(np.nan_to_num(z)) > 4)
filled = np.where(np.isnan(series), np.interp(t, t[~np.isnan(series)], series[~np.isnan(series)]), series)
result = {"weekly": weekly, "mu": mu, "sd": sd, "anomalies": anomalies, "n_missing": int(np.isnan(series).sum()),
          "filled_mean": filled.mean(), "nanmedian": np.nanmedian(series), "nanmax": np.nanmax(series),
          "nanargmin": np.nanargmin(series), "nanpct": np.nanpercentile(series, [10, 90])}
