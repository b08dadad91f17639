"""``BenchObserver``: one object that a benchmark (or its voirfile) uses to time its loader and
report its losses, with the interface of Python milabench's benchmate."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable

from .channel import Push, give_push, smuggle_push
from .metrics import LazyLossPusher, ManualTimedIterator, TimedIterator


class BenchObserver:
    """Wraps a loader (``loader``/``iterate``), a loss function (``criterion``) and an optimizer
    (``optimizer``) so that throughput and losses reach milabench.

    Positional and unknown keyword arguments go to the :class:`TimedIterator` (``event_fn``,
    ``earlystop``, ``batch_size_fn``, ``raise_stop_program``, ``skip``, ...). ``stdout=True``
    smuggles records in stdout instead of going through voir. Only ``rank`` 0 reports losses.
    """

    def __init__(
        self,
        *args: Any,
        backward_callback: Callable[[], None] | None = None,
        step_callback: Callable[[], None] | None = None,
        stdout: bool = False,
        rank: int | None = None,
        push: Push | None = None,
        **kwargs: Any,
    ) -> None:
        self.args = args
        self.kwargs = kwargs
        self.backward_callback = backward_callback
        self.optimizer_step_callback = step_callback
        self.task = "train"
        self.rank = int(os.environ.get("RANK", 0)) if rank is None else rank
        self.losses = LazyLossPusher(self.task)
        self.instance: TimedIterator | None = None
        if push is not None:
            self.pusher = push
        elif stdout:
            self.pusher = smuggle_push()
        else:
            self.pusher = give_push()

    @property
    def wrapped(self) -> TimedIterator | None:
        """The timed iterator made by :meth:`loader` (None before)."""
        return self.instance

    def on_iterator_stop_iterator(self) -> None:
        """Sends the losses recorded so far (called whenever the iterator pushes its rates)."""
        self.losses.push(self.pusher)

    def record_loss(self, loss: Any) -> Any:
        """Keeps ``loss`` for the next push (no synchronisation) and returns it."""
        if self.rank == 0:
            self.losses.record(loss)
        return loss

    def record_metric(self, time: float | None = None, **kwargs: Any) -> None:
        """Sends a record now, stamped with ``time`` (the wall time when omitted)."""
        self.pusher(**kwargs, time=_now() if time is None else time)

    def loader(self, loader: Iterable[Any], custom_step: bool = False) -> TimedIterator:
        """Returns ``loader`` wrapped in a timed iterator (a manual one when ``custom_step``: the
        loop then calls :meth:`step`). One per observer: later calls return the first."""
        if self.instance is not None:
            return self.instance
        kind = ManualTimedIterator if custom_step else TimedIterator
        instance = kind(loader, *self.args, rank=self.rank, push=self.pusher, **self.kwargs)
        instance.task = self.task
        instance.on_iterator_stop_iterator = self.on_iterator_stop_iterator  # type: ignore[method-assign]
        self.instance = instance
        return instance

    def iterate(self, iterator: Iterable[Any], custom_step: bool = False) -> TimedIterator:
        """Same as :meth:`loader`."""
        return self.loader(iterator, custom_step=custom_step)

    def step(self) -> None:
        """Ends one observation of a manual timed iterator."""
        if self.instance is None:
            raise RuntimeError("call loader() before step()")
        self.instance.step()

    def original_dataloader(self) -> TimedIterator | None:
        """The timed iterator (Python benchmate's name for it)."""
        return self.instance

    @property
    def done(self) -> bool:
        """Whether the timed iterator made all its observations."""
        return self.instance is not None and self.instance.done

    def criterion(self, criterion: Callable[..., Any]) -> Callable[..., Any]:
        """Wraps a loss function: every loss it returns is recorded; ``backward_callback`` runs
        after each ``loss.backward()``."""

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            loss = criterion(*args, **kwargs)
            if self.backward_callback is not None:
                original = loss.backward
                callback = self.backward_callback

                def backward(*b_args: Any, **b_kwargs: Any) -> Any:
                    result = original(*b_args, **b_kwargs)
                    callback()
                    return result

                loss.backward = backward
            self.record_loss(loss)
            return loss

        return wrapped

    def optimizer(self, optimizer: Any) -> Any:
        """Makes ``step_callback`` run after each ``optimizer.step()``; returns the optimizer."""
        if self.optimizer_step_callback is None:
            return optimizer
        original = optimizer.step
        callback = self.optimizer_step_callback

        def step(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            callback()
            return result

        # torch's learning-rate schedulers look for the bound method's owner.
        step.__self__ = original.__self__  # type: ignore[attr-defined]
        step.__func__ = original.__func__  # type: ignore[attr-defined]
        optimizer.step = step
        return optimizer

    def override_return_value(self, function: Callable[..., Any], override: Callable[..., Any]) -> None:
        """Under voir, replaces what ``function`` returns by ``override(value)`` (a ptera probe)."""
        from ptera import refstring

        from .channel import current_overseer

        ov = current_overseer()
        if ov is None:
            raise RuntimeError("override_return_value needs the script to run under voir")
        probe = ov.probe(f"{refstring(function)}() as retval", overridable=True)
        probe["retval"].override(override)


def _now() -> float:
    return time.time()
