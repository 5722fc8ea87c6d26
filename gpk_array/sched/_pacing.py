"""Compute pacing: the token bucket over busy time, and the pacing half of a Context (its share of device time, its
SM target, the confined stream of a paced context, throttling, timed launches).
"""

from . import _aio, _clock, _cuda
from ._state import current_context

__all__ = ["TokenBucket", "ContextPacing"]


class TokenBucket:
    """Token bucket over busy time.

    Tokens are seconds of device time. The bucket refills at ``rate`` seconds per wall-clock second (``rate`` is the
    share of the device a context may keep busy, 0 < rate <= 1) up to ``burst`` seconds, and each finished step is
    charged its measured duration. When the balance is negative the next step waits ``-balance / rate`` seconds, so
    over any long window the context is busy at most ``rate`` of the time (plus ``burst``).
    """

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


class ContextPacing:
    """The pacing methods of :class:`~gpk_array.sched.Context` (a base class of it; the state they use, from the
    bucket to the confined stream, is set up by ``Context.__init__``). ``Context.pace``, ``pace_async``, ``launch``
    and ``run`` are these steps in order: close the step, throttle, place the next one, open it."""

    def _rate(self):
        """The share of device time the context may use now: its ``bandwidth`` (1 without one), lowered to its tier's
        contention share while a higher tier is busy."""
        rate = 1.0 if self.bandwidth is None else self.bandwidth
        share = self._sched.contention_share.get(self.qos)
        if share is not None and share < rate and self._sched._higher_tier_busy(self):
            rate = share
        return rate

    def _sm_target(self):
        """SMs this context's GEMMs should plan for (gpk_array's cuBLASLt path): the SMs of its confined stream
        while on it; else, while other contexts run confined, the SMs outside their green context (a kernel planned
        for the whole device would leave its last CTAs waiting for SMs that a confined context's long-running CTAs
        hold), times the context's pacing rate below full rate; 0 (all) otherwise. A non-zero
        target also changes the kernels: gpk_array._gpu then takes cuBLASLt's heuristic choice for that many SMs
        (no SM90 instances, no timed tuning), so a guaranteed context's GEMMs run other kernels while a neighbour is
        confined."""
        sched = self._sched
        held = sched._confined_sms
        if not self._paced:
            if sched._paced_cuda and sched.contention_sms and self._cuda and _cuda.capturing():
                return self._capture_sm_target()
            if not held:
                return 0  # the common case, on every GEMM call: an unpaced context and nothing confined
        conf = self._confined
        if conf and self.stream is conf[0]:
            return conf[1]
        if held and _clock.monotonic() >= sched._confined_until:
            held = 0  # no confined context stepped within the hold: nothing to plan around
        rate = self._rate() if self._paced else 1.0
        if rate >= 1.0 and not held:
            return 0
        free = max(1, _cuda.sm_count(self.device_id) - held)
        return free if rate >= 1.0 else max(1, int(free * rate))

    def _capture_sm_target(self):
        """While an unpaced context captures a CUDA graph and a lower-tier paced context lives on the device: the SMs
        outside the green context that context would be confined to. The graph is replayed long after the capture,
        whatever the neighbours do by then, so its GEMMs plan for the contended case; small GEMMs, which a
        latency-critical step records, do not fill the device either way."""
        sched = self._sched
        if not sched._lower_tier_paced(self):
            return 0
        return max(1, _cuda.sm_count(self.device_id) - max(sched._confined_sms, sched.contention_sms))

    def _place(self):
        """CUDA, paced: the next step runs on the confined stream (a green context of ``contention_sms`` SMs) while
        a higher tier is busy or was active within ``confine_hold_s``, on the context's own stream otherwise. Called
        at step boundaries (pace, launch).

        The hold is longer than the pacing window on purpose: a kernel cannot be taken off the SMs it runs on, so
        whatever a paced context queued on the whole device while the higher tier was quiet delays that tier's next
        steps. Staying confined through the short gaps of a serving loop keeps that to the first step after a longer
        quiet spell."""
        sched = self._sched
        sms = sched.contention_sms
        if not (sms and self._cuda and self._paced):
            return
        self._check_alive()  # destroyed while pacing waited: no new green stream for it
        if sched._higher_tier_busy(self, sched.confine_hold_s):
            conf = self._confined
            if conf is None:
                try:
                    conf = self._confined = _cuda.green_stream(self.device_id, sms, self.priority)
                except _cuda.GreenContextError:
                    conf = self._confined = False  # not supported here: stay on the own stream, stop asking
            if not conf:
                return
            target = conf[0]
            self._confined_steps += 1
        else:
            target = self._full_stream
        if target is not self.stream:
            self._move_to(target)
        sched._note_confined(self)

    def _move_to(self, new):
        """Make ``new`` the context's stream, ordered after everything queued on the old one. Only while the context
        is entered by at most this thread (or not at all): sessions elsewhere keep one stream order."""
        # Not locked against a thread entering the context at this very moment (that thread may still queue its
        # work on the old stream): the enter path stays lock-free for its per-call cost.
        entered = len(self._entered)
        here = _cuda.active_context() is self
        if entered > 1 or (entered == 1 and not here):
            return
        old = self.stream
        cp = _cuda.cupy()
        with _cuda.on_device(self.device_id):
            ev = cp.cuda.Event(disable_timing=True)
            ev.record(old)
            new.wait_event(ev)
        if here and not _cuda.swap_stream(self, old, new):
            return  # the thread runs a stream of its own inside the context (``with cupy.cuda.Stream():``)
        self.stream = new

    def _charge(self, seconds):
        """Charge ``seconds`` of device time to the context's bucket (and its partition's, below a full share)."""
        self._bucket.charge(seconds)
        p = self.partition
        if p is not None and p.compute_share < 1.0:
            with p._bucket_lock:
                p._bucket.charge(seconds)

    def _delay(self):
        """Seconds to wait before the next step: the longer of the context's and its partition's bucket delays."""
        d = self._bucket.delay(self._rate())
        p = self.partition
        if p is not None and p.compute_share < 1.0:
            with p._bucket_lock:
                d = max(d, p._bucket.delay(p.compute_share))
        return d

    def _harvest(self):
        """CUDA: charge the steps that finished. Returns the oldest unfinished end event if over the window."""
        cp = _cuda.cupy()
        with self._lock:
            pending = self._pending
            while pending:
                start, end = pending[0]
                if not _aio.event_done(end):
                    break
                pending.popleft()
                self._charge(cp.cuda.get_elapsed_time(start, end) / 1e3)
            if len(pending) > self._sched.max_inflight:
                return pending[0][1]
        return None

    def _record(self, timing=True):
        """A CUDA event recorded on the context's stream now (timed when ``timing``)."""
        cp = _cuda.cupy()
        with _cuda.on_device(self.device_id):
            ev = cp.cuda.Event(disable_timing=not timing)
            ev.record(self.stream)
        return ev

    def _step_boundary(self):
        """Close the current step (for pacing) and mark activity.

        A step runs from the mark opened when the previous ``pace()`` returned to this call: on CUDA the device
        time between an event recorded then and one recorded now (time the stream sat idle before the mark is
        not counted), on the CPU the host time.
        """
        now = _clock.monotonic()
        self._last_activity = now
        with self._lock:
            self._steps += 1
        if self._cuda:
            end = self._record(timing=self._paced)
            self._busy_event = end
            if self._paced:
                with self._lock:
                    start, self._mark = self._mark, None
                    if start is not None:
                        self._pending.append((start, end))
        elif self._paced:
            with self._lock:
                start, self._mark = self._mark, None
                if start is not None:
                    self._charge(now - start)

    def _open_step(self):
        """Open the next step: its start mark (an event on CUDA, the clock's reading on the CPU)."""
        if self._cuda:
            ev = self._record(timing=True)
            with self._lock:
                self._mark = ev
        else:
            with self._lock:
                self._mark = _clock.monotonic()

    def _throttle(self):
        """Paced: wait (blocking) until at most ``max_inflight`` steps are in flight and the buckets allow a step."""
        if not self._paced:
            return
        if self._cuda:
            while True:
                oldest = self._harvest()
                if oldest is None:
                    break
                oldest.synchronize()
        delay = self._delay()
        if delay > 0:
            with self._lock:
                self._queued += 1
            try:
                _clock.sleep(delay)
            finally:
                with self._lock:
                    self._queued -= 1
                    self._throttled_s += delay

    async def _throttle_async(self):
        """:meth:`_throttle` on the event loop (event polling and ``async_sleep``), then the task's CuPy state back."""
        if not self._paced:
            return
        if self._cuda:
            while True:
                oldest = self._harvest()
                if oldest is None:
                    break
                await _aio.await_event(oldest, alive=self._check_alive)
        delay = self._delay()
        if delay > 0:
            with self._lock:
                self._queued += 1
            try:
                await _clock.async_sleep(delay)
            finally:
                with self._lock:
                    self._queued -= 1
                    self._throttled_s += delay
            self._check_alive()
        _cuda.activate(current_context())

    def _launch_now(self, fn, args, kwargs):
        """Call ``fn`` inside the context as one step: its device time (host time on the CPU) charged when paced."""
        with self:
            if self._cuda:
                if self._paced:
                    start = self._record(timing=True)
                res = fn(*args, **kwargs)
                end = self._record(timing=self._paced)
                self._busy_event = end
                if self._paced:
                    with self._lock:
                        self._pending.append((start, end))
            else:
                t0 = _clock.monotonic()
                res = fn(*args, **kwargs)
                if self._paced:
                    with self._lock:
                        self._charge(_clock.monotonic() - t0)
            self._last_activity = _clock.monotonic()
        with self._lock:
            self._launches += 1
        return res
