"""Model discovery: which ``torch.nn.Module``s a script calls, with which inputs, how often.

Instead of MLAgility's profiler over every frame's locals, :class:`Discovery` replaces
``torch.nn.Module.__call__`` with a thin wrapper. A call made while no tracked call is in progress
is a top-level model (depth 0); a call made from inside a tracked model's forward is a sub-model
when the callee is a direct child of that model and the nesting is within ``max_depth``. Every
other call takes a fast path (one length comparison) straight to torch. ``torch.nn.Module.__init__``
is wrapped too, to remember where in the user's script each module was made.

What to do with a discovery (send events, build, benchmark) is the business of a
:class:`Listener`; this module only observes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import weakref
from time import perf_counter
from typing import Any, Iterator, NamedTuple, Optional

import torch

from benchmate.benchit.hashing import (
    UnsupportedInput,
    invocation_hash,
    model_hash,
    named_inputs,
    shapes_and_dtypes,
)

is_compiling = torch.compiler.is_compiling

#: Classes defined in ``torch.nn.modules.activation``; MLAgility does not count them as models.
ACTIVATIONS = frozenset(
    cls
    for cls in vars(torch.nn.modules.activation).values()
    if isinstance(cls, type)
    and issubclass(cls, torch.nn.Module)
    and cls.__module__ == torch.nn.modules.activation.__name__
)


def _optimized_module_type() -> Optional[type]:
    """The class ``torch.compile`` wraps modules in, or ``None`` when dynamo is unavailable."""
    try:
        from torch._dynamo.eval_frame import OptimizedModule
    except ImportError:  # pragma: no cover - torch builds without dynamo
        return None
    return OptimizedModule


@dataclasses.dataclass
class ModelRecord:
    """One discovered model architecture (instances with the same model hash share a record)."""

    model_hash: str
    class_name: str
    module_name: str
    file: Optional[str]
    line: Optional[int]
    name: Optional[str]
    parameters: int
    parameter_bytes: int
    depth: int
    parent_hash: Optional[str]
    compiled: bool
    #: Invocations by input signature (see :func:`_signature`), shared by identical models.
    signatures: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass
class InvocationRecord:
    """One unique (model, inputs) pair and its call statistics."""

    invocation_hash: str
    model_hash: str
    parent_invocation_hash: Optional[str]
    shapes: dict[str, tuple]
    dtypes: dict[str, str]
    is_target: bool
    executed: int = 0
    seconds: float = 0.0
    announced: bool = False


@dataclasses.dataclass
class Call:
    """What a first call hands to the listener once the real forward has returned."""

    module: torch.nn.Module
    record: ModelRecord
    invocation: InvocationRecord
    args: tuple
    kwargs: dict[str, Any]
    plan: Any


class Listener:
    """Receives discoveries; the default does nothing (analysis only)."""

    def model_found(self, record: ModelRecord) -> None:
        """A model hash seen for the first time."""

    def invocation_found(self, record: ModelRecord, invocation: InvocationRecord,
                         module: torch.nn.Module) -> Any:
        """An invocation at its first call, before the forward runs. A value other than ``None``
        asks for :meth:`first_call_done` (with copies of the inputs) after the forward."""
        return None

    def first_call_done(self, call: Call) -> None:
        """The first call of an invocation that asked for it has returned its outputs."""

    def first_call_failed(self, call: Call) -> None:
        """The first call of an invocation that asked for it raised."""

    def input_error(self, record: ModelRecord, error: UnsupportedInput) -> None:
        """A call whose inputs cannot be described (reported once per model and message)."""


class _Active(NamedTuple):
    """A tracked call in progress (a stack entry; ``None`` entries block their subtree)."""

    module: torch.nn.Module
    record: ModelRecord
    invocation: InvocationRecord
    accepts_children: bool


class Discovery:
    """Observes the ``torch.nn.Module`` calls of one script run.

    Use as a context manager around the script: it patches ``torch.nn.Module`` on entry and
    restores it on exit. :meth:`paused` restores torch while the worker builds or benchmarks.
    """

    def __init__(self, script: str, max_depth: int, targets: set[str], listener: Listener):
        self.script = script
        self.max_depth = max_depth
        self.targets = targets
        self.listener = listener
        self.models: dict[str, ModelRecord] = {}
        self.invocations: dict[str, InvocationRecord] = {}
        self._known: "weakref.WeakKeyDictionary[torch.nn.Module, tuple]" = (
            weakref.WeakKeyDictionary()
        )
        self._locations: "weakref.WeakKeyDictionary[torch.nn.Module, tuple]" = (
            weakref.WeakKeyDictionary()
        )
        self._constructors: dict[type, frozenset] = {}
        self._reported_errors: set[tuple[str, str]] = set()
        self._stack: list[Optional[_Active]] = []
        self._optimized = _optimized_module_type()
        self._original_call = torch.nn.Module.__call__
        self._original_init = torch.nn.Module.__init__
        self._installed = False
        self._watching_forks = False
    # -- patching ---------------------------------------------------------------------------

    def __enter__(self) -> "Discovery":
        self._install()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._uninstall()

    def _install(self) -> None:
        """Put the call and constructor wrappers on ``torch.nn.Module``."""
        original_call = self._original_call
        original_init = self._original_init
        stack = self._stack
        max_depth = self.max_depth
        discovery = self

        def __call__(module, *args, **kwargs):  # noqa: N807 - replaces Module.__call__
            if len(stack) > max_depth:
                return original_call(module, *args, **kwargs)
            return discovery._call(module, args, kwargs)

        def __init__(module, *args, **kwargs):  # noqa: N807 - replaces Module.__init__
            original_init(module, *args, **kwargs)
            discovery._remember_location(module, sys._getframe(1))

        torch.nn.Module.__call__ = __call__
        torch.nn.Module.__init__ = __init__
        self._installed = True
        if not self._watching_forks:
            self._watching_forks = True
            forked = weakref.WeakMethod(self._in_forked_child)
            os.register_at_fork(after_in_child=lambda: forked() and forked()())

    def _uninstall(self) -> None:
        """Give ``torch.nn.Module`` its own methods back."""
        torch.nn.Module.__call__ = self._original_call
        torch.nn.Module.__init__ = self._original_init
        self._installed = False

    def _in_forked_child(self) -> None:
        """A process forked by the script (data loader workers...) discovers nothing: only the
        worker process may speak the protocol."""
        if self._installed:
            self._uninstall()
            self._stack.clear()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Unpatched torch for the duration (builds and benchmarks)."""
        self._uninstall()
        try:
            yield
        finally:
            self._install()

    # -- construction sites -----------------------------------------------------------------

    def _remember_location(self, module: torch.nn.Module, frame: Any) -> None:
        """Record the first frame of the script outside the module's own constructors.

        A frame is one of the module's constructors when its code is the ``__init__`` of a class
        in the module's MRO: comparing code objects avoids reading ``f_locals``, which would copy
        every local of every frame walked (this runs for each submodule built)."""
        kind = type(module)
        constructors = self._constructors.get(kind)
        if constructors is None:
            constructors = frozenset(
                init.__code__
                for init in (klass.__dict__.get("__init__") for klass in kind.__mro__)
                if hasattr(init, "__code__")
            )
            self._constructors[kind] = constructors
        script = self.script
        while frame is not None:
            code = frame.f_code
            if code.co_filename == script and code not in constructors:
                self._locations[module] = (script, frame.f_lineno)
                return
            frame = frame.f_back

    # -- calls ------------------------------------------------------------------------------

    def _call(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> Any:
        """A call within ``max_depth``: track it when it is a model, else block its subtree.

        This is the hot path of discovery: known models with known input signatures cost a few
        dictionary lookups and two clock reads.
        """
        original = self._original_call
        if is_compiling():
            return original(module, *args, **kwargs)
        stack = self._stack
        parent = stack[-1] if stack else None
        if stack and (parent is None or not parent.accepts_children
                      or not _is_child(parent.module, module)):
            return self._blocked(module, args, kwargs)
        known = self._known.get(module)
        if known is None:
            known = self._discover(module, parent)
            if known is None:
                return self._blocked(module, args, kwargs)
        target, record = known
        parent_invocation = parent.invocation.invocation_hash if parent else None
        signature = _signature(parent_invocation, args, kwargs)
        invocation = record.signatures.get(signature) if signature is not None else None
        if invocation is None:
            invocation = self._invocation(record, parent_invocation, args, kwargs, signature)
            if invocation is None:
                return self._blocked(module, args, kwargs)
        call = None
        if not invocation.announced:
            invocation.announced = True
            plan = self.listener.invocation_found(record, invocation, target)
            if plan is not None:
                call = Call(module=target, record=record, invocation=invocation,
                            args=_copy_inputs(args), kwargs=_copy_inputs(kwargs), plan=plan)
        stack.append(_Active(target, record, invocation, target is module))
        start = perf_counter()
        try:
            outputs = original(module, *args, **kwargs)
        except BaseException:
            stack.pop()
            if call is not None:
                self.listener.first_call_failed(call)
            raise
        elapsed = perf_counter() - start
        stack.pop()
        invocation.executed += 1
        invocation.seconds += elapsed
        if call is not None:
            self.listener.first_call_done(call)
        return outputs

    def _blocked(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> Any:
        """Run an untracked call; calls made inside it are not tracked either."""
        self._stack.append(None)
        try:
            return self._original_call(module, *args, **kwargs)
        finally:
            self._stack.pop()

    def _target(self, module: torch.nn.Module) -> torch.nn.Module:
        """The module itself, or the original module of a ``torch.compile`` wrapper."""
        if self._optimized is not None and isinstance(module, self._optimized):
            return module._orig_mod
        return module

    def _discover(self, module: torch.nn.Module, parent: Optional[_Active]
                  ) -> Optional[tuple[torch.nn.Module, ModelRecord]]:
        """The target module and record of a module called for the first time (identical
        architectures share a record), or ``None`` when it is no model: an activation, or
        nothing with parameters (yet)."""
        target = self._target(module)
        if type(target) in ACTIVATIONS:
            return None
        parameters = list(target.parameters())
        count = sum(p.numel() for p in parameters)
        if count == 0:
            return None
        hash_ = model_hash(target)
        record = self.models.get(hash_)
        if record is None:
            file, line = self._locations.get(target) or self._locations.get(module) or (None, None)
            caller = sys._getframe(3)  # the frame that called the model
            record = ModelRecord(
                model_hash=hash_,
                class_name=type(target).__name__,
                module_name=type(target).__module__,
                file=file,
                line=line,
                name=_variable_name(module, parent, caller),
                parameters=count,
                parameter_bytes=sum(p.numel() * p.element_size() for p in parameters),
                depth=len(self._stack),
                parent_hash=parent.record.model_hash if parent else None,
                compiled=target is not module,
            )
            self.models[hash_] = record
            self.listener.model_found(record)
        known = (target, record)
        self._known[module] = known
        return known

    def _invocation(self, record: ModelRecord, parent_invocation: Optional[str], args: tuple,
                    kwargs: dict, signature: Optional[tuple]) -> Optional[InvocationRecord]:
        """The invocation of these inputs (created at first sight), or ``None`` after reporting
        inputs that cannot be described."""
        try:
            shapes, dtypes = shapes_and_dtypes(named_inputs(args, kwargs))
        except UnsupportedInput as error:
            key = (record.model_hash, str(error))
            if key not in self._reported_errors:
                self._reported_errors.add(key)
                self.listener.input_error(record, error)
            return None
        hash_ = invocation_hash(record.model_hash, parent_invocation, shapes, dtypes)
        invocation = self.invocations.get(hash_)
        if invocation is None:
            invocation = InvocationRecord(
                invocation_hash=hash_,
                model_hash=record.model_hash,
                parent_invocation_hash=parent_invocation,
                shapes=shapes,
                dtypes=dtypes,
                is_target=not self.targets or hash_ in self.targets,
            )
            self.invocations[hash_] = invocation
        if signature is not None:
            record.signatures[signature] = invocation
        return invocation


def _is_child(parent: torch.nn.Module, module: torch.nn.Module) -> bool:
    """Whether ``module`` is a direct child (attribute) of ``parent``."""
    return any(child is module for child in parent._modules.values())


def _variable_name(module: torch.nn.Module, parent: Optional[_Active],
                   caller: Any) -> Optional[str]:
    """The attribute name of a sub-model in its parent, or the caller's variable holding a
    top-level model."""
    if parent is not None:
        for name, child in parent.module._modules.items():
            if child is module:
                return name
        return None
    while caller is not None and caller.f_locals.get("self") is module:
        caller = caller.f_back  # the wrapper's own __call__ (torch.compile) called us
    if caller is None:
        return None
    for scope in (caller.f_locals, caller.f_globals):
        for name, value in scope.items():
            if value is module:
                return name
    return None


def _signature(parent_invocation: Optional[str], args: tuple, kwargs: dict) -> Optional[tuple]:
    """A cheap key of calls whose inputs are all tensors (name, shape, dtype), else ``None``."""
    key: list = [parent_invocation]
    for value in args:
        if not isinstance(value, torch.Tensor):
            return None
        key.append(value.shape)
        key.append(value.dtype)
    for name, value in kwargs.items():
        if not isinstance(value, torch.Tensor):
            return None
        key.append(name)
        key.append(value.shape)
        key.append(value.dtype)
    return tuple(key)


def _copy_inputs(value: Any) -> Any:
    """Detached copies of the tensors in ``value`` (through lists, tuples and dicts), so a
    forward that changes its inputs in place cannot change what gets built and timed."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_inputs(item) for item in value)
    if isinstance(value, dict):
        return {key: _copy_inputs(item) for key, item in value.items()}
    return value
