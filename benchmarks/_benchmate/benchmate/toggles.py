"""Environment knobs read by benchmate, with the names Python milabench's benchmate uses."""

from __future__ import annotations

import json
import os
from typing import Callable, TypeVar

T = TypeVar("T")


def _flag(name: str, kind: Callable[[str], T], default: T) -> T:
    value = os.environ.get(name)
    return default if value is None or value == "" else kind(value)


def get_observation_count(value: int) -> int:
    """``BENCHMATE_OBSERVATION_COUNT`` if set, else ``value``."""
    return _flag("BENCHMATE_OBSERVATION_COUNT", int, value)


def get_poll_interval(value: float) -> float:
    """``BENCHMATE_POLL_INTERVAL`` if set, else ``value`` (seconds between monitor samples)."""
    return _flag("BENCHMATE_POLL_INTERVAL", float, value)


def stop_count(default: int = 60) -> int:
    """Rate observations to report: ``VOIR_EARLYSTOP_COUNT`` (set by milabench from
    ``voir.options.stop``), else ``default``."""
    return _flag("VOIR_EARLYSTOP_COUNT", int, default)


def skip_count(default: int = 0) -> int:
    """Warm-up observations to leave out: ``VOIR_EARLYSTOP_SKIP``, else ``voir.options.skip`` of
    the benchmark's settings (``MILABENCH_CONFIG``, set by milabench), else ``default``."""
    return _flag("VOIR_EARLYSTOP_SKIP", int, _configured_skip(default))


def _configured_skip(default: int) -> int:
    try:
        config = json.loads(os.environ.get("MILABENCH_CONFIG", "{}"))
        return int(config["voir"]["options"]["skip"])
    except (ValueError, KeyError, TypeError):
        return default


def earlystop_count() -> int:
    """Observations a timed loop makes before it ends: warm-up plus reported ones."""
    return stop_count() + skip_count()
