"""The data channel: smuggling, DATA_FD pipes, push selection."""

import io
import json
import os

from benchmate.channel import DataChannel, data_channel, encode_record, smuggle, unsmuggle


def test_smuggle_maps_hex_letters_and_wraps_in_an_escape_sequence() -> None:
    text = '{"a": 1}\n'
    code = smuggle(text)
    assert code.startswith("\x1b[") and code.endswith("z")
    body = code[2:-1]
    assert set(body) <= set("0123456789:;<=>?")
    assert body == text.encode().hex().translate(str.maketrans("abcdef", ":;<=>?"))
    assert unsmuggle(code) == text


def test_smuggle_round_trips_non_ascii() -> None:
    text = '{"name": "été ✓"}\n'
    assert unsmuggle(smuggle(text)) == text


def test_records_are_plain_json_lines() -> None:
    class Scalar:
        def item(self) -> float:
            return 2.5

    line = encode_record({"loss": Scalar(), "progress": (1, 3), "task": "train"})
    assert line.endswith("\n")
    assert json.loads(line) == {"loss": 2.5, "progress": [1, 3], "task": "train"}


def test_smuggled_channel_writes_one_sequence_per_record() -> None:
    out = io.StringIO()
    channel = DataChannel(out, smuggled=True)
    channel.push(rate=10.0, task="train")
    decoded = unsmuggle(out.getvalue())
    assert json.loads(decoded) == {"rate": 10.0, "task": "train"}


def test_data_fd_pipe_receives_json_lines() -> None:
    read, write = os.pipe()
    channel = data_channel({"DATA_FD": str(write)})
    assert channel is not None
    channel.push(task="train", rate=3.0)
    channel.stream.close()
    with os.fdopen(read) as stream:
        assert [json.loads(line) for line in stream] == [{"task": "train", "rate": 3.0}]


def test_no_data_fd_means_no_channel() -> None:
    assert data_channel({}) is None


def test_data_fd_one_smuggles_in_stdout(capsys) -> None:  # type: ignore[no-untyped-def]
    channel = data_channel({"DATA_FD": "1"})
    assert channel is not None and channel.smuggled
    channel.push(loss=1.5)
    assert json.loads(unsmuggle(capsys.readouterr().out)) == {"loss": 1.5}
