# Daily measurements indexed by dates: datetime64 ranges, date arithmetic, weekdays and business days, monthly
# aggregation, days as floats for a trend fit.
rng = np.random.default_rng(3)
days = np.arange("2024-01-01", "2024-04-01", dtype="datetime64[D]")
values = 10 + 0.05 * np.arange(days.size) + rng.normal(0, 1, days.size)

elapsed = (days - days[0]) / np.timedelta64(1, "D")
slope, intercept = np.polyfit(elapsed, values, 1)
months = days.astype("datetime64[M]")
month_keys, month_idx = np.unique(months, return_inverse=True)
monthly_mean = np.bincount(month_idx, weights=values) / np.bincount(month_idx)
weekday = (days.astype("datetime64[D]").view("int64") - 4) % 7  # 1970-01-01 was a Thursday
is_bd = np.is_busday(days)
weekday_mean = values[is_bd].mean()
n_bdays = np.busday_count(days[0], days[-1])
late = days[values > values.mean() + values.std()]
gap = np.diff(late)
last_week = days[days >= np.datetime64("2024-03-25")]
stamp = np.datetime_as_string(days[[0, -1]])
shifted = days[:5] + np.timedelta64(1, "W")

result = {
    "slope": slope, "intercept": intercept, "month_keys": month_keys, "monthly_mean": monthly_mean,
    "weekday": weekday, "weekday_mean": weekday_mean, "n_bdays": int(n_bdays), "late": late,
    "gap_days": gap.astype(int), "last_week": last_week, "stamp": stamp, "shifted": shifted,
    "span": int((days[-1] - days[0]).astype(int)),
}
