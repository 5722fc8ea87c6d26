"""Prometheus metrics of a served model: request counts by endpoint and status, prompt and generated tokens, decode
steps, active and waiting sequences, slots, and a time-to-first-token histogram."""
import bisect
import collections
import threading

TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Counters and a time-to-first-token histogram, rendered in the Prometheus text format."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = collections.Counter()  # (endpoint, status) -> count
        self.prompt_tokens = 0
        self.generated_tokens = 0
        self.ttft_counts = [0] * (len(TTFT_BUCKETS) + 1)
        self.ttft_sum = 0.0

    def request(self, endpoint, status):
        """Count one answered request of ``endpoint`` with HTTP ``status``."""
        with self.lock:
            self.requests[endpoint, status] += 1

    def ttft(self, seconds):
        """Record one time to first token, in seconds, in the histogram."""
        with self.lock:
            self.ttft_counts[bisect.bisect_left(TTFT_BUCKETS, seconds)] += 1
            self.ttft_sum += seconds

    def families(self, loop):
        """[(family, type, help, [(sample name, labels, value)])] of this model's metrics."""
        with self.lock:
            fams = [("gpk_requests_total", "counter", "HTTP requests by endpoint and status code.",
                     [("gpk_requests_total", {"endpoint": e, "status": str(st)}, n)
                      for (e, st), n in sorted(self.requests.items())])]
            for name, doc, value in (("gpk_prompt_tokens_total", "Prompt tokens prefilled.", self.prompt_tokens),
                                     ("gpk_generation_tokens_total", "Tokens generated.", self.generated_tokens),
                                     ("gpk_decode_steps_total", "Batched decode steps run.", loop.engine.steps)):
                fams.append((name, "counter", doc, [(name, {}, value)]))
            for name, doc, value in (
                    ("gpk_active_sequences", "Sequences holding a KV-cache slot.", len(loop.engine.active)),
                    ("gpk_waiting_sequences", "Sequences queued for a slot.", loop.waiting_sequences),
                    ("gpk_slots", "KV-cache slots (the largest decode batch).", loop.engine.max_batch),
                    ("gpk_max_active_sequences", "Most sequences seen in one decode step.", loop.engine.max_active)):
                fams.append((name, "gauge", doc, [(name, {}, value)]))
            name = "gpk_time_to_first_token_seconds"
            samples, total = [], 0
            for le, n in zip(TTFT_BUCKETS + ("+Inf",), self.ttft_counts):
                total += n
                samples.append((f"{name}_bucket", {"le": str(le)}, total))
            samples += [(f"{name}_sum", {}, f"{self.ttft_sum:.6f}"), (f"{name}_count", {}, total)]
            fams.append((name, "histogram", "Time from a request's arrival to its first generated token.", samples))
        return fams

    def render(self, loop):
        """The Prometheus text of these metrics for one engine loop (no model label)."""
        return render_metrics([(None, self, loop)])


def render_metrics(entries):
    """The Prometheus text of several models' metrics: entries are (model name or None, Metrics, EngineLoop);
    with a name, each sample carries a ``model`` label. Each family's HELP and TYPE come once."""
    order, merged = [], {}
    for model, metrics, loop in entries:
        for name, kind, doc, samples in metrics.families(loop):
            if name not in merged:
                order.append(name)
                merged[name] = (kind, doc, [])
            extra = {} if model is None else {"model": model}
            merged[name][2].extend((sname, {**extra, **labels}, v) for sname, labels, v in samples)
    lines = []
    for name in order:
        kind, doc, samples = merged[name]
        lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
        for sname, labels, v in samples:
            lab = ",".join(f'{k}="{x}"' for k, x in labels.items())
            lines.append(f"{sname}{{{lab}}} {v}" if lab else f"{sname} {v}")
    return "\n".join(lines) + "\n"
