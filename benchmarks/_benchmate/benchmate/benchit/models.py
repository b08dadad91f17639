"""Mode ``models`` of the benchit worker (``docs/benchit-protocol.md``): run a user's script
under discovery, or take an ONNX file, and build and benchmark what the Rust side asks for.

Everything the script prints goes to the log (see :meth:`Protocol.take_stdout`); every failure
of a build or a benchmark becomes an event and the script goes on.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
import time
import traceback
import types
from typing import Any, Callable, Iterator, Optional

import benchmate
from benchmate.benchit.corpus_args import corpus_modules
from benchmate.benchit.protocol import Protocol, ProtocolError, one_line
from benchmate.benchit.runtimes import package_version


class Refused(RuntimeError):
    """A runtime that cannot run, for a reason its message states in full (sent as is)."""


class WorkerAbort(BaseException):
    """The protocol broke (Rust closed the stream or sent nonsense): stop everything, including
    the user's script, which must not be able to catch it as an ``Exception``."""


def send_hello(protocol: Protocol) -> None:
    """Send the ``hello`` event: the versions of what this worker runs."""
    protocol.send("hello", python=platform.python_version(), torch=package_version("torch"),
                  onnx=package_version("onnx"), onnxruntime=package_version("onnxruntime"),
                  benchmate=package_version("benchmate") or benchmate.__version__)


def serve(protocol: Protocol) -> int:
    """Answer one request of mode ``models``; return the worker's exit status."""
    send_hello(protocol)
    try:
        request = _receive(protocol)
        kind = request.get("request")
        if kind == "script":
            ScriptSession(protocol, request).run()
        elif kind == "onnx":
            serve_onnx(protocol, request)
        else:
            protocol.send("error", message=f"unknown request {kind!r} (script or onnx)",
                          traceback=None)
    except WorkerAbort as abort:
        print(f"benchit worker: {abort}", file=sys.stderr)
        return 3
    except Exception as error:  # noqa: BLE001 - no torch, or a bug of the worker's own
        _send_error(protocol, error)
    protocol.send("done")
    return 0


def _receive(protocol: Protocol) -> dict[str, Any]:
    """One line from Rust, or :class:`WorkerAbort` when the protocol broke."""
    try:
        return protocol.receive()
    except ProtocolError as error:
        raise WorkerAbort(str(error)) from None


@dataclasses.dataclass
class Work:
    """One invocation to build and benchmark, as the reply asks."""

    model_hash: str
    invocation_hash: str
    reply: dict[str, Any]
    #: Produces the base ONNX file: ``source(stage, path)`` for ``export`` or ``receive``,
    #: with a note for the stage (which exporter made it) or ``None``.
    source: Callable[[str, str], Optional[str]]
    #: The live model and the captured inputs, or ``None`` for an ONNX file input.
    torch_call: Optional[tuple[Any, tuple, dict[str, Any]]]
    #: Inputs for ONNX Runtime by name (``None``: random values from the graph's shapes).
    tensors: Optional[dict[str, Any]]
    #: What the model is when it is no PyTorch model (the torch runtimes' refusal says it).
    kind: str = "an ONNX file"


def carry_out(protocol: Protocol, work: Work) -> None:
    """Run the requested stages and runtimes, sending ``stage``, ``onnx_info`` and
    ``benchmark`` events, then ``invocation_done``."""
    from benchmate.benchit.build import BuildPlan, onnx_info, run_stages

    hash_ = work.invocation_hash
    failed = []

    def on_stage(result: Any) -> None:
        if result.status != "ok":
            failed.append(result.stage)
        protocol.send("stage", invocation_hash=hash_, **result.fields())

    try:
        plan = BuildPlan.from_reply(work.reply)
        newest = run_stages(plan, work.source, on_stage)
        if newest is not None and not failed:
            try:
                protocol.send("onnx_info", invocation_hash=hash_, **onnx_info(newest))
            except Exception as error:  # noqa: BLE001 - a broken file is reported, not fatal
                _send_error(protocol, error, model_hash=work.model_hash, invocation_hash=hash_)
        for benchmark in work.reply.get("benchmarks", []):
            _benchmark(protocol, work, benchmark, build_failed=bool(failed))
    except Exception as error:  # noqa: BLE001 - a malformed reply must not stop the script
        _send_error(protocol, error, model_hash=work.model_hash, invocation_hash=hash_)
    protocol.send("invocation_done", invocation_hash=hash_)


def _benchmark(protocol: Protocol, work: Work, request: dict[str, Any], build_failed: bool) -> None:
    """Time one runtime and send its ``benchmark`` event (an error event on failure)."""
    from benchmate.benchit.runtimes import (
        ONNX_RUNTIMES,
        TORCH_RUNTIMES,
        NeedsGPU,
        run_ort,
        run_torch,
    )

    runtime = request.get("runtime")
    reply = work.reply
    warmup, iterations = int(reply.get("warmup", 10)), int(reply.get("iterations", 100))
    device = reply.get("device", "x86")
    fields: dict[str, Any] = {"invocation_hash": work.invocation_hash, "runtime": runtime}
    try:
        if runtime in ONNX_RUNTIMES:
            path = request.get("onnx")
            if build_failed:
                raise Refused("build failed")
            if not path or not os.path.exists(path):
                raise Refused(f"ONNX file {path} does not exist")
            measured = run_ort(path, runtime, device, work.tensors, warmup, iterations)
        elif runtime in TORCH_RUNTIMES:
            if work.torch_call is None:
                raise Refused(f"{runtime} needs a PyTorch model, not {work.kind}; "
                              "time it with --runtime ort")
            model, args, kwargs = work.torch_call
            measured = run_torch(model, runtime, device, args, kwargs, warmup, iterations)
        else:
            raise Refused(f"unknown runtime {runtime!r}")
    except (Refused, NeedsGPU) as refusal:
        _send_benchmark_error(protocol, fields, warmup, str(refusal), None)
        return
    except Exception as error:  # noqa: BLE001 - every failure becomes an error event
        _send_benchmark_error(protocol, fields, warmup, one_line(error), _traceback(error))
        return
    protocol.send("benchmark", **fields, status="ok", **dataclasses.asdict(measured),
                  message=None, traceback=None)


def _send_benchmark_error(protocol: Protocol, fields: dict[str, Any], warmup: int, message: str,
                          traceback_: Optional[str]) -> None:
    """Send the ``benchmark`` event of a runtime that failed or could not run."""
    protocol.send("benchmark", **fields, status="error", runtime_version=None, provider=None,
                  compile_seconds=None, warmup=warmup, times_ns=[], message=message,
                  traceback=traceback_)


def _traceback(error: BaseException) -> str:
    """The full traceback text of ``error``."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def _send_error(protocol: Protocol, error: BaseException, **fields: Any) -> None:
    """Report a failure of the worker's own that concerns no single stage or runtime."""
    protocol.send("error", message=one_line(error), traceback=_traceback(error), **fields)


def _file_sha256(path: str) -> str:
    """The sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- scripts ---------------------------------------------------------------------------------


class ScriptSession:
    """One script run under discovery, talking to Rust through ``protocol``."""

    def __init__(self, protocol: Protocol, request: dict[str, Any]):
        self.protocol = protocol
        self.script = os.path.abspath(request["script"])
        self.script_args = [str(arg) for arg in request.get("script_args", [])]
        self.targets = set(request.get("targets", []))
        self.max_depth = int(request.get("max_depth", 0))
        self.analyze_only = bool(request.get("analyze_only", False))
        #: Whether Keras models are discovered too (the environment has TensorFlow).
        self.keras = bool(request.get("keras", False))
        self.discovery: Any = None
        self.keras_discovery: Any = None
        #: Wall time of the script's own execution under discovery (set by :meth:`run`).
        self.script_seconds = 0.0

    def run(self) -> None:
        """Run the script as ``python script.py ARGS`` would, under discovery, then send
        ``calls``."""
        from benchmate.benchit.discovery import Discovery

        events = Events(self)
        self.discovery = Discovery(self.script, self.max_depth, self.targets, events)
        discoveries = [self.discovery]
        if self.keras:
            from benchmate.benchit.keras_models import KerasDiscovery

            self.keras_discovery = KerasDiscovery(self.script, self.targets, events)
            discoveries.append(self.keras_discovery)
        with contextlib.ExitStack() as patches:
            for discovery in discoveries:
                patches.enter_context(discovery)
            with as_main_program(self.script, self.script_args) as program:
                start = time.perf_counter()
                self._execute(program)
                self.script_seconds = time.perf_counter() - start
        self.discovery.describe_found()
        self.protocol.send("calls", invocations=[
            {"invocation_hash": inv.invocation_hash, "executed": inv.executed,
             "seconds": inv.seconds}
            for discovery in discoveries for inv in discovery.invocations.values()
        ])

    def _execute(self, program: types.ModuleType) -> None:
        """Execute the script's code in ``program``; report its failure as a
        ``script_error``."""
        try:
            run_program(self.script, program)
        except WorkerAbort:
            raise
        except SystemExit as exit_:
            if exit_.code not in (None, 0):
                self._script_error(exit_, f"the script exited with status {exit_.code!r}")
        except ModuleNotFoundError as error:
            module = (error.name or "").split(".")[0]
            if module in KERAS_PACKAGES:
                hint = ("" if self.keras else "; benchit installs TensorFlow for the scripts "
                        "that import it, and for --framework keras")
            elif module and os.environ.get("BENCHIT_WORKER"):
                hint = "; install its package into the interpreter BENCHIT_WORKER names"
            elif module:
                package = PACKAGE_OF_MODULE.get(module, module)
                hint = (f"; benchit's environment does not have it: add the package with "
                        f"--with {package}")
            else:
                hint = ""
            self._script_error(error, one_line(error) + hint)
        except BaseException as error:  # noqa: BLE001 - whatever the script raises is reported
            self._script_error(error, download_failure(error) or one_line(error))

    def _script_error(self, error: BaseException, message: str) -> None:
        """Send ``script_error`` with the traceback from the script's first frame on, after the
        models found before the error."""
        self.discovery.describe_found()
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != self.script:
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(error), error, tb))
        self.protocol.send("script_error", kind=type(error).__name__, message=message,
                           traceback=text)


@contextlib.contextmanager
def as_main_program(script: str, script_args: list[str]) -> Iterator[types.ModuleType]:
    """A fresh ``__main__`` module for ``script``, set up as ``python script.py ARGS`` sets it
    up: ``__name__ == "__main__"`` (so a main guard runs), ``__file__``, ``sys.argv`` with the
    script's arguments, the script's folder first on ``sys.path`` (its own modules import), and
    ``sys.modules["__main__"]`` pointing at it (pickle, dataclasses and typing look classes up
    there), and MLAgility's ``mlagility.parser`` (``turnkeyml.parser``) importable when the
    package is not installed. The interpreter state is restored on exit, for a worker that
    serves in process."""
    program = types.ModuleType("__main__")
    program.__dict__.update(__file__=script, __cached__=None, __builtins__=builtins,
                            __loader__=importlib.machinery.SourceFileLoader("__main__", script),
                            __spec__=None, __package__=None)
    saved = sys.argv, list(sys.path), sys.modules.get("__main__")
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(script))
    sys.modules["__main__"] = program
    # MLAgility's corpus scripts import its argument helper: a stand-in where the package is
    # not installed (see corpus_args).
    stand_ins = {name: module for name, module in corpus_modules().items()
                 if name.split(".")[0] not in sys.modules
                 and importlib.util.find_spec(name.split(".")[0]) is None}
    sys.modules.update(stand_ins)
    try:
        yield program
    finally:
        sys.argv = saved[0]
        sys.path[:] = saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def run_program(script: str, program: types.ModuleType) -> None:
    """Compile ``script`` under its own path (discovery knows the script's frames by it) and run
    it in ``program``'s namespace."""
    with open(script, "rb") as handle:
        source = handle.read()
    exec(compile(source, script, "exec", dont_inherit=True), program.__dict__)  # noqa: S102


#: Exceptions that say a download failed: no name resolution, no connection, a URL that
#: cannot be opened, the Hugging Face Hub offline or unreachable (by class name, so that
#: neither requests, httpx nor huggingface_hub need be importable here).
DOWNLOAD_ERRORS = frozenset({
    "gaierror", "URLError", "ConnectError", "ConnectTimeout", "NewConnectionError",
    "MaxRetryError", "LocalEntryNotFoundError", "OfflineModeIsEnabled",
})


def download_failure(error: BaseException) -> Optional[str]:
    """The message for a script that failed because it tried to download something (pretrained
    weights from the Hugging Face Hub, a ``torch.hub`` repository, a URL): some exception of its
    chain (causes and contexts) is a failed download. ``None`` for any other failure."""
    chain: list[BaseException] = []
    current: Optional[BaseException] = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    if not any(type(e).__name__ in DOWNLOAD_ERRORS or isinstance(e, ConnectionError)
               for e in chain):
        return None
    files = {frame.filename.replace(os.sep, "/") for e in chain
             for frame in traceback.extract_tb(e.__traceback__)}
    if any("/huggingface_hub/" in name for name in files) or any(
            type(e).__module__.startswith("huggingface_hub") for e in chain):
        source = "from the Hugging Face Hub (pretrained weights, a configuration or a tokenizer)"
    elif any(name.endswith("/torch/hub.py") for name in files):
        source = "with torch.hub"
    else:
        source = "over the network"
    return (f"the script tried to download {source}, and this machine cannot reach it "
            f"({one_line(chain[-1])}); build the model from its configuration instead "
            "(transformers' from_config, timm's pretrained=False), or put the files in the "
            "cache beforehand")


#: Packages whose absence means the script needed the Keras environment.
KERAS_PACKAGES = ("tensorflow", "keras", "tf_keras", "tf2onnx")

#: The package to install for a module whose name differs from its package's.
PACKAGE_OF_MODULE = {
    "cv2": "opencv-python-headless", "PIL": "pillow", "sklearn": "scikit-learn",
    "skimage": "scikit-image", "yaml": "pyyaml", "bs4": "beautifulsoup4",
    "google": "protobuf", "torch_geometric": "torch-geometric",
}


class Events:
    """The discovery listener of a session (a :class:`ScriptSession`, or
    :func:`benchmate.benchit.api.benchmark_model`'s): turns discoveries into events and first
    calls of targets into builds and benchmarks."""

    def __init__(self, session: ScriptSession):
        self.session = session
        self.protocol = session.protocol
        #: Analysis only: models and invocations may be announced after their first call.
        self.needs_first_calls = not session.analyze_only

    def model_found(self, record: Any) -> None:
        """Send the ``model`` event."""
        self.protocol.send("model", model_hash=record.model_hash, **{"class": record.class_name},
                           module=record.module_name, file=record.file, line=record.line,
                           name=record.name, parameters=record.parameters,
                           parameter_bytes=record.parameter_bytes, depth=record.depth,
                           parent_hash=record.parent_hash, compiled=record.compiled,
                           framework=record.framework)

    def invocation_found(self, record: Any, invocation: Any, module: Any) -> Optional[dict]:
        """Send the ``invocation`` event (with the weights hash only when it may be built: hashing
        every weight of a large model costs seconds); for a target, wait for the reply and return
        it unless it says skip."""
        if record.framework == "keras":
            from benchmate.benchit.keras_models import weights_hash
        else:
            from benchmate.benchit.hashing import weights_hash

        will_build = invocation.is_target and not self.session.analyze_only
        digest = weights_hash(module) if will_build else ""
        self.protocol.send(
            "invocation", model_hash=record.model_hash,
            invocation_hash=invocation.invocation_hash,
            parent_invocation_hash=invocation.parent_invocation_hash,
            input_shapes={key: list(shape) for key, shape in invocation.shapes.items()},
            input_dtypes=invocation.dtypes, is_target=invocation.is_target,
            weights_hash=digest)
        if not invocation.is_target or self.session.analyze_only:
            return None
        reply = _receive(self.protocol)
        return None if reply.get("skip") else reply

    def first_call_done(self, call: Any) -> None:
        """Build and benchmark the invocation, with torch unpatched, after its real forward."""
        from benchmate.benchit.build import call_values, export_torch
        from benchmate.benchit.runtimes import inference_mode_of

        if call.record.framework == "keras":
            self._keras_first_call_done(call)
            return
        module, args, kwargs = call.module, call.args, call.kwargs

        exporter = call.plan.get("exporter", "auto")

        def source(stage: str, path: str) -> Optional[str]:
            if stage != "export":
                raise ValueError(f"stage {stage} needs an ONNX file input; a script is exported")
            return export_torch(module, args, kwargs, path, int(call.plan.get("opset", 17)),
                                exporter)

        with self.session.discovery.paused(), inference_mode_of(module):
            tensors = _numpy_inputs(call_values(module, args, kwargs))
            carry_out(self.protocol, Work(call.record.model_hash, call.invocation.invocation_hash,
                                          call.plan, source, (module, args, kwargs), tensors))

    def _keras_first_call_done(self, call: Any) -> None:
        """Build and benchmark a Keras invocation (Keras discovery lets the calls of the export
        and of the timings run untracked)."""
        from benchmate.benchit.keras_models import export_inputs, export_keras

        model, args, kwargs = call.module, call.args, call.kwargs

        def source(stage: str, path: str) -> None:
            if stage != "export":
                raise ValueError(f"stage {stage} needs an ONNX file input; a script is exported")
            export_keras(model, args, kwargs, path, int(call.plan.get("opset", 17)))

        tensors = export_inputs(model, args, kwargs)[1]
        carry_out(self.protocol, Work(call.record.model_hash, call.invocation.invocation_hash,
                                      call.plan, source, None, tensors, kind="a Keras model"))

    def first_call_failed(self, call: Any) -> None:
        """The forward raised: nothing is built; close the invocation for Rust."""
        self.protocol.send("invocation_done", invocation_hash=call.invocation.invocation_hash)

    def input_error(self, record: Any, error: BaseException) -> None:
        """Report inputs that cannot be described; the call itself runs untracked."""
        self.protocol.send("error", model_hash=record.model_hash,
                           message=f"{record.class_name} ({record.model_hash}): {error}; "
                                   "this call is not analysed",
                           traceback=None)


def _numpy_inputs(ordered: dict[str, Any]) -> dict[str, Any]:
    """The captured tensors as numpy arrays by input name (``name.i`` for sequence items), and
    the Python numbers the exporter makes scalar inputs of (see ``graph_input_names``); a
    tensor numpy cannot hold (bfloat16) is left out, and ONNX Runtime then says which input it
    misses."""
    import numpy as np
    import torch

    arrays: dict[str, Any] = {}
    for name, value in ordered.items():
        if isinstance(value, (bool, int, float)):
            arrays[name] = np.asarray(value)
            continue
        items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
        for index, item in items:
            if isinstance(item, torch.Tensor):
                key = name if index is None else f"{name}.{index}"
                try:
                    arrays[key] = item.detach().cpu().numpy()
                except (TypeError, RuntimeError):
                    continue
    return arrays


# -- ONNX files ------------------------------------------------------------------------------


def serve_onnx(protocol: Protocol, request: dict[str, Any]) -> None:
    """Announce an ONNX file as one model with one invocation, then build and benchmark it."""
    import onnx

    from benchmate.benchit.build import dynamic_shape_problem, graph_inputs, receive_onnx
    from benchmate.benchit.hashing import invocation_hash

    path = os.path.abspath(request["path"])
    try:
        digest = _file_sha256(path)
        model = onnx.load(path, load_external_data=False)
    except Exception as error:  # noqa: BLE001 - an unreadable file is reported
        _send_error(protocol, error)
        return
    model_hash = digest[:8]
    sizes = [(_numel(init.dims), onnx.helper.tensor_dtype_to_np_dtype(init.data_type).itemsize)
             for init in model.graph.initializer]
    protocol.send("model", model_hash=model_hash, **{"class": "onnx"}, module=None, file=path,
                  line=None, name=os.path.splitext(os.path.basename(path))[0],
                  parameters=sum(n for n, _ in sizes),
                  parameter_bytes=sum(n * size for n, size in sizes),
                  depth=0, parent_hash=None, compiled=False, framework="onnx")
    problem = dynamic_shape_problem(model)
    if problem:
        protocol.send("error", model_hash=model_hash, message=problem, traceback=None)
        return
    shapes = {name: tuple(dims) for name, dims in sorted(graph_inputs(model).items())}
    elem_types = {value.name: value.type.tensor_type.elem_type for value in model.graph.input}
    dtypes = {name: onnx.helper.tensor_dtype_to_np_dtype(elem_types[name]).name
              for name in shapes}
    hash_ = invocation_hash(model_hash, None, shapes, dtypes)
    protocol.send("invocation", model_hash=model_hash, invocation_hash=hash_,
                  parent_invocation_hash=None,
                  input_shapes={k: list(v) for k, v in shapes.items()}, input_dtypes=dtypes,
                  is_target=True, weights_hash=digest)
    reply = _receive(protocol)
    if reply.get("skip"):
        return

    def source(stage: str, output: str) -> None:
        if stage != "receive":
            raise ValueError(f"stage {stage} needs a PyTorch model; an ONNX file is received")
        receive_onnx(path, output)

    carry_out(protocol, Work(model_hash, hash_, reply, source, None, None))


def _numel(dims: Any) -> int:
    """The number of elements of a tensor with these dimensions."""
    count = 1
    for dim in dims:
        count *= dim
    return count
