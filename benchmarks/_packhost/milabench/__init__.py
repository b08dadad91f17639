"""The extension API of the Python milabench, as its ``benchfile.py`` files use it.

This package is not the Python milabench. It is the part of its interface that a benchmark
folder's ``benchfile.py`` imports (``milabench.pack``, ``milabench.commands``, ``milabench.fs``,
``milabench.utils``, ``milabench.merge``), written for the Rust milabench's pack host: a
benchfile builds its command tree here, the host flattens it into processes and hands them to
the Rust planner as JSON. Rust starts, supervises and records every benchmark process.
"""

__all__ = ["commands", "fs", "merge", "pack", "utils"]
