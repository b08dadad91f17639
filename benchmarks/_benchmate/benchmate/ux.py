"""Signs of life for long silent steps (downloads, conversions) in a terminal or a log."""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
from typing import Iterator, TextIO

SPINNER = ("*.......", ".*......", "..*.....", "...*....", "....*...", ".....*..", "......*.", ".......*")


@contextlib.contextmanager
def long_action(message: str, interval: float = 1, stream: TextIO | None = None) -> Iterator[None]:
    """While the block runs, rewrites one line every ``interval`` seconds with ``message``, the
    seconds elapsed and a spinner (on stdout unless told). The line stops when the block ends,
    an exception included."""
    out = stream if stream is not None else sys.stdout
    done = threading.Event()
    start = time.monotonic()

    def show() -> None:
        for frame in itertools.cycle(SPINNER):
            if done.wait(interval):
                return
            print(f"\r{message} {time.monotonic() - start:10.2f} {frame}", end="", file=out, flush=True)

    thread = threading.Thread(target=show, name="benchmate-long-action", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
