"""Bootstrap confidence interval of the mean and median of a skewed sample."""
np.random.seed(123)
sample = np.random.exponential(scale=2.0, size=120)
n_boot = 2000
idx = np.random.randint(0, sample.size, size=(n_boot, sample.size))
boot = sample[idx]
means = boot.mean(axis=1)
medians = np.median(boot, axis=1)
ci_mean = np.percentile(means, [2.5, 97.5])
ci_median = np.quantile(medians, [0.025, 0.975])
result = {"mean": sample.mean(), "ci_mean": ci_mean, "ci_median": ci_median,
          "boot_se": means.std(ddof=1), "bias": means.mean() - sample.mean()}
