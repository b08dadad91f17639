"""The benchit worker's mode ``models``: discovery, hashes, builds, runtimes and failures.

Needs torch, onnx and onnxruntime (the e2e environment); skipped where torch is missing. Most
tests serve the request in this process (:func:`benchit_driver.run_in_process`); a few run the
real worker subprocess as Rust does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import textwrap
from typing import Any

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

#: torch's own call path, which no test may leave patched.
ORIGINAL_CALL = torch.nn.Module.__call__

from benchit_driver import (  # noqa: E402 - after the skips
    build_replier,
    of_kind,
    run_in_process,
    run_worker,
    script_request,
)

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "benchit"


def write_script(folder: pathlib.Path, name: str, body: str) -> pathlib.Path:
    """A script file in ``folder`` with ``body`` dedented."""
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


def analyze(script: pathlib.Path, **options) -> list[dict]:
    """The events of an analysis-only run of ``script`` in this process."""
    events, status = run_in_process(script_request(script, analyze_only=True, **options))
    assert status == 0
    assert events[0]["event"] == "hello" and events[-1]["event"] == "done"
    return events


def calls_by_hash(events: list[dict]) -> dict[str, int]:
    """Executed count of every invocation from the ``calls`` event."""
    (calls,) = of_kind(events, "calls")
    return {entry["invocation_hash"]: entry["executed"] for entry in calls["invocations"]}


# -- hashes ----------------------------------------------------------------------------------


def test_hashes_are_mlagility_values() -> None:
    from benchmate.benchit.hashing import invocation_hash, model_hash, shapes_and_dtypes

    class SmallModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(11, 5)

    model = SmallModel()
    assert model_hash(model) == "2a1e15ca"
    shapes, dtypes = shapes_and_dtypes({"x": torch.rand(11)})
    assert invocation_hash("2a1e15ca", None, shapes, dtypes) == "24adc42f"


def test_input_descriptions_follow_mlagility() -> None:
    from benchmate.benchit.hashing import UnsupportedInput, named_inputs, shapes_and_dtypes

    inputs = named_inputs((torch.zeros(2, 3, dtype=torch.int64), [torch.rand(4), None]),
                          {"flag": True, "scale": 0.5, "mask": None})
    shapes, dtypes = shapes_and_dtypes(inputs)
    assert list(shapes) == ["Positional Arg 1", "Positional Arg 2[0]", "flag", "scale"]
    assert shapes["Positional Arg 1"] == (2, 3) and dtypes["Positional Arg 1"] == "int64"
    assert shapes["flag"] == (1,) and dtypes["flag"] == "bool" and dtypes["scale"] == "float"
    with pytest.raises(UnsupportedInput):
        shapes_and_dtypes({"x": {"nested": torch.rand(1)}})


def test_weights_hash_changes_with_a_weight() -> None:
    from benchmate.benchit.hashing import weights_hash

    model = torch.nn.Linear(3, 2)
    before = weights_hash(model)
    assert before == weights_hash(model) and len(before) == 64
    with torch.no_grad():
        model.weight[0, 0] += 1
    assert weights_hash(model) != before


# -- discovery of the examples ---------------------------------------------------------------


def test_hello_world_is_discovered_with_mlagility_hashes() -> None:
    events = analyze(EXAMPLES / "hello_world.py")
    (model,) = of_kind(events, "model")
    assert model["model_hash"] == "2a1e15ca" and model["class"] == "SmallModel"
    assert model["name"] == "model" and model["file"] == str(EXAMPLES / "hello_world.py")
    assert model["line"] == 22 and model["module"] == "__main__"  # as python runs it
    assert (model["parameters"], model["parameter_bytes"]) == (60, 240)
    (invocation,) = of_kind(events, "invocation")
    assert invocation["invocation_hash"] == "24adc42f"
    assert invocation["input_shapes"] == {"x": [11]}
    assert invocation["input_dtypes"] == {"x": "float32"}
    assert calls_by_hash(events) == {"24adc42f": 1}


def test_only_modules_with_parameters_other_than_activations_are_models(
        tmp_path: pathlib.Path) -> None:
    """An activation (MultiheadAttention included, as MLAgility has it), a module without
    parameters, and a lazy module before its first call made them are no models."""
    script = write_script(tmp_path, "kinds.py", """
        import torch
        class Holder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.empty = None
                self.pool = torch.nn.MaxPool1d(1)
                self.fc = torch.nn.Linear(4, 4)
            def forward(self, x):
                return self.fc(self.pool(x))
        x = torch.rand(1, 4)
        torch.nn.ReLU()(x)
        torch.nn.MaxPool1d(2)(x)
        torch.nn.MultiheadAttention(4, 1)(x, x, x)
        lazy = torch.nn.LazyLinear(3)
        lazy(x)
        lazy(x)
        holder = Holder()
        holder(x)
        """)
    events = analyze(script)
    classes = {model["model_hash"]: model["class"] for model in of_kind(events, "model")}
    counts = {classes[i["model_hash"]]: calls_by_hash(events)[i["invocation_hash"]]
              for i in of_kind(events, "invocation")}
    assert counts == {"Linear": 1, "Holder": 1}


def test_tensor_inputs_are_described_by_position_and_keyword(tmp_path: pathlib.Path) -> None:
    """Tensor inputs are described from the call's signature, after the script: the same
    shapes, dtypes and hashes as describing the tensors at the call."""
    from benchmate.benchit.hashing import invocation_hash, named_inputs, shapes_and_dtypes

    script = write_script(tmp_path, "keywords.py", """
        import torch
        class Masked(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
            def forward(self, x, ids, mask=None):
                return self.fc(x) * mask + ids.sum()
        model = Masked()
        x, ids, mask = torch.rand(2, 4), torch.ones(2, 3, dtype=torch.int64), torch.ones(2, 4)
        model(x, ids, mask=mask)
        model(x, ids, mask)
        """)
    events = analyze(script)
    (model,) = of_kind(events, "model")
    shapes = {"Positional Arg 1": [2, 4], "Positional Arg 2": [2, 3]}
    dtypes = {"Positional Arg 1": "float32", "Positional Arg 2": "int64"}
    described = {}
    for inputs in (named_inputs((torch.rand(2, 4), torch.ones(2, 3, dtype=torch.int64)),
                                {"mask": torch.ones(2, 4)}),
                   named_inputs((torch.rand(2, 4), torch.ones(2, 3, dtype=torch.int64),
                                 torch.ones(2, 4)), {})):
        input_shapes, input_dtypes = shapes_and_dtypes(inputs)
        described[invocation_hash(model["model_hash"], None, input_shapes, input_dtypes)] = (
            {key: list(shape) for key, shape in input_shapes.items()}, input_dtypes)
    found = {i["invocation_hash"]: (i["input_shapes"], i["input_dtypes"])
             for i in of_kind(events, "invocation")}
    assert found == described
    assert found[next(iter(described))] == ({**shapes, "mask": [2, 4]},
                                             {**dtypes, "mask": "float32"})
    assert sorted(calls_by_hash(events).values()) == [1, 1]


def test_models_are_located_where_the_script_makes_them(tmp_path: pathlib.Path) -> None:
    """Outside the model's own constructors (its class's and its bases'), through the script's
    other functions."""
    script = write_script(tmp_path, "located.py", """
        import torch
        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = torch.nn.Linear(4, 4)
            def forward(self, x):
                return self.inner(x)
        class Net(Block):
            def __init__(self):
                super().__init__()
                self.head = torch.nn.Linear(4, 2)
            def forward(self, x):
                return self.head(super().forward(x))
        def make():
            return Net()
        net = make()
        net(torch.rand(1, 4))
        """)
    events = analyze(script, max_depth=1)
    located = {model["name"]: (model["file"], model["line"]) for model in of_kind(events, "model")}
    assert located == {"net": (str(script), 16), "inner": (str(script), 6),
                       "head": (str(script), 12)}


@pytest.mark.parametrize("script, classes, shapes_and_calls", [
    ("mlp.py", ["MLP"], [({"Positional Arg 1": [8, 64]}, 100)]),
    ("corpus_style.py", ["Sequential"], [({"input": [1, 128, 64]}, 1)]),
    ("cnn.py", ["SmallCNN"], [({"Positional Arg 1": [2, 3, 32, 32]}, 2)]),
    ("transformer_block.py", ["TransformerEncoderLayer"],
     [({"Positional Arg 1": [2, 16, 64]}, 1)]),
    ("two_models.py", ["Encoder", "Head"],
     [({"Positional Arg 1": [1, 32]}, 2), ({"Positional Arg 1": [1, 16]}, 3),
      ({"Positional Arg 1": [8, 32]}, 1)]),
])
def test_examples_are_discovered(script: str, classes: list, shapes_and_calls: list) -> None:
    events = analyze(EXAMPLES / script)
    models = of_kind(events, "model")
    assert [m["class"] for m in models] == classes
    assert all(m["depth"] == 0 and m["parameters"] > 0 for m in models)
    invocations = of_kind(events, "invocation")
    counts = calls_by_hash(events)
    assert [(i["input_shapes"], counts[i["invocation_hash"]]) for i in invocations] == \
        shapes_and_calls
    assert all(i["input_dtypes"] == {k: "float32" for k in i["input_shapes"]}
               for i in invocations)


def test_sub_models_down_to_max_depth_name_their_parents() -> None:
    events = analyze(EXAMPLES / "two_models.py", max_depth=1)
    models = {m["class"] + ":" + str(m["name"]): m for m in of_kind(events, "model")}
    assert set(models) == {"Encoder:encoder", "Linear:proj", "Head:head", "Linear:fc"}
    assert models["Linear:proj"]["depth"] == 1
    assert models["Linear:proj"]["parent_hash"] == models["Encoder:encoder"]["model_hash"]
    assert models["Linear:fc"]["parent_hash"] == models["Head:head"]["model_hash"]
    invocations = of_kind(events, "invocation")
    by_hash = {i["invocation_hash"]: i for i in invocations}
    projections = [i for i in invocations
                   if i["model_hash"] == models["Linear:proj"]["model_hash"]]
    assert len(projections) == 2
    for projection in projections:
        parent = by_hash[projection["parent_invocation_hash"]]
        assert parent["model_hash"] == models["Encoder:encoder"]["model_hash"]
        assert parent["input_shapes"] == projection["input_shapes"]
    counts = calls_by_hash(events)
    assert sorted(counts[i["invocation_hash"]] for i in projections) == [1, 2]


def test_targets_select_invocations(tmp_path: pathlib.Path) -> None:
    events, _ = run_in_process(
        script_request(EXAMPLES / "two_models.py", targets=("deadbeef",)),
        build_replier(tmp_path))
    assert not any(i["is_target"] for i in of_kind(events, "invocation"))
    assert not of_kind(events, "stage")


def test_inputs_without_a_shape_are_reported_and_the_script_goes_on(
        tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "odd_inputs.py", """
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 3)
            def forward(self, x, options=None):
                return self.fc(x)
        net = Net()
        net(torch.rand(3), options={"fast": True})
        net(torch.rand(3))
        """)
    events = analyze(script)
    (error,) = of_kind(events, "error")
    assert "options" in error["message"] and "dict" in error["message"]
    (invocation,) = of_kind(events, "invocation")
    assert calls_by_hash(events) == {invocation["invocation_hash"]: 1}
    assert not of_kind(events, "script_error")


def test_a_forked_child_discovers_nothing(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "forks.py", """
        import os
        import torch
        model = torch.nn.Linear(3, 3)
        model(torch.rand(3))
        child = os.fork()
        if child == 0:
            model(torch.rand(5, 3))
            torch.nn.Linear(2, 2)(torch.rand(2))
            os._exit(0)
        os.waitpid(child, 0)
        model(torch.rand(3))
        """)
    events, _, _ = run_worker(script_request(script, analyze_only=True))
    assert len(of_kind(events, "model")) == 1 and len(of_kind(events, "invocation")) == 1
    assert list(calls_by_hash(events).values()) == [2]


def test_calls_are_counted_across_shapes_models_and_descriptions(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts reach their invocation whether the next call goes to another shape, another model,
    a new model in a dead one's place (and maybe at its address), or a description made while the
    script runs."""
    from benchmate.benchit import discovery

    monkeypatch.setattr(discovery, "DESCRIBE_AFTER_SECONDS", 0.0)
    script = write_script(tmp_path, "counted.py", """
        import torch
        a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
        x, y = torch.rand(1, 4), torch.rand(3, 4)
        for _ in range(5):
            a(x)
            a(x)
            a(y)
            b(x)
        for _ in range(4):
            c = torch.nn.Linear(4, 3)
            c(y)
            c(y)
            del c
        try:
            a(torch.rand(1, 5))
        except RuntimeError:
            pass
        a(x)
        """)
    events = analyze(script)
    names = {m["model_hash"]: m["name"] for m in of_kind(events, "model")}
    counts = calls_by_hash(events)
    seen = sorted((names[i["model_hash"]], i["input_shapes"]["Positional Arg 1"],
                   counts[i["invocation_hash"]]) for i in of_kind(events, "invocation"))
    assert seen == [("a", [1, 4], 11), ("a", [1, 5], 0), ("a", [3, 4], 5), ("b", [1, 4], 5),
                    ("c", [3, 4], 8)]
    (calls,) = of_kind(events, "calls")
    assert all(entry["seconds"] > 0 for entry in calls["invocations"] if entry["executed"])


# -- builds and benchmarks -------------------------------------------------------------------


def test_full_build_in_the_worker_process(tmp_path: pathlib.Path) -> None:
    replier = build_replier(tmp_path, stages=("export", "optimize", "fp16"),
                            runtimes=("ort", "torch-eager"), onnx_stage="fp16", iterations=7)
    events, status, log = run_worker(script_request(EXAMPLES / "hello_world.py"), replier)
    assert status == 0 and events[-1] == {"event": "done"}
    assert "tensor([" in log  # the script's print went to the log, not the protocol
    stages = of_kind(events, "stage")
    assert [(s["stage"], s["status"]) for s in stages] == \
        [("export", "ok"), ("optimize", "ok"), ("fp16", "ok")]
    build_dir = tmp_path / "b_24adc42f"
    for stage in stages:
        assert os.path.exists(stage["output"]) and stage["seconds"] > 0
        assert (build_dir / f"log_{stage['stage']}.txt").exists()
    assert stages[0]["output"].endswith("b_24adc42f-op17-base.onnx")
    (info,) = of_kind(events, "onnx_info")
    assert info["file"].endswith("-opt-f16.onnx") and info["ops"].get("Gemm") == 1
    assert info["inputs"] == {"x": [11]} and info["opset"] == 17 and info["size_bytes"] > 0
    fp16 = onnx.load(info["file"])
    assert fp16.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    benchmarks = of_kind(events, "benchmark")
    assert [(b["runtime"], b["status"]) for b in benchmarks] == \
        [("ort", "ok"), ("torch-eager", "ok")]
    assert all(len(b["times_ns"]) == 7 and min(b["times_ns"]) > 0 for b in benchmarks)
    assert benchmarks[0]["provider"] == "CPUExecutionProvider"
    assert of_kind(events, "invocation_done") == [
        {"event": "invocation_done", "invocation_hash": "24adc42f"}]


def test_a_model_the_torchscript_exporter_fails_on_names_the_dynamo_exporter(
        tmp_path: pathlib.Path) -> None:
    """torch's torchscript exporter cannot export a transformer encoder layer (a fused kernel
    under ``no_grad()``, a traced ``is_causal`` otherwise); its message says which exporter
    can, and that one builds the model ONNX Runtime then runs."""
    request = script_request(EXAMPLES / "transformer_block.py")
    events, status = run_in_process(request, build_replier(tmp_path / "torchscript",
                                                           runtimes=("ort",)))
    assert status == 0
    (export,) = of_kind(events, "stage")
    assert export["status"] == "error" and export["message"].endswith(
        f"; torch's newer exporter may export this model: --exporter dynamo (see "
        f"{tmp_path / 'torchscript' / 'b_55bfd564' / 'log_export.txt'})")
    events, status = run_in_process(request, build_replier(
        tmp_path / "dynamo", runtimes=("ort",), iterations=3, warmup=1, exporter="dynamo"))
    assert status == 0
    assert [(s["stage"], s["status"]) for s in of_kind(events, "stage")] == \
        [("export", "ok"), ("optimize", "ok")]
    assert [(b["runtime"], b["status"]) for b in of_kind(events, "benchmark")] == [("ort", "ok")]


def test_numbers_and_state_tuples_are_fed_to_ort_by_name(tmp_path: pathlib.Path) -> None:
    """The torchscript exporter turns a Python number (``scale=2.0``) into a scalar graph input
    and a tuple of tensors into one input per item; ONNX Runtime is fed each by its name (a
    float keyword argument failed with "no captured input for ONNX input 'onnx::Cast_1'")."""
    script = write_script(tmp_path, "scaled.py", """
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            def forward(self, x, state=None, scale: float = 1.0, steps: int = 1):
                h = self.fc(x) * scale * steps
                return h if state is None else h + state[0] * state[1]

        def main():
            model = Net()
            x = torch.rand(2, 4)
            model(x, scale=2.0)
            model(x, (torch.ones(2, 4), torch.ones(2, 4)), 0.5, steps=3)
            model(torch.rand(3, 4))

        if __name__ == "__main__":
            main()
    """)
    replier = build_replier(tmp_path / "builds", stages=("export", "optimize"),
                            runtimes=("ort",), onnx_stage="optimize", iterations=3, warmup=1)
    events, status = run_in_process(script_request(script), replier)
    assert status == 0
    benchmarks = of_kind(events, "benchmark")
    assert [(b["runtime"], b["status"]) for b in benchmarks] == [("ort", "ok")] * 3, \
        [b.get("message") for b in benchmarks]
    inputs = sorted(sorted(info["inputs"]) for info in of_kind(events, "onnx_info"))
    # The graph takes what each call gave; the parameters a call left out keep their defaults
    # inside the model, as in the script.
    assert inputs == [["scale", "state.0", "state.1", "steps", "x"], ["scale", "x"], ["x"]]


def test_a_missing_package_names_the_with_option(tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A script importing a package benchit's environment lacks is told how to add it, under
    the package's name where it differs from the module's."""
    monkeypatch.delenv("BENCHIT_WORKER", raising=False)
    for module, package in [("torchvision_absent", "torchvision_absent"), ("cv2", "opencv")]:
        script = write_script(tmp_path, f"uses_{module}.py", f"import torch\nimport {module}\n")
        if module == "cv2" and importlib.util.find_spec("cv2") is not None:
            continue
        events, _ = run_in_process(script_request(script, analyze_only=True))
        (error,) = of_kind(events, "script_error")
        assert error["kind"] == "ModuleNotFoundError"
        assert f"add the package with --with {package}" in error["message"], error["message"]
    monkeypatch.setenv("BENCHIT_WORKER", "python -m benchmate.benchit")
    events, _ = run_in_process(script_request(tmp_path / "uses_torchvision_absent.py",
                                              analyze_only=True))
    (error,) = of_kind(events, "script_error")
    assert "into the interpreter BENCHIT_WORKER names" in error["message"]


def test_corpus_scripts_read_their_sizes_with_the_mlagility_helper(
        tmp_path: pathlib.Path) -> None:
    """MLAgility's corpus scripts import ``mlagility.parser`` (``turnkeyml.parser`` later);
    without those packages the worker provides the helper, reading the script's arguments with
    the corpus defaults, and removes it afterwards."""
    script = write_script(tmp_path, "corpus.py", """
        from turnkeyml.parser import parse
        import torch

        batch_size, width, alpha = parse(["batch_size", "width", "alpha"])
        model = torch.nn.Linear(width, 2)
        model(torch.ones(batch_size, width) * alpha)
    """)
    events, status = run_in_process(script_request(script, analyze_only=True,
                                                   script_args=("--batch_size", "3")))
    assert status == 0 and not of_kind(events, "script_error"), events
    (invocation,) = of_kind(events, "invocation")
    assert invocation["input_shapes"] == {"Positional Arg 1": [3, 224]}
    assert "mlagility" not in sys.modules and "turnkeyml.parser" not in sys.modules
    script = write_script(tmp_path, "unknown.py", """
        from mlagility.parser import parse
        parse(["batch_size", "depth"])
    """)
    events, _ = run_in_process(script_request(script, analyze_only=True))
    (error,) = of_kind(events, "script_error")
    assert "depth is not an option of the model corpus" in error["message"]


def test_the_auto_exporter_falls_back_to_dynamo_and_says_so(tmp_path: pathlib.Path) -> None:
    """``auto`` (benchit's default) exports with torchscript, and with dynamo a model that
    torchscript fails on; the export stage's note says which made the file."""
    request = script_request(EXAMPLES / "transformer_block.py")
    events, status = run_in_process(request, build_replier(
        tmp_path / "auto", runtimes=("ort",), iterations=3, warmup=1, exporter="auto"))
    assert status == 0
    export = of_kind(events, "stage")[0]
    assert export["status"] == "ok" and export["message"].startswith(
        "exported by dynamo at opset 18, as torchscript failed: UnsupportedOperatorError"), export
    assert [(b["runtime"], b["status"]) for b in of_kind(events, "benchmark")] == [("ort", "ok")]
    events, _ = run_in_process(script_request(EXAMPLES / "mlp.py"), build_replier(
        tmp_path / "plain", runtimes=("ort",), iterations=3, warmup=1, exporter="auto"))
    export = of_kind(events, "stage")[0]
    assert export["status"] == "ok" and export["message"] is None, export


def test_outputs_torch_export_refuses_are_left_out_of_the_dynamo_export(
        tmp_path: pathlib.Path) -> None:
    """A decoder model's output holds a cache object torch.export does not know (transformers'
    ``DynamicCache``): the exported model keeps the output's tensors only, so it builds and
    runs on ONNX Runtime."""
    script = write_script(tmp_path, "decoder.py", """
        import torch

        class Cache:
            def __init__(self, keys):
                self.keys = keys

        class Decoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)

            def forward(self, x):
                hidden = self.proj(x)
                return {"hidden": hidden, "cache": Cache(hidden.detach())}

        if __name__ == "__main__":
            Decoder()(torch.rand(2, 8))
    """)
    events, status = run_in_process(script_request(script), build_replier(
        tmp_path / "builds", runtimes=("ort",), iterations=3, warmup=1, exporter="auto"))
    assert status == 0
    export = of_kind(events, "stage")[0]
    assert export["status"] == "ok", export
    assert [(b["runtime"], b["status"]) for b in of_kind(events, "benchmark")] == [("ort", "ok")]
    # An output without any tensor is not exported as an empty graph (timed as nothing).
    script = write_script(tmp_path, "shapes.py", """
        import torch
        class Shapes(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
            def forward(self, x):
                return {"shape": tuple(self.fc(x).shape)}
        Shapes()(torch.rand(4))
    """)
    events, status = run_in_process(script_request(script), build_replier(
        tmp_path / "sets", runtimes=("ort",), iterations=3, warmup=1, exporter="dynamo"))
    export = of_kind(events, "stage")[0]
    assert export["status"] == "error" and "holds no tensor" in export["message"], export


def test_ort_runs_the_fp32_model_when_asked(tmp_path: pathlib.Path) -> None:
    replier = build_replier(tmp_path, stages=("export", "optimize"), runtimes=("ort",),
                            onnx_stage="optimize", iterations=3, warmup=1)
    events, _ = run_in_process(script_request(EXAMPLES / "mlp.py"), replier)
    (benchmark,) = of_kind(events, "benchmark")
    assert benchmark["status"] == "ok" and len(benchmark["times_ns"]) == 3
    assert benchmark["warmup"] == 1
    (info,) = of_kind(events, "onnx_info")
    assert info["file"].endswith("-opt.onnx")


def test_an_empty_stage_list_uses_the_cached_build(tmp_path: pathlib.Path) -> None:
    request = script_request(EXAMPLES / "hello_world.py")
    run_in_process(request, build_replier(tmp_path, stages=("export", "optimize"),
                                          runtimes=()))
    events, _ = run_in_process(request, build_replier(tmp_path, stages=(), runtimes=("ort",),
                                                      iterations=2))
    assert not of_kind(events, "stage")
    (info,) = of_kind(events, "onnx_info")
    assert info["file"].endswith("-opt.onnx")
    assert [b["status"] for b in of_kind(events, "benchmark")] == ["ok"]


def test_keyword_arguments_reach_the_exported_model_as_keywords(tmp_path: pathlib.Path) -> None:
    """Issue 53: a model called with keyword arguments whose forward is wrapped by a decorator
    that passes one more by keyword (transformers' ``use_cache``). The torchscript exporter
    passed every keyword argument by position, with the defaults before it, and the model got
    "multiple values for argument 'use_cache'"; the call is now exported as the script made it,
    with torchscript (no fallback to dynamo) and with dynamo."""
    script = write_script(tmp_path, "decorated.py", """
        import functools
        import torch

        def without_cache(forward):
            @functools.wraps(forward)
            def wrapper(self, *args, **kwargs):
                kwargs["use_cache"] = False
                return forward(self, *args, **kwargs)
            return wrapper

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(50, 8)

            @without_cache
            def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                        use_cache=None):
                hidden = self.embed(input_ids)
                return hidden * attention_mask.unsqueeze(-1)

        if __name__ == "__main__":
            model = Encoder()
            ids = torch.randint(0, 50, (2, 6))
            model(attention_mask=torch.ones(2, 6), input_ids=ids)
    """)
    for exporter in ("auto", "dynamo"):
        events, status = run_in_process(script_request(script), build_replier(
            tmp_path / exporter, runtimes=("ort",), iterations=3, warmup=1, exporter=exporter))
        assert status == 0
        export = of_kind(events, "stage")[0]
        assert export["status"] == "ok", export
        if exporter == "auto":
            assert export["message"] is None, export
        (info,) = of_kind(events, "onnx_info")
        # Named in the order of the call: the mask first.
        assert list(info["inputs"]) == ["attention_mask", "input_ids"], (exporter, info)
        assert [(b["runtime"], b["status"]) for b in of_kind(events, "benchmark")] == \
            [("ort", "ok")], (exporter, of_kind(events, "benchmark"))


@pytest.mark.parametrize("call, source", [
    ("torch.hub.load_state_dict_from_url('http://127.0.0.1:9/weights.pt')", "with torch.hub"),
    ("urllib.request.urlopen('http://127.0.0.1:9/weights.pt', timeout=5)", "over the network"),
])
def test_a_script_that_downloads_says_so(tmp_path: pathlib.Path, call: str, source: str) -> None:
    """Issue 53: a script that needs the network (pretrained weights, torch.hub) fails with a
    message that says it tried to download, and how to do without (a closed port stands for the
    network this machine does not have)."""
    script = write_script(tmp_path, "downloads.py", f"""
        import urllib.request
        import torch

        model = torch.nn.Linear(4, 4)
        model(torch.rand(2, 4))
        {call}
    """)
    events, status = run_in_process(script_request(script, analyze_only=True))
    assert status == 0
    (error,) = of_kind(events, "script_error")
    assert error["message"].startswith(f"the script tried to download {source}, and this "
                                       "machine cannot reach it ("), error["message"]
    assert "from_config" in error["message"] and "pretrained=False" in error["message"]
    # The models it called before are still reported.
    assert len(of_kind(events, "invocation")) == 1
    # A connection the script itself finds refused counts as well; any other failure is
    # reported as it is.
    script = write_script(tmp_path, "fails.py", "raise ConnectionAbortedError('no')\n")
    events, _ = run_in_process(script_request(script, analyze_only=True))
    (error,) = of_kind(events, "script_error")
    assert error["message"].startswith("the script tried to download over the network")
    script = write_script(tmp_path, "other.py", "raise ValueError('bad value')\n")
    events, _ = run_in_process(script_request(script, analyze_only=True))
    (error,) = of_kind(events, "script_error")
    assert error["message"] == "ValueError: bad value"


def test_a_model_that_cannot_be_exported_still_runs_in_torch(tmp_path: pathlib.Path) -> None:
    # Data-dependent control flow alone only warns under the torchscript exporter (it traces
    # one branch); a forward whose result is a Python set cannot be exported at all.
    script = write_script(tmp_path, "positives.py", """
        import torch
        class Positives(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
            def forward(self, x):
                y = self.fc(x)
                return {int(i) for i in (y > 0).nonzero().flatten()}
        model = Positives()
        found = model(torch.rand(4))
        print("after the build", sorted(found))
        open(__file__ + ".done", "w").close()
        """)
    replier = build_replier(tmp_path / "cache", stages=("export", "optimize"),
                            runtimes=("ort", "torch-eager"), iterations=3)
    events, _ = run_in_process(script_request(script), replier)
    (stage,) = of_kind(events, "stage")
    assert stage["stage"] == "export" and stage["status"] == "error"
    assert stage["message"] and "\n" not in stage["message"] and "Traceback" in stage["traceback"]
    assert not of_kind(events, "onnx_info")
    ort, eager = of_kind(events, "benchmark")
    assert (ort["status"], ort["message"]) == ("error", "build failed")
    assert eager["status"] == "ok" and len(eager["times_ns"]) == 3
    assert not of_kind(events, "script_error")
    assert pathlib.Path(f"{script}.done").exists()  # the script ran to its end


def test_the_build_leaves_the_script_unaffected(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "untouched.py", """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
        model[1].eval()
        torch.manual_seed(1)
        x = torch.rand(4)
        out = model(x)
        training = [m.training for m in model.modules()]
        grad = torch.is_grad_enabled()
        after = torch.rand(1)
        torch.manual_seed(1)
        torch.rand(4)
        expected = torch.rand(1)
        import json
        with open(__file__ + ".json", "w") as handle:
            json.dump({"training": training, "grad": grad, "requires_grad": out.requires_grad,
                       "same_random_stream": bool(torch.equal(after, expected))}, handle)
        """)
    replier = build_replier(tmp_path / "cache", runtimes=("ort", "torch-eager"))
    events, _ = run_in_process(script_request(script), replier)
    assert [b["status"] for b in of_kind(events, "benchmark")] == ["ok", "ok"]
    assert json.loads(pathlib.Path(f"{script}.json").read_text()) == {
        "training": [True, True, False], "grad": True, "requires_grad": True,
        "same_random_stream": True}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_onnx_file_is_received_and_benchmarked(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "linear.onnx"
    torch.onnx.export(torch.nn.Linear(6, 2), (torch.rand(3, 6),), str(path), dynamo=False,
                      opset_version=17, input_names=["x"])
    replier = build_replier(tmp_path / "cache", stages=("receive", "optimize"),
                            runtimes=("ort", "torch-eager"), iterations=4)
    events, status = run_in_process({"request": "onnx", "path": str(path)}, replier)
    assert status == 0
    (model,) = of_kind(events, "model")
    assert model["class"] == "onnx" and model["parameters"] == 14
    (invocation,) = of_kind(events, "invocation")
    assert invocation["input_shapes"] == {"x": [3, 6]}
    assert invocation["input_dtypes"] == {"x": "float32"}
    assert [s["status"] for s in of_kind(events, "stage")] == ["ok", "ok"]
    ort, eager = of_kind(events, "benchmark")
    assert ort["status"] == "ok" and len(ort["times_ns"]) == 4
    assert eager["status"] == "error" and "ONNX file" in eager["message"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_onnx_file_with_dynamic_shapes_is_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "dynamic.onnx"
    torch.onnx.export(torch.nn.Linear(6, 2), (torch.rand(3, 6),), str(path), dynamo=False,
                      opset_version=17, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    events, status = run_in_process({"request": "onnx", "path": str(path)})
    assert status == 0
    (error,) = of_kind(events, "error")
    assert "freeze the model's input shapes" in error["message"]
    assert not of_kind(events, "invocation")


def test_gpu_runtimes_say_they_need_a_gpu(tmp_path: pathlib.Path) -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has a CUDA provider")
    replier = build_replier(tmp_path, runtimes=("ort",), device="nvidia")
    events, _ = run_in_process(script_request(EXAMPLES / "hello_world.py"), replier)
    (benchmark,) = of_kind(events, "benchmark")
    assert benchmark["status"] == "error" and "needs a GPU" in benchmark["message"]


needs_compile = pytest.mark.skipif(
    not os.environ.get("BENCHIT_TEST_COMPILE"),
    reason="torch.compile takes tens of seconds on CPU; set BENCHIT_TEST_COMPILE=1")


@needs_compile
def test_torch_compiled_reports_its_compile_time_apart(tmp_path: pathlib.Path) -> None:
    replier = build_replier(tmp_path, stages=(), runtimes=("torch-compiled",), iterations=4)
    events, _ = run_in_process(script_request(EXAMPLES / "hello_world.py"), replier)
    (benchmark,) = of_kind(events, "benchmark")
    assert benchmark["status"] == "ok" and benchmark["compile_seconds"] > 0
    assert len(benchmark["times_ns"]) == 4


@needs_compile
def test_a_compiled_model_is_found_with_its_original_hash(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "compiled.py", """
        import torch
        class SmallModel(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(11, 5)
            def forward(self, x):
                return self.fc(x)
        fast = torch.compile(SmallModel())
        x = torch.rand(11)
        first, second = fast(x=x), fast(x=x)
        same = torch.equal(first, second)
        """)
    events = analyze(script, max_depth=1)
    (model,) = of_kind(events, "model")
    assert model["model_hash"] == "2a1e15ca" and model["compiled"] is True
    assert model["name"] == "fast" and model["line"] == 9
    (invocation,) = of_kind(events, "invocation")
    assert invocation["invocation_hash"] == "24adc42f"
    assert calls_by_hash(events) == {"24adc42f": 2}
    import compiled
    assert compiled.same


# -- script failures -------------------------------------------------------------------------


def test_a_syntax_error_is_a_script_error(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "broken.py", "import torch\ndef oops(:\n    pass\n")
    events, status, log = run_worker(script_request(script, analyze_only=True))
    assert status == 0
    assert [e["event"] for e in events] == ["hello", "script_error", "calls", "done"]
    error = events[1]
    assert error["kind"] == "SyntaxError" and "broken.py" in error["traceback"]
    assert "Traceback" not in log


def test_an_early_exit_keeps_what_was_discovered(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "quits.py", """
        import sys
        import torch
        model = torch.nn.Linear(2, 2)
        model(torch.rand(2))
        sys.exit(3)
        model(torch.rand(5, 2))
        """)
    events = analyze(script)
    (error,) = of_kind(events, "script_error")
    assert error["kind"] == "SystemExit" and "3" in error["message"]
    assert list(calls_by_hash(events).values()) == [1]
    assert [e["event"] for e in events][-3:] == ["script_error", "calls", "done"]


def test_a_clean_exit_is_no_error(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "done_early.py", "import sys\nsys.exit(0)\n")
    assert not of_kind(analyze(script), "script_error")


def test_the_script_runs_as_its_own_main_program(tmp_path: pathlib.Path) -> None:
    """As ``python script.py ARGS`` runs it: a main guard runs, ``__file__``, ``sys.argv`` and
    ``sys.path[0]`` are the script's, its own modules import, and ``sys.modules["__main__"]`` is
    the script (dataclasses look their annotations up there); the worker's state comes back."""
    write_script(tmp_path, "neighbour.py", "VALUE = 42\n")
    script = write_script(tmp_path, "as_main.py", """
        from __future__ import annotations
        import dataclasses
        import sys
        import neighbour

        @dataclasses.dataclass
        class Options:
            batch: int = 1

        def main():
            import json
            seen = {"name": __name__, "file": __file__, "argv": sys.argv, "path0": sys.path[0],
                    "main_is_me": sys.modules["__main__"].main is main,
                    "neighbour": neighbour.VALUE, "options": Options(batch=2).batch}
            with open(__file__ + ".json", "w") as handle:
                json.dump(seen, handle)

        if __name__ == "__main__":
            main()
        """)
    main_before, argv_before = sys.modules["__main__"], list(sys.argv)
    assert not of_kind(analyze(script, script_args=("--batch", "2")), "script_error")
    seen = json.loads(pathlib.Path(f"{script}.json").read_text())
    assert seen == {"name": "__main__", "file": str(script), "argv": [str(script), "--batch", "2"],
                    "path0": str(tmp_path), "main_is_me": True, "neighbour": 42, "options": 2}
    assert sys.modules["__main__"] is main_before and sys.argv == argv_before
    assert "as_main" not in sys.modules


def write_main_guard_script(folder: pathlib.Path) -> pathlib.Path:
    """A script shaped as most are: models built in functions, in a class and in a helper module
    beside it, called from ``main()`` under a main guard, under ``no_grad`` and
    ``inference_mode``, in loops with several shapes."""
    write_script(folder, "heads.py", """
        import torch
        def make_head(width):
            return torch.nn.Sequential(torch.nn.Linear(width, 4), torch.nn.ReLU())
        """)
    return write_script(folder, "guarded.py", """
        import argparse
        import torch
        from heads import make_head

        class Encoder(torch.nn.Module):
            def __init__(self, width):
                super().__init__()
                self.proj = torch.nn.Linear(8, width)
            def forward(self, x):
                return self.proj(x)

        class Pipeline:
            def __init__(self, width):
                self.encoder = Encoder(width)
                self.head = make_head(width)
            def __call__(self, x):
                return self.head(self.encoder(x))

        def run(pipeline, batches):
            with torch.no_grad():
                for batch in batches:
                    pipeline(torch.rand(batch, 8))
            with torch.inference_mode():
                for _ in range(3):
                    pipeline(torch.rand(3, 8))

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--width", type=int, default=16)
            args = parser.parse_args()
            run(Pipeline(args.width), [1, 2, 2, 5])

        if __name__ == "__main__":
            main()
        """)


def test_models_of_a_main_guarded_script_are_discovered(tmp_path: pathlib.Path) -> None:
    script = write_main_guard_script(tmp_path)
    events = analyze(script, script_args=("--width", "32"))
    assert not of_kind(events, "script_error")
    models = of_kind(events, "model")
    assert [(m["class"], m["file"], m["line"]) for m in models] == [
        ("Encoder", str(script), 15), ("Sequential", str(script), 16)]
    counts = calls_by_hash(events)
    calls = [(i["model_hash"], i["input_shapes"]["Positional Arg 1"], counts[i["invocation_hash"]])
             for i in of_kind(events, "invocation")]
    encoder, head = models[0]["model_hash"], models[1]["model_hash"]
    assert sorted(calls) == sorted(
        [(encoder, [batch, 8], n) for batch, n in ((1, 1), (2, 2), (5, 1), (3, 3))]
        + [(head, [batch, 32], n) for batch, n in ((1, 1), (2, 2), (5, 1), (3, 3))])


def test_a_main_guarded_script_builds_in_the_worker_process(tmp_path: pathlib.Path) -> None:
    script = write_main_guard_script(tmp_path)
    replier = build_replier(tmp_path / "cache", runtimes=("ort", "torch-eager"), iterations=3)
    events, status, log = run_worker(script_request(script), replier, cwd=str(tmp_path / ".."))
    assert status == 0 and events[-1] == {"event": "done"}, log
    assert not of_kind(events, "script_error") and not of_kind(events, "error"), events
    assert len(of_kind(events, "model")) == 2 and len(of_kind(events, "invocation")) == 8
    benchmarks = of_kind(events, "benchmark")
    assert len(benchmarks) == 16 and {b["status"] for b in benchmarks} == {"ok"}


def test_a_broken_reply_stops_the_worker_without_done() -> None:
    def not_an_object(event: dict) -> Any:
        return "not an object"

    events, status, log = run_worker(script_request(EXAMPLES / "hello_world.py"), not_an_object)
    assert status == 3 and "benchit worker:" in log and "JSON object" in log
    assert events[-1]["event"] == "invocation"
    assert "Traceback" not in log


# -- measurements ----------------------------------------------------------------------------


def test_measurements_report_ratios() -> None:
    from benchmate.benchit.measure import compare_timeit, overhead

    result = overhead(str(EXAMPLES / "hello_world.py"), 1, [])
    assert result["ratio"] > 0 and result["bare_seconds"] > 0
    result = compare_timeit(str(EXAMPLES / "hello_world.py"), 20, 1, [])
    assert result["model"] == "SmallModel" and result["ratio"] > 0


# -- the Python API --------------------------------------------------------------------------


def benchit_program() -> str:
    """The benchit program: ``$BENCHIT_BIN`` (``cargo xtask e2e`` sets it, so a wrong path fails
    there), else the checkout's debug build; the API tests are skipped when neither is there."""
    from benchmate.benchit.api import BENCHIT_VAR

    named = os.environ.get(BENCHIT_VAR)
    if named:
        return named
    built = pathlib.Path(__file__).resolve().parents[3] / "target" / "debug" / "benchit"
    if not built.exists():
        pytest.skip(f"no benchit program: build it (cargo build --bin benchit) or set {BENCHIT_VAR}")
    return str(built)


def test_benchmark_model_builds_times_and_reuses_its_build(tmp_path: pathlib.Path) -> None:
    from benchmate.benchit.api import benchmark_model
    from benchmate.benchit.hashing import invocation_hash, model_hash

    model = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU())
    x = torch.rand(2, 6)
    options = dict(runtimes=["ort", "torch-eager"], iterations=5, warmup=1, batch_size=2,
                   cache_dir=str(tmp_path), benchit=benchit_program())
    first = benchmark_model(model, (x,), **options)
    assert first.ok and not first.reused and first.failure is None, first.raw
    assert first.model_hash == model_hash(model)
    assert first.invocation_hash == invocation_hash(
        first.model_hash, None, {"Positional Arg 1": (2, 6)}, {"Positional Arg 1": "float32"})
    assert first.build_dir == str(tmp_path / f"Sequential_{first.invocation_hash}")
    assert list(first.runtimes) == ["ort", "torch-eager"]
    for timing in first.runtimes.values():
        assert timing.ok and timing.iterations == 5 and timing.mean_ms > 0
        assert timing.throughput == pytest.approx(2 / (timing.mean_ms / 1000))
    by_keyword = benchmark_model(model, {"input": x}, **options)  # another input signature
    assert by_keyword.ok and not by_keyword.reused
    assert by_keyword.invocation_hash != first.invocation_hash
    same = benchmark_model(model, x, **options)
    assert same.reused and same.invocation_hash == first.invocation_hash
    # The model and torch are given back as they came.
    assert model.training and torch.nn.Module.__call__ is ORIGINAL_CALL


def test_benchmark_model_says_what_it_cannot_do(tmp_path: pathlib.Path) -> None:
    from benchmate.benchit.api import BenchitError, benchmark_model

    program = benchit_program()
    with pytest.raises(BenchitError, match="is no model benchit can build"):
        benchmark_model(torch.nn.ReLU(), torch.rand(3), cache_dir=str(tmp_path), benchit=program)
    with pytest.raises(BenchitError, match="invalid value 'nope'"):
        benchmark_model(torch.nn.Linear(3, 1), torch.rand(3), runtimes=["nope"],
                        cache_dir=str(tmp_path), benchit=program)
    with pytest.raises(BenchitError, match="could not start"):
        benchmark_model(torch.nn.Linear(3, 1), torch.rand(3), benchit=str(tmp_path / "none"))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):  # the model's own error
        benchmark_model(torch.nn.Linear(3, 1), torch.rand(4), cache_dir=str(tmp_path),
                        benchit=program)
