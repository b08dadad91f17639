"""The training-step helper shared by the benchmarks, with stand-ins for torch objects."""

from benchmate.options import optimizer_step


class Recorder:
    """Records the calls the helper makes, in order, on any of its stand-ins."""

    def __init__(self):
        self.calls = []

    def stand_in(self, name):
        recorder = self

        class StandIn:
            def __getattr__(self, attr):
                def call(*args, **kwargs):
                    recorder.calls.append(f"{name}.{attr}")
                    # `scaler.scale(loss)` gives the scaled loss, whose backward runs next.
                    return recorder.stand_in("scaled_loss") if attr == "scale" else self

                return call

        return StandIn()


def test_plain_step_clears_then_backward_then_steps():
    rec = Recorder()
    optimizer_step(rec.stand_in("loss"), rec.stand_in("optimizer"), None)
    assert rec.calls == ["optimizer.zero_grad", "loss.backward", "optimizer.step"]


def test_scaled_step_goes_through_the_scaler():
    rec = Recorder()
    optimizer_step(rec.stand_in("loss"), rec.stand_in("optimizer"), rec.stand_in("scaler"))
    assert rec.calls == [
        "optimizer.zero_grad",
        "scaler.scale",
        "scaled_loss.backward",
        "scaler.step",
        "scaler.update",
    ]
