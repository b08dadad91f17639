"""The timing overhead of ``benchit ops``, for ``cargo xtask bench`` (prints one JSON object):

``python -m benchmate.benchit.ops_measure [--iterations N] [--rounds R]``

A trivial operator (``torch.add`` of two one-element tensors, one thread) is timed ``N``
iterations per round by the worker's discrete loop (:func:`ops_timing.measure`, as ``benchit ops``
runs it) and by a bare loop (``perf_counter_ns`` around each call, appended to a list), ``R``
alternating rounds in one process. Two figures, medians over the rounds:

* the per-call time each reports (median of its ``N`` samples): what the timer adds inside the
  timed region;
* the wall time per iteration of the whole loop: what the bookkeeping around the timed region
  costs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import torch

from benchmate.benchit import ops_registry, ops_timing


def bare_loop(a: torch.Tensor, b: torch.Tensor, n: int) -> list[int]:
    """``n`` calls, each timed with ``perf_counter_ns``; the times in ns."""
    clock = time.perf_counter_ns
    times = []
    for _ in range(n):
        start = clock()
        torch.add(a, b)
        times.append(clock() - start)
    return times


def measure(iterations: int, rounds: int) -> dict[str, Any]:
    """The figures described in the module's documentation."""
    torch.set_num_threads(1)
    a, b = torch.rand(1), torch.rand(1)
    op = ops_registry.lookup("torch.add")
    device = torch.device("cpu")
    worker_call, worker_wall, bare_call, bare_wall = [], [], [], []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        metric = ops_timing.measure(
            op, [a, b], {}, warmup=0, iterations=iterations, backward=False, mode="discrete", device=device
        )
        worker_wall.append((time.perf_counter_ns() - start) / iterations)
        worker_call.append(statistics.median(metric["forward"]["measure.time"]) * 1e6)
        start = time.perf_counter_ns()
        times = bare_loop(a, b, iterations)
        bare_wall.append((time.perf_counter_ns() - start) / iterations)
        bare_call.append(statistics.median(times))
    return {
        "iterations": iterations,
        "rounds": rounds,
        "worker_call_ns": statistics.median(worker_call),
        "bare_call_ns": statistics.median(bare_call),
        "worker_wall_ns": statistics.median(worker_wall),
        "bare_wall_ns": statistics.median(bare_wall),
    }


def main() -> None:
    """Parse the options, measure, print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(measure(args.iterations, args.rounds)))


if __name__ == "__main__":
    main()
