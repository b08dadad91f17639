"""Timing of one run of ``benchit ops`` (PARAM's ``OpExecutor``).

A warm-up pass then a measured pass, each of ``n`` iterations, give PARAM's metric::

    {"forward": {"warmup.time": [...], "warmup.gpu.memory": [...],
                 "measure.time": [...], "measure.gpu.memory": [...]},
     "backward": {...}}            # with backward only

Times are milliseconds from ``time.perf_counter_ns``; memory is the device's peak allocation in
MiB, on CUDA only (the lists are empty elsewhere). The output gradient of each backward is made
outside the timed region.

Modes: ``discrete`` times each call alone, the device synchronised before and after (with
``flush_l2``, PARAM's ``--cuda-l2-cache off``, a buffer twice the L2 cache's size is written
before each timed call, outside the timed region, so that no call finds its operands in L2);
``continuous`` (CUDA) times ``n`` calls back to back and records one value, their mean (backward:
one value, the mean of ``n`` backward calls, each after an untimed forward and gradient);
``continuous_events`` (CUDA) runs back to back and times each call with CUDA events. Off CUDA
there is nothing to overlap, so the three modes run the discrete loop.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, ContextManager, Optional

import torch
from torch.autograd.profiler import record_function

from benchmate.benchit.ops_registry import Operator

MODES = ("discrete", "continuous", "continuous_events")

# Opens a profiler range named after the pass ("forward", "backward", ...); None when not profiling.
Named = Optional[Callable[[str], ContextManager[Any]]]
# What a loop calls: the operator's callable, its positional and keyword arguments.
Call = tuple[Callable[..., Any], list[Any], dict[str, Any]]
_NO_RANGE = contextlib.nullcontext()
MIB = float(2**20)
# The NVTX range around each measured pass with ``nvtx`` (``benchit ops --ncu/--nsys`` filter on it).
NVTX_RANGE = "benchit_measure"


class Timer:
    """Device synchronisation, peak memory and L2 flushing for one device."""

    def __init__(self, device: torch.device, flush_l2: bool = False) -> None:
        self.cuda = device.type == "cuda"
        self.device = device
        self.scratch: torch.Tensor | None = None
        if self.cuda and flush_l2:
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 2**27
            self.scratch = torch.empty(2 * l2, dtype=torch.uint8, device=device)

    def flush_l2(self) -> None:
        """Evict the operands from the L2 cache (with ``flush_l2`` on CUDA; else nothing)."""
        if self.scratch is not None:
            self.scratch.zero_()

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


def _scope(named: Named, name: str) -> ContextManager[Any]:
    return named(name) if named else _NO_RANGE


def _ms(times_ns: list[int]) -> list[float]:
    return [t / 1e6 for t in times_ns]


def _discrete(op: Operator, call: Call, n: int, backward: bool, timer: Timer, named: Named):
    # Only the call (and the device synchronisation) is inside the timed region; the clock
    # readings are converted to milliseconds after the loop.
    target, args, kwargs = call
    forward_ns: list[int] = []
    forward_memory: list[float] = []
    backward_ns: list[int] = []
    backward_memory: list[float] = []
    clock = time.perf_counter_ns
    cuda = timer.cuda
    for _ in range(n):
        if cuda:
            timer.flush_l2()
            timer.sync()
            timer.reset_peak()
        with _scope(named, "forward"):
            start = clock()
            out = target(*args, **kwargs)
            if cuda:
                timer.sync()
            end = clock()
        op.out = out
        forward_ns.append(end - start)
        if cuda:
            forward_memory.append(timer.peak_mib())
        if backward:
            op.create_grad()
            if cuda:
                timer.flush_l2()
                timer.sync()
                timer.reset_peak()
            with _scope(named, "backward"):
                start = clock()
                op.backward()
                if cuda:
                    timer.sync()
                end = clock()
            backward_ns.append(end - start)
            if cuda:
                backward_memory.append(timer.peak_mib())
    return (_ms(forward_ns), forward_memory), (_ms(backward_ns), backward_memory)


def _continuous(op: Operator, call: Call, n: int, backward: bool, timer: Timer, named: Named):
    if n == 0:
        return ([], []), ([], [])
    target, args, kwargs = call
    clock = time.perf_counter_ns
    timer.sync()
    timer.reset_peak()
    with _scope(named, "forward"):
        start = clock()
        for _ in range(n):
            target(*args, **kwargs)
        timer.sync()
        forward = (clock() - start) / 1e6 / n
    forward_memory = [timer.peak_mib()]
    if not backward:
        return ([forward], forward_memory), ([], [])
    timer.reset_peak()
    total = 0
    with _scope(named, "forward_backward"):
        for _ in range(n):
            op.out = target(*args, **kwargs)
            op.create_grad()
            timer.sync()
            start = clock()
            op.backward()
            timer.sync()
            total += clock() - start
    return ([forward], forward_memory), ([total / 1e6 / n], [timer.peak_mib()])


def _events(op: Operator, call: Call, n: int, backward: bool, timer: Timer, named: Named):
    target, args, kwargs = call

    def event() -> Any:
        return torch.cuda.Event(enable_timing=True)

    backward_times: list[float] = []
    backward_memory: list[float] = []
    timer.sync()
    timer.reset_peak()
    with _scope(named, "forward"):
        pairs = []
        for _ in range(n):
            start, end = event(), event()
            start.record()
            target(*args, **kwargs)
            end.record()
            pairs.append((start, end))
        timer.sync()
        forward_times = [s.elapsed_time(e) for s, e in pairs]
    forward_memory = [timer.peak_mib()]
    if backward:
        timer.reset_peak()
        with _scope(named, "backward"):
            pairs = []
            for _ in range(n):
                op.out = target(*args, **kwargs)
                op.create_grad()
                start, end = event(), event()
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
    flush_l2: bool = False,
    nvtx: bool = False,
) -> dict[str, Any]:
    """Warm-up then measured iterations of ``op(*args, **kwargs)``; PARAM's metric dict.
    With ``label`` (``[param|<op>|<id>``, under the profiler) each pass is a named profiler range
    (``[param|<op>|<id>|measure|forward]``); without, no range is opened (they cost time).
    ``flush_l2`` empties the L2 cache before each discrete call on CUDA; ``nvtx`` (CUDA) wraps
    the measured pass in an NVTX range ``benchit_measure``, the range Nsight filters on."""
    if mode not in MODES:
        raise ValueError(f"unknown exec mode {mode!r}; use one of {', '.join(MODES)}")
    timer = Timer(device, flush_l2)
    loop = _discrete
    if timer.cuda and mode == "continuous":
        loop = _continuous
    elif timer.cuda and mode == "continuous_events":
        loop = _events
    call = (op.target(), args, kwargs)
    metric: dict[str, Any] = {"forward": {}}
    if backward:
        metric["backward"] = {}
    for tag, n in (("warmup", warmup), ("measure", iterations)):
        named = _namer(label, tag) if label else None
        marked = nvtx and timer.cuda and tag == "measure"
        with _scope(_namer(label, "") if label else None, tag), _nvtx(marked):
            fwd, bwd = loop(op, call, n, backward, timer, named)
        metric["forward"].update(_pass(*fwd, tag))
        if backward:
            metric["backward"].update(_pass(*bwd, tag))
    return metric


def _nvtx(marked: bool) -> ContextManager[Any]:
    return torch.cuda.nvtx.range(NVTX_RANGE) if marked else _NO_RANGE


def _namer(label: str, tag: str) -> Callable[[str], ContextManager[Any]]:
    prefix = f"{label}|{tag}|" if tag else f"{label}|"
    return lambda name: record_function(f"{prefix}{name}]")
