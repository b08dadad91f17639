"""voir instruments of this benchmark: milabench's standard set (rates, losses, early stop)."""

from benchmate.default_voirfile import Config, instrument_main

__all__ = ["Config", "instrument_main"]
