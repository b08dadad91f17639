"""Instruments a ``voirfile.py`` can list besides ``voirfile_monitor``."""

from __future__ import annotations

import sys
from typing import Any


def capture_arguments(ov: Any) -> Any:
    """Instrument: sends the script's command line once, as ``{"task": "main", "argv": [...]}``
    (kept in the ``.data`` file; the report ignores it)."""
    yield ov.phases.parse_args
    argv = getattr(ov.options, "ARGV", None)
    ov.log({"task": "main", "argv": list(argv if argv is not None else sys.argv[1:])})
