"""Token throughput over time for a serving benchmark, from its requests' timings.

A serving benchmark knows, for each request, when it started, how long it took and how many
tokens it read and wrote. ``timeline`` turns that into a rate per time window, so that the
benchmark reports a series of rates (as a training loop does) rather than one average.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A request of no duration still spreads over this many seconds (its tokens then count nowhere,
# as their overlap with every window is zero).
MIN_DURATION = 0.001


@dataclass
class Request:
    """One request on the window's clock: seconds since the first request started."""

    start: float
    end: float
    tokens: float

    def overlap(self, low: float, high: float) -> float:
        """Seconds of this request inside ``[low, high]``."""
        return max(0.0, min(self.end, high) - max(self.start, low))


def _field(output: Any, name: str) -> Any:
    return output[name] if isinstance(output, dict) else getattr(output, name)


def requests(outputs: list[Any]) -> list[Request]:
    """The requests of ``outputs`` (dicts or objects with ``start_time``, ``latency``,
    ``prompt_len`` and ``output_tokens``, like vLLM's ``RequestFuncOutput``), with times counted
    from the earliest start."""
    raw = [
        (_field(o, "start_time"), _field(o, "latency"), _field(o, "prompt_len") + _field(o, "output_tokens"))
        for o in outputs
    ]
    if not raw:
        return []
    origin = min(start for start, _, _ in raw)
    return [Request(start - origin, start - origin + latency, tokens) for start, latency, tokens in raw]


def timeline(outputs: list[Any], number: int) -> list[dict[str, Any]]:
    """Cuts the span from the first request's start to the last one's end into ``number`` equal
    windows and returns one record per window: ``time`` (the window's end, in seconds since the
    first start), ``rate`` (tokens per second: each request's prompt and output tokens are
    shared among the windows in proportion to the time it spent in each), ``active_jobs``
    (requests touching the window), ``start_job`` and ``finished_job`` (requests starting,
    ending in it), ``ran_through`` (requests covering it whole) and ``active_jobs_pct`` (the
    requests' time in the window over its length: the mean concurrency). A window includes both
    its ends, as in Python milabench: a request ending on a boundary counts in both windows'
    ``finished_job``. No requests, or requests of no duration at all, give no windows."""
    jobs = requests(outputs)
    span = max((job.end for job in jobs), default=0.0)
    if span <= 0 or number <= 0:
        return []
    width = span / number
    windows = []
    for index in range(number):
        low, high = index * width, (index + 1) * width
        touching = [job for job in jobs if job.start <= high and job.end >= low]
        tokens = sum(
            job.tokens * job.overlap(low, high) / max(job.end - job.start, MIN_DURATION) for job in touching
        )
        windows.append(
            {
                "time": high,
                "rate": tokens / width,
                "active_jobs": len(touching),
                "start_job": sum(low <= job.start <= high for job in touching),
                "finished_job": sum(low <= job.end <= high for job in touching),
                "ran_through": sum(job.start < low and job.end > high for job in touching),
                "active_jobs_pct": sum(job.overlap(low, high) for job in touching) / width,
            }
        )
    return windows
