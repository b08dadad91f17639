"""The timed iterator with a fake clock: rates, warm-up, early end, no per-step sync."""

from typing import Any

import pytest

from benchmate.metrics import LazyLossPusher, ManualTimedIterator, StopProgram, TimedIterator
from benchmate.observer import BenchObserver
from benchmate.timers import CPUEvent, cpu_events
from fakes import FakeClock, Recorder


class CountingEvent(CPUEvent):
    """A CPU event that counts synchronisations."""

    syncs = 0

    def synchronize(self) -> None:
        CountingEvent.syncs += 1


def timed(loader: Any, clock: FakeClock, push: Recorder, **kwargs: Any) -> TimedIterator:
    return TimedIterator(
        loader, event_fn=cpu_events(clock), push=push, rank=0, wall_clock=clock, **kwargs
    )


def batches(count: int, size: int = 4) -> list[list[list[int]]]:
    return [[[0] * size, [1] * size] for _ in range(count)]


def test_each_step_is_one_observation_with_its_rate() -> None:
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(5), clock, push, earlystop=100, skip=0, flush_every=1e9)
    for step, _ in enumerate(loader):
        clock.advance(0.5 * (step + 1))  # 0.5 s, 1 s, 1.5 s ...
    assert push.rates() == pytest.approx([8.0, 4.0, 8 / 3, 2.0, 1.6])
    assert all(r["task"] == "train" and r["units"] == "items/s" for r in push.with_key("rate"))
    progress = [r["progress"] for r in push.with_key("progress")]
    assert progress == [(i, 100) for i in range(1, 6)]
    assert loader.observations == 5 and not loader.done


def test_loader_start_up_is_not_timed() -> None:
    clock, push = FakeClock(), Recorder()

    def slow_start() -> Any:
        clock.advance(30.0)  # e.g. DataLoader workers starting
        yield from batches(2)

    loader = timed(slow_start(), clock, push, earlystop=10, skip=0)
    for _ in loader:
        clock.advance(1.0)
    assert push.rates() == pytest.approx([4.0, 4.0])


def test_warm_up_observations_are_left_out_and_the_loop_ends_after_stop_plus_skip() -> None:
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(100), clock, push, earlystop=5, skip=2)
    seen = 0
    for _ in loader:
        seen += 1
        clock.advance(2.0 if seen <= 2 else 1.0)
    assert seen == 5
    assert loader.done
    assert push.rates() == pytest.approx([4.0, 4.0, 4.0])
    assert list(loader) == []  # a finished iterator yields nothing (next epoch)


def test_raise_stop_program_ends_the_script() -> None:
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(100), clock, push, earlystop=3, skip=0, raise_stop_program=True)
    with pytest.raises(StopProgram):
        for _ in loader:
            clock.advance(1.0)
    assert len(push.rates()) == 3


def test_stop_count_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOIR_EARLYSTOP_COUNT", "4")
    monkeypatch.setenv("VOIR_EARLYSTOP_SKIP", "1")
    monkeypatch.delenv("BENCHMATE_OBSERVATION_COUNT", raising=False)
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(100), clock, push)
    for _ in loader:
        clock.advance(1.0)
    assert loader.observations == 5 and len(push.rates()) == 4


def test_device_is_synchronised_once_per_push_not_per_step() -> None:
    clock, push = FakeClock(), Recorder()
    CountingEvent.syncs = 0

    def make(enable_timing: bool = True) -> CountingEvent:
        return CountingEvent(clock=clock)

    loader = TimedIterator(
        batches(20), event_fn=make, push=push, rank=0, wall_clock=clock,
        earlystop=100, skip=0, flush_every=2.5,
    )
    for _ in loader:
        clock.advance(1.0)
    assert len(push.rates()) == 20
    # one sync every third step (2.5 s of wall time) and one at the end, not 20
    assert CountingEvent.syncs == 7


def test_observation_windows_of_several_steps() -> None:
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(6), clock, push, earlystop=100, skip=0, interval=3)
    for _ in loader:
        clock.advance(1.0)
    assert push.rates() == pytest.approx([4.0, 4.0])


def test_other_ranks_do_not_report() -> None:
    clock, push = FakeClock(), Recorder()
    loader = TimedIterator(
        batches(3), event_fn=cpu_events(clock), push=push, rank=1, wall_clock=clock,
        earlystop=10, skip=0,
    )
    for _ in loader:
        clock.advance(1.0)
    assert push.records == []


def test_manual_steps_add_up_micro_batches() -> None:
    clock, push = FakeClock(), Recorder()
    loader = ManualTimedIterator(
        batches(6), event_fn=cpu_events(clock), push=push, rank=0, wall_clock=clock,
        earlystop=100, skip=0,
    )
    for index, _ in enumerate(loader):
        clock.advance(0.5)
        if index % 2 == 1:
            loader.step()
    assert push.rates() == pytest.approx([8.0, 8.0, 8.0])


def test_losses_are_pushed_as_floats_with_the_rates() -> None:
    clock, push = FakeClock(), Recorder()

    class Tensor:
        def __init__(self, value: float) -> None:
            self.value = value

        def detach(self) -> "Tensor":
            return self

        def __float__(self) -> float:
            return self.value

        def backward(self) -> None:
            pass

    backward_calls = []
    observer = BenchObserver(
        event_fn=cpu_events(clock), push=push, rank=0, wall_clock=clock,
        earlystop=3, skip=0, backward_callback=lambda: backward_calls.append(1),
    )
    criterion = observer.criterion(lambda x: Tensor(x))
    for step, _ in enumerate(observer.loader(batches(10))):
        loss = criterion(10.0 - step)
        loss.backward()
        clock.advance(1.0)
    losses = [r["loss"] for r in push.with_key("loss")]
    assert losses == [10.0, 9.0, 8.0] and all(type(x) is float for x in losses)
    assert all(r["task"] == "train" for r in push.with_key("loss"))
    assert len(backward_calls) == 3 and observer.done


def test_lazy_loss_pusher_forgets_what_it_sent() -> None:
    pusher, push = LazyLossPusher(), Recorder()
    pusher.record(1.0)
    pusher.push(push)
    pusher.push(push)
    assert [r["loss"] for r in push.records] == [1.0]


def test_optimizer_step_callback() -> None:
    calls = []

    class Optimizer:
        def step(self) -> str:
            return "stepped"

    observer = BenchObserver(push=Recorder(), step_callback=lambda: calls.append(1))
    optimizer = observer.optimizer(Optimizer())
    assert optimizer.step() == "stepped" and calls == [1]


def test_skip_comes_from_the_benchmark_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOIR_EARLYSTOP_SKIP", raising=False)
    monkeypatch.setenv("MILABENCH_CONFIG", '{"voir": {"options": {"stop": 3, "skip": 2}}}')
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(100), clock, push, earlystop=5)
    for _ in loader:
        clock.advance(1.0)
    assert loader.skip == 2 and len(push.rates()) == 3


def test_benchmate_observation_count_overrides_what_the_code_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmate.toggles import get_observation_count

    monkeypatch.delenv("BENCHMATE_OBSERVATION_COUNT", raising=False)
    assert get_observation_count(40) == 40
    monkeypatch.setenv("BENCHMATE_OBSERVATION_COUNT", "2")
    assert get_observation_count(40) == 2
    clock, push = FakeClock(), Recorder()
    loader = timed(batches(100), clock, push, earlystop=50, skip=0, raise_stop_program=True)
    seen = 0
    with pytest.raises(StopProgram):
        for _ in loader:
            seen += 1
            clock.advance(1.0)
    assert seen == 2 and len(push.rates()) == 2
    assert [r["progress"] for r in push.with_key("progress")] == [(1, 2), (2, 2)]


def test_each_rate_is_stamped_with_the_end_of_its_own_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 38, item 9: rates were stamped when they were flushed, so every rate of one push
    carried the same time."""
    clock, push = FakeClock(), Recorder()
    monkeypatch.setattr("benchmate.metrics.time.time", clock)
    loader = timed(batches(4), clock, push, earlystop=100, skip=0, flush_every=1e9)
    for _ in loader:
        clock.advance(0.5)
    # One push at the end, each rate at the end of its own half second.
    assert [r["time"] for r in push.with_key("rate")] == pytest.approx([100.5, 101, 101.5, 102])
