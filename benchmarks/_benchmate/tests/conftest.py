"""Makes the package and the fakes importable without installing them; the ``data_pipe``
fixture."""

import json
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmate import channel  # noqa: E402 (after the path is set)


@pytest.fixture
def data_pipe(monkeypatch):
    """Points ``DATA_FD`` at a fresh pipe (and forgets the process's cached channel); returns a
    function that closes the writing end and gives the records written, decoded."""
    read, write = os.pipe()
    monkeypatch.setenv("DATA_FD", str(write))
    monkeypatch.setattr(channel, "_channel", None)
    closed = False

    def records():
        nonlocal closed
        if not closed:
            if channel._channel is not None:
                channel._channel.stream.close()  # its descriptor is `write`
            else:
                os.close(write)
            closed = True
        with os.fdopen(read) as stream:
            return [json.loads(line) for line in stream]

    yield records
    if not closed:
        records()
