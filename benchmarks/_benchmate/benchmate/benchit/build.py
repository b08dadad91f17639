"""Build stages of ``benchit``: ONNX export (or receipt of an ONNX file), ONNX Runtime graph
optimisation and fp16 conversion, each writing a fixed file name under ``<build_dir>/onnx/``
and its own output to ``<build_dir>/log_<stage>.txt``.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import inspect
import os
import shutil
import sys
import time
import traceback
import warnings
from typing import Any, Callable, Iterator, Optional

from benchmate.benchit.protocol import one_line, root_cause_line

#: The stages in pipeline order.
STAGES = ("export", "receive", "optimize", "fp16")

#: The lowest opset the ``receive`` stage accepts, as MLAgility.
MIN_OPSET = 13


class StageError(RuntimeError):
    """A stage that could not produce its output (the message says why)."""


@dataclasses.dataclass
class BuildPlan:
    """The build part of the Rust side's reply to an invocation."""

    build_dir: str
    build_name: str
    stages: list[str]
    opset: int
    exporter: str

    @classmethod
    def from_reply(cls, reply: dict[str, Any]) -> "BuildPlan":
        """Read the build fields of a reply."""
        return cls(
            build_dir=reply["build_dir"],
            build_name=reply["build_name"],
            stages=list(reply.get("stages", [])),
            opset=int(reply.get("opset", 17)),
            exporter=reply.get("exporter", "torchscript"),
        )

    def output(self, stage: str) -> str:
        """The file a stage writes."""
        suffix = {"export": "base", "receive": "base", "optimize": "opt", "fp16": "opt-f16"}[stage]
        return os.path.join(self.build_dir, "onnx", f"{self.build_name}-op{self.opset}-{suffix}.onnx")


@dataclasses.dataclass
class StageResult:
    """The outcome of one stage, as the ``stage`` event reports it."""

    stage: str
    status: str
    seconds: float
    output: Optional[str]
    message: Optional[str] = None
    traceback: Optional[str] = None

    def fields(self) -> dict[str, Any]:
        """The event's fields."""
        return dataclasses.asdict(self)


def run_stages(plan: BuildPlan, source: Callable[[str, str], Optional[str]],
               on_stage: Callable[[StageResult], None]) -> Optional[str]:
    """Run the plan's stages in order, reporting each; stop at the first failure.

    ``source(stage, path)`` produces the base ONNX file (export or receive). Returns the newest
    ONNX file this build holds (the last stage's output, or the newest one already there), or
    ``None`` when a stage failed or nothing is there.
    """
    os.makedirs(os.path.join(plan.build_dir, "onnx"), exist_ok=True)
    newest = None
    for stage in plan.stages:
        result = _run_stage(plan, stage, source)
        on_stage(result)
        if result.status != "ok":
            return None
        newest = result.output
    return newest or existing_onnx(plan)


def existing_onnx(plan: BuildPlan) -> Optional[str]:
    """The most recently written ONNX file of this build, if any."""
    folder = os.path.join(plan.build_dir, "onnx")
    if not os.path.isdir(folder):
        return None
    files = [os.path.join(folder, name) for name in os.listdir(folder)
             if name.startswith(plan.build_name) and name.endswith(".onnx")]
    return max(files, key=os.path.getmtime, default=None)


def _run_stage(plan: BuildPlan, stage: str,
               source: Callable[[str, str], Optional[str]]) -> StageResult:
    """Run one stage with its output in its log file; failures become an error result, and a
    note ``source`` returns (which exporter made the file) goes with an ok one."""
    if stage not in STAGES:
        return StageResult(stage, "error", 0.0, None, f"unknown stage {stage!r}")
    output = plan.output(stage)
    log_path = os.path.join(plan.build_dir, f"log_{stage}.txt")
    start = time.perf_counter()
    note = None
    try:
        with _output_to(log_path):
            if stage in ("export", "receive"):
                note = source(stage, output)
            elif stage == "optimize":
                note = optimize(plan.output("export"), output)
            else:
                convert_fp16(plan.output("optimize"), output)
    except Exception as error:  # noqa: BLE001 - every failure becomes an error event
        text = traceback.format_exc()
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(text)
        return StageResult(stage, "error", time.perf_counter() - start, None,
                           f"{one_line(error)} (see {log_path})", text)
    return StageResult(stage, "ok", time.perf_counter() - start, output, note)


@contextlib.contextmanager
def _output_to(path: str) -> Iterator[None]:
    """Send Python and C-level stdout/stderr, and warnings, to ``path`` for the duration."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(path, "w", encoding="utf-8") as log:
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), \
                    warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.showwarning = _warning_writer(log)
                yield
                log.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _warning_writer(log: Any) -> Callable[..., None]:
    """A ``warnings.showwarning`` that writes to ``log`` (whatever else recorded warnings)."""

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None,
             line: Optional[str] = None) -> None:
        log.write(warnings.formatwarning(message, category, filename, lineno, line))

    return show


def export_torch(module: Any, args: tuple, kwargs: dict[str, Any], path: str, opset: int,
                 exporter: str) -> Optional[str]:
    """Export ``module`` called with ``args``/``kwargs`` to ``path`` and check the result; a
    note for the stage when the file came from another exporter than the first one tried.

    ``exporter`` is ``torchscript`` (``dynamo=False``), ``dynamo``, or ``auto``: torchscript,
    then dynamo for a model torchscript fails on (torch deprecated it; a transformer encoder
    layer and transformers' recent models are such). A torchscript failure asked for by name
    gets a message that names the other exporter.
    """
    if exporter not in ("torchscript", "dynamo", "auto"):
        raise StageError(f"unknown exporter {exporter!r} (auto, torchscript or dynamo)")
    # The dynamo exporter writes opset 18 and above; converted down, its graphs can be invalid
    # (a Split with `num_outputs`, an opset 18 attribute, in transformers' GPT-2).
    dynamo_opset = max(opset, DYNAMO_MIN_OPSET)
    raised = f" at opset {dynamo_opset}" if dynamo_opset != opset else ""
    if exporter == "dynamo":
        try:
            _export_with(module, args, kwargs, path, dynamo_opset, exporter)
        except Exception as error:
            # torch.export wraps the failure ("Failed to export the model"): say its cause.
            raise StageError(root_cause_line(error).removeprefix("StageError: ")) from error
        return f"exported{raised}, the lowest the dynamo exporter writes" if raised else None
    if exporter == "torchscript":
        try:
            _export_with(module, args, kwargs, path, opset, exporter)
        except StageError:
            raise
        except Exception as error:
            raise StageError(f"{one_line(error)}; torch's newer exporter may export this "
                             "model: --exporter dynamo") from error
        return None
    try:
        _export_with(module, args, kwargs, path, opset, "torchscript")
        return None
    except Exception as first:  # noqa: BLE001 - the other exporter is tried next
        print(f"the torchscript exporter failed: {one_line(first)}; trying the dynamo exporter")
        if os.path.exists(path):
            os.remove(path)
        try:
            _export_with(module, args, kwargs, path, dynamo_opset, "dynamo")
        except Exception as second:
            raise StageError(f"torchscript: {one_line(first)}; dynamo: "
                             f"{root_cause_line(second).removeprefix('StageError: ')}") \
                from second
        return f"exported by dynamo{raised}, as torchscript failed: {one_line(first)}"


#: The lowest opset the dynamo exporter writes without a conversion.
DYNAMO_MIN_OPSET = 18


def _export_with(module: Any, args: tuple, kwargs: dict[str, Any], path: str, opset: int,
                 exporter: str) -> None:
    """One exporter's export of the call to ``path``, checked: the model gets its inputs as
    the script gave them (positional ones by position, keyword ones by keyword), and the
    graph's inputs are named after them (see :func:`call_values`) where the exporter allows."""
    import onnx
    import torch

    ordered = call_values(module, args, kwargs)
    if exporter == "torchscript":
        names = graph_input_names(ordered)
    else:
        names = list(ordered) if all(isinstance(v, torch.Tensor) for v in ordered.values()) \
            else None
    print(f"exporting {type(module).__name__} with inputs {list(ordered)} (opset {opset}, "
          f"{exporter})")
    if exporter == "dynamo":
        # torch.export takes the keyword arguments as keyword arguments.
        model, export_args, export_kwargs = _tensor_outputs(module), tuple(args), dict(kwargs)
    else:
        # The torchscript exporter would pass every keyword argument by position, with the
        # defaults of the parameters before it: a model whose forward also receives one of
        # those by keyword (transformers' decorators add `use_cache`) then gets "multiple
        # values for argument". The call is replayed by a module taking the values by position.
        # The empty dict at the end stands for "no keyword arguments", so that a dict given
        # last by position is not taken for them.
        model = _keyword_call(module, len(args), list(kwargs))
        export_args, export_kwargs = (*args, *kwargs.values(), {}), {}
    torch.onnx.export(
        model,
        export_args,
        path,
        kwargs=export_kwargs or None,
        input_names=names,
        opset_version=opset,
        do_constant_folding=True,
        dynamo=exporter == "dynamo",
        **({"external_data": False} if exporter == "dynamo" else {}),
    )
    if not os.path.exists(path):
        raise StageError("the exporter wrote no file")
    onnx.checker.check_model(path)


def _keyword_call(module: Any, positional: int, keywords: list[str]) -> Any:
    """A module whose forward takes every value of a call by position and calls ``module``
    with the first ``positional`` of them by position and the rest by the keywords
    ``keywords``, in that order: the call as the script made it."""
    import torch

    class KeywordCall(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *values: Any) -> Any:
            named = dict(zip(keywords, values[positional:]))
            return self.inner(*values[:positional], **named)

    return KeywordCall(module)


def graph_input_names(ordered: dict[str, Any]) -> Optional[list[str]]:
    """The names of the graph inputs the torchscript exporter makes of a call's values, in
    order, so that ONNX Runtime is fed each captured value by name: a tensor or a Python number
    (bool, int and float become scalar inputs) is one input, a list or tuple of tensors one per
    item (``name.i``), ``None`` none. ``None`` when a value of another kind (a dict, an object)
    leaves the inputs' order to the exporter."""
    import torch

    names: list[str] = []
    for name, value in ordered.items():
        if value is None:
            continue
        if isinstance(value, (torch.Tensor, bool, int, float)):
            names.append(name)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in value):
            names.extend(f"{name}.{index}" for index in range(len(value)))
        else:
            return None
    return names


def _tensor_outputs(module: Any) -> Any:
    """``module`` with its outputs flattened into a tuple of tensors, for torch.export, which
    refuses output types it does not know: transformers' ``DynamicCache``, in the output of
    every decoder model (GPT-2, Llama...), is such. What is not a tensor is left out; the
    timings of the exported model do not depend on it. An output without any tensor is an
    error, not an empty graph."""
    import torch

    class TensorOutputs(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any, **kwargs: Any) -> tuple:
            tensors = _tensors_in(self.inner(*args, **kwargs))
            if not tensors:
                # An export without outputs would be pruned to nothing and timed as such.
                raise StageError("the model's output holds no tensor: there is nothing to "
                                 "export")
            return tensors

    return TensorOutputs(module)


def _tensors_in(value: Any) -> tuple:
    """The tensors of a model output, in order: a tensor, or those of a tuple, list, dict or
    transformers ``ModelOutput`` (``to_tuple``), recursively; anything else gives none."""
    import torch

    if isinstance(value, torch.Tensor):
        return (value,)
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, dict):
        value = tuple(value.values())
    if isinstance(value, (list, tuple)):
        return tuple(tensor for item in value for tensor in _tensors_in(item))
    return ()


def call_values(module: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The values of a call in the order the exported graph takes them: the positional
    arguments named after the forward's parameters (``name_i`` for the items of ``*args``,
    ``input_i`` where the signature cannot be read), then the keyword arguments by their
    keywords, in the order of the call. Parameters the call leaves out are not among them: the
    model uses its own defaults, as it did in the script."""
    ordered = dict(zip(positional_names(module, len(args)), args))
    ordered.update(kwargs)
    return ordered


def positional_names(module: Any, count: int) -> list[str]:
    """The names of the first ``count`` positional parameters of ``module.forward``."""
    try:
        parameters = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names: list[str] = []
    for parameter in parameters:
        if len(names) == count:
            break
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            names.extend(f"{parameter.name}_{i}" for i in range(count - len(names)))
        elif parameter.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
    names.extend(f"input_{i}" for i in range(len(names) + 1, count + 1))
    return names


def receive_onnx(source: str, path: str) -> None:
    """Check an ONNX file given as input (opset, static input shapes) and copy it to ``path``."""
    import onnx

    model = onnx.load(source, load_external_data=False)
    opset = onnx_opset(model)
    if opset is not None and opset < MIN_OPSET:
        raise StageError(f"opset {opset} is below {MIN_OPSET}")
    problem = dynamic_shape_problem(model)
    if problem:
        raise StageError(problem)
    shutil.copyfile(source, path)


def optimize(source: str, path: str) -> Optional[str]:
    """ONNX Runtime basic graph optimisation of ``source``, saved to ``path``; a note when
    ONNX Runtime cannot load the model it wrote and ``source`` is kept instead.

    ONNX Runtime 1.2x saves some graphs (transformers' BERT exported by torch's dynamo
    exporter) in a form its own extended optimisations then refuse ("Attempt to replace the
    existing tensor"); the ``ort`` runtime applies every optimisation when it loads a model, so
    the unoptimised model it is given instead is optimised there all the same."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = path
    onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    if not os.path.exists(path):
        raise StageError("onnxruntime wrote no optimised model")
    try:
        onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - the unoptimised model is kept instead
        shutil.copyfile(source, path)
        cause = one_line(error).rsplit(" : ", 1)[-1]
        return (f"onnxruntime could not load its optimised model ({cause}); "
                "the exported model is kept, and onnxruntime optimises it when it loads it")
    return None


def convert_fp16(source: str, path: str) -> None:
    """Convert the float tensors of ``source`` to float16 (inputs and outputs included)."""
    import onnx
    from onnxconverter_common import float16

    onnx.shape_inference.infer_shapes_path(source, path)
    model = onnx.load(path)
    block = [op for op in float16.DEFAULT_OP_BLOCK_LIST
             if op not in ("InstanceNormalization", "Resize", "Max")]
    converted = float16.convert_float_to_float16(model, op_block_list=block,
                                                 disable_shape_infer=True)
    onnx.save(converted, path)
    onnx.checker.check_model(path)


def onnx_opset(model: Any) -> Optional[int]:
    """The default-domain opset of an ONNX model."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return None


def graph_inputs(model: Any) -> dict[str, list[int]]:
    """The model's real inputs (not initializers) and their dimensions, -1 for dynamic ones."""
    initializers = {init.name for init in model.graph.initializer}
    inputs = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        inputs[value.name] = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1
                              for d in dims]
    return inputs


def dynamic_shape_problem(model: Any) -> Optional[str]:
    """What is wrong when some input has a dimension that is not a fixed positive number."""
    dynamic = [name for name, dims in graph_inputs(model).items() if -1 in dims]
    if not dynamic:
        return None
    return f"inputs {dynamic} have dynamic dimensions: freeze the model's input shapes"


def onnx_info(path: str) -> dict[str, Any]:
    """The ``onnx_info`` event's fields for an ONNX file."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    ops = collections.Counter(
        node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        for node in model.graph.node
    )
    return {
        "file": path,
        "ir_version": model.ir_version,
        "opset": onnx_opset(model),
        "size_bytes": os.path.getsize(path),
        "ops": dict(sorted(ops.items())),
        "inputs": graph_inputs(model),
    }
