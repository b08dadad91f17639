"""``StepTimer``: rates for training loops that are not a Python iterator over batches (JAX
loops compiled as a whole, loops of several micro-batches per update)."""

from __future__ import annotations

import time
from typing import Any, Callable

from .channel import Push
from .toggles import earlystop_count


class StepTimer:
    """Counts the items processed since the last observation (:meth:`step`) and, at each
    :meth:`end`, pushes their rate and the progress of the run.

    ``pusher`` receives the records (``benchmate.metrics.give_push()`` usually); ``sync`` is
    called before the clock is read, so that asynchronous work (a device queue) is counted in the
    observation it belongs to. Each :meth:`end` pushes ``{"rate": items/s, "units": "items/s",
    "task": "train"}`` then ``{"progress": (observations, total), "task": "early_stop"}``, where
    ``total`` is the warm-up plus the reported observations milabench asks for
    (``VOIR_EARLYSTOP_COUNT`` and ``VOIR_EARLYSTOP_SKIP``) and ``observations`` counts this one.
    The timer only reports: milabench stops the benchmark after enough rates. ``timesteps`` is
    the caller's: a place to keep a running count between callbacks (Python milabench's JAX
    benchmarks keep their environment steps there).
    """

    def __init__(
        self,
        pusher: Push,
        sync: Callable[[], Any] = lambda: None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.pusher = pusher
        self.sync = sync
        self.clock = clock
        self.total_obs = earlystop_count()
        self.n_obs = 0
        self.n_size = 0
        self.timesteps: Any = 0
        self.start_time = clock()

    def step(self, step_size: float) -> None:
        """Adds ``step_size`` items to the current observation."""
        self.n_size += step_size

    def end(self) -> None:
        """Ends the current observation: pushes its rate and the progress, starts the next."""
        self.sync()
        now = self.clock()
        elapsed = now - self.start_time
        if elapsed > 0:
            self.pusher(rate=self.n_size / elapsed, units="items/s", task="train")
        self.n_obs += 1
        self.pusher(progress=(self.n_obs, self.total_obs), task="early_stop")
        self.n_size = 0
        self.start_time = now

    def log(self, **record: Any) -> None:
        """Pushes ``record`` as it is (e.g. ``memory_peak=..., units="MiB"``)."""
        self.pusher(**record)
