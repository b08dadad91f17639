"""Peak memory of a JAX program, for ``memory_peak`` records."""

from __future__ import annotations

import resource
import sys
from typing import Callable

from ._optional import require

MIB = 1024 * 1024


def memory_peak_fetcher() -> Callable[[], float]:
    """A function returning the peak memory in MiB: the largest ``peak_bytes_in_use`` among
    JAX's devices, or, when no device keeps memory statistics (JAX on the CPU), the peak
    resident memory of this process."""
    jax = require("jax", "benchmate.jaxmem.memory_peak_fetcher")

    def fetch_memory_peak() -> float:
        peaks = []
        for device in jax.devices():
            stats = device.memory_stats()
            if stats and "peak_bytes_in_use" in stats:
                peaks.append(stats["peak_bytes_in_use"] / MIB)
        if peaks:
            return max(peaks)
        return process_memory_peak()

    return fetch_memory_peak


def process_memory_peak() -> float:
    """Peak resident memory of this process, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux counts kibibytes, macOS bytes.
    return peak / MIB if sys.platform == "darwin" else peak / 1024
