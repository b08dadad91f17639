"""Model, invocation and weights hashes of ``benchit``, with MLAgility's values.

The model hash is ``sha256(repr(model))[:8]``; the invocation hash covers the model hash, the
parent's invocation hash and the Python ``repr`` of the input shape and dtype dictionaries, so it
has to be computed here rather than in Rust.
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional

import torch


class UnsupportedInput(TypeError):
    """A model input whose type has no shape (neither tensor, sequence of tensors nor scalar)."""


class TensorSpec:
    """A tensor input's shape and dtype, described as the tensor would be (discovery keeps these
    rather than the tensor until it describes a call)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: torch.Size, dtype: torch.dtype):
        self.shape = shape
        self.dtype = dtype


def model_hash(model: torch.nn.Module) -> str:
    """The first 8 hex digits of the sha256 of the module tree's ``repr`` (no weights)."""
    return hashlib.sha256(str(model).encode()).hexdigest()[:8]


def named_inputs(args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Positional arguments renamed ``Positional Arg 1``, ``Positional Arg 2``... merged with the
    keyword arguments."""
    inputs = {f"Positional Arg {index}": value for index, value in enumerate(args, start=1)}
    inputs.update(kwargs)
    return inputs


def shapes_and_dtypes(inputs: dict[str, Any]) -> tuple[dict[str, tuple], dict[str, str]]:
    """The shape and dtype of every input, keys sorted: tensors (and :class:`TensorSpec`) by their
    shape and dtype name, lists and tuples one entry ``key[i]`` per element,
    ``bool``/``int``/``float`` as shape ``(1,)`` with the Python type name; ``None`` is left out.
    Raises :class:`UnsupportedInput` for anything else."""
    shapes: dict[str, tuple] = {}
    dtypes: dict[str, str] = {}
    for key in sorted(inputs):
        value = inputs[key]
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                _describe(f"{key}[{index}]", item, shapes, dtypes)
        else:
            _describe(key, value, shapes, dtypes)
    return shapes, dtypes


def _describe(key: str, value: Any, shapes: dict, dtypes: dict) -> None:
    """Add the shape and dtype of one input value (or skip it when it is ``None``)."""
    if value is None:
        return
    if isinstance(value, (torch.Tensor, TensorSpec)):
        shapes[key] = tuple(value.shape)
        dtypes[key] = str(value.dtype).removeprefix("torch.")
    elif isinstance(value, (bool, int, float)):
        shapes[key] = (1,)
        dtypes[key] = type(value).__name__
    else:
        raise UnsupportedInput(f"input {key!r} has unsupported type {type(value).__name__}")


def invocation_hash(
    model_hash_: str, parent_invocation_hash: Optional[str], shapes: dict, dtypes: dict
) -> str:
    """The first 8 hex digits of the sha256 of the model hash, the parent invocation hash
    (``None`` for a top-level model) and the shape and dtype dictionaries' ``repr``."""
    text = f"{model_hash_}{parent_invocation_hash}{shapes}{dtypes}"
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def weights_hash(model: torch.nn.Module) -> str:
    """The full sha256 of the model's ``repr`` and the bytes of every parameter and buffer in
    ``state_dict`` order: changes whenever a weight does."""
    digest = hashlib.sha256(str(model).encode())
    with torch.no_grad():
        for name, tensor in model.state_dict(keep_vars=False).items():
            digest.update(name.encode())
            if not isinstance(tensor, torch.Tensor) or tensor.is_meta:
                continue
            flat = tensor.detach().reshape(-1).contiguous().cpu()
            digest.update(str(tensor.dtype).encode())
            digest.update(flat.view(torch.uint8).numpy())
    return digest.hexdigest()
