"""milabench's standard voir instruments (rates, losses, early stop, argument capture).

A benchmark whose voirfile needs nothing more imports them::

    from benchmate.default_voirfile import Config, instrument_main

voir collects every ``instrument_*`` name of the voirfile's globals, imported ones included, and
fills ``Config`` from the suite's ``voir.options``.
"""

from dataclasses import dataclass

from voir import configurable

from benchmate.instruments import capture_arguments
from benchmate.monitor import voirfile_monitor


@dataclass
class Config:
    """Options given by the suite's ``voir.options``."""

    # Rate observations to report before milabench stops the benchmark.
    stop: int = 60
    # Warm-up observations left out (the timed iterator reads VOIR_EARLYSTOP_SKIP).
    skip: int = 5
    # Length of an observation window (kept for compatibility; windows are steps here).
    interval: str = "1s"
    # Seconds between in-process GPU samples (0: milabench samples them itself).
    gpu_poll: float = 0
    # Show voir's terminal dashboard.
    dash: bool = False


@configurable
def instrument_main(ov, options: Config):
    """Registers the standard instruments."""
    yield ov.phases.init
    voirfile_monitor(ov, options)
    ov.require(capture_arguments)
