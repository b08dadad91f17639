"""``python -m benchmate.benchit ops``: the worker of ``benchit ops``.

The Rust side expands the config and sends one request per run; this worker builds the operator
(again only when the operator or its build spec changes), generates the inputs and times them.
Requests and events are described in ``docs/benchit-protocol.md`` ("Mode ops"). A run that fails
(unknown operator, an operator raising) is answered with a ``failed`` event and the worker goes
on with the next request.
"""

from __future__ import annotations

import json
import os
import platform
import random
import socket
import sys
import traceback
from typing import Any

from benchmate.benchit.protocol import Protocol, ProtocolError, one_line

SEED = 0
# Threads torch may use; PARAM pins it to 1 so single-operator timings are stable.
THREADS_VAR = "BENCHIT_OPS_THREADS"


def sys_info(device: Any) -> dict[str, Any]:
    """Facts of this Python and torch (PARAM's ``sys_info`` keys)."""
    import torch

    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "python_version": platform.python_version(),
        "pytorch_version": torch.__version__,
        "pytorch_debug_build": torch.version.debug,
        "num_threads": torch.get_num_threads(),
        "cuda_available": torch.cuda.is_available(),
        "worker_pid": os.getpid(),
    }
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        info.update(
            cuda=torch.version.cuda,
            cuda_device_id=index,
            cuda_device_name=props.name,
            cuda_device_property=str(props),
            cudnn=torch.backends.cudnn.version(),
            cudnn_enabled=torch.backends.cudnn.enabled,
        )
    return info


class OpsWorker:
    """State kept between requests: the options, the last built operator, the profiler."""

    def __init__(self, setup: dict[str, Any]) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(setup.get("device") or "cpu")
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"device {self.device} asked for, but torch {torch.__version__} sees no CUDA device")
        self.warmup = int(setup.get("warmup", 1))
        self.iterations = int(setup.get("iterations", 1))
        self.backward = bool(setup.get("backward", False))
        self.mode = setup.get("exec_mode") or "discrete"
        self.trace_file: str | None = setup.get("profile")
        self.flush_l2 = bool(setup.get("flush_l2", False))
        self.nvtx = bool(setup.get("nvtx", False))
        torch.set_num_threads(int(os.environ.get(THREADS_VAR, "1")))
        self.built_key: str | None = None
        self.op: Any = None
        self.profiler: Any = None
        if self.trace_file:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if self.device.type == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.profiler = torch.profiler.profile(activities=activities, record_shapes=True)
            self.profiler.__enter__()

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """Time one run; raises with a phase-prefixed message when it fails."""
        from benchmate.benchit import ops_data, ops_registry, ops_timing

        name = request["op_name"]
        config = request.get("config") or {}
        build = config.get("build")
        key = json.dumps([name, build], sort_keys=True)
        if key != self.built_key:
            self.built_key = None
            self.op = None
            op = ops_registry.lookup(name)
            op.device = self.device
            self._seed()
            args, kwargs = _phase("build arguments", ops_data.materialize_call, build, self.device)
            if build is not None or op.buildable:
                _phase("build", op.build, *args, **kwargs)
            self.op, self.built_key = op, key
        self._seed()
        args, kwargs = _phase("inputs", ops_data.materialize_call, config.get("input"), self.device)
        label = f"[param|{name}|{request['id']}" if self.profiler else None
        try:
            metric = _phase(
                "timing",
                ops_timing.measure,
                self.op,
                args,
                kwargs,
                warmup=self.warmup,
                iterations=self.iterations,
                backward=self.backward,
                mode=self.mode,
                device=self.device,
                label=label,
                flush_l2=self.flush_l2,
                nvtx=self.nvtx,
            )
        finally:
            self.op.cleanup()
        return metric

    def _seed(self) -> None:
        # Every run draws the same data whatever ran before it (so --resume-id reproduces it).
        random.seed(SEED)
        self.torch.manual_seed(SEED)

    def end(self) -> str | None:
        """Stop the profiler and write its trace; the trace file, if any."""
        if self.profiler is None:
            return None
        self.profiler.__exit__(None, None, None)
        self.profiler.export_chrome_trace(self.trace_file)
        return self.trace_file


class PhaseError(RuntimeError):
    """A failure inside one phase of a run, with the phase in its message."""


def _phase(phase: str, func: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return func(*args, **kwargs)
    except PhaseError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of a run is reported, the next run goes on
        raise PhaseError(f"{phase}: {one_line(exc)}") from exc


def serve(protocol: Protocol) -> int:
    """Answer requests until ``end`` (or until the Rust side closes stdin)."""
    try:
        setup = protocol.receive()
        if setup.get("request") != "setup":
            raise ProtocolError(f"expected the setup request first, got {setup.get('request')!r}")
        worker = OpsWorker(setup)
    except Exception as exc:  # noqa: BLE001 - reported on stderr, the Rust side sees no hello
        print(f"benchit ops worker: cannot start: {one_line(exc)}", file=sys.stderr)
        traceback.print_exc()
        return 1
    protocol.send("hello", sys_info=sys_info(worker.device))
    while True:
        try:
            request = protocol.receive()
        except ProtocolError as exc:
            print(f"benchit ops worker: {exc}", file=sys.stderr)
            return 0 if "closed" in str(exc) else 1
        kind = request.get("request")
        if kind == "end":
            trace = worker.end()
            if trace:
                protocol.send("trace", file=trace)
            protocol.send("done")
            return 0
        if kind != "run":
            print(f"benchit ops worker: unknown request {kind!r}", file=sys.stderr)
            return 1
        run_id = request.get("id")
        try:
            metric = worker.run(request)
        except Exception as exc:  # noqa: BLE001 - one run fails, the others run
            cause = exc.__cause__ or exc
            message = str(exc) if isinstance(exc, PhaseError) else one_line(exc)
            print(f"{request.get('op_name')}|{run_id} failed:", file=sys.stderr)
            traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
            protocol.send("failed", id=run_id, message=message)
        else:
            protocol.send("result", id=run_id, metric=metric)
