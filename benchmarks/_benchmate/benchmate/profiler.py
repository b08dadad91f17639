"""Optional JAX profiler traces around a benchmark's run."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from ._optional import require

DEFAULT_TRACE_DIR = "/tmp/milabench-trace"


def profiling_enabled() -> bool:
    """Whether ``MILABENCH_PROFILE`` asks for a trace (an integer other than 0)."""
    return int(os.environ.get("MILABENCH_PROFILE") or 0) != 0


@contextlib.contextmanager
def jax_profiler(trace_dir: str | None = None, enabled: bool | None = None) -> Iterator[None]:
    """Traces the block with ``jax.profiler.trace`` when ``enabled`` (by default when
    ``MILABENCH_PROFILE`` is set, see :func:`profiling_enabled`), into ``trace_dir`` (by default
    ``MILABENCH_PROFILE_DIR``, else ``/tmp/milabench-trace``); otherwise does nothing and needs
    no JAX. The trace opens in TensorBoard or Perfetto."""
    if enabled is None:
        enabled = profiling_enabled()
    if not enabled:
        yield
        return
    profiler = require("jax.profiler", "benchmate.profiler.jax_profiler", install="jax")
    folder = trace_dir or os.environ.get("MILABENCH_PROFILE_DIR") or DEFAULT_TRACE_DIR
    os.makedirs(folder, exist_ok=True)
    print(f"[profiler] Tracing to {folder}")
    with profiler.trace(folder):
        yield
