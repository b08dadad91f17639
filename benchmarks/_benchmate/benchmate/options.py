"""Command-line options every benchmark of the suite shares, and what they mean for torch.

``--device`` (``cpu``, ``cuda``, ``cuda:1``, ...; default: the accelerator if there is one),
``--precision`` (``fp32``, ``tf32``, ``fp16``, ``bf16``, or Python milabench's ``tf32-fp16``:
TF32 matmuls with fp16 autocast) and ``--batch-size``. A precision the device cannot do is an
:class:`UnsupportedPrecision` error with a message that says what to ask instead.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "tf32-fp16")


class UnsupportedPrecision(ValueError):
    """The precision asked for cannot run on the device."""


def add_common_arguments(parser: argparse.ArgumentParser, batch_size: int = 32) -> None:
    """Adds ``--device``, ``--precision`` and ``--batch-size`` to ``parser``."""
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--precision", default="fp32", choices=PRECISIONS, help="numeric precision")
    parser.add_argument("--batch-size", type=int, default=batch_size, help="items per step")


def pick_device(name: str | None) -> Any:
    """The torch device named ``name``, or the accelerator when None (the CPU without one)."""
    import torch

    if name:
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


@dataclass
class Precision:
    """How to run at a precision: the autocast dtype (None for none) and whether TF32 is on."""

    name: str
    device_type: str
    autocast_dtype: Any
    tf32: bool

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The autocast context of this precision (a no-op for fp32/tf32)."""
        import torch

        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.autocast_dtype)

    def grad_scaler(self) -> Any:
        """A gradient scaler for fp16 on an accelerator, else None."""
        import torch

        if self.autocast_dtype is torch.float16:
            return torch.amp.GradScaler(self.device_type)
        return None


def optimizer_step(loss: Any, optimizer: Any, scaler: Any) -> None:
    """One training update: clear the gradients, backward pass, optimizer step, through the
    gradient scaler of ``Precision.grad_scaler`` when there is one (fp16 on an accelerator)."""
    optimizer.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def precision_for(name: str, device: Any) -> Precision:
    """Checks that ``device`` can run ``name`` and turns on what it needs (TF32 matmuls).

    fp16 is refused on the CPU (its kernels there are missing or far slower than fp32, so the
    figure would mislead); TF32 needs an NVIDIA GPU of compute capability 8.0 or more; bf16 needs
    a GPU that supports it (any recent CPU does).
    """
    import torch

    if name not in PRECISIONS:
        raise UnsupportedPrecision(f"unknown precision {name!r}; choose one of {', '.join(PRECISIONS)}")
    kind = device.type
    wants_tf32 = name in ("tf32", "tf32-fp16")
    wants_fp16 = name in ("fp16", "tf32-fp16")
    if wants_fp16 and kind == "cpu":
        raise UnsupportedPrecision(
            f"precision {name} is not supported on the CPU; use fp32 or bf16 for --device cpu"
        )
    if wants_tf32:
        if kind != "cuda" or torch.cuda.get_device_capability(device)[0] < 8:
            raise UnsupportedPrecision(
                f"precision {name} needs TF32, which only NVIDIA GPUs of compute capability 8.0 "
                f"or more have (device: {device}); use fp32"
            )
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if name == "bf16" and kind == "cuda" and not torch.cuda.is_bf16_supported():
        raise UnsupportedPrecision(f"precision bf16 is not supported by {device}; use fp32 or fp16")
    dtype = None
    if wants_fp16:
        dtype = torch.float16
    elif name == "bf16":
        dtype = torch.bfloat16
    return Precision(name=name, device_type=kind, autocast_dtype=dtype, tf32=wants_tf32)


def compute_dtype(precision: Precision) -> Any:
    """The dtype tensors are made in for pure-compute benchmarks (``flops``)."""
    import torch

    if precision.autocast_dtype is not None:
        return precision.autocast_dtype
    return torch.float32


def synthetic_batches(make: Any, count: int) -> Iterator[Any]:
    """Yields ``count`` batches made by ``make(i)`` (a synthetic, no-I/O loader)."""
    for index in range(count):
        yield make(index)
