"""Token bucket over busy time.

Tokens are seconds of device time. The bucket refills at ``rate`` seconds per wall-clock second (``rate`` is the
share of the device a context may keep busy, 0 < rate <= 1) up to ``burst`` seconds, and each finished step is
charged its measured duration. When the balance is negative the next step waits ``-balance / rate`` seconds, so
over any long window the context is busy at most ``rate`` of the time (plus ``burst``).
"""

from . import _clock

__all__ = ["TokenBucket"]


class TokenBucket:
    __slots__ = ("burst", "tokens", "_last", "charged_s")

    def __init__(self, burst=0.02):
        if burst <= 0:
            raise ValueError(f"burst must be > 0 seconds, got {burst!r}")
        self.burst = float(burst)
        self.tokens = self.burst
        self._last = _clock.monotonic()
        self.charged_s = 0.0

    def _refill(self, rate, now):
        elapsed = now - self._last
        self._last = now
        if elapsed > 0:
            self.tokens = min(self.burst, self.tokens + elapsed * rate)

    def charge(self, seconds):
        """Take ``seconds`` of busy time (a finished step's duration)."""
        if seconds > 0:
            self.tokens -= seconds
            self.charged_s += seconds

    def delay(self, rate, now=None):
        """Seconds to wait before the next step at ``rate``; 0 when the balance is not negative."""
        if now is None:
            now = _clock.monotonic()
        self._refill(rate, now)
        if self.tokens >= 0.0:
            return 0.0
        if rate <= 0:
            return float("inf")
        return -self.tokens / rate
