"""Moving averages three ways (convolve, cumsum, sliding windows) and a rolling standard deviation."""
rng = np.random.default_rng(31)
t = np.arange(500)
signal = np.sin(2 * np.pi * t / 100) + 0.3 * rng.standard_normal(t.size)
k = 15
ma_conv = np.convolve(signal, np.ones(k) / k, mode="valid")
c = np.cumsum(np.insert(signal, 0, 0.0))
ma_cum = (c[k:] - c[:-k]) / k
windows = np.lib.stride_tricks.sliding_window_view(signal, k)
ma_win = windows.mean(axis=1)
roll_std = windows.std(axis=1, ddof=1)
ema = np.empty_like(signal)
alpha = 0.1
ema[0] = signal[0]
for i in range(1, signal.size):
    ema[i] = alpha * signal[i] + (1 - alpha) * ema[i - 1]
result = {"ma": ma_conv, "agree": max(np.abs(ma_conv - ma_cum).max(), np.abs(ma_conv - ma_win).max()),
          "roll_std": roll_std[::25], "ema_tail": ema[-10:]}
