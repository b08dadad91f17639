"""``benchmark_model``: benchit's build, cache and timings for a model held by a Python program.

The program does what a script's worker does, in its own process: it starts ``benchit attach``
with pipes and speaks the worker protocol to it (``docs/benchit-protocol.md``), calling the model
once under discovery so that the model and its inputs are described, exported and timed by the
same code as a script's models. The Rust side keeps deciding everything that is plain data: the
build cache, staleness and rebuild policies, statistics. So a model benchmarked here and the same
model found in a script share their cached builds and their figures mean the same thing.

Example::

    import torch
    from benchmate.benchit.api import benchmark_model

    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU())
    result = benchmark_model(model, (torch.rand(8, 64),), runtimes=["ort", "torch-eager"])
    for name, runtime in result.runtimes.items():
        print(name, runtime.mean_ms, runtime.throughput)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import IO, Any, Optional, Sequence

from benchmate.benchit.protocol import Protocol, ProtocolError

#: The environment variable naming the ``benchit`` program (default: ``benchit`` on ``PATH``).
BENCHIT_VAR = "BENCHIT_BIN"


class BenchitError(RuntimeError):
    """benchit could not benchmark the model: it is not installed, refused the options, or
    stopped; the message says why (with benchit's own words when it printed any)."""


@dataclasses.dataclass
class RuntimeTiming:
    """How one runtime ran the model. Latencies in milliseconds; ``ok`` false with a
    ``message`` when it failed (then the figures are ``None``)."""

    runtime: str
    ok: bool
    message: Optional[str]
    version: Optional[str]
    iterations: Optional[int]
    mean_ms: Optional[float]
    median_ms: Optional[float]
    p90_ms: Optional[float]
    p99_ms: Optional[float]
    std_ms: Optional[float]
    min_ms: Optional[float]
    max_ms: Optional[float]
    ci95_low_ms: Optional[float]
    ci95_high_ms: Optional[float]
    #: Samples per second: ``batch_size`` / mean latency.
    throughput: Optional[float]


@dataclasses.dataclass
class ModelBenchmark:
    """The result of :func:`benchmark_model`."""

    #: MLAgility's model hash (of the module tree's ``repr``).
    model_hash: str
    #: MLAgility's invocation hash (model hash and input shapes and dtypes).
    invocation_hash: str
    #: The build folder in the cache.
    build_dir: Optional[str]
    #: Whether the build was taken from the cache as it was.
    reused: bool
    #: Each runtime asked for, in the order asked.
    runtimes: dict[str, RuntimeTiming]
    #: Why the build failed, when it did (the runtimes that needed it say so too).
    failure: Optional[str]
    #: benchit's full result for the model (the JSON of one input of ``benchit --format json``).
    raw: dict[str, Any]

    @property
    def ok(self) -> bool:
        """Whether the build and every runtime succeeded."""
        return self.failure is None and all(t.ok for t in self.runtimes.values())


def benchmark_model(model: Any, inputs: Any, *, runtimes: Sequence[str] = ("ort",),
                    iterations: int = 100, warmup: int = 10, batch_size: int = 1,
                    name: Optional[str] = None, cache_dir: Optional[str] = None,
                    rebuild: str = "if_needed", device: str = "x86", opset: int = 17,
                    exporter: str = "torchscript", fp16: bool = False, build_only: bool = False,
                    timeout: int = 3600, benchit: Optional[str] = None,
                    verbose: bool = False) -> ModelBenchmark:
    """Build ``model`` for ``inputs`` and time it on each of ``runtimes``, as ``benchit`` does for
    a model it finds in a script.

    ``inputs`` are what the model is called with: a tuple or list of positional arguments, a
    dict of keyword arguments, or one tensor. The model is called once for real with them (as
    under discovery) before it is exported. The options are those of ``benchit benchmark``
    (``runtimes``: ``ort``, ``torch-eager``, ``torch-compiled``, ``trt``; ``rebuild``:
    ``if_needed``, ``always``, ``never``); builds are filed under ``name`` (default: the model's
    class name) in ``cache_dir`` (default: benchit's, ``~/.cache/benchit``). ``benchit`` names
    the program (default: ``$BENCHIT_BIN``, else ``benchit`` on ``PATH``). benchit's progress
    goes to this process's stderr when ``verbose``.

    Raises :class:`BenchitError` when benchit cannot run, refuses the options, or finds nothing
    to build; failures of the build or of a runtime are in the result (``ok``, ``failure``, each
    runtime's ``message``). An exception of the model's own call propagates as it is.
    """
    args, kwargs = _call_arguments(inputs)
    command = [_benchit_program(benchit), "attach", "--name", name or type(model).__name__,
               "--runtime", *runtimes, "--iterations", str(iterations), "--warmup", str(warmup),
               "--batch-size", str(batch_size), "--rebuild", rebuild, "--device", device,
               "--opset", str(opset), "--exporter", exporter, "--timeout", str(timeout)]
    command += ["--fp16"] if fp16 else []
    command += ["--build-only"] if build_only else []
    command += ["--cache-dir", os.fspath(cache_dir)] if cache_dir is not None else []
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=None if verbose else log, text=True,
                                       encoding="utf-8")
        except OSError as error:
            raise BenchitError(f"could not start {command[0]}: {error}") from None
        assert process.stdin is not None and process.stdout is not None
        stopped: Optional[BaseException] = None
        try:
            try:
                _serve(Protocol(process.stdin, process.stdout), model, args, kwargs)
            except (ProtocolError, BrokenPipeError) as error:
                stopped = error
            process.stdin.close()
            last = "" if stopped else process.stdout.readline()
            status = process.wait(timeout=60)
        except BaseException:
            process.kill()
            process.wait()
            raise
        said = "" if verbose else _said(log)
    if stopped is not None or status not in (0, 1) or not last.strip():
        reason = f"{command[0]} attach exited with status {status}"
        raise BenchitError(reason + (f": {said}" if said else " (its messages are above)"))
    return _result(json.loads(last))


def _call_arguments(inputs: Any) -> tuple[tuple, dict[str, Any]]:
    """Positional and keyword arguments of the model's call."""
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    return (inputs,), {}


def _benchit_program(benchit: Optional[str]) -> str:
    """The benchit program to start."""
    program = benchit or os.environ.get(BENCHIT_VAR) or shutil.which("benchit")
    if not program:
        raise BenchitError(
            "benchit is not on PATH; install it (`cargo install --path . --locked` in the "
            f"milabench-rs checkout), or name it with benchit=PATH or ${BENCHIT_VAR}")
    return program


class _Session:
    """What the worker's event listener needs of a session: the protocol, the discovery it
    pauses while building, and that builds are wanted."""

    analyze_only = False

    def __init__(self, protocol: Protocol):
        self.protocol = protocol
        self.discovery: Any = None


def _serve(protocol: Protocol, model: Any, args: tuple, kwargs: dict[str, Any]) -> None:
    """The worker's side of one ``model`` request: the model called once under discovery,
    which announces it, asks benchit how to build it, builds and times it; then ``calls`` and
    ``done``."""
    from benchmate.benchit.discovery import Discovery
    from benchmate.benchit.models import Events, WorkerAbort, send_hello

    try:
        request = protocol.receive()
        if request.get("request") != "model":
            raise ProtocolError(f"benchit asked for {request!r}, not a model")
        send_hello(protocol)
        session = _Session(protocol)
        session.discovery = Discovery(_caller_file(), 0, set(), Events(session))
        with session.discovery:
            model(*args, **kwargs)
    except WorkerAbort as abort:  # benchit went away while a build waited for its reply
        raise ProtocolError(str(abort)) from None
    if not session.discovery.invocations:
        protocol.send("error", message=f"{type(model).__name__} is no model benchit can build: "
                      "it has no parameters other than activations'", traceback=None)
    protocol.send("calls", invocations=[
        {"invocation_hash": inv.invocation_hash, "executed": inv.executed,
         "seconds": inv.seconds}
        for inv in session.discovery.invocations.values()])
    protocol.send("done")


def _caller_file() -> str:
    """The file of the code that called :func:`benchmark_model` (where discovery looks for
    where the model was made)."""
    frame = sys._getframe(3)
    return os.path.abspath(frame.f_code.co_filename)


def _said(log: IO[str]) -> str:
    """What benchit printed on stderr, on one line, its error lines first."""
    log.seek(0)
    lines = [line.strip() for line in log.read().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return " ".join(errors or lines[-3:])


def _result(raw: dict[str, Any]) -> ModelBenchmark:
    """The typed result of benchit's JSON for the model's input."""
    failure = raw.get("failure")
    models = raw.get("models") or []
    invocations = models[0].get("invocations") or [] if models else []
    if not invocations:
        reason = (failure or {}).get("message") or "no model was called"
        raise BenchitError(f"benchit could not benchmark the model: {reason}")
    model, invocation = models[0], invocations[0]
    build = invocation.get("build") or {}
    timings = {}
    for entry in build.get("runtimes", []):
        stats = entry.get("statistics") or {}
        timings[entry["runtime"]] = RuntimeTiming(
            runtime=entry["runtime"], ok=bool(entry.get("ok")), message=entry.get("message"),
            version=entry.get("runtime_version"), iterations=stats.get("iterations"),
            **{key: stats.get(key) for key in (
                "mean_ms", "median_ms", "p90_ms", "p99_ms", "std_ms", "min_ms", "max_ms",
                "ci95_low_ms", "ci95_high_ms", "throughput")})
    build_failure = build.get("failure") or model.get("failure") or failure
    return ModelBenchmark(model_hash=model["model_hash"],
                          invocation_hash=invocation["invocation_hash"],
                          build_dir=build.get("build_dir"), reused=bool(build.get("reused")),
                          runtimes=timings,
                          failure=build_failure.get("message") if build_failure else None,
                          raw=raw)
