"""Events that time work without synchronising: device events on accelerators, a monotonic clock
on the CPU.

All event classes share CUDA's event interface: ``record()`` marks a point, ``elapsed_time(end)``
gives the milliseconds between two recorded events, ``synchronize()`` waits until the event has
happened on its device. On the CPU the work is already done when ``record()`` returns, so the
event is just a clock reading.
"""

from __future__ import annotations

import time
from typing import Any, Callable

Clock = Callable[[], float]
EventFactory = Callable[..., Any]


class CPUEvent:
    """A point in time read from a monotonic clock (``time.perf_counter`` unless told)."""

    def __init__(self, enable_timing: bool = True, clock: Clock | None = None) -> None:
        self.clock = clock if clock is not None else time.perf_counter
        self.seconds: float | None = None

    def record(self, stream: Any = None) -> None:
        """Marks now."""
        self.seconds = self.clock()

    def elapsed_time(self, end: "CPUEvent") -> float:
        """Milliseconds from this event to ``end``."""
        if self.seconds is None or end.seconds is None:
            raise RuntimeError("both events must be recorded before asking the time between them")
        return (end.seconds - self.seconds) * 1000.0

    def synchronize(self) -> None:
        """Nothing to wait for on the CPU."""

    def query(self) -> bool:
        """Always done on the CPU."""
        return self.seconds is not None


def cpu_events(clock: Clock) -> EventFactory:
    """An event factory reading ``clock`` (tests pass a fake clock)."""

    def make(enable_timing: bool = True) -> CPUEvent:
        return CPUEvent(enable_timing=enable_timing, clock=clock)

    return make


def event_factory(device: Any = None) -> EventFactory:
    """The event class for ``device``: ``torch.cuda.Event`` (or the XPU one) on an accelerator,
    :class:`CPUEvent` otherwise or when torch is absent."""
    kind = getattr(device, "type", None) or (str(device).split(":")[0] if device else "cpu")
    if kind == "cpu":
        return CPUEvent
    try:
        import torch
    except ImportError:
        return CPUEvent
    backend = getattr(torch, kind, None)
    event = getattr(backend, "Event", None)
    return event if event is not None else CPUEvent
