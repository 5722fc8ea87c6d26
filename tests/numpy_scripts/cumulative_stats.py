"""Running statistics: cumulative sums and products, running max/min, drawdowns, diff and gradient."""
np.random.seed(8)
returns = np.random.normal(0.0005, 0.01, 250)
wealth = np.cumprod(1 + returns)
running_max = np.maximum.accumulate(wealth)
drawdown = wealth / running_max - 1
running_min = np.minimum.accumulate(returns)
cum_mean = np.cumsum(returns) / np.arange(1, returns.size + 1)
log_ret = np.diff(np.log(wealth))
velocity = np.gradient(wealth)
accel = np.gradient(velocity, 2.0)
result = {"wealth_tail": wealth[-5:], "max_drawdown": drawdown.min(), "running_min": running_min[::50],
          "cum_mean": cum_mean[::25], "log_ret_head": log_ret[:5], "velocity": velocity[::50],
          "accel": accel[::50], "ediff": np.ediff1d(wealth[:6], to_begin=0.0), "nancumsum": np.nancumsum(
              np.where(returns > 0.01, np.nan, returns))[-1]}
