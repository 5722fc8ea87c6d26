"""Spectrum of a two-tone signal with noise: peak frequencies, Parseval, filtering by zeroing bins."""
rng = np.random.default_rng(4)
fs, n = 200.0, 400
t = np.arange(n) / fs
x = np.sin(2 * np.pi * 12 * t) + 0.5 * np.sin(2 * np.pi * 31 * t) + 0.2 * rng.standard_normal(n)
X = np.fft.rfft(x)
freqs = np.fft.rfftfreq(n, d=1 / fs)
power = np.abs(X) ** 2 / n
top = freqs[np.argsort(power)[-2:]]
full = np.fft.fft(x)
parseval = np.sum(np.abs(full) ** 2) / n - np.sum(x ** 2)
Xf = X.copy()
Xf[freqs > 20] = 0
filtered = np.fft.irfft(Xf, n=n)
result = {"top_freqs": np.sort(top), "power_head": power[:40], "parseval": parseval,
          "filtered": filtered[:50], "freqs_check": np.fft.fftfreq(8, d=0.5)}
