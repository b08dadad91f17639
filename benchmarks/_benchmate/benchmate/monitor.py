"""voir instruments for ``voirfile.py``, and the system monitors a benchmark can start itself.

``voirfile_monitor(ov, options)`` is the one call most voirfiles make (as in Python milabench):
it forwards the records milabench reads (rates, losses, progress, monitor samples) to the data
channel, stops the program through milabench after ``options.stop`` rate observations (rank 0
only), and, when ``options.gpu_poll`` is positive, samples the GPUs from inside the process.
milabench-rs samples GPUs and the CPU itself, so the in-process monitors are optional there.

Benchmarks that are not run under voir (or that want samples anyway) start a
:class:`SystemMonitor` with ``bench_monitor()``, ``setupvoir()``, ``milabench_sys_monitor()``,
``monogpu_monitor()`` or ``multigpu_monitor()``: a thread that writes one record per probe every
poll interval, ``{"task": "main", "time": t, "gpudata": {...}}`` (and ``cpudata``, ``iodata``,
``netdata`` for a node monitor), sampled with voir's functions. Without a GPU, ``gpudata`` is
``{}``, as voir reports it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import sys
import threading
import time
from typing import Any, Callable, ContextManager, Iterable, Iterator

from ._optional import require
from .channel import Writer, record_writer
from .toggles import get_observation_count, get_poll_interval

LEAN_KEYS = (
    "value", "progress", "rate", "units", "loss", "time",
    "gpudata", "memory_peak", "cpudata", "process", "iodata", "netdata",
)
DEBUG_KEYS = ("__iter__", "overhead", "process_time")


def log_patterns() -> tuple[str, ...]:
    """Keys forwarded to milabench, by ``BENCHMATE_LOG_MODE``: ``lean`` (default), ``debug``
    (lean plus timing internals) or ``all``."""
    mode = os.environ.get("BENCHMATE_LOG_MODE", "lean").lower()
    if mode == "all":
        return ("*",)
    if mode == "debug":
        return LEAN_KEYS + DEBUG_KEYS
    return LEAN_KEYS


def get_rank() -> int:
    """``RANK`` as an int, -1 when unset (not a distributed run)."""
    try:
        return int(os.environ.get("RANK", -1))
    except ValueError:
        return -1


def voirfile_monitor(ov: Any, options: Any) -> None:
    """Registers the standard instruments on ``ov`` with the voirfile's ``options`` (fields
    ``stop``, and optionally ``dash``, ``gpu_poll``)."""
    if getattr(options, "dash", False):
        from voir.instruments import dash

        ov.require(dash)
    rank = get_rank()
    stop = get_observation_count(int(options.stop)) if rank <= 0 else None
    instruments = [forward_records(log_patterns(), context=("task",), stop=stop)]
    poll = get_poll_interval(float(getattr(options, "gpu_poll", 0) or 0))
    if poll > 0 and rank <= 0 and os.environ.get("BENCHMATE_GPU_MONITOR", "0") == "1":
        from voir.instruments.gpu import gpu_monitor
        from voir.instruments.monitor import monitor

        instruments.append(monitor(poll_interval=poll, gpudata=gpu_monitor()))
    ov.require(*instruments)


def key_filter(patterns: Iterable[str], context: Iterable[str] = ()) -> Callable[[dict], dict | None]:
    """The selection of voir's ``log`` instrument: the keys of a record that match one of
    ``patterns`` (names or ``fnmatch`` patterns), plus those matching ``context`` when at least
    one key matched a pattern; None when none did. Plain names are looked up in a set, so the
    usual case costs no pattern matching."""

    def split(items: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
        items = tuple(items)
        wild = tuple(p for p in items if any(c in p for c in "*?["))
        return frozenset(items), wild

    names, wild = split(patterns)
    context_names, context_wild = split(context)

    def matches(key: str, exact: frozenset[str], globs: tuple[str, ...]) -> bool:
        return key in exact or any(fnmatch.fnmatch(key, p) for p in globs)

    def select(record: dict) -> dict | None:
        if not wild and names.isdisjoint(record):
            return None
        kept = {}
        matched = False
        for key, value in record.items():
            if matches(key, names, wild):
                kept[key] = value
                matched = True
            elif matches(key, context_names, context_wild):
                kept[key] = value
        return kept if matched else None

    return select


def forward_records(patterns: Iterable[str], context: Iterable[str] = ("task",), stop: int | None = None) -> Any:
    """Instrument: voir's ``log`` and ``early_stop`` instruments in one subscriber of
    ``ov.given``, which a benchmark calls every step (voir's pair costs about three times as
    much per record, mostly in ``fnmatch``).

    Records selected by :func:`key_filter` go to the data channel. When ``stop`` is set, each
    ``rate`` record of the ``train`` task is followed by ``{"task": "early_stop", "progress":
    (count, stop)}`` (given, so it is forwarded too), and the one after the ``stop``-th writes the
    ``{"$event": "stop"}`` that tells milabench to end the benchmark."""
    select = key_filter(patterns, context)

    def instrument(ov: Any) -> Any:
        yield ov.phases.init
        rates = 0
        stopped = False

        def on_record(record: dict) -> None:
            nonlocal rates, stopped
            kept = select(record)
            if kept is not None:
                ov.log(kept)
            if stop is None or "rate" not in record or record.get("task") != "train":
                return
            rates += 1
            ov.give(task="early_stop", progress=(rates, stop))
            if rates > stop and not stopped:
                stopped = True
                ov.log({"$event": "stop"})

        ov.given.subscribe(on_record)

    return instrument


# What a monitor samples: a process that has one GPU (no RANK) samples its GPU; the main rank of
# a distributed run samples the whole node.
GPU_PROBES = ("gpudata",)
NODE_PROBES = ("gpudata", "iodata", "netdata", "cpudata")


def system_probes(names: Iterable[str], arch: str | None = None) -> dict[str, Callable[[], Any]]:
    """voir's sampling function for each of ``names`` (``gpudata``, ``cpudata``, ``iodata``,
    ``netdata``); the GPU backend is chosen again (``arch``, or found on the machine: ``cpu``
    when there is no GPU). A probe that cannot be made is reported on stderr and left out."""
    needed_by = "benchmate's system monitors (they sample through voir)"
    cpu, gpu, io, network = (
        require(f"voir.instruments.{module}", needed_by, install="voir")
        for module in ("cpu", "gpu", "io", "network")
    )
    makers = {
        "gpudata": gpu.gpu_monitor,
        "cpudata": cpu.cpu_monitor,
        "iodata": io.io_monitor,
        "netdata": network.network_monitor,
    }
    probes = {}
    for name in names:
        try:
            if name == "gpudata":
                gpu.select_backend(arch, force=True)
            probes[name] = makers[name]()
        except Exception as error:  # e.g. no disk counters in a container: sample the rest
            print(f"benchmate monitor: cannot sample {name} ({error!r}); it is left out", file=sys.stderr)
    return probes


class SystemMonitor:
    """Samples the probes named ``names`` every ``poll_interval`` seconds
    (``BENCHMATE_POLL_INTERVAL`` when set) on a daemon thread, writing ``{"task": "main", "time":
    t, name: sample}`` per probe.

    Three ways to run it: ``with monitor as log:`` (records go to the data channel, see
    :func:`~benchmate.channel.record_writer`; ``log`` writes the benchmark's own records the same
    way, and is None when ``enabled`` is false); ``ov.require(monitor)`` in a voirfile (records
    are given to voir's instruments from ``load_script`` to the end of ``run_script``); or
    :meth:`start` and :meth:`stop`. A probe that raises is reported on stderr and sampled no more.
    """

    def __init__(
        self, names: Iterable[str], poll_interval: float = 1, arch: str | None = None, enabled: bool = True
    ) -> None:
        self.names = tuple(names)
        self.poll_interval = get_poll_interval(float(poll_interval))
        self.arch = arch
        self.enabled = enabled
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, write: Writer) -> None:
        """Starts sampling into ``write`` (nothing when disabled or already started)."""
        if not self.enabled or self._thread is not None:
            return
        probes = system_probes(self.names, self.arch)
        self._thread = threading.Thread(
            target=self._sample, args=(probes, write), name="benchmate-monitor", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stops sampling; no record is written after it returns."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _sample(self, probes: dict[str, Callable[[], Any]], write: Writer) -> None:
        while not self._stopped.wait(self.poll_interval):
            now = time.time()
            for name, probe in list(probes.items()):
                try:
                    value = probe()
                except Exception as error:  # a broken probe must not end the benchmark
                    print(
                        f"benchmate monitor: sampling {name} failed ({error!r}); not sampled any more",
                        file=sys.stderr,
                    )
                    del probes[name]
                    continue
                write({"task": "main", "time": now, name: value})

    def __enter__(self) -> Writer | None:
        if not self.enabled:
            return None
        log = record_writer()
        self.start(log)
        return log

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __call__(self, ov: Any) -> Iterator[Any]:
        yield ov.phases.load_script
        self.start(lambda record: ov.give(**record))
        try:
            yield ov.phases.run_script
        finally:
            self.stop()


def monogpu_monitor(
    poll_interval: float = 1, arch: str | None = None, enabled: bool = True
) -> SystemMonitor:
    """A monitor of this process's GPU(s): ``gpudata`` samples."""
    return SystemMonitor(GPU_PROBES, poll_interval, arch, enabled)


# Python milabench's voir instrument of the same job: here the monitor is one (ov.require it).
monitor_monogpu = monogpu_monitor


def multigpu_monitor(
    poll_interval: float = 1, arch: str | None = None, enabled: bool = True
) -> SystemMonitor:
    """A monitor of the node: ``gpudata``, ``iodata``, ``netdata`` and ``cpudata`` samples."""
    return SystemMonitor(NODE_PROBES, poll_interval, arch, enabled)


def bench_monitor(
    poll_interval: float = 1, arch: str | None = None, enabled: bool = True
) -> ContextManager[Writer | None]:
    """The monitor for this process, by ``RANK``: a GPU monitor when unset, a node monitor on
    rank 0, nothing on other ranks (``with bench_monitor() as log`` then gives None)."""
    rank = get_rank()
    if rank == -1:
        return monogpu_monitor(poll_interval, arch, enabled)
    if rank == 0:
        return multigpu_monitor(poll_interval, arch, enabled)
    return contextlib.nullcontext()


def setupvoir(
    monogpu: bool = True, enabled: bool = True, interval: float = 1
) -> tuple[Writer, SystemMonitor]:
    """Starts a GPU monitor (a node monitor when ``monogpu`` is false) and returns ``(log,
    monitor)``: ``log(record)`` writes a record to the data channel as it is, and
    ``monitor.stop()`` ends the sampling. With ``enabled`` false nothing is sampled."""
    log = record_writer()
    monitor = SystemMonitor(GPU_PROBES if monogpu else NODE_PROBES, interval, enabled=enabled)
    monitor.start(log)
    return log, monitor


def milabench_sys_monitor(monogpu: bool = False) -> tuple[Writer, SystemMonitor]:
    """:func:`setupvoir` for the node by default (the main process of a multi-GPU script)."""
    return setupvoir(monogpu)
