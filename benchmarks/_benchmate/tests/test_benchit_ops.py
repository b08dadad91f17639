"""The ``benchit ops`` worker: data generation, operator registry, timing loops and the protocol
loop, on the CPU (skipped without torch)."""

from __future__ import annotations

import io
import json

import pytest

torch = pytest.importorskip("torch")

from benchmate.benchit import ops, ops_data, ops_registry, ops_timing  # noqa: E402
from benchmate.benchit.protocol import Protocol  # noqa: E402

CPU = torch.device("cpu")


def tensor(dtype="float", shape=(2, 3), **extra):
    return {"type": "tensor", "dtype": dtype, "shape": list(shape), **extra}


def test_tensors_follow_param_defaults():
    value = ops_data.materialize(tensor(), CPU)
    assert value.shape == (2, 3) and value.dtype == torch.float32 and value.requires_grad
    assert float(value.detach().min()) >= 0.0 and float(value.detach().max()) < 1.0
    ints = ops_data.materialize(tensor("long", (1000,), requires_grad=False), CPU)
    assert ints.dtype == torch.int64 and int(ints.min()) >= -10 and int(ints.max()) < 10
    scalar = ops_data.materialize(tensor("double", ()), CPU)
    assert scalar.dim() == 0 and -10 <= float(scalar.detach()) < 10
    flags = ops_data.materialize(tensor("bool", (8,), requires_grad=False), CPU)
    assert flags.dtype == torch.bool


def test_value_ranges_are_inclusive_and_checked():
    draws = {ops_data.materialize({"type": "int", "value_range": [1, 3]}, CPU) for _ in range(200)}
    assert draws == {1, 2, 3}
    indices = ops_data.materialize(tensor("long", (500,), requires_grad=False, value_range=[0, 4]), CPU)
    assert set(indices.tolist()) == {0, 1, 2, 3, 4}
    with pytest.raises(ops_data.DataError, match="reversed"):
        ops_data.materialize({"type": "float", "value_range": [2.0, 1.0]}, CPU)
    with pytest.raises(ops_data.DataError, match="unknown dtype 'half'"):
        ops_data.materialize(tensor("half"), CPU)


def test_every_argument_type_materialises():
    spec = {
        "args": [
            {"type": "genericlist", "value": [{"type": "int", "value": 1}, {"type": "none"}]},
            {"type": "tuple", "value": [{"type": "bool", "value": True}, {"type": "str", "value": "x"}]},
            {"type": "device", "value": "cpu"},
        ],
        "kwargs": {"alpha": {"type": "double", "value": 0.5}},
    }
    args, kwargs = ops_data.materialize_call(spec, CPU)
    assert args == [[1, None], (True, "x"), CPU]
    assert kwargs == {"alpha": 0.5}


def test_the_registry_knows_params_names_modules_aten_and_models():
    assert isinstance(ops_registry.lookup("torch.add"), ops_registry.CallableOp)
    assert isinstance(ops_registry.lookup("torch.nn.Linear"), ops_registry.BuildableOp)
    assert isinstance(ops_registry.lookup("torch.clamp_"), ops_registry.InPlaceOp)
    for name in ops_registry.known_names():
        ops_registry.lookup(name)
    aten = ops_registry.lookup("aten::add")
    aten.build("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    a, b = torch.ones(2), torch.ones(2)
    assert aten.target()(a, b, alpha=2).tolist() == [3.0, 3.0]
    with pytest.raises(ops_registry.OperatorError, match="names aten::mm, not aten::add"):
        aten.build("aten::mm(Tensor self, Tensor mat2) -> Tensor")
    with pytest.raises(ops_registry.OperatorError, match="unknown operator 'torch.nope'"):
        ops_registry.lookup("torch.nope")
    model = ops_registry.lookup("pytorch.model.resnet")
    model.build(layers=[1, 1], num_classes=5)
    assert model.target()(torch.rand(2, 3, 32, 32)).shape == (2, 5)


def test_aten_operators_take_params_positional_calls_and_in_place_names():
    """PARAM's aten_ops.json: ``aten::add`` gets ``alpha`` as a third positional argument (its
    TorchScript function takes every schema argument by position), and ``aten::add_`` has no
    ``default`` overload, so its build schema picks ``Tensor``."""
    a, b = torch.ones(2), torch.ones(2)
    add = ops_registry.lookup("aten::add")
    add.build("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert add.target()(a, b, 2).tolist() == [3.0, 3.0]
    in_place = ops_registry.lookup("aten::add_")
    in_place.build("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
                   "Tensor(a!)")
    assert in_place.target()(a, b, 1).tolist() == [2.0, 2.0] and a.tolist() == [2.0, 2.0]
    unnamed = ops_registry.lookup("aten::add_")
    with pytest.raises(ops_registry.OperatorError, match="several overloads .* none is named"):
        unnamed.target()
    assert ops_registry.lookup("aten::mm").target()(torch.eye(2), b.reshape(2, 1)).shape == (2, 1)
    with pytest.raises(ops_registry.OperatorError, match="no overload 'Nope'"):
        bad = ops_registry.lookup("aten::add.Nope")
        bad.target()


def run_measure(op, args, **options):
    defaults = dict(warmup=2, iterations=3, backward=True, mode="discrete", device=CPU)
    return ops_timing.measure(op, args, {}, **{**defaults, **options})


@pytest.mark.parametrize("mode", ops_timing.MODES)
def test_warmup_and_iterations_give_lists_of_those_lengths_in_every_mode(mode):
    op = ops_registry.lookup("torch.mm")
    args = [torch.rand(4, 4, requires_grad=True), torch.rand(4, 4, requires_grad=True)]
    metric = run_measure(op, args, mode=mode)
    for phase in ("forward", "backward"):
        assert len(metric[phase]["warmup.time"]) == 2
        assert len(metric[phase]["measure.time"]) == 3
        assert metric[phase]["measure.gpu.memory"] == []  # no peak memory on the CPU
        assert all(t > 0 for t in metric[phase]["measure.time"])
    assert args[0].grad is not None


def test_backward_needs_an_output_with_gradients():
    op = ops_registry.lookup("torch.nn.functional.relu")
    with pytest.raises(ops_registry.OperatorError, match="no backward"):
        run_measure(op, [torch.arange(3)])
    assert run_measure(op, [torch.arange(3)], backward=False)["forward"]["measure.time"]


def serve(requests):
    out = io.StringIO()
    inp = io.StringIO("".join(json.dumps(r) + "\n" for r in requests))
    status = ops.serve(Protocol(out, inp))
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def add_input(shape):
    return {"args": [tensor(shape=shape), tensor(shape=shape)], "kwargs": {}}


def test_the_worker_answers_each_run_and_isolates_failures(tmp_path):
    trace = tmp_path / "trace.json"
    setup = {"request": "setup", "device": "cpu", "warmup": 1, "iterations": 2, "backward": False,
             "exec_mode": "discrete", "profile": str(trace)}
    mm_bad = {"args": [tensor(shape=(2, 3)), tensor(shape=(2, 3))], "kwargs": {}}
    status, events = serve([
        setup,
        {"request": "run", "op_name": "torch.add", "id": "0|0|0", "config": {"build": None, "input": add_input((4,))}},
        {"request": "run", "op_name": "torch.mm", "id": "0|0|1", "config": {"build": None, "input": mm_bad}},
        {"request": "run", "op_name": "torch.nope", "id": "0|0|2", "config": {"build": None, "input": add_input((4,))}},
        {"request": "run", "op_name": "torch.nn.Linear", "id": "0|0|3", "config": {
            "build": {"args": [{"type": "int", "value": 3}, {"type": "int", "value": 2}], "kwargs": {}},
            "input": {"args": [tensor(shape=(5, 3))], "kwargs": {}}}},
        {"request": "end"},
    ])
    assert status == 0
    kinds = [(e["event"], e.get("id")) for e in events]
    assert kinds == [("hello", None), ("result", "0|0|0"), ("failed", "0|0|1"), ("failed", "0|0|2"),
                     ("result", "0|0|3"), ("trace", None), ("done", None)]
    assert events[0]["sys_info"]["num_threads"] == 1
    assert events[2]["message"].startswith("timing: RuntimeError: mm: mat1 and mat2 shapes cannot be multiplied")
    assert "unknown operator 'torch.nope'" in events[3]["message"]
    assert len(events[1]["metric"]["forward"]["measure.time"]) == 2
    assert trace.is_file() and "[param|torch.add|0|0|0|measure|forward]" in trace.read_text()


def test_each_run_draws_the_same_data_whatever_ran_before():
    seen = []

    def record(op, args, kwargs, **options):
        seen.append(args[0].clone())
        return {"forward": {}}

    setup = {"request": "setup", "warmup": 0, "iterations": 1}
    run = {"request": "run", "op_name": "torch.add", "id": "0|0|0", "config": {"input": add_input((3,))}}
    original = ops_timing.measure
    ops_timing.measure = record
    try:
        serve([setup, run, dict(run, id="0|0|1"), {"request": "end"}])
    finally:
        ops_timing.measure = original
    assert torch.equal(seen[0], seen[1])
