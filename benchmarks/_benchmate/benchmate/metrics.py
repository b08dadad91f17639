"""Timing a training loop: the timed iterator and lazy loss reporting.

A :class:`TimedIterator` wraps the loader of a training loop. Each observation is the time between
two consecutive ends of the loop body (waiting for data plus compute), measured with events of the
device (CUDA events on a GPU, a monotonic clock on the CPU), so the loop never waits for the
device. Observations are turned into ``rate`` records (items per second, ``task: train``) in
batches: once about every second of wall time, and when the loop ends. Only then is the device
synchronised, once. The first ``skip`` observations are warm-up and are not reported; after
``skip + stop`` observations the iterator ends (or raises ``StopProgram``), which ends the
benchmark cleanly.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Iterable, Iterator

from .channel import Push, auto_push, give_push  # noqa: F401 (benchmarks import give_push from here)
from .timers import Clock, EventFactory, event_factory
from .toggles import earlystop_count, get_observation_count, skip_count

try:
    from voir.phase import StopProgram
except ImportError:  # benchmate without voir (plain python launcher, tests)

    class StopProgram(BaseException):  # type: ignore[no-redef]
        """Raised to end a benchmark early and cleanly (voir's exception when voir is there)."""


def default_batch_size(batch: Any) -> int:
    """Items in a batch: ``len(batch[0])`` for an ``(inputs, targets)`` pair or list, the length of
    the first tensor of a mapping, else ``len(batch)``."""
    if isinstance(batch, (list, tuple)) and batch:
        return len(batch[0])
    if isinstance(batch, dict) and batch:
        return len(next(iter(batch.values())))
    return len(batch)


def _world_size() -> int:
    """Processes of a torch.distributed run (1 when torch is not in use): every rank is assumed
    to step with the same batch size, so the global rate is the local one times this."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 1
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


class LazyLossPusher:
    """Keeps losses as recorded (tensors stay on the device, no synchronisation) and turns them
    into plain floats only when pushed."""

    def __init__(self, task: str = "train") -> None:
        self.task = task
        self.pending: list[tuple[Any, float]] = []

    def record(self, loss: Any) -> None:
        """Keeps ``loss`` (detached when it is a tensor) with the wall time."""
        detach = getattr(loss, "detach", None)
        self.pending.append((detach() if detach else loss, time.time()))

    def push(self, pusher: Push) -> None:
        """Sends every kept loss as ``{"loss": float, "task", "time"}`` and forgets them."""
        pending, self.pending = self.pending, []
        for loss, when in pending:
            pusher(loss=float(loss), task=self.task, time=when)


class TimedIterator:
    """Wraps ``loader`` and reports its throughput without synchronising every step.

    Arguments keep the names of Python milabench's benchmate: ``event_fn`` (event class; from the
    device when omitted), ``rank`` (only rank 0 reports), ``push`` (where records go), ``device``,
    ``earlystop`` (total observations, warm-up included), ``raise_stop_program`` (raise
    ``StopProgram`` at the end instead of ending the iteration), ``batch_size_fn``. Ours on top:
    ``skip`` (warm-up observations not reported), ``interval`` (steps per observation),
    ``flush_every`` (seconds of wall time between pushes), ``wall_clock`` and ``units`` (of the
    rate: ``batch_size_fn`` may count something else than items, e.g. TFLOP).
    """

    def __init__(
        self,
        loader: Iterable[Any],
        event_fn: EventFactory | None = None,
        rank: int | None = None,
        push: Push | None = None,
        device: Any = None,
        earlystop: int | None = None,
        raise_stop_program: bool = False,
        batch_size_fn: Callable[[Any], int] | None = None,
        skip: int | None = None,
        interval: int = 1,
        flush_every: float = 1.0,
        wall_clock: Clock = time.monotonic,
        units: str = "items/s",
    ) -> None:
        self.loader = loader
        self.event_fn = event_fn if event_fn is not None else event_factory(device)
        self.rank = int(os.environ.get("RANK", 0)) if rank is None else rank
        self.message_push = push if push is not None else auto_push()
        self.device = device
        self.skip = skip_count() if skip is None else skip
        total = earlystop_count() if earlystop is None else earlystop
        self.early_stop = get_observation_count(total)
        self.raise_stop_program = raise_stop_program
        self.batch_size_fn = batch_size_fn or default_batch_size
        self.interval = max(1, interval)
        self.flush_every = flush_every
        self.wall_clock = wall_clock
        self.units = units
        self.task = "train"
        self.observations = 0  # observations made (warm-up included)
        self.pushed = 0  # rate records sent
        self.done = False
        # (start event, end event, items, wall time at the end): each rate carries its own end.
        self._pending: list[tuple[Any, Any, int, float]] = []
        self._last_flush = wall_clock()
        self._window_start: Any = None
        self._window_items = 0
        self._window_steps = 0
        self._manual = False

    def on_iterator_stop_iterator(self) -> None:
        """Called after every push (``BenchObserver`` sends its losses here)."""

    def __getattr__(self, item: str) -> Any:
        return getattr(self.loader, item)

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def _new_event(self) -> Any:
        event = self.event_fn(enable_timing=True)
        event.record()
        return event

    def _observe(self) -> None:
        """Closes the current window if it has enough steps; ends the loop when told."""
        self._window_steps += 1
        if self._window_steps < self.interval:
            return
        end = self._new_event()
        self._pending.append((self._window_start, end, self._window_items, time.time()))
        self._window_start = end
        self._window_items = 0
        self._window_steps = 0
        self.observations += 1
        if self.rank == 0:
            self.message_push(task="early_stop", progress=(self.observations, self.early_stop))
        if self.observations >= self.early_stop:
            self.done = True
            self.flush()
        elif self.wall_clock() - self._last_flush >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Waits for the device once and pushes the pending observations as rates."""
        self._last_flush = self.wall_clock()
        if not self._pending:
            self.on_iterator_stop_iterator()
            return
        pending, self._pending = self._pending, []
        pending[-1][1].synchronize()
        world = _world_size()
        first_index = self.observations - len(pending)
        for offset, (start, end, items, ended) in enumerate(pending):
            if first_index + offset < self.skip:
                continue
            seconds = start.elapsed_time(end) / 1000.0
            if seconds <= 0 or self.rank != 0:
                continue
            self.message_push(
                rate=items * world / seconds, units=self.units, task=self.task, time=ended
            )
            self.pushed += 1
        self.on_iterator_stop_iterator()

    def step(self) -> None:
        """For :class:`ManualTimedIterator`: one optimiser step ends here."""
        self._observe()

    def __iter__(self) -> Iterator[Any]:
        if self.done:
            return
        iterator = iter(self.loader)
        try:
            batch = next(iterator)  # loader start-up is not timed
        except StopIteration:
            return
        self._window_start = self._new_event()
        self._window_items = 0
        self._window_steps = 0
        try:
            while True:
                self._window_items += self.batch_size_fn(batch)
                yield batch
                if not self._manual:
                    self._observe()
                if self.done:
                    break
                try:
                    batch = next(iterator)
                except StopIteration:
                    break
        finally:
            self.flush()
        if self.done and self.raise_stop_program:
            raise StopProgram()


class ManualTimedIterator(TimedIterator):
    """A :class:`TimedIterator` whose observations end when the loop calls ``step()`` (gradient
    accumulation: several batches per optimiser step; their items add up)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._manual = True
