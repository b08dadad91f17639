"""Runtimes ``benchit`` times: ONNX Runtime (``ort``, and ``trt`` through its TensorRT provider),
``torch-eager`` and ``torch-compiled``.

Every runtime makes ``warmup`` untimed calls, then ``iterations`` calls each timed with
``time.perf_counter_ns`` (after a device synchronise on CUDA). The torch runtimes run the live
model under ``eval()`` and ``no_grad()`` and give the model its training flags back afterwards.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import importlib.metadata
import time
from typing import Any, Callable, Iterator, Optional

import numpy as np

#: Runtimes that run an ONNX file.
ONNX_RUNTIMES = ("ort", "trt")
#: Runtimes that run the live torch model.
TORCH_RUNTIMES = ("torch-eager", "torch-compiled")
#: ONNX tensor element types by ``onnxruntime`` type string.
ORT_TYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_,
}


class NeedsGPU(RuntimeError):
    """The runtime or device asked for is not available on this machine."""


@dataclasses.dataclass
class Measurement:
    """The timings of one runtime."""

    runtime_version: Optional[str]
    provider: str
    warmup: int
    times_ns: list[int]
    compile_seconds: Optional[float] = None


def time_calls(call: Callable[[], Any], warmup: int, iterations: int,
               synchronize: Optional[Callable[[], None]] = None) -> list[int]:
    """``warmup`` untimed calls, then the duration of each of ``iterations`` calls, each followed
    by ``synchronize()`` when given (a device that runs calls asynchronously). Without it the
    timed span holds the call alone: a no-op function called there too put the worker 1-3% above
    a ``timeit`` loop on a 50 us model call (2-core VM)."""
    for _ in range(warmup):
        call()
    times = []
    clock = time.perf_counter_ns
    if synchronize is None:
        for _ in range(iterations):
            start = clock()
            call()
            times.append(clock() - start)
        return times
    synchronize()
    for _ in range(iterations):
        start = clock()
        call()
        synchronize()
        times.append(clock() - start)
    return times


# -- ONNX Runtime ---------------------------------------------------------------------------


def ort_providers(runtime: str, device: str) -> list[str]:
    """The execution providers for ``runtime`` on ``device``; :class:`NeedsGPU` when absent."""
    import onnxruntime

    available = onnxruntime.get_available_providers()
    if device == "x86":
        if runtime == "trt":
            raise NeedsGPU("runtime trt needs device nvidia (a GPU with TensorRT)")
        return ["CPUExecutionProvider"]
    if device != "nvidia":
        raise ValueError(f"unknown device {device!r} (x86 or nvidia)")
    wanted = "TensorrtExecutionProvider" if runtime == "trt" else "CUDAExecutionProvider"
    if wanted not in available:
        raise NeedsGPU(f"{runtime} on nvidia needs a GPU: onnxruntime has no {wanted} here "
                       f"(available: {', '.join(available)})")
    if runtime == "trt":
        return [wanted, "CUDAExecutionProvider", "CPUExecutionProvider"]
    return [wanted, "CPUExecutionProvider"]


def ort_feeds(session: Any, tensors: Optional[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Inputs for ``session``: the captured tensors (by name, else in order) converted to the
    types the model expects (float16 for an fp16 model), or random values when none were
    captured (an ONNX file given directly)."""
    inputs = session.get_inputs()
    feeds = {}
    captured = list((tensors or {}).items())
    rng = np.random.default_rng(0)
    for index, spec in enumerate(inputs):
        dtype = ORT_TYPES.get(spec.type)
        if dtype is None:
            raise TypeError(f"input {spec.name!r} has unsupported type {spec.type}")
        if tensors is None:
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
            value = rng.random(shape)
        elif spec.name in tensors:
            value = tensors[spec.name]
        elif index < len(captured):
            value = captured[index][1]
        else:
            raise ValueError(f"no captured input for ONNX input {spec.name!r}")
        feeds[spec.name] = np.asarray(value).astype(dtype, copy=False)
    return feeds


def run_ort(path: str, runtime: str, device: str, tensors: Optional[dict[str, Any]],
            warmup: int, iterations: int) -> Measurement:
    """Time ONNX Runtime on the ONNX file ``path``."""
    import onnxruntime

    providers = ort_providers(runtime, device)
    session = onnxruntime.InferenceSession(path, providers=providers)
    try:
        feeds = ort_feeds(session, tensors)
        times = time_calls(lambda: session.run(None, feeds), warmup, iterations)
        return Measurement(onnxruntime.__version__, session.get_providers()[0], warmup, times)
    finally:
        # The session's thread pool keeps spinning while the session lives, and the lambda
        # above holds it in a reference cycle: without a collection now, the next runtime (and
        # the user's script) would be timed against those threads (torch eager measured 100x
        # slower on two cores).
        del session
        gc.collect()


# -- torch ----------------------------------------------------------------------------------


@contextlib.contextmanager
def inference_mode_of(model: Any) -> Iterator[None]:
    """``eval()`` and ``no_grad()`` for the duration; every submodule's training flag and the
    random number generators' state are given back afterwards, so the script is unaffected."""
    import torch

    flags = [(module, module.training) for module in model.modules()]
    rng = torch.random.get_rng_state()
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        for module, training in flags:
            module.training = training
        torch.random.set_rng_state(rng)


def _placement(model: Any, device: str, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict, str]:
    """The model and inputs on the device asked: the live model on ``x86`` (where it lives), a
    CUDA copy on ``nvidia`` when it is not on a GPU yet."""
    import torch

    current = next(model.parameters()).device
    if device == "x86" or current.type == "cuda":
        return model, args, kwargs, str(current)
    if device != "nvidia":
        raise ValueError(f"unknown device {device!r} (x86 or nvidia)")
    if not torch.cuda.is_available():
        raise NeedsGPU("torch on nvidia needs a GPU: torch.cuda.is_available() is false")
    moved = copy.deepcopy(model).to("cuda")

    def to_cuda(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.to("cuda")
        if isinstance(value, (list, tuple)):
            return type(value)(to_cuda(item) for item in value)
        return value

    return moved, to_cuda(args), {k: to_cuda(v) for k, v in kwargs.items()}, "cuda"


def run_torch(model: Any, runtime: str, device: str, args: tuple, kwargs: dict, warmup: int,
              iterations: int) -> Measurement:
    """Time the torch model called with ``args``/``kwargs`` eagerly or through
    ``torch.compile`` (whose first call, the compilation, is timed apart)."""
    import torch

    target, args, kwargs, where = _placement(model, device, args, kwargs)
    synchronize = torch.cuda.synchronize if where.startswith("cuda") else None
    compile_seconds = None
    with inference_mode_of(model):
        if target is not model:
            target.eval()
        selected = target
        if runtime == "torch-compiled":
            selected = torch.compile(target)
            start = time.perf_counter()
            selected(*args, **kwargs)
            if synchronize is not None:
                synchronize()
            compile_seconds = time.perf_counter() - start
        times = time_calls(lambda: selected(*args, **kwargs), warmup, iterations, synchronize)
    return Measurement(torch.__version__, where, warmup, times, compile_seconds)


def package_version(name: str) -> Optional[str]:
    """The installed version of a distribution, ``None`` when it is missing."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
