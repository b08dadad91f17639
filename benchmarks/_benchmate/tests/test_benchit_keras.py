"""Keras models in the benchit worker: discovery, MLAgility's hashes, the tf2onnx export and
ONNX Runtime timings.

Needs the benchit-keras environment (torch, onnx, onnxruntime, tensorflow, tf2onnx); skipped
where TensorFlow is missing.
"""

from __future__ import annotations

import hashlib
import pathlib
import textwrap

import pytest

# Before TensorFlow: torch._dynamo loaded after it aborts the process (see KerasDiscovery).
pytest.importorskip("torch._dynamo")
pytest.importorskip("onnxruntime")
tf = pytest.importorskip("tensorflow")
pytest.importorskip("tf2onnx")
keras = pytest.importorskip("keras")

from benchit_driver import (  # noqa: E402 - after the skips
    build_replier,
    of_kind,
    run_in_process,
    run_worker,
    script_request,
)

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "benchit" / "keras_mlp.py"


def write_script(folder: pathlib.Path, name: str, body: str) -> pathlib.Path:
    """A script file in ``folder`` with ``body`` dedented."""
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


def calls_by_hash(events: list[dict]) -> dict[str, int]:
    """Executed count of every invocation from the ``calls`` event."""
    (calls,) = of_kind(events, "calls")
    return {entry["invocation_hash"]: entry["executed"] for entry in calls["invocations"]}


def test_keras_hashes_follow_mlagility_formulas() -> None:
    from benchmate.benchit.keras_models import model_hash, weights_hash

    model = keras.Sequential([keras.Input(shape=(11,)), keras.layers.Dense(5, name="fc")],
                             name="small")
    lines: list[str] = []
    model.summary(print_fn=lambda line, *args, **kwargs: lines.append(line))
    assert model_hash(model) == hashlib.sha256(" ".join(lines).encode()).hexdigest()[:8]
    before = weights_hash(model)
    assert before == weights_hash(model) and len(before) == 64
    kernel = model.layers[0].kernel
    kernel.assign(kernel.numpy() + 1)
    assert weights_hash(model) != before and model_hash(model) == hashlib.sha256(
        " ".join(lines).encode()).hexdigest()[:8]


def test_the_example_models_are_discovered_with_their_calls() -> None:
    events, status = run_in_process(script_request(EXAMPLE, analyze_only=True, keras=True))
    assert status == 0 and events[-1]["event"] == "done"
    assert not of_kind(events, "script_error") and not of_kind(events, "error")
    models = of_kind(events, "model")
    assert [(m["class"], m["name"], m["framework"], m["line"]) for m in models] == [
        ("Sequential", "mlp", "keras", 38), ("Scorer", "scorer", "keras", 44)]
    assert models[0]["parameters"] == 64 * 128 + 128 + 128 * 128 + 128 + 128 * 10 + 10
    assert models[0]["parameter_bytes"] == 4 * models[0]["parameters"]
    assert models[0]["file"] == str(EXAMPLE) and models[0]["depth"] == 0
    invocations = of_kind(events, "invocation")
    assert [(i["input_shapes"], i["input_dtypes"]) for i in invocations] == [
        ({"Positional Arg 1": [8, 64]}, {"Positional Arg 1": "float32"}),
        ({"Positional Arg 1": [4, 32], "right": [4, 32]},
         {"Positional Arg 1": "float32", "right": "float32"}),
    ]
    # The invocation hash is PyTorch's formula over the model hash and the inputs' repr.
    first = invocations[0]
    text = (f"{first['model_hash']}None{{'Positional Arg 1': (8, 64)}}"
            f"{{'Positional Arg 1': 'float32'}}")
    assert first["invocation_hash"] == hashlib.sha256(text.encode()).hexdigest()[:8]
    assert calls_by_hash(events) == {invocations[0]["invocation_hash"]: 10,
                                     invocations[1]["invocation_hash"]: 3}


def test_only_top_level_keras_models_are_tracked_and_only_when_asked(
        tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "nested.py", """\
        import keras
        import numpy as np

        inner = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3, name="a")],
                                 name="inner")

        class Outer(keras.Model):
            def __init__(self):
                super().__init__(name="outer")
                self.inner = inner
                self.head = keras.layers.Dense(2, name="head")

            def call(self, x):
                return self.head(self.inner(x))

        outer = Outer()
        for rows in (1, 1, 5):
            outer(np.ones((rows, 4), dtype=np.float64))
        """)
    events, status = run_in_process(script_request(script, analyze_only=True, keras=True,
                                                   max_depth=2))
    assert status == 0
    assert [m["class"] for m in of_kind(events, "model")] == ["Outer"]
    invocations = of_kind(events, "invocation")
    assert [i["input_dtypes"] for i in invocations] == [{"Positional Arg 1": "float64"}] * 2
    assert sorted(calls_by_hash(events).values()) == [1, 2]

    events, status = run_in_process(script_request(script, analyze_only=True, keras=False))
    assert status == 0 and not of_kind(events, "model") and not of_kind(events, "script_error")


def test_a_missing_tensorflow_package_names_the_framework_flag(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "legacy.py", "import tf_keras\n")
    events, _ = run_in_process(script_request(script, analyze_only=True))
    (error,) = of_kind(events, "script_error")
    assert error["kind"] == "ModuleNotFoundError"
    assert "--framework keras" in error["message"]


def test_keras_models_are_exported_and_timed_on_ort(tmp_path: pathlib.Path) -> None:
    replier = build_replier(tmp_path / "cache", runtimes=("ort", "torch-eager"), iterations=6)
    events, status, log = run_worker(script_request(EXAMPLE, keras=True), replier)
    assert status == 0 and events[-1] == {"event": "done"}, log
    assert "predicted classes:" in log  # the script's output goes to the log
    stages = of_kind(events, "stage")
    assert [(s["stage"], s["status"]) for s in stages] == [("export", "ok"), ("optimize", "ok")] * 2
    infos = of_kind(events, "onnx_info")
    # Inputs are named after the parameters of `call` they are bound to.
    assert [info["inputs"] for info in infos] == [
        {"inputs": [8, 64]}, {"left": [4, 32], "right": [4, 32]}]
    benchmarks = of_kind(events, "benchmark")
    assert [(b["runtime"], b["status"]) for b in benchmarks] == [
        ("ort", "ok"), ("torch-eager", "error")] * 2
    for ort, eager in zip(benchmarks[::2], benchmarks[1::2]):
        assert len(ort["times_ns"]) == 6 and min(ort["times_ns"]) > 0
        assert eager["message"] == ("torch-eager needs a PyTorch model, not a Keras model; "
                                    "time it with --runtime ort")
    assert calls_by_hash(events) == {i["invocation_hash"]: n for i, n in
                                     zip(of_kind(events, "invocation"), (10, 3))}


def test_float64_inputs_are_exported_as_float32_and_fed_cast(tmp_path: pathlib.Path) -> None:
    script = write_script(tmp_path, "doubles.py", """\
        import keras
        import numpy as np

        model = keras.Sequential([keras.Input(shape=(6,)), keras.layers.Dense(2, name="d")],
                                 name="doubles")
        model(np.ones((3, 6)), training=False)
        """)
    replier = build_replier(tmp_path / "cache", runtimes=("ort",), iterations=3)
    events, status = run_in_process(script_request(script, keras=True), replier)
    assert status == 0
    (invocation,) = of_kind(events, "invocation")
    assert invocation["input_dtypes"] == {"Positional Arg 1": "float64", "training": "bool"}
    (info,) = of_kind(events, "onnx_info")
    assert info["inputs"] == {"inputs": [3, 6]}
    import onnx

    graph_input = onnx.load(info["file"]).graph.input[0]
    assert graph_input.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    (benchmark,) = of_kind(events, "benchmark")
    assert benchmark["status"] == "ok", benchmark
