"""StepTimer: the records of loops that report by hand (Python milabench's JAX benchmarks)."""

import pytest

from benchmate.metrics import give_push
from benchmate.timings import StepTimer
from fakes import FakeClock, Recorder


@pytest.fixture(autouse=True)
def counts(monkeypatch):
    monkeypatch.setenv("VOIR_EARLYSTOP_COUNT", "4")
    monkeypatch.setenv("VOIR_EARLYSTOP_SKIP", "2")


def test_each_end_pushes_a_rate_then_the_progress():
    clock, push = FakeClock(), Recorder()
    timer = StepTimer(push, clock=clock)
    timer.step(100)
    timer.step(60)
    clock.advance(2.0)
    timer.end()
    timer.step(30)
    clock.advance(0.5)
    timer.end()
    assert push.records == [
        {"rate": 80.0, "units": "items/s", "task": "train"},
        {"progress": (1, 6), "task": "early_stop"},
        {"rate": 60.0, "units": "items/s", "task": "train"},
        {"progress": (2, 6), "task": "early_stop"},
    ]


def test_sync_runs_before_the_clock_is_read():
    clock, push = FakeClock(), Recorder()

    def sync():
        clock.advance(1.0)  # the device finishing its queue

    timer = StepTimer(push, sync=sync, clock=clock)
    timer.step(10)
    timer.end()
    assert push.rates() == [10.0]


def test_log_pushes_records_as_they_are():
    push = Recorder()
    timer = StepTimer(push)
    timer.log(memory_peak=812.5, units="MiB")
    timer.log(returns=1.0, loss=0.25)
    assert push.records == [{"memory_peak": 812.5, "units": "MiB"}, {"returns": 1.0, "loss": 0.25}]


def test_timesteps_is_the_callers_counter():
    timer = StepTimer(Recorder())
    assert timer.timesteps == 0
    timer.timesteps = 4000
    timer.end()
    assert timer.timesteps == 4000


def test_with_give_push_outside_voir_records_reach_the_data_channel(data_pipe, monkeypatch):
    timer = StepTimer(give_push())
    timer.step(5)
    timer.end()
    records = data_pipe()
    assert [r["task"] for r in records] == ["train", "early_stop"]
    assert records[0]["units"] == "items/s" and records[0]["rate"] > 0
    assert records[1]["progress"] == [1, 6]
