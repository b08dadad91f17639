"""Keras models in ``benchit``: their discovery, hashes and ONNX export.

:class:`KerasDiscovery` replaces ``keras.Model.__call__`` for the duration of the script, as
:class:`~benchmate.benchit.discovery.Discovery` replaces ``torch.nn.Module.__call__``, and
tells the same :class:`~benchmate.benchit.discovery.Listener` what it finds, with the same
records (``framework`` ``"keras"``). Only top-level models are tracked: a model called while
another one runs (a model used as a layer, or the tracing of an export) runs untracked, and
``max_depth`` does not apply (MLAgility searches sub-models of PyTorch models only).

A model is described after its first call, not before it as a PyTorch model is: its summary (the
model hash, MLAgility's: sha256 of the ``summary()`` text, lines joined by spaces) and its
weights exist only once it is built, which a subclassed model is by its first call. Each
invocation is built and benchmarked right after that call. The location reported is the script
line of that first call.

The export traces the model with ``tf.function`` over the captured inputs and converts it with
``tf2onnx.convert.from_function``: tf2onnx's ``from_keras`` (MLAgility's path) cannot name the
outputs of a Keras 3 model. Input specs follow MLAgility: float64 becomes float32, int64 becomes
int32, an unknown dimension 1.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import weakref
from time import perf_counter
from typing import Any, Callable, Optional

import numpy as np

from benchmate.benchit.discovery import (
    Call,
    InvocationRecord,
    Listener,
    ModelRecord,
    _variable_name,
)
from benchmate.benchit.hashing import (
    TensorSpec,
    UnsupportedInput,
    invocation_hash,
    named_inputs,
    shapes_and_dtypes,
)

#: The framework name of Keras records and events.
FRAMEWORK = "keras"


class KerasDiscovery:
    """Observes the ``keras.Model`` calls of one script run (a context manager, like
    :class:`~benchmate.benchit.discovery.Discovery`). Importing Keras (and TensorFlow) happens
    here, before the script runs."""

    def __init__(self, script: str, targets: set[str], listener: Listener):
        # torch's compiler stack and TensorFlow each bring their own LLVM: torch._dynamo loaded
        # after TensorFlow aborts the process (LLVM options "registered more than once"), loaded
        # before it both work (torch.compile included).
        import torch._dynamo  # noqa: F401

        try:
            import keras
        except ImportError as error:
            raise RuntimeError(
                f"Keras models cannot be discovered: {error}; the worker's environment needs "
                "tensorflow-cpu and tf2onnx (benchit's own has them), or use --framework pytorch"
            ) from error

        self.script = script
        self.targets = targets
        self.listener = listener
        self.model_class = keras.Model
        self.models: dict[str, ModelRecord] = {}
        self.invocations: dict[str, InvocationRecord] = {}
        #: By ``id`` of a model: its weak reference and record.
        self._known: dict[int, tuple[weakref.ref, ModelRecord]] = {}
        #: By (``id`` of a model, input shapes and dtypes): its invocation.
        self._sites: dict[tuple, InvocationRecord] = {}
        self._reported_errors: set[tuple[str, str]] = set()
        #: Tracked calls in progress (0 or 1): a call made meanwhile runs untracked.
        self._depth = 0
        self._own_call = self.model_class.__dict__.get("__call__")

    def __enter__(self) -> "KerasDiscovery":
        original = self.model_class.__call__
        discovery = self

        def __call__(model, *args, **kwargs):  # noqa: N807 - replaces keras.Model.__call__
            if discovery._depth:
                return original(model, *args, **kwargs)
            return discovery._tracked(original, model, args, kwargs, sys._getframe(1))

        self.model_class.__call__ = __call__
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._own_call is None:
            del self.model_class.__call__
        else:
            self.model_class.__call__ = self._own_call

    def _tracked(self, original: Callable[..., Any], model: Any, args: tuple, kwargs: dict,
                 caller: Any) -> Any:
        """Run a top-level call, counted under its invocation; the first call of an invocation
        describes it (and the model, the first time) and lets the listener build it."""
        try:
            shapes, dtypes = shapes_and_dtypes(named_inputs(*_specs(args, kwargs)))
        except UnsupportedInput as error:
            self._depth += 1
            try:
                outputs = original(model, *args, **kwargs)
            finally:
                self._depth -= 1
            record = self._record(model, caller)
            key = (record.model_hash, str(error))
            if key not in self._reported_errors:
                self._reported_errors.add(key)
                self.listener.input_error(record, error)
            return outputs
        key = (id(model), repr(shapes), repr(dtypes))
        invocation = self._sites.get(key)
        known = self._known.get(id(model))
        if known is not None and known[0]() is not model:
            invocation = None  # another model, now dead, had this id
        self._depth += 1
        start = perf_counter()
        try:
            outputs = original(model, *args, **kwargs)
            seconds = perf_counter() - start
            if invocation is None:
                invocation = self._first_call(model, args, kwargs, shapes, dtypes, caller, key)
        finally:
            self._depth -= 1
        invocation.executed += 1
        invocation.seconds += seconds
        return outputs

    def _first_call(self, model: Any, args: tuple, kwargs: dict, shapes: dict, dtypes: dict,
                    caller: Any, key: tuple) -> InvocationRecord:
        """Describe a new site (its model first) and, when the listener asks, build it."""
        record = self._record(model, caller)
        hash_ = invocation_hash(record.model_hash, None, shapes, dtypes)
        invocation = self.invocations.get(hash_)
        plan = None
        if invocation is None:
            invocation = InvocationRecord(
                invocation_hash=hash_, model_hash=record.model_hash, parent_invocation_hash=None,
                shapes=shapes, dtypes=dtypes,
                is_target=not self.targets or hash_ in self.targets)
            self.invocations[hash_] = invocation
            plan = self.listener.invocation_found(record, invocation, model)
        self._sites[key] = invocation
        if plan is not None:
            self.listener.first_call_done(Call(module=model, record=record, invocation=invocation,
                                               args=args, kwargs=kwargs, plan=plan))
        return invocation

    def _record(self, model: Any, caller: Any) -> ModelRecord:
        """The record of a model (built: it has been called), made and announced the first
        time its hash is seen."""
        known = self._known.get(id(model))
        if known is not None and known[0]() is model:
            return known[1]
        hash_ = model_hash(model)
        record = self.models.get(hash_)
        if record is None:
            weights = list(model.weights)
            record = ModelRecord(
                model_hash=hash_,
                class_name=type(model).__name__,
                module_name=type(model).__module__,
                file=self.script if caller.f_code.co_filename == self.script else None,
                line=caller.f_lineno if caller.f_code.co_filename == self.script else None,
                name=_variable_name(model, None, caller),
                parameters=int(model.count_params()),
                parameter_bytes=sum(_numel(w.shape) * np.dtype(w.dtype).itemsize
                                    for w in weights),
                depth=0,
                parent_hash=None,
                compiled=False,
                framework=FRAMEWORK,
            )
            self.models[hash_] = record
            self.listener.model_found(record)
        key = id(model)
        self._known[key] = (weakref.ref(model, lambda _: self._known.pop(key, None)), record)
        return record


def summary_text(model: Any) -> str:
    """What ``model.summary()`` prints, the lines it hands its ``print_fn`` joined by spaces."""
    lines: list[str] = []
    model.summary(print_fn=lambda line, *args, **kwargs: lines.append(line))
    return " ".join(lines)


def model_hash(model: Any) -> str:
    """MLAgility's model hash of a Keras model: the first 8 hex digits of the sha256 of its
    :func:`summary_text`."""
    return hashlib.sha256(summary_text(model).encode()).hexdigest()[:8]


def weights_hash(model: Any) -> str:
    """The full sha256 of the summary and of every weight's name, dtype and bytes: changes
    whenever a weight does."""
    digest = hashlib.sha256(summary_text(model).encode())
    for weight in model.weights:
        value = np.asarray(weight.numpy())
        digest.update(weight.path.encode() if hasattr(weight, "path") else weight.name.encode())
        digest.update(value.dtype.name.encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def _is_tensor(value: Any) -> bool:
    """Whether ``value`` is an input tensor: a TensorFlow tensor or a numpy array."""
    if isinstance(value, np.ndarray):
        return True
    tf = sys.modules.get("tensorflow")
    return tf is not None and tf.is_tensor(value)


def _spec(value: Any) -> Any:
    """A tensor as its :class:`TensorSpec` (shape and dtype name), through lists and tuples;
    anything else as it is."""
    if _is_tensor(value):
        return TensorSpec(tuple(value.shape), value.dtype.name)
    if isinstance(value, (list, tuple)):
        return type(value)(_spec(item) for item in value)
    return value


def _specs(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The call's arguments with their tensors as :class:`TensorSpec` (what hashing needs)."""
    return _spec(tuple(args)), {name: _spec(value) for name, value in kwargs.items()}


def _numel(shape: Any) -> int:
    """The number of elements of a tensor of ``shape``."""
    count = 1
    for dim in shape:
        count *= int(dim)
    return count


# -- export ----------------------------------------------------------------------------------

#: Export dtypes of input dtypes that tf2onnx specs do not keep (as MLAgility).
EXPORT_DTYPES = {"float64": "float32", "int64": "int32"}


def export_inputs(model: Any, args: tuple, kwargs: dict) -> tuple[list[str], dict[str, Any]]:
    """The names of the call's tensors, after the parameters of ``model.call`` they are bound
    to (``name.i`` for the items of a list), in the order they are passed, and the tensors by
    name as numpy arrays (what ONNX Runtime is fed)."""
    try:
        bound = inspect.signature(model.call).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = named_inputs(args, kwargs)
    names: dict[int, str] = {}
    for name, value in bound.items():
        leaves = [item for item in _leaves(value) if _is_tensor(item)]
        for index, leaf in enumerate(leaves):
            names.setdefault(id(leaf), name if len(leaves) == 1 else f"{name}.{index}")
    ordered: list[str] = []
    arrays: dict[str, Any] = {}
    for leaf in _leaves((args, kwargs)):
        if _is_tensor(leaf):
            name = names.get(id(leaf), f"input_{len(ordered) + 1}")
            while name in arrays:  # one tensor passed twice
                name += "_"
            ordered.append(name)
            arrays[name] = np.asarray(leaf)
    return ordered, arrays


def _leaves(value: Any) -> list[Any]:
    """The leaves of nested lists, tuples and dicts (dicts in key order), in order."""
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def _rebuild(value: Any, tensors: list[Any]) -> Any:
    """``value`` with its tensors replaced, in :func:`_leaves` order, by the next of
    ``tensors`` (consumed)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuild(item, tensors) for item in value)
    if isinstance(value, dict):
        return {key: _rebuild(item, tensors) for key, item in value.items()}
    return tensors.pop(0) if _is_tensor(value) else value


def export_keras(model: Any, args: tuple, kwargs: dict, path: str, opset: int) -> None:
    """Export ``model`` called with ``args``/``kwargs`` to the ONNX file ``path`` with tf2onnx
    and check the result; arguments other than tensors are kept as constants."""
    import onnx
    import tensorflow as tf
    import tf2onnx

    names, arrays = export_inputs(model, args, kwargs)
    specs = [
        tf.TensorSpec([1 if dim is None else dim for dim in arrays[name].shape],
                      EXPORT_DTYPES.get(arrays[name].dtype.name, arrays[name].dtype.name),
                      name=name)
        for name in names
    ]
    print(f"exporting {type(model).__name__} with inputs {names} (opset {opset}, tf2onnx)")

    def forward(*tensors: Any) -> Any:
        call_args, call_kwargs = _rebuild((tuple(args), dict(kwargs)), list(tensors))
        return model(*call_args, **call_kwargs)

    function = tf.function(forward, input_signature=specs)
    tf2onnx.convert.from_function(function, input_signature=specs, opset=opset,
                                  output_path=path)
    onnx.checker.check_model(path)
