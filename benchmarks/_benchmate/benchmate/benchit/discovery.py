"""Model discovery: which ``torch.nn.Module``s a script calls, with which inputs, how often.

Instead of MLAgility's profiler over every frame's locals, :class:`Discovery` replaces
``torch.nn.Module.__call__`` with a thin wrapper. A call made while no tracked call is in progress
is a top-level model (depth 0); a call made from inside a tracked model's forward is a sub-model
when the callee is a direct child of that model and the nesting is within ``max_depth``. Every
other call goes straight to torch's own call path after one length comparison.
``torch.nn.Module.__init__`` is wrapped too, to remember where in the user's script each module
was made. What discovery keeps about a module is filed under its ``id`` and dropped when it dies
(a weak reference's callback): keys made of modules would need them hashable, and a module class
that defines ``__eq__`` is not.

Counting calls is cheap: each *site* (one module called with one input signature under one
parent site) has its counters, found by a dictionary lookup. Describing a model is not (its hash
comes from its ``repr``, its parameters are counted, its invocations hashed), so it happens at the
first call only when the listener needs it there (to build the invocation before the forward
runs); otherwise it waits until the script ends or :data:`DESCRIBE_AFTER_SECONDS` have passed,
keeping it off short scripts' run time. A model is described as it is at that moment.

The wrapper is plain Python; what it costs a script (a few percent at most, for a small model
called in a tight loop) is measured by ``cargo xtask bench`` and given in docs/benchit.md.

What to do with a discovery (send events, build, benchmark) is the business of a
:class:`Listener`; this module only observes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import types
import weakref
from time import perf_counter
from typing import Any, Callable, Iterator, Optional

import torch

from benchmate.benchit.hashing import (
    TensorSpec,
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

#: How long models found may wait to be described when the listener does not need them at their
#: first call: a script that runs longer gets its models announced while it runs (a script stopped
#: by a timeout still reports them), and holds the modules waiting no longer than that.
DESCRIBE_AFTER_SECONDS = 1.0


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
    #: ``pytorch``, or ``keras`` for the records of :mod:`benchmate.benchit.keras_models`.
    framework: str = "pytorch"


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

    #: Whether each invocation must be announced at its first call, before its forward runs (to
    #: build it there). When false, discovery describes what it found later (see the module).
    needs_first_calls = False

    def model_found(self, record: ModelRecord) -> None:
        """A model hash seen for the first time."""

    def invocation_found(self, record: ModelRecord, invocation: InvocationRecord,
                         module: torch.nn.Module) -> Any:
        """A new invocation. At its first call (when :attr:`needs_first_calls`), a value other
        than ``None`` asks for :meth:`first_call_done` (with copies of the inputs) after the
        forward."""
        return None

    def first_call_done(self, call: Call) -> None:
        """The first call of an invocation that asked for it has returned its outputs."""

    def first_call_failed(self, call: Call) -> None:
        """The first call of an invocation that asked for it raised."""

    def input_error(self, record: ModelRecord, error: UnsupportedInput) -> None:
        """A call whose inputs cannot be described (reported once per model and message)."""


class _Model:
    """A module instance called as a model: what its first call tells, and its record once
    described."""

    __slots__ = ("module", "target", "compiled", "name", "depth", "parent", "location", "record")

    def __init__(self, module: "weakref.ref[torch.nn.Module]", target: torch.nn.Module,
                 compiled: bool, name: Optional[str], depth: int, parent: Optional["_Site"],
                 location: Optional[tuple[str, int]]):
        self.module = module
        self.target = weakref.ref(target)
        self.compiled = compiled
        self.name = name
        self.depth = depth
        self.parent = parent
        self.location = location
        self.record: Optional[ModelRecord] = None


class _Site:
    """A model instance called with one input signature under one parent site: what the hot path
    counts, and an entry of the stack of tracked calls in progress.

    ``counts`` is where calls are counted: the site itself (``executed``, ``seconds``) until it is
    described, then its invocation, which takes over what the site had counted.

    ``inputs`` holds the shapes and dtypes of a call whose inputs are not all tensors, described
    at its first call (they make its key); those of tensors only are described with the site,
    from its input ``signature``."""

    __slots__ = ("module", "model", "parent", "accepts_children", "signature", "inputs",
                 "invocation", "counts", "executed", "seconds")

    def __init__(self, module: "weakref.ref[torch.nn.Module]", model: _Model,
                 parent: Optional["_Site"], accepts_children: bool, signature: tuple,
                 inputs: Optional[tuple[dict, dict]]):
        self.module = module
        self.model = model
        self.parent = parent
        self.accepts_children = accepts_children
        self.signature = signature
        self.inputs = inputs
        self.invocation: Optional[InvocationRecord] = None
        self.counts: Any = self
        self.executed = 0
        self.seconds = 0.0


class Discovery:
    """Observes the ``torch.nn.Module`` calls of one script run.

    Use as a context manager around the script: it patches ``torch.nn.Module`` on entry and
    restores it on exit. :meth:`paused` restores torch while the worker builds or benchmarks;
    :meth:`describe_found` describes what is still waiting (call it once the script is over).
    """

    def __init__(self, script: str, max_depth: int, targets: set[str], listener: Listener):
        self.script = script
        self.max_depth = max_depth
        self.targets = targets
        self.listener = listener
        self.models: dict[str, ModelRecord] = {}
        self.invocations: dict[str, InvocationRecord] = {}
        #: Sites by (parent site, ``id`` of the called module, input signature).
        self._sites: dict[tuple, _Site] = {}
        #: Models by ``id`` of the called module.
        self._known: dict[int, _Model] = {}
        #: Where the script made each module: by ``id``, the module's weak reference and
        #: ``(script, line)``.
        self._locations: dict[int, tuple[weakref.ref, tuple[str, int]]] = {}
        self._reported_errors: set[tuple[str, str]] = set()
        self._stack: list[Optional[_Site]] = []
        #: Descriptions waiting for :meth:`describe_found`, in the order found (each holds its
        #: module), and when to run them at the latest.
        self._undescribed: list[tuple[Callable[..., Any], tuple]] = []
        self._describe_at = math.inf
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
        original_init = self._original_init
        original_call = self._original_call
        stack = self._stack
        sites = self._sites
        max_depth = self.max_depth
        resolve = self._resolve
        blocked = self._blocked
        listener = self.listener
        discovery = self

        def __call__(module, *args, **kwargs):  # noqa: N807 - replaces Module.__call__
            if len(stack) > max_depth:
                # What torch's Module.__call__ (_wrapped_call_impl) does, without its frame.
                compiled = module._compiled_call_impl
                if compiled is None:
                    return module._call_impl(*args, **kwargs)
                return compiled(*args, **kwargs)
            if is_compiling():
                return original_call(module, *args, **kwargs)
            # The hot path: a top-level model called again with inputs of a known signature is
            # counted and timed right here, one dictionary lookup and two clock reads, with no
            # frame of ours between the caller and torch; anything else is resolved first.
            call = None
            signature = _signature(args, kwargs)
            site = None if stack else sites.get((None, id(module), signature))
            if site is None or site.module() is not module:
                site, call = resolve(module, args, kwargs, signature, sys._getframe(1))
                if site is None:
                    return blocked(module, args, kwargs)
            stack.append(site)
            start = perf_counter()
            try:
                compiled = module._compiled_call_impl
                if compiled is None:
                    outputs = module._call_impl(*args, **kwargs)
                else:
                    outputs = compiled(*args, **kwargs)
            except BaseException:
                stack.pop()
                if call is not None:
                    listener.first_call_failed(call)
                raise
            end = perf_counter()
            stack.pop()
            counts = site.counts
            counts.executed += 1
            counts.seconds += end - start
            if call is not None:
                listener.first_call_done(call)
            elif end >= discovery._describe_at:
                discovery.describe_found()
            return outputs

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
            self._undescribed.clear()

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

        A frame is one of the module's constructors when its code is the ``__init__`` function
        of a class in the module's MRO: comparing code objects avoids reading ``f_locals``,
        which would copy every local of every frame walked (this runs for each submodule built).
        Only a script frame named ``__init__`` needs that search: modules built by library code
        (torch's own layers) never do."""
        script = self.script
        while frame is not None:
            code = frame.f_code
            if code.co_filename == script and (
                code.co_name != "__init__" or not _is_constructor_of(module, code)
            ):
                key = id(module)
                self._locations[key] = (_dropping_when_dead(self._locations, key, module),
                                        (script, frame.f_lineno))
                return
            frame = frame.f_back

    def _location_of(self, module: torch.nn.Module) -> Optional[tuple[str, int]]:
        """Where the script made ``module``, when it did."""
        entry = self._locations.get(id(module))
        return entry[1] if entry is not None and entry[0]() is module else None

    # -- calls ------------------------------------------------------------------------------

    def _resolve(self, module: torch.nn.Module, args: tuple, kwargs: dict,
                 signature: Optional[tuple], caller: Any
                 ) -> tuple[Optional[_Site], Optional[Call]]:
        """The site of a call within ``max_depth`` that the wrapper's lookup
        did not settle (a sub-model under a tracked call, a new site, inputs other than tensors)
        and, for the first call of an invocation the listener wants built, its :class:`Call`. No
        site when the call is to run untracked, its subtree with it: the module is no model, no
        direct child of the tracked model, or its inputs cannot be described. ``signature`` is
        :func:`_signature`'s key of the inputs, ``caller`` the frame that made the call."""
        stack = self._stack
        if not stack:  # the wrapper looked the top-level site up already
            return self._site_of(module, None, args, kwargs, signature, caller)
        parent = stack[-1]
        if parent is None or not parent.accepts_children or not _is_child(parent.model.target(),
                                                                           module):
            return None, None
        site = self._sites.get((parent, id(module), signature))
        if site is not None and site.module() is module:
            return site, None
        return self._site_of(module, parent, args, kwargs, signature, caller)

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

    def _site_of(self, module: torch.nn.Module, parent: Optional[_Site], args: tuple,
                 kwargs: dict, signature: Optional[tuple], caller: Any
                 ) -> tuple[Optional[_Site], Optional[Call]]:
        """The site of a call the fast lookup missed (a new site, or inputs other than tensors)
        and, for the first call of an invocation the listener wants built, its :class:`Call`;
        no site when the module is no model or its inputs cannot be described."""
        model = self._known.get(id(module))
        if model is None or model.module() is not module:
            model = self._new_model(module, parent, caller)
            if model is None:
                return None, None
        inputs = None
        if signature is None:
            try:
                inputs = shapes_and_dtypes(named_inputs(args, kwargs))
            except UnsupportedInput as error:
                self._input_error(model, error)
                return None, None
            signature = (tuple(inputs[0].items()), tuple(inputs[1].items()))
        key = (parent, id(module), signature)
        site = self._sites.get(key)
        if site is not None and site.module() is module:
            return site, None
        target = model.target()
        site = _Site(_dropping_when_dead(self._sites, key, module), model, parent,
                     target is module, signature, inputs)
        self._sites[key] = site
        plan = self._describe(self._describe_site, site, target)
        if plan is None:
            return site, None
        return site, Call(module=target, record=model.record, invocation=site.invocation,
                          args=_copy_inputs(args), kwargs=_copy_inputs(kwargs), plan=plan)

    def _new_model(self, module: torch.nn.Module, parent: Optional[_Site],
                   caller: Any) -> Optional[_Model]:
        """The model of a module called for the first time, or ``None`` when it is no model: an
        activation, or nothing with parameters (yet: a lazy module's are not made)."""
        target = self._target(module)
        if type(target) in ACTIVATIONS or not _has_parameters(target):
            return None
        key = id(module)
        model = _Model(_dropping_when_dead(self._known, key, module), target,
                       compiled=target is not module,
                       name=_variable_name(module, parent, caller), depth=len(self._stack),
                       parent=parent,
                       location=self._location_of(target) or self._location_of(module))
        self._known[key] = model
        self._describe(self._describe_model, model, target)
        return model

    # -- descriptions -----------------------------------------------------------------------

    def _describe(self, description: Callable[..., Any], *args: Any) -> Any:
        """Run ``description(*args)`` now when the listener needs first calls, and return what
        it returns; else keep it for :meth:`describe_found` and return ``None``."""
        if self.listener.needs_first_calls:
            return description(*args)
        if not self._undescribed:
            self._describe_at = perf_counter() + DESCRIBE_AFTER_SECONDS
        self._undescribed.append((description, args))
        return None

    def describe_found(self) -> None:
        """Describe what was found and not described yet, in the order it was found: the
        listener gets its :meth:`~Listener.model_found` and :meth:`~Listener.invocation_found`."""
        undescribed, self._undescribed = self._undescribed, []
        self._describe_at = math.inf
        for description, args in undescribed:
            description(*args)

    def _describe_model(self, model: _Model, target: torch.nn.Module) -> None:
        """Hash a model; the first of its hash makes the record (and is announced)."""
        hash_ = model_hash(target)
        record = self.models.get(hash_)
        if record is None:
            file, line = model.location or (None, None)
            parameters = list(target.parameters())
            record = ModelRecord(
                model_hash=hash_,
                class_name=type(target).__name__,
                module_name=type(target).__module__,
                file=file,
                line=line,
                name=model.name,
                parameters=sum(p.numel() for p in parameters),
                parameter_bytes=sum(p.numel() * p.element_size() for p in parameters),
                depth=model.depth,
                parent_hash=model.parent.model.record.model_hash if model.parent else None,
                compiled=model.compiled,
            )
            self.models[hash_] = record
            self.listener.model_found(record)
        model.record = record

    def _describe_site(self, site: _Site, target: torch.nn.Module) -> Any:
        """Hash a site's invocation (announced when new, and what the listener answers is
        returned); from now on its calls are counted there."""
        record = site.model.record
        parent = site.parent.invocation.invocation_hash if site.parent else None
        shapes, dtypes = site.inputs or _tensor_inputs(site.signature)
        hash_ = invocation_hash(record.model_hash, parent, shapes, dtypes)
        invocation = self.invocations.get(hash_)
        plan = None
        if invocation is None:
            invocation = InvocationRecord(
                invocation_hash=hash_,
                model_hash=record.model_hash,
                parent_invocation_hash=parent,
                shapes=shapes,
                dtypes=dtypes,
                is_target=not self.targets or hash_ in self.targets,
            )
            self.invocations[hash_] = invocation
            plan = self.listener.invocation_found(record, invocation, target)
        invocation.executed += site.executed
        invocation.seconds += site.seconds
        site.invocation = site.counts = invocation
        return plan

    def _input_error(self, model: _Model, error: UnsupportedInput) -> None:
        """Report inputs that cannot be described, once per model hash and message (after
        describing what was found before, to keep the listener's events in order)."""
        self.describe_found()
        key = (model.record.model_hash, str(error))
        if key not in self._reported_errors:
            self._reported_errors.add(key)
            self.listener.input_error(model.record, error)


def _is_child(parent: torch.nn.Module, module: torch.nn.Module) -> bool:
    """Whether ``module`` is a direct child (attribute) of ``parent``."""
    return any(child is module for child in parent._modules.values())


def _has_parameters(module: torch.nn.Module) -> bool:
    """Whether ``module`` or a module under it has a parameter with elements (a lazy module's,
    not made yet, count as none). Walks ``_parameters`` and ``_modules`` itself: the generators
    behind ``parameters()`` cost more than the search on a model's first call."""
    is_lazy = torch.nn.parameter.is_lazy
    pending = [module]
    while pending:
        current = pending.pop()
        if current is None:  # a child slot set to None
            continue
        for parameter in current._parameters.values():
            if parameter is not None and not is_lazy(parameter) and parameter.numel():
                return True
        pending += current._modules.values()
    return False


def _dropping_when_dead(entries: dict, key: Any, module: torch.nn.Module) -> "weakref.ref":
    """A weak reference to ``module`` whose death removes ``entries[key]``, a key that holds the
    module's ``id``. Whatever is filed there is the module's own: no other object has its ``id``
    while it lives, and the callback runs before its memory (and ``id``) can be reused."""
    return weakref.ref(module, lambda ref: entries.pop(key, None))


def _is_constructor_of(module: torch.nn.Module, code: Any) -> bool:
    """Whether ``code`` is the ``__init__`` function of a class in ``module``'s MRO."""
    for klass in type(module).__mro__:
        init = klass.__dict__.get("__init__")
        if isinstance(init, types.FunctionType) and init.__code__ is code:
            return True
    return False


def _variable_name(module: torch.nn.Module, parent: Optional[_Site],
                   caller: Any) -> Optional[str]:
    """The attribute name of a sub-model in its parent, or the caller's variable holding a
    top-level model."""
    if parent is not None:
        for name, child in parent.model.target()._modules.items():
            if child is module:
                return name
        return None
    while caller is not None:
        local = caller.f_locals  # a copy in a function's frame (before Python 3.13): read once
        if local.get("self") is not module:
            break
        caller = caller.f_back  # the wrapper's own __call__ (torch.compile) called us
    if caller is None:
        return None
    for scope in (local, caller.f_globals):
        for name, value in scope.items():
            if value is module:
                return name
    return None


def _signature(args: tuple, kwargs: dict) -> Optional[tuple]:
    """A cheap key of calls whose inputs are all tensors (shapes, dtypes and keyword names), else
    ``None``."""
    if not kwargs and len(args) == 1:
        value = args[0]
        return (value.shape, value.dtype) if isinstance(value, torch.Tensor) else None
    key: list = []
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


def _tensor_inputs(signature: tuple) -> tuple[dict, dict]:
    """The shapes and dtypes of a call's inputs, all tensors, from its :func:`_signature`."""
    positional: list = []
    keywords: dict = {}
    items = iter(signature)
    for item in items:
        if isinstance(item, str):
            keywords[item] = TensorSpec(next(items), next(items))
        else:
            positional.append(TensorSpec(item, next(items)))
    return shapes_and_dtypes(named_inputs(tuple(positional), keywords))


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
