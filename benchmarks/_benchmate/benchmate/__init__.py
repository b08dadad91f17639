"""Helpers shared by milabench benchmarks.

Installed in every benchmark environment by ``milabench install``. The data-channel writer and
the instruments arrive with the suite; for now the package only says which version it is.
"""

__version__ = "0.1.0"
