"""Timing of one run of ``benchit ops`` (PARAM's ``OpExecutor``).

A warm-up pass then a measured pass, each of ``n`` iterations, give PARAM's metric::

    {"forward": {"warmup.time": [...], "warmup.gpu.memory": [...],
                 "measure.time": [...], "measure.gpu.memory": [...]},
     "backward": {...}}            # with backward only

Times are milliseconds from ``time.perf_counter_ns``; memory is the device's peak allocation in
MiB, on CUDA only (the lists are empty elsewhere). The output gradient of each backward is made
outside the timed region.

Modes: ``discrete`` times each call alone, the device synchronised before and after;
``continuous`` (CUDA) times ``n`` calls back to back and records one value, their mean (backward:
one value, the mean of ``n`` backward calls, each after an untimed forward and gradient);
``continuous_events`` (CUDA)
runs back to back and times each call with CUDA events. Off CUDA there is nothing to overlap, so
the three modes run the discrete loop.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, ContextManager

import torch
from torch.autograd.profiler import record_function

from benchmate.benchit.ops_registry import Operator

MODES = ("discrete", "continuous", "continuous_events")

# Opens a profiler range named after the pass ("forward", "backward", ...).
Named = Callable[[str], ContextManager[Any]]
MIB = float(2**20)


class Timer:
    """Device synchronisation and peak memory for one device."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.device = device

    def sync(self) -> None:
        """Wait for the device (nothing to wait for on the CPU)."""
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def reset_peak(self) -> None:
        """Start a new peak-memory window."""
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)

    def peak_mib(self) -> float:
        """Peak allocation since the last reset, MiB."""
        return torch.cuda.max_memory_allocated(self.device) / MIB


def _pass(times: list[float], memory: list[float], tag: str) -> dict[str, list[float]]:
    return {f"{tag}.time": times, f"{tag}.gpu.memory": memory}


def _discrete(op: Operator, call: Callable[[], None], n: int, backward: bool, timer: Timer, named: Named):
    forward_times: list[float] = []
    forward_memory: list[float] = []
    backward_times: list[float] = []
    backward_memory: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(n):
        timer.sync()
        timer.reset_peak()
        with named("forward"):
            start = clock()
            call()
            timer.sync()
            end = clock()
        forward_times.append((end - start) / 1e6)
        if timer.cuda:
            forward_memory.append(timer.peak_mib())
        if backward:
            op.create_grad()
            timer.sync()
            timer.reset_peak()
            with named("backward"):
                start = clock()
                op.backward()
                timer.sync()
                end = clock()
            backward_times.append((end - start) / 1e6)
            if timer.cuda:
                backward_memory.append(timer.peak_mib())
    return (forward_times, forward_memory), (backward_times, backward_memory)


def _continuous(op: Operator, call: Callable[[], None], n: int, backward: bool, timer: Timer, named: Named):
    if n == 0:
        return ([], []), ([], [])
    clock = time.perf_counter_ns
    timer.sync()
    timer.reset_peak()
    with named("forward"):
        start = clock()
        for _ in range(n):
            call()
        timer.sync()
        forward = (clock() - start) / 1e6 / n
    forward_memory = [timer.peak_mib()]
    if not backward:
        return ([forward], forward_memory), ([], [])
    timer.reset_peak()
    total = 0
    with named("forward_backward"):
        for _ in range(n):
            call()
            op.create_grad()
            timer.sync()
            start = clock()
            op.backward()
            timer.sync()
            total += clock() - start
    return ([forward], forward_memory), ([total / 1e6 / n], [timer.peak_mib()])


def _events(op: Operator, call: Callable[[], None], n: int, backward: bool, timer: Timer, named: Named):
    forward_times: list[float] = []
    backward_times: list[float] = []
    timer.sync()
    timer.reset_peak()
    with named("forward"):
        pairs = []
        for _ in range(n):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            pairs.append((start, end))
        timer.sync()
        forward_times = [s.elapsed_time(e) for s, e in pairs]
    forward_memory = [timer.peak_mib()]
    backward_memory: list[float] = []
    if backward:
        timer.reset_peak()
        with named("backward"):
            pairs = []
            for _ in range(n):
                call()
                op.create_grad()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                op.backward()
                end.record()
                pairs.append((start, end))
            timer.sync()
            backward_times = [s.elapsed_time(e) for s, e in pairs]
        backward_memory = [timer.peak_mib()]
    return (forward_times, forward_memory), (backward_times, backward_memory)


def measure(
    op: Operator,
    args: list[Any],
    kwargs: dict[str, Any],
    *,
    warmup: int,
    iterations: int,
    backward: bool,
    mode: str,
    device: torch.device,
    label: str | None = None,
) -> dict[str, Any]:
    """Warm-up then measured iterations of ``op(*args, **kwargs)``; PARAM's metric dict.
    With ``label`` (``[param|<op>|<id>``, under the profiler) each pass is a named profiler range
    (``[param|<op>|<id>|measure|forward]``); without, no range is opened (they cost time)."""
    if mode not in MODES:
        raise ValueError(f"unknown exec mode {mode!r}; use one of {', '.join(MODES)}")
    timer = Timer(device)
    loop = _discrete
    if timer.cuda and mode == "continuous":
        loop = _continuous
    elif timer.cuda and mode == "continuous_events":
        loop = _events

    def call() -> None:
        op.forward(*args, **kwargs)

    metric: dict[str, Any] = {"forward": {}}
    if backward:
        metric["backward"] = {}
    for tag, n in (("warmup", warmup), ("measure", iterations)):
        with _range(label, tag):
            fwd, bwd = loop(op, call, n, backward, timer, _namer(label, tag))
        metric["forward"].update(_pass(*fwd, tag))
        if backward:
            metric["backward"].update(_pass(*bwd, tag))
    return metric


def _range(label: str | None, tag: str) -> ContextManager[Any]:
    return record_function(f"{label}|{tag}]") if label else contextlib.nullcontext()


def _namer(label: str | None, tag: str) -> Named:
    return lambda name: _range(label and f"{label}|{tag}", name)
