"""Operators of ``benchit ops`` by name.

Three kinds, as in PARAM:

* callable: ``out = f(*args, **kwargs)`` (``torch.add``, ``torch.nn.functional.relu``, ...);
* buildable: ``build`` constructs a ``torch.nn.Module`` on the device, each call runs it
  (``torch.nn.Linear``, the whole models ``pytorch.model.*``);
* in-place: ``args[0].<method>_(*args[1:], **kwargs)`` under ``no_grad`` (``torch.add_``).

Besides PARAM's registered names, any ``torch.*`` function and any ``torch.nn`` module class is
found by its dotted name, and ``aten::<name>[.<overload>]`` resolves to ``torch.ops.aten``. For
``aten::`` names PARAM builds a TorchScript function from a schema string given as the build
argument; here the schema (when given as a ``str`` build argument) picks the overload and must
name the same operator, and the call goes to the overload directly.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from benchmate.benchit import ops_models


class OperatorError(LookupError):
    """An operator name that resolves to nothing usable."""


class Operator:
    """One operator: optional ``build``, ``forward``, then optional ``create_grad`` (untimed) and
    ``backward``."""

    buildable = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.device = torch.device("cpu")
        self.out: Any = None
        self._grads: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None

    def build(self, *args: Any, **kwargs: Any) -> None:
        """Construct the operator's state (nothing for plain functions)."""

    def forward(self, *args: Any, **kwargs: Any) -> None:
        """One call; the output is kept for ``backward``."""
        self.out = self.target()(*args, **kwargs)

    def target(self) -> Callable[..., Any]:
        """The callable one iteration calls, returning the output (the timing loops call it
        directly, without the frame of :meth:`forward`, and keep the output themselves)."""
        raise NotImplementedError

    def create_grad(self) -> None:
        """Make the output gradients of the last forward (not timed)."""
        outputs = _tensors(self.out)
        needing = [t for t in outputs if t.requires_grad and t.grad_fn is not None]
        if not needing:
            raise OperatorError(
                f"{self.name} has no backward here: its output does not require gradients "
                "(give a floating tensor input with requires_grad true)"
            )
        self._grads = (needing, [torch.ones_like(t) for t in needing])

    def backward(self) -> None:
        """Backward from the last forward's output."""
        if self._grads is None:
            self.create_grad()
        outputs, grads = self._grads  # type: ignore[misc]
        torch.autograd.backward(outputs, grads)
        self._grads = None

    def cleanup(self) -> None:
        """Drop the last output."""
        self.out = None
        self._grads = None


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


class CallableOp(Operator):
    """A function."""

    def __init__(self, name: str, func: Callable[..., Any]) -> None:
        super().__init__(name)
        self.func = func

    def target(self) -> Callable[..., Any]:
        return self.func


class BuildableOp(Operator):
    """A ``torch.nn.Module`` class: built once per build spec, called per iteration."""

    buildable = True

    def __init__(self, name: str, constructor: Callable[..., torch.nn.Module]) -> None:
        super().__init__(name)
        self.constructor = constructor
        self.module: torch.nn.Module | None = None

    def build(self, *args: Any, **kwargs: Any) -> None:
        self.module = self.constructor(*args, **kwargs).to(self.device)

    def target(self) -> Callable[..., Any]:
        if self.module is None:
            raise OperatorError(f"{self.name} is a module class: give it a \"build\" spec")
        return self.module


class InPlaceOp(Operator):
    """``args[0].<method>(*args[1:])`` under ``no_grad``: no backward."""

    def __init__(self, name: str, method: str) -> None:
        super().__init__(name)
        self.method = method

    def target(self) -> Callable[..., Any]:
        method = self.method

        def update(*args: Any, **kwargs: Any) -> Any:
            if not args:
                raise OperatorError(f"{self.name} needs the tensor to update as its first argument")
            with torch.no_grad():
                return getattr(args[0], method)(*args[1:], **kwargs)

        return update

    def create_grad(self) -> None:
        raise OperatorError(f"{self.name} works in place and has no backward")


class AtenOp(Operator):
    """``aten::<name>[.<overload>]``: a ``torch.ops.aten`` overload. The overload is the one
    named, else the one the build's schema names, else ``default`` (or the only one there is).
    As PARAM's TorchScript function takes every schema argument by position, positional
    arguments beyond the schema's positional ones fill its keyword-only ones in order
    (``aten::add.Tensor`` called with ``self, other, 1`` gets ``alpha=1``)."""

    buildable = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.qualified = name[len("aten::"):]
        self.packet = _aten_packet(self.qualified.partition(".")[0])
        self.overload: Any = None

    def build(self, *args: Any, **kwargs: Any) -> None:
        schema = args[0] if args and isinstance(args[0], str) else kwargs.get("schema")
        if not schema:
            return
        qualified = schema.split("(", 1)[0].strip()
        if not qualified.startswith("aten::"):
            raise OperatorError(f"the schema {schema!r} does not name an aten:: operator")
        base_given = self.name.split(".", 1)[0]
        if qualified.split(".", 1)[0] != base_given:
            raise OperatorError(f"the schema names {qualified}, not {self.name}")
        self.overload = _aten_overload(self.packet, qualified[len("aten::"):])

    def target(self) -> Callable[..., Any]:
        if self.overload is None:
            self.overload = _aten_overload(self.packet, self.qualified)
        overload = self.overload
        arguments = overload._schema.arguments
        positional = sum(1 for a in arguments if not a.kwarg_only)
        keyword_only = [a.name for a in arguments if a.kwarg_only]
        if not keyword_only:
            return overload

        def call(*args: Any, **kwargs: Any) -> Any:
            if len(args) > positional:
                extra = dict(zip(keyword_only, args[positional:]))
                args, kwargs = args[:positional], {**extra, **kwargs}
            return overload(*args, **kwargs)

        return call


def _aten_packet(name: str) -> Any:
    try:
        return getattr(torch.ops.aten, name)
    except (AttributeError, RuntimeError) as exc:
        raise OperatorError(f"no aten operator {name!r} in this torch ({torch.__version__})") \
            from exc


def _aten_overload(packet: Any, qualified: str) -> Any:
    name, _, overload = qualified.partition(".")
    overloads = packet.overloads()
    if not overload:
        if "default" in overloads:
            overload = "default"
        elif len(overloads) == 1:
            overload = overloads[0]
        else:
            raise OperatorError(
                f"aten::{name} has several overloads ({', '.join(overloads)}) and none is named: "
                f"write aten::{name}.<overload>, or give its schema as the build argument")
    try:
        return getattr(packet, overload)
    except (AttributeError, RuntimeError) as exc:
        raise OperatorError(f"aten::{name} has no overload {overload!r} in this torch "
                            f"({torch.__version__}); it has {', '.join(overloads)}") from exc


# PARAM's registered workloads (lib/pytorch + workloads/pytorch), by kind.
IN_PLACE = ("torch.add_", "torch.clamp_")
CALLABLE = (
    "torch.add",
    "torch.baddbmm",
    "torch.bmm",
    "torch.cat",
    "torch.matmul",
    "torch.mean",
    "torch.mm",
    "torch.mul",
    "torch.nn.functional.relu",
    "torch.reshape",
)
BUILDABLE = (
    "torch.nn.AdaptiveAvgPool2d",
    "torch.nn.Conv2d",
    "torch.nn.Dropout",
    "torch.nn.MaxPool2d",
    "torch.nn.ReLU",
    "torch.nn.Linear",
)


def _resolve_dotted(name: str) -> Any:
    parts = name.split(".")
    if parts[0] != "torch":
        return None
    value: Any = torch
    for part in parts[1:]:
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def known_names() -> list[str]:
    """The names PARAM registers plus the whole models (what the worker is known to serve; the
    tests check every one resolves)."""
    return [*IN_PLACE, *CALLABLE, *BUILDABLE, *ops_models.MODELS]


def lookup(name: str) -> Operator:
    """A fresh operator for ``name``; :class:`OperatorError` when there is none."""
    if name in ops_models.MODELS:
        return BuildableOp(name, ops_models.MODELS[name])
    if name.startswith("aten::"):
        return AtenOp(name)
    if name in IN_PLACE:
        return InPlaceOp(name, name.rsplit(".", 1)[1])
    target = _resolve_dotted(name)
    if isinstance(target, type) and issubclass(target, torch.nn.Module):
        return BuildableOp(name, target)
    if callable(target) and not isinstance(target, type):
        return CallableOp(name, target)
    raise OperatorError(
        f"unknown operator {name!r}: not a torch.* function, a torch.nn module, an aten:: "
        f"operator or one of the models {', '.join(ops_models.MODELS)}"
    )
