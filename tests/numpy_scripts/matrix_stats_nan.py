"""Column statistics of a data matrix with missing entries; imputation and standardisation."""
np.random.seed(31)
data = np.random.normal(50, 10, size=(40, 6))
data[np.random.rand(40, 6) < 0.1] = np.nan
col_mean = np.nanmean(data, axis=0)
col_std = np.nanstd(data, axis=0, ddof=1)
col_count = np.sum(~np.isnan(data), axis=0)
imputed = np.where(np.isnan(data), col_mean, data)
standardized = (imputed - imputed.mean(axis=0)) / imputed.std(axis=0)
row_ok = ~np.isnan(data).any(axis=1)
result = {"col_mean": col_mean, "col_std": col_std, "col_count": col_count, "complete_rows": int(row_ok.sum()),
          "std_check": standardized.std(axis=0), "nansum": np.nansum(data, axis=1)[:5],
          "nanvar": np.nanvar(data, axis=0), "nanmin": np.nanmin(data, axis=0), "nanprod": np.nanprod(
              data[:3] / 50, axis=1), "quantiles": np.nanquantile(data, [0.25, 0.75], axis=0)}
