"""Rolling dice: frequency tables, sums of two dice, a chi-square goodness-of-fit statistic."""
np.random.seed(6)
rolls = np.random.randint(1, 7, size=(6000, 2))
faces = np.bincount(rolls[:, 0], minlength=7)[1:]
sums = rolls.sum(axis=1)
sum_freq = np.bincount(sums, minlength=13)[2:]
expected = np.array([1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1]) / 36 * len(sums)
chi2 = np.sum((sum_freq - expected) ** 2 / expected)
doubles = np.mean(rolls[:, 0] == rolls[:, 1])
longest = 0
run = 0
for v in (rolls[:, 0] == 6):
    run = run + 1 if v else 0
    longest = max(longest, run)
result = {"faces": faces, "sum_freq": sum_freq, "chi2": chi2, "doubles": doubles, "longest_six_run": longest}
