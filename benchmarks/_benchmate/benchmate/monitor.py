"""voir instruments for ``voirfile.py``: what milabench needs from a benchmark run under voir.

``voirfile_monitor(ov, options)`` is the one call most voirfiles make (as in Python milabench):
it forwards the records milabench reads (rates, losses, progress, monitor samples) to the data
channel, stops the program through milabench after ``options.stop`` rate observations (rank 0
only), and, when ``options.gpu_poll`` is positive, samples the GPUs from inside the process.
milabench-rs samples GPUs and the CPU itself, so the in-process monitors are optional.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any, Callable, Iterable

from .toggles import get_observation_count, get_poll_interval

LEAN_KEYS = (
    "value", "progress", "rate", "units", "loss", "time",
    "gpudata", "memory_peak", "cpudata", "process", "iodata", "netdata",
)
DEBUG_KEYS = ("__iter__", "overhead", "process_time")


def log_patterns() -> tuple[str, ...]:
    """Keys forwarded to milabench, by ``BENCHMATE_LOG_MODE``: ``lean`` (default), ``debug``
    (lean plus timing internals) or ``all``."""
    mode = os.environ.get("BENCHMATE_LOG_MODE", "lean").lower()
    if mode == "all":
        return ("*",)
    if mode == "debug":
        return LEAN_KEYS + DEBUG_KEYS
    return LEAN_KEYS


def get_rank() -> int:
    """``RANK`` as an int, -1 when unset (not a distributed run)."""
    try:
        return int(os.environ.get("RANK", -1))
    except ValueError:
        return -1


def voirfile_monitor(ov: Any, options: Any) -> None:
    """Registers the standard instruments on ``ov`` with the voirfile's ``options`` (fields
    ``stop``, and optionally ``dash``, ``gpu_poll``)."""
    if getattr(options, "dash", False):
        from voir.instruments import dash

        ov.require(dash)
    rank = get_rank()
    stop = get_observation_count(int(options.stop)) if rank <= 0 else None
    instruments = [forward_records(log_patterns(), context=("task",), stop=stop)]
    poll = get_poll_interval(float(getattr(options, "gpu_poll", 0) or 0))
    if poll > 0 and rank <= 0 and os.environ.get("BENCHMATE_GPU_MONITOR", "0") == "1":
        from voir.instruments.gpu import gpu_monitor
        from voir.instruments.monitor import monitor

        instruments.append(monitor(poll_interval=poll, gpudata=gpu_monitor()))
    ov.require(*instruments)


def key_filter(patterns: Iterable[str], context: Iterable[str] = ()) -> Callable[[dict], dict | None]:
    """The selection of voir's ``log`` instrument: the keys of a record that match one of
    ``patterns`` (names or ``fnmatch`` patterns), plus those matching ``context`` when at least
    one key matched a pattern; None when none did. Plain names are looked up in a set, so the
    usual case costs no pattern matching."""

    def split(items: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
        items = tuple(items)
        wild = tuple(p for p in items if any(c in p for c in "*?["))
        return frozenset(items), wild

    names, wild = split(patterns)
    context_names, context_wild = split(context)

    def matches(key: str, exact: frozenset[str], globs: tuple[str, ...]) -> bool:
        return key in exact or any(fnmatch.fnmatch(key, p) for p in globs)

    def select(record: dict) -> dict | None:
        if not wild and names.isdisjoint(record):
            return None
        kept = {}
        matched = False
        for key, value in record.items():
            if matches(key, names, wild):
                kept[key] = value
                matched = True
            elif matches(key, context_names, context_wild):
                kept[key] = value
        return kept if matched else None

    return select


def forward_records(patterns: Iterable[str], context: Iterable[str] = ("task",), stop: int | None = None) -> Any:
    """Instrument: voir's ``log`` and ``early_stop`` instruments in one subscriber of
    ``ov.given``, which a benchmark calls every step (voir's pair costs about three times as
    much per record, mostly in ``fnmatch``).

    Records selected by :func:`key_filter` go to the data channel. When ``stop`` is set, each
    ``rate`` record of the ``train`` task is followed by ``{"task": "early_stop", "progress":
    (count, stop)}`` (given, so it is forwarded too), and the one after the ``stop``-th writes the
    ``{"$event": "stop"}`` that tells milabench to end the benchmark."""
    select = key_filter(patterns, context)

    def instrument(ov: Any) -> Any:
        yield ov.phases.init
        rates = 0
        stopped = False

        def on_record(record: dict) -> None:
            nonlocal rates, stopped
            kept = select(record)
            if kept is not None:
                ov.log(kept)
            if stop is None or "rate" not in record or record.get("task") != "train":
                return
            rates += 1
            ov.give(task="early_stop", progress=(rates, stop))
            if rates > stop and not stopped:
                stopped = True
                ov.log({"$event": "stop"})

        ov.given.subscribe(on_record)

    return instrument
