"""The data channel between a benchmark and milabench.

milabench reads one JSON document per line from the file descriptor named by ``DATA_FD``. When
that descriptor is 1 (stdout), as across ssh or under torchrun, each write is hidden in stdout as
a terminal escape sequence: ``ESC [``, the hexadecimal digits of the UTF-8 text with ``a-f``
written as ``:;<=>?``, then ``z``. Terminals ignore such sequences; milabench decodes them.

A "push" is a function taking keyword arguments and sending them as one record. The functions
here choose the right one: voir's ``give`` when the script runs under voir (its instruments then
filter and forward the records), else the ``DATA_FD`` channel, else plain JSON lines on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Callable, TextIO

Push = Callable[..., None]

_HEX_TO_SMUGGLED = str.maketrans("abcdef", ":;<=>?")


def smuggle(text: str) -> str:
    """Return ``text`` encoded as one escape sequence that milabench decodes from stdout."""
    return "\x1b[" + text.encode("utf-8").hex().translate(_HEX_TO_SMUGGLED) + "z"


def unsmuggle(sequence: str) -> str:
    """Inverse of :func:`smuggle` (used by tests and by tools reading a captured stdout)."""
    if not (sequence.startswith("\x1b[") and sequence.endswith("z")):
        raise ValueError(f"not a smuggled sequence: {sequence!r}")
    digits = sequence[2:-1].translate(str.maketrans(":;<=>?", "abcdef"))
    return bytes.fromhex(digits).decode("utf-8")


def _plain(value: Any) -> Any:
    """Make ``value`` JSON-friendly: tensors and numpy scalars become floats or lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, float):
        return value
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def encode_record(record: dict[str, Any]) -> str:
    """Return the JSON line (with its newline) of one record; NaN and infinities stay as the
    bare words Python's json writes, which milabench reads (a NaN loss fails the run)."""
    return json.dumps(_plain(record)) + "\n"


class DataChannel:
    """Writes records to a text stream, as JSON lines or smuggled in stdout. Threads may share
    one (a monitor samples beside the training loop): each record is written whole."""

    def __init__(self, stream: TextIO, smuggled: bool = False) -> None:
        self.stream = stream
        self.smuggled = smuggled
        self._lock = threading.Lock()

    def send(self, record: dict[str, Any]) -> None:
        """Write one record and flush, so milabench sees it at once."""
        line = encode_record(record)
        try:
            with self._lock:
                self.stream.write(smuggle(line) if self.smuggled else line)
                self.stream.flush()
        except (ValueError, OSError):
            # The stream is closed (interpreter shutting down, or milabench went away):
            # there is nobody left to tell.
            pass

    def push(self, **record: Any) -> None:
        """Keyword form of :meth:`send`."""
        self.send(record)


_channel: DataChannel | None = None


def data_channel(environ: dict[str, str] | None = None) -> DataChannel | None:
    """The channel named by ``DATA_FD`` (opened once per process), or None outside milabench."""
    global _channel
    env = os.environ if environ is None else environ
    fd = env.get("DATA_FD")
    if fd is None or fd == "":
        return None
    if environ is None and _channel is not None:
        return _channel
    if int(fd) == 1:
        channel = DataChannel(sys.stdout, smuggled=True)
    else:
        channel = DataChannel(os.fdopen(int(fd), "w", buffering=1, encoding="utf-8"))
    if environ is None:
        _channel = channel
    return channel


def file_push(fp: TextIO | None = None) -> Push:
    """A push writing plain JSON lines to ``fp`` (stdout by default); ``task`` defaults to
    ``train``."""

    def message(**record: Any) -> None:
        record.setdefault("task", "train")
        print(encode_record(record), end="", file=fp if fp is not None else sys.stdout, flush=True)

    return message


def smuggle_push() -> Push:
    """A push smuggling records in stdout (what ``DATA_FD=1`` asks for); ``task`` defaults to
    ``train``."""
    channel = DataChannel(sys.stdout, smuggled=True)

    def message(**record: Any) -> None:
        record.setdefault("task", "train")
        channel.send(record)

    return message


# The name Python milabench's benchmate gives it (sic), for benchmarks that import it.
sumggle_push = smuggle_push


def current_overseer() -> Any:
    """voir's overseer of this process, or None when voir is absent or not running the script."""
    try:
        from voir.helpers import current_overseer as overseer
    except ImportError:
        return None
    return overseer.get()


def give_push() -> Push:
    """voir's ``give`` when running under voir, else :func:`auto_push`'s choice."""
    ov = current_overseer()
    if ov is not None:
        return ov.give
    return auto_push()


def auto_push() -> Push:
    """The right push for this process: voir's ``give`` under voir, the ``DATA_FD`` channel
    when milabench gave one, plain JSON lines on stdout otherwise."""
    ov = current_overseer()
    if ov is not None:
        return ov.give
    channel = data_channel()
    if channel is not None:

        def message(**record: Any) -> None:
            record.setdefault("task", "train")
            channel.send(record)

        return message
    return file_push()



Writer = Callable[[dict[str, Any]], None]


def record_writer() -> Writer:
    """A function writing one record (a dict) as it is, without a default ``task``: through
    voir's data file under voir (bypassing the instruments' key selection), else to the
    ``DATA_FD`` channel, else as a JSON line on stdout. Monitors and benchmarks' own ``log``
    calls write this way."""
    ov = current_overseer()
    if ov is not None:
        return ov.log
    channel = data_channel()
    if channel is not None:
        return channel.send
    return DataChannel(sys.stdout).send
