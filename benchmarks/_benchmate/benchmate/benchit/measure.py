"""Measurements of the worker itself, for ``cargo xtask bench`` (each prints one JSON object):

``python -m benchmate.benchit.measure overhead SCRIPT [--runs N] [--script-args "ARGS"]``
    the script's own run time (its module's execution) bare and under discovery (analysis
    only, events discarded; patching torch before and restoring it after are left out), ``N``
    pairs of runs in one process, which side goes first alternating, each run after a
    ``gc.collect()`` and with torch's module classes' attribute caches empty, as in the worker's
    fresh process; ``ratio`` = the median of the ratios discovery / bare of each pair. Target
    < 1.05.

``python -m benchmate.benchit.measure timeit SCRIPT [--iterations N] [--rounds R]
[--script-args "ARGS"]``
    the worker's ``torch-eager`` mean latency for the first invocation of the script's first
    model next to a plain ``timeit`` loop of the same call (under ``eval()`` and ``no_grad()``)
    in the same process, ``R`` rounds of one of each, which goes first alternating; ``ratio`` =
    the median of the ratios worker / timeit of each round's two means. Target within 2%.

A shared 2-core VM runs at speeds that drift by tens of percent within seconds, so neither the
fastest runs of each side (their ratio is reported as ``min_ratio``) nor the medians of each side
compare like with like; the two runs of a pair, made one right after the other, do.

Both set ``torch.set_num_threads(1)`` first (``--threads N`` to change, 0 for torch's default):
the figures are about the worker's own cost, and tiny multi-threaded kernels on a shared machine
time the scheduler rather than the code.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import shlex
import statistics
import sys
import time
import timeit
from typing import Any, Iterator

from benchmate.benchit.discovery import Call, Discovery, Listener
from benchmate.benchit.models import as_main_program, run_program
from benchmate.benchit.runtimes import inference_mode_of, run_torch


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Discard what the script prints."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _run_script(path: str, script_args: list[str]) -> None:
    """Execute ``path`` once as the worker does, as a fresh ``__main__``."""
    with as_main_program(path, script_args) as program:
        run_program(path, program)


class _NullProtocol:
    """A protocol that discards every event (an analysis run needs no reply)."""

    def send(self, event: str, **fields: Any) -> None:
        """Drop the event."""

    def receive(self) -> dict[str, Any]:
        """Never needed in analysis-only runs."""
        raise RuntimeError("an analysis run reads nothing")


def _forget_module_lookups() -> None:
    """Empty the interpreter's attribute caches of ``torch.nn.Module`` and its subclasses, as
    discovery's install does (any assignment to a class attribute empties those of the class and
    its subclasses).

    The worker runs a script once, in a fresh process, where no lookup on torch's classes is
    cached yet: there, emptying the caches costs nothing. Here bare runs repeat in one process
    and would start with every lookup cached, which alone puts them 3-4% ahead of any run that
    follows an install on a 2 ms script. So bare runs start from emptied caches too."""
    import torch

    module = torch.nn.Module
    module.__call__, module.__init__ = module.__call__, module.__init__


def overhead(path: str, runs: int, script_args: list[str]) -> dict[str, Any]:
    """Median run time of the script bare and under the worker's discovery."""
    from benchmate.benchit.models import ScriptSession

    path = os.path.abspath(path)
    request = {"request": "script", "script": path, "script_args": script_args,
               "analyze_only": True}
    bare, discovered = [], []

    def run_bare() -> None:
        _forget_module_lookups()
        start = time.perf_counter()
        _run_script(path, script_args)
        bare.append(time.perf_counter() - start)

    def run_discovered() -> None:
        session = ScriptSession(_NullProtocol(), request)
        session.run()
        discovered.append(session.script_seconds)

    with _quiet():
        run_bare()  # warm: imports, allocator, kernels
        run_discovered()
        del bare[:], discovered[:]
        # What is alive now (torch, discovery) stays out of the collections below, which then
        # take a millisecond instead of a full heap's walk.
        gc.collect()
        gc.freeze()
        try:
            for run in range(runs):
                # The two sides take turns going first; each run starts from a collected heap,
                # so garbage of the run before cannot make the cyclic collector fire inside one
                # side's timing more than the other's.
                for side in (run_discovered, run_bare) if run % 2 else (run_bare, run_discovered):
                    gc.collect()
                    side()
        finally:
            gc.unfreeze()  # extensions check at exit that what they made was collected
    return {"measure": "overhead", "script": path, "script_args": script_args, "runs": runs,
            "bare_seconds": min(bare), "discovery_seconds": min(discovered),
            "bare_median_seconds": statistics.median(bare),
            "discovery_median_seconds": statistics.median(discovered),
            "min_ratio": min(discovered) / min(bare),
            "ratio": statistics.median(d / b for d, b in zip(discovered, bare))}


class _FirstCall(Listener):
    """Keeps the first call of the first model (its module and copies of its inputs)."""

    needs_first_calls = True

    def __init__(self) -> None:
        self.call: Call | None = None

    def invocation_found(self, record: Any, invocation: Any, module: Any) -> Any:
        """Ask for the first invocation's inputs."""
        return True if self.call is None else None

    def first_call_done(self, call: Call) -> None:
        """Keep the first call."""
        if self.call is None:
            self.call = call


def compare_timeit(path: str, iterations: int, rounds: int,
                   script_args: list[str]) -> dict[str, Any]:
    """The worker's torch-eager mean next to a plain timeit loop of the same call."""
    import torch

    path = os.path.abspath(path)
    listener = _FirstCall()
    with _quiet(), Discovery(path, 0, set(), listener):
        _run_script(path, script_args)
    if listener.call is None:
        raise SystemExit(f"{path} called no model")
    model, args, kwargs = listener.call.module, listener.call.args, listener.call.kwargs

    def worker_mean() -> float:
        measured = run_torch(model, "torch-eager", "x86", args, kwargs, 10, iterations)
        return statistics.fmean(measured.times_ns)

    def timeit_mean() -> float:
        with inference_mode_of(model), torch.no_grad():
            timer = timeit.Timer(lambda: model(*args, **kwargs))
            timer.timeit(10)
            return timer.timeit(iterations) / iterations * 1e9

    worker, plain = [], []
    for round_ in range(rounds):
        # The first side of a pair runs slower (1-2% here): the sides take turns going first.
        if round_ % 2:
            plain.append(timeit_mean())
            worker.append(worker_mean())
        else:
            worker.append(worker_mean())
            plain.append(timeit_mean())
    return {"measure": "timeit", "script": path, "model": type(model).__name__,
            "iterations": iterations, "rounds": rounds, "worker_mean_ns": min(worker),
            "timeit_mean_ns": min(plain), "worker_median_ns": statistics.median(worker),
            "timeit_median_ns": statistics.median(plain), "min_ratio": min(worker) / min(plain),
            "ratio": statistics.median(w / p for w, p in zip(worker, plain))}


def main(argv: list[str]) -> int:
    """Parse the command line, measure, print the JSON result."""
    parser = argparse.ArgumentParser(prog="python -m benchmate.benchit.measure")
    commands = parser.add_subparsers(dest="command", required=True)
    over = commands.add_parser("overhead", help="discovery overhead on a script's run time")
    over.add_argument("script")
    over.add_argument("--runs", type=int, default=7)
    compare = commands.add_parser("timeit", help="worker latency next to a timeit loop")
    compare.add_argument("script")
    compare.add_argument("--iterations", type=int, default=1000)
    compare.add_argument("--rounds", type=int, default=5)
    for command in (over, compare):
        command.add_argument("--script-args", default="", help="the script's arguments")
        command.add_argument("--threads", type=int, default=1,
                             help="torch's intra-op threads (0: torch's default)")
    options = parser.parse_args(argv)
    script_args = shlex.split(options.script_args)
    if options.threads > 0:
        import torch

        torch.set_num_threads(options.threads)
    if options.command == "overhead":
        result = overhead(options.script, options.runs, script_args)
    else:
        result = compare_timeit(options.script, options.iterations, options.rounds, script_args)
    import torch

    result["threads"] = torch.get_num_threads()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
