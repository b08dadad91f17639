"""Argument generation of ``benchit ops`` (PARAM's ``PyTorch:DefaultDataGenerator``).

Specs arrive expanded and checked by the Rust side; a spec that still does not fit raises
:class:`DataError` with a one-line reason. Values follow PARAM: floating tensors are uniform in
[0, 1), integer tensors uniform in [-10, 10), bool tensors fair coins, a 0-d tensor (``shape: []``)
is uniform in [-10, 10); ``int``/``long`` with ``value_range`` draw an integer in the inclusive
range, ``float``/``double`` a uniform float. One extension: a tensor may carry
``"value_range": [low, high]`` (integers drawn in ``[low, high]``, floats in ``[low, high)``), which
index arguments such as those of ``torch.nn.EmbeddingBag`` need.
"""

from __future__ import annotations

import random
from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "float": torch.float32,
    "double": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int": torch.int32,
    "long": torch.int64,
    "bool": torch.bool,
}

GENERATOR = "PyTorch:DefaultDataGenerator"


class DataError(ValueError):
    """An argument spec that cannot be materialised."""


def make_tensor(spec: dict[str, Any], device: torch.device) -> torch.Tensor:
    """The tensor described by a ``tensor`` spec."""
    name = spec.get("dtype")
    if name not in DTYPES:
        raise DataError(f"unknown dtype {name!r}; use one of {', '.join(DTYPES)}")
    dtype = DTYPES[name]
    shape = spec.get("shape")
    if not isinstance(shape, list) or any(not isinstance(s, int) or s < 0 for s in shape):
        raise DataError(f"a shape is a list of sizes >= 0, got {shape!r}")
    requires_grad = bool(spec.get("requires_grad", True))
    bounds = spec.get("value_range")
    if bounds is not None:
        low, high = bounds
        if low > high:
            raise DataError(f"value_range {bounds} is reversed")
        if dtype.is_floating_point:
            value = torch.rand(shape, dtype=dtype, device=device) * (high - low) + low
        elif dtype == torch.bool:
            value = torch.randint(int(low), int(high) + 1, shape, device=device).bool()
        else:
            value = torch.randint(int(low), int(high) + 1, shape, dtype=dtype, device=device)
    elif not shape and dtype.is_floating_point:
        value = torch.empty((), dtype=dtype, device=device).uniform_(-10, 10)
    elif dtype.is_floating_point:
        value = torch.rand(shape, dtype=dtype, device=device)
    elif dtype == torch.bool:
        value = torch.rand(shape, device=device) < 0.5
    else:
        value = torch.randint(-10, 10, shape, dtype=dtype, device=device)
    if requires_grad:
        # Raises for integer tensors, as in PARAM (the Rust side rejects those specs first).
        value.requires_grad_(True)
    return value


def _number(spec: dict[str, Any], draw: Any) -> Any:
    if "value_range" in spec:
        low, high = spec["value_range"]
        if low > high:
            raise DataError(f"value_range {spec['value_range']} is reversed")
        return draw(low, high)
    if "value" not in spec:
        raise DataError("needs 'value' or 'value_range'")
    return spec["value"]


def materialize(spec: dict[str, Any], device: torch.device) -> Any:
    """The Python value of one argument spec."""
    kind = spec.get("type")
    if kind == "tensor":
        return make_tensor(spec, device)
    if kind in ("int", "long"):
        return int(_number(spec, random.randint))
    if kind in ("float", "double"):
        return float(_number(spec, random.uniform))
    if kind == "bool":
        return bool(spec.get("value"))
    if kind == "str":
        return spec.get("value") or ""
    if kind == "device":
        return torch.device(spec["value"])
    if kind == "none":
        return None
    if kind == "genericlist":
        return [materialize(item, device) for item in spec.get("value", [])]
    if kind == "tuple":
        return tuple(materialize(item, device) for item in spec.get("value", []))
    raise DataError(f"unknown argument type {kind!r}")


def materialize_call(spec: dict[str, Any] | None, device: torch.device) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of an ``{"args", "kwargs"}`` spec."""
    if not spec:
        return [], {}
    args = [materialize(a, device) for a in spec.get("args") or []]
    kwargs = {k: materialize(a, device) for k, a in (spec.get("kwargs") or {}).items()}
    return args, kwargs
