"""Progress bars that do not flood a benchmark's log.

``tqdm`` here is tqdm's bar redrawn at most every 30 seconds (and at least every 60), and hidden
when ``MILABENCH_NO_PROGRESS`` is set to a non-zero integer: a bar redrawn ten times a second
fills milabench's ``.data`` files with ``line`` events. tqdm is imported when the name is first
used, so ``import benchmate.progress`` works without it.
"""

from __future__ import annotations

import os
from typing import Any

from ._optional import require

MIN_INTERVAL = 30
MAX_INTERVAL = 60


def progress_disabled() -> bool:
    """Whether ``MILABENCH_NO_PROGRESS`` hides the bars (an integer other than 0)."""
    return int(os.environ.get("MILABENCH_NO_PROGRESS") or 0) != 0


def _throttled_tqdm() -> type:
    base = require("tqdm", "benchmate.progress.tqdm").tqdm

    class ThrottledTqdm(base):  # type: ignore[misc, valid-type]
        """tqdm with benchmate's redraw intervals (longer ones asked for are kept)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = kwargs.get("disable", False) or progress_disabled()
            kwargs["mininterval"] = max(MIN_INTERVAL, kwargs.get("mininterval", MIN_INTERVAL))
            kwargs["maxinterval"] = max(MAX_INTERVAL, kwargs.get("maxinterval", MAX_INTERVAL))
            super().__init__(*args, **kwargs)

    ThrottledTqdm.__name__ = ThrottledTqdm.__qualname__ = "tqdm"
    return ThrottledTqdm


def __getattr__(name: str) -> Any:
    if name == "tqdm":
        globals()["tqdm"] = cls = _throttled_tqdm()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
