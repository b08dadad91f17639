"""Plays the Rust side of the benchit protocol (mode ``models``) for tests and measurements:
sends the request, answers every target ``invocation`` with a reply, collects the events.

:func:`run_worker` drives ``python -m benchmate.benchit models`` in a subprocess (what Rust
does); :func:`run_in_process` calls :func:`benchmate.benchit.models.serve` with an in-memory
protocol (faster: torch is imported once per test session).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any, Callable, Optional

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent

#: Answers an ``invocation`` event that waits for a reply.
Replier = Callable[[dict[str, Any]], dict[str, Any]]


def script_request(script: str | os.PathLike, *, script_args: tuple[str, ...] = (),
                   targets: tuple[str, ...] = (), max_depth: int = 0,
                   analyze_only: bool = False, keras: bool = False) -> dict[str, Any]:
    """The first line Rust sends for a script."""
    return {"request": "script", "script": str(script), "script_args": list(script_args),
            "targets": list(targets), "max_depth": max_depth, "keras": keras,
            "analyze_only": analyze_only}


def build_replier(cache: pathlib.Path, *, stages: tuple[str, ...] = ("export", "optimize"),
                  runtimes: tuple[str, ...] = ("ort", "torch-eager"), onnx_stage: str = "optimize",
                  warmup: int = 2, iterations: int = 5, device: str = "x86",
                  exporter: str = "torchscript") -> Replier:
    """A replier that builds every invocation under ``cache/<hash>`` and runs ``runtimes``
    (ONNX runtimes on the output of ``onnx_stage``)."""
    suffix = {"export": "base", "receive": "base", "optimize": "opt", "fp16": "opt-f16"}[onnx_stage]

    def reply(event: dict[str, Any]) -> dict[str, Any]:
        name = f"b_{event['invocation_hash']}"
        build_dir = cache / name
        onnx = str(build_dir / "onnx" / f"{name}-op17-{suffix}.onnx")
        benchmarks = [{"runtime": r, "onnx": onnx} if r in ("ort", "trt") else {"runtime": r}
                      for r in runtimes]
        return {"build_dir": str(build_dir), "build_name": name, "stages": list(stages),
                "opset": 17, "exporter": exporter, "benchmarks": benchmarks, "warmup": warmup,
                "iterations": iterations, "device": device}

    return reply


def skip_replier(event: dict[str, Any]) -> dict[str, Any]:
    """A replier that skips every invocation."""
    return {"skip": True}


def _answer(event: dict[str, Any], request: dict[str, Any], replier: Replier) -> Optional[dict]:
    """The reply an event needs, or ``None``."""
    waits = event.get("event") == "invocation" and event.get("is_target")
    if waits and not request.get("analyze_only"):
        return replier(event)
    return None


def run_worker(request: dict[str, Any], replier: Replier = skip_replier, *,
               python: str = sys.executable, cwd: Optional[str] = None,
               timeout: float = 600) -> tuple[list[dict[str, Any]], int, str]:
    """Run the worker in a subprocess; return its events, exit status and log (stderr)."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        process = subprocess.Popen(
            [python, "-m", "benchmate.benchit", "models"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=cwd)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        events = []
        for line in process.stdout:
            event = json.loads(line)
            events.append(event)
            answer = _answer(event, request, replier)
            if answer is not None:
                process.stdin.write(json.dumps(answer) + "\n")
                process.stdin.flush()
        process.stdin.close()
        status = process.wait(timeout=timeout)
        log.seek(0)
        return events, status, log.read()


class MemoryProtocol:
    """An in-memory :class:`benchmate.benchit.protocol.Protocol`: the request first, then the
    replier's answers; every event is kept (as it would be after a JSON round trip)."""

    def __init__(self, request: dict[str, Any], replier: Replier):
        self.request = request
        self.replier = replier
        self.events: list[dict[str, Any]] = []
        self._pending = [request]

    def send(self, event: str, **fields: Any) -> None:
        """Record one event and queue the reply it needs."""
        record = json.loads(json.dumps({"event": event, **fields}))
        self.events.append(record)
        answer = _answer(record, self.request, self.replier)
        if answer is not None:
            self._pending.append(answer)

    def receive(self) -> dict[str, Any]:
        """The next queued line."""
        return self._pending.pop(0)


def run_in_process(request: dict[str, Any], replier: Replier = skip_replier
                   ) -> tuple[list[dict[str, Any]], int]:
    """Serve ``request`` in this process; return the events and the exit status. ``sys.argv``
    and ``sys.path`` are restored afterwards."""
    from benchmate.benchit.models import serve

    argv, path = list(sys.argv), list(sys.path)
    protocol = MemoryProtocol(request, replier)
    try:
        status = serve(protocol)  # type: ignore[arg-type]
    finally:
        sys.argv[:], sys.path[:] = argv, path
    return protocol.events, status


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events named ``kind``, in order."""
    return [event for event in events if event["event"] == kind]
