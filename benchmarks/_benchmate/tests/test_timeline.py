"""timeline: a serving benchmark's requests turned into token rates per window."""

from dataclasses import dataclass

import pytest

from benchmate.timeline import timeline


@dataclass
class Output:
    """The fields of vLLM's RequestFuncOutput that count."""

    start_time: float
    latency: float
    prompt_len: int
    output_tokens: int


def test_tokens_are_shared_among_windows_by_time_spent_in_each():
    outputs = [
        Output(start_time=100.0, latency=2.0, prompt_len=10, output_tokens=30),  # 0..2 s, 40 tokens
        Output(start_time=101.0, latency=3.0, prompt_len=0, output_tokens=60),  # 1..4 s, 60 tokens
    ]
    windows = timeline(outputs, 2)  # windows 0..2 and 2..4
    assert [w["time"] for w in windows] == [2.0, 4.0]
    assert windows[0]["rate"] == pytest.approx((40 + 20) / 2)
    assert windows[1]["rate"] == pytest.approx(40 / 2)
    assert sum(w["rate"] * 2 for w in windows) == pytest.approx(100)
    assert [w["active_jobs"] for w in windows] == [2, 2]  # the first ends on the boundary
    assert [w["start_job"] for w in windows] == [2, 0]
    # windows include both ends (Python milabench's rule): an end on a boundary counts in both
    assert [w["finished_job"] for w in windows] == [1, 2]
    assert [w["ran_through"] for w in windows] == [0, 0]
    assert windows[0]["active_jobs_pct"] == pytest.approx((2 + 1) / 2)
    assert windows[1]["active_jobs_pct"] == pytest.approx(2 / 2)


def test_a_request_covering_a_whole_window_runs_through_it():
    outputs = [
        {"start_time": 0.0, "latency": 4.0, "prompt_len": 4, "output_tokens": 4},
        {"start_time": 3.5, "latency": 0.5, "prompt_len": 1, "output_tokens": 1},
    ]
    windows = timeline(outputs, 4)
    assert [w["ran_through"] for w in windows] == [0, 1, 1, 0]
    assert [w["rate"] for w in windows] == pytest.approx([2.0, 2.0, 2.0, 4.0])


def test_no_requests_or_no_duration_give_no_windows():
    assert timeline([], 30) == []
    assert timeline([{"start_time": 5.0, "latency": 0.0, "prompt_len": 1, "output_tokens": 1}], 30) == []


def test_the_window_count_is_the_record_count():
    outputs = [
        {"start_time": float(i), "latency": 1.5, "prompt_len": 3, "output_tokens": 7} for i in range(10)
    ]
    windows = timeline(outputs, 30)
    assert len(windows) == 30
    assert windows[-1]["time"] == pytest.approx(10.5)
    assert sum(w["rate"] for w in windows) * (10.5 / 30) == pytest.approx(100)
