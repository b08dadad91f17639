"""Helpers shared by milabench benchmarks, installed in every benchmark environment.

- :mod:`benchmate.channel`: the data channel to milabench (``DATA_FD``, stdout smuggling, voir).
- :mod:`benchmate.metrics`: :class:`~benchmate.metrics.TimedIterator`, the rate observer.
- :mod:`benchmate.observer`: :class:`~benchmate.observer.BenchObserver`, the one-object helper.
- :mod:`benchmate.monitor`: ``voirfile_monitor`` and the other voirfile instruments.
- :mod:`benchmate.options`: ``--device``, ``--precision``, ``--batch-size`` and their meaning.

The names follow Python milabench's benchmate, so its benchmark folders import them unchanged.
"""

__version__ = "0.2.0"
