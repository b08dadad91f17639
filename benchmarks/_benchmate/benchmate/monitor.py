"""voir instruments for ``voirfile.py``: what milabench needs from a benchmark run under voir.

``voirfile_monitor(ov, options)`` is the one call most voirfiles make (as in Python milabench):
it forwards the records milabench reads (rates, losses, progress, monitor samples) to the data
channel, stops the program through milabench after ``options.stop`` rate observations (rank 0
only), and, when ``options.gpu_poll`` is positive, samples the GPUs from inside the process.
milabench-rs samples GPUs and the CPU itself, so the in-process monitors are optional.
"""

from __future__ import annotations

import os
from typing import Any

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
    from voir.instruments import early_stop, log

    if getattr(options, "dash", False):
        from voir.instruments import dash

        ov.require(dash)
    instruments = [log(*log_patterns(), context="task")]
    rank = get_rank()
    if rank <= 0:
        stop = get_observation_count(int(options.stop))
        instruments.append(early_stop(n=stop, key="rate", task="train", signal="stop"))
    poll = get_poll_interval(float(getattr(options, "gpu_poll", 0) or 0))
    if poll > 0 and rank <= 0 and os.environ.get("BENCHMATE_GPU_MONITOR", "0") == "1":
        from voir.instruments.gpu import gpu_monitor
        from voir.instruments.monitor import monitor

        instruments.append(monitor(poll_interval=poll, gpudata=gpu_monitor()))
    ov.require(*instruments)
