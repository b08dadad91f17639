"""Helpers shared by milabench benchmarks, installed in every benchmark environment.

- :mod:`benchmate.channel`: the data channel to milabench (``DATA_FD``, stdout smuggling, voir).
- :mod:`benchmate.metrics`: :class:`~benchmate.metrics.TimedIterator`, the rate observer.
- :mod:`benchmate.observer`: :class:`~benchmate.observer.BenchObserver`, the one-object helper.
- :mod:`benchmate.monitor`: ``voirfile_monitor`` and the other voirfile instruments; the system
  monitors a script starts itself (``bench_monitor``, ``setupvoir``, ...).
- :mod:`benchmate.options`: ``--device``, ``--precision``, ``--batch-size`` and their meaning.
- :mod:`benchmate.timings`: ``StepTimer``, rates of loops that are not iterators (JAX).
- :mod:`benchmate.timeline`: token rates over time of a serving benchmark's requests.
- :mod:`benchmate.datagen`, :mod:`benchmate.dataloader`, :mod:`benchmate.hugginface`: data for
  ``prepare.py`` scripts and image loaders.
- :mod:`benchmate.benchrun`: the ``benchrun`` command, torchrun keeping the data channel.
- :mod:`benchmate.progress`, :mod:`benchmate.ux`, :mod:`benchmate.jaxmem`,
  :mod:`benchmate.profiler`: quiet progress bars, a spinner, JAX memory peaks and traces.

The names follow Python milabench's benchmate, so its benchmark folders import them unchanged.
benchmate needs no package to be imported: torch, voir, tqdm, JAX, Pillow and the Hugging Face
libraries are imported by the helpers that use them, and a missing one is an ImportError that
names it.
"""

__version__ = "0.2.0"
