"""The worker's side of the benchit protocol: JSON lines out on a private copy of stdout, JSON
lines in on stdin.

:meth:`Protocol.take_stdout` must run before anything else prints: it keeps a duplicate of file
descriptor 1 for the protocol and points descriptor 1 (and ``sys.stdout``) at descriptor 2, the log
file the Rust side opened, so output of the user's script or of C libraries cannot corrupt the
protocol stream.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import IO, Any


class ProtocolError(RuntimeError):
    """The Rust side sent something this worker cannot read, or closed stdin early."""


class Protocol:
    """One worker's two streams: ``send`` events, ``receive`` requests and replies."""

    def __init__(self, out: IO[str], inp: IO[str]):
        self._out = out
        self._in = inp

    @classmethod
    def take_stdout(cls) -> "Protocol":
        """Claim the process's stdout for the protocol and send script output to stderr."""
        sys.stdout.flush()
        protocol_fd = os.dup(1)
        os.dup2(2, 1)
        out = os.fdopen(protocol_fd, "w", buffering=1, encoding="utf-8")
        sys.stdout = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")
        inp = os.fdopen(os.dup(0), "r", encoding="utf-8")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdin = open(os.devnull, encoding="utf-8")
        return cls(out, inp)

    def send(self, event: str, **fields: Any) -> None:
        """Write one event line and flush it."""
        record = {"event": event, **fields}
        self._out.write(json.dumps(record, allow_nan=True) + "\n")
        self._out.flush()

    def receive(self) -> dict[str, Any]:
        """Read one JSON object line from the Rust side."""
        line = self._in.readline()
        if not line:
            raise ProtocolError("benchit closed the request stream")
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"not a JSON line: {line[:200]!r}") from exc
        if not isinstance(value, dict):
            raise ProtocolError(f"expected a JSON object, got: {line[:200]!r}")
        return value


#: A terminal colour or style sequence.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line, prefixed with its type, without terminal colour
    codes (torch's exporter colours its messages)."""
    text = ANSI_ESCAPE.sub("", str(exc)).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def root_cause_line(exc: BaseException) -> str:
    """:func:`one_line` of the innermost cause of ``exc`` (``raise ... from``), which says what
    went wrong where wrappers (torch.export's "Failed to export the model") only say where."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return one_line(exc)
