"""The system monitors a benchmark starts itself (bench_monitor, setupvoir, ...): what they
write on the data channel, and when."""

import threading
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("voir")  # the monitors sample through voir's functions

from benchmate import monitor  # noqa: E402
from benchmate.monitor import (  # noqa: E402
    NODE_PROBES,
    bench_monitor,
    milabench_sys_monitor,
    monitor_monogpu,
    multigpu_monitor,
    setupvoir,
)

FAST = "0.02"


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch):
    monkeypatch.setenv("BENCHMATE_POLL_INTERVAL", FAST)
    monkeypatch.delenv("RANK", raising=False)


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def samples(records, key):
    return [r for r in records if key in r]


def check_sample(record, key):
    assert record["task"] == "main" and isinstance(record["time"], float)
    assert set(record) == {"task", "time", key}
    assert isinstance(record[key], dict)


def sampling_thread():
    found = [t for t in threading.enumerate() if t.name == "benchmate-monitor"]
    assert len(found) == 1, found
    return found[0]


def test_bench_monitor_without_rank_samples_the_gpu_and_lets_the_script_log(data_pipe):
    with bench_monitor() as log:
        log({"task": "train", "rate": 12.5, "units": "Tok/s"})
        thread = sampling_thread()
        time.sleep(0.15)
    assert not thread.is_alive()
    records = data_pipe()
    assert {"task": "train", "rate": 12.5, "units": "Tok/s"} in records
    gpu = samples(records, "gpudata")
    assert len(gpu) >= 2
    for record in gpu:
        check_sample(record, "gpudata")
    assert not samples(records, "cpudata")


def test_bench_monitor_on_rank_0_samples_the_node(data_pipe, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    with bench_monitor():
        time.sleep(0.1)
    records = data_pipe()
    for key in NODE_PROBES:
        assert samples(records, key), key
        check_sample(samples(records, key)[0], key)
    # one time per round, shared by the round's records
    first = records[0]["time"]
    assert [r["time"] for r in records[: len(NODE_PROBES)]] == [first] * len(NODE_PROBES)


def test_bench_monitor_on_other_ranks_does_nothing(data_pipe, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    with bench_monitor() as log:
        time.sleep(0.1)
    assert log is None
    assert data_pipe() == []


def test_a_disabled_monitor_writes_nothing(data_pipe):
    with multigpu_monitor(enabled=False) as log:
        time.sleep(0.1)
    assert log is None
    assert data_pipe() == []


def test_nothing_is_written_after_the_block(data_pipe):
    with bench_monitor():
        time.sleep(0.05)
    ended = time.time()
    time.sleep(0.1)
    records = data_pipe()
    assert records and max(r["time"] for r in records) <= ended


def test_setupvoir_starts_sampling_and_returns_log_and_monitor(data_pipe):
    log, mon = setupvoir(interval=1)  # BENCHMATE_POLL_INTERVAL wins
    log({"task": "train", "rate": 3.0, "units": "Tflops", "time": 1.0})
    time.sleep(0.1)
    mon.stop()
    records = data_pipe()
    assert records[0] == {"task": "train", "rate": 3.0, "units": "Tflops", "time": 1.0}
    assert samples(records, "gpudata") and not samples(records, "cpudata")


def test_milabench_sys_monitor_samples_the_node(data_pipe):
    _, mon = milabench_sys_monitor()
    wait_for(lambda: mon._thread is not None)
    time.sleep(0.1)
    mon.stop()
    records = data_pipe()
    assert all(samples(records, key) for key in NODE_PROBES)


def test_setupvoir_disabled_samples_nothing_but_logs(data_pipe):
    log, mon = setupvoir(enabled=False)
    log({"value": 1})
    time.sleep(0.1)
    mon.stop()
    assert data_pipe() == [{"value": 1}]


class FakeOverseer:
    """What a voir instrument uses: the phases and ``give``."""

    phases = SimpleNamespace(load_script="load_script", run_script="run_script")

    def __init__(self):
        self.given = []

    def give(self, **record):
        self.given.append(record)


def test_as_a_voir_instrument_samples_are_given_while_the_script_runs():
    ov = FakeOverseer()
    phases = monitor_monogpu(poll_interval=1)(ov)
    assert next(phases) == "load_script"
    assert ov.given == []
    assert next(phases) == "run_script"
    wait_for(lambda: len(ov.given) >= 2)
    phases.close()  # the script ended
    count = len(ov.given)
    time.sleep(0.1)
    assert len(ov.given) == count
    for record in ov.given:
        check_sample(record, "gpudata")


def test_a_failing_probe_is_reported_and_dropped(data_pipe, monkeypatch, capsys):
    calls = []

    def broken():
        calls.append(1)
        raise OSError("sensor gone")

    monkeypatch.setattr(
        monitor, "system_probes", lambda names, arch=None: {"gpudata": broken, "cpudata": lambda: {"load": 1}}
    )
    with multigpu_monitor():
        time.sleep(0.1)
    records = data_pipe()
    assert len(calls) == 1
    assert "sampling gpudata failed" in capsys.readouterr().err
    assert samples(records, "cpudata") and not samples(records, "gpudata")


def test_a_probe_that_cannot_be_made_is_left_out(monkeypatch, capsys):
    import voir.instruments.io as io

    def no_disks():
        raise AttributeError("'NoneType' object has no attribute 'read_count'")

    monkeypatch.setattr(io, "io_monitor", no_disks)
    probes = monitor.system_probes(NODE_PROBES)
    assert set(probes) == {"gpudata", "netdata", "cpudata"}
    assert "cannot sample iodata" in capsys.readouterr().err
