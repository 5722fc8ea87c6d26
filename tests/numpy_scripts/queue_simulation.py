"""Single-server queue (M/M/1) by the Lindley recursion; utilisation and mean wait vs theory."""
np.random.seed(2)
lam, mu, n = 0.8, 1.0, 5000
inter = np.random.exponential(1 / lam, n)
service = np.random.exponential(1 / mu, n)
arrivals = np.cumsum(inter)
wait = np.zeros(n)
for i in range(1, n):
    wait[i] = max(0.0, wait[i - 1] + service[i - 1] - inter[i])
departures = arrivals + wait + service
busy = service.sum() / departures[-1]
rho = lam / mu
result = {"mean_wait": wait.mean(), "theory_wait": rho / (mu - lam), "utilisation": busy,
          "p_wait_zero": np.mean(wait == 0), "wait_percentiles": np.percentile(wait, [50, 90, 99])}
