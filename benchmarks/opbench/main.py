#!/usr/bin/env python
"""Operator throughput: the operator calls of a ``benchit ops`` config, in a loop.

Each step calls every run of the config once (each op built and its inputs generated once, up
front, by benchmate's ops worker code). The rate is operator calls per second
(``units: calls/s``); when every operator's FLOPs are known (``mm``, ``matmul``, ``bmm``,
``baddbmm``, ``addmm``, ``Linear``, elementwise ``add``/``mul``) a record
``{"value": TFLOP/s, "units": "TFLOP/s", "task": "train"}`` follows at the end (over the measured
steps).

``--ops`` takes a PARAM-style config without ``__range__``/``__copy__`` (relative paths are
looked up in ``configs/`` of this folder), or the expanded list written by
``benchit ops -c CONFIG --list --format json``, which handles ranges.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import pathlib
import sys
import time
from typing import Any, Iterator

import torch

from benchmate.benchit import ops_data, ops_registry
from benchmate.observer import BenchObserver
from benchmate.options import pick_device

HERE = pathlib.Path(__file__).resolve().parent


class ConfigError(ValueError):
    """A config this benchmark cannot run."""


def parse_args() -> argparse.Namespace:
    """The options of this benchmark."""
    parser = argparse.ArgumentParser(description="Operator calls per second of a benchit ops config.")
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    # Not `--config`: voir takes that option for itself wherever it appears.
    parser.add_argument("--ops", default="suite.json", help="ops config file (relative: under configs/)")
    parser.add_argument("--repeat", type=int, default=10, help="passes over the config per step")
    parser.add_argument("--steps", type=int, default=100000, help="upper bound on steps")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads: 1 as benchit ops and PARAM (0: torch's default)"
    )
    return parser.parse_args()


def runs_of(document: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(operator, {"build", "input"}) of every run of a config or an expanded list."""
    if isinstance(document, list):
        for entry in document:
            if entry.get("problem"):
                raise ConfigError(f"{entry['op_name']}|{entry['id']}: {entry['problem']}")
            yield entry["op_name"], entry["config"]
        return
    if "__range__" in json.dumps(document) or "__copy__" in json.dumps(document):
        raise ConfigError(
            "the config has __range__/__copy__: expand it with `benchit ops -c CONFIG --list --format json > runs.json` and pass runs.json"
        )
    for name, spec in document.items():
        for entry in spec["config"]:
            builds = entry.get("build") or [None]
            for build in builds:
                for inputs in entry["input"]:
                    yield name, {"build": build, "input": inputs}


def flops(name: str, op: Any, args: list[Any], kwargs: dict[str, Any]) -> float | None:
    """Floating-point operations of one call, when known."""
    shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
    # `aten::mm.default` -> `mm`, `torch.nn.Linear` -> `Linear`.
    short = name[len("aten::") :].split(".")[0] if name.startswith("aten::") else name.rsplit(".", 1)[-1]
    if short in ("mm", "matmul", "bmm") and len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        batch = math.prod(a[:-2]) if len(a) > 2 else 1
        return 2.0 * batch * a[-2] * a[-1] * b[-1] if len(a) >= 2 and len(b) >= 2 else None
    if short in ("baddbmm", "addmm") and len(shapes) >= 3:
        a, b = shapes[1], shapes[2]
        batch = math.prod(a[:-2]) if len(a) > 2 else 1
        return 2.0 * batch * a[-2] * a[-1] * b[-1] + math.prod(shapes[0])
    if short == "Linear" and shapes and isinstance(op.module, torch.nn.Linear):
        rows = math.prod(shapes[0]) // shapes[0][-1]
        return 2.0 * rows * op.module.in_features * op.module.out_features
    if short in ("add", "mul") and shapes:
        return float(max(math.prod(s) for s in shapes))
    return None


def main() -> None:
    """Calls the operators until the observer has its observations."""
    args = parse_args()
    device = pick_device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    path = pathlib.Path(args.ops)
    if not path.is_absolute() and not path.exists():
        path = HERE / "configs" / path
    try:
        document = json.loads(path.read_text())
        calls = []
        total_flops: float | None = 0.0
        torch.manual_seed(0)
        for name, config in runs_of(document):
            op = ops_registry.lookup(name)
            op.device = device
            build_args, build_kwargs = ops_data.materialize_call(config.get("build"), device)
            if config.get("build") is not None or op.buildable:
                op.build(*build_args, **build_kwargs)
            inputs, kwargs = ops_data.materialize_call(config.get("input"), device)
            count = flops(name, op, inputs, kwargs)
            total_flops = None if count is None or total_flops is None else total_flops + count
            calls.append((op, inputs, kwargs))
    except (OSError, ValueError, LookupError, KeyError, TypeError) as exc:
        raise SystemExit(f"opbench: cannot use {path}: {type(exc).__name__}: {exc}") from None
    per_step = len(calls) * args.repeat
    observer = BenchObserver(device=device, batch_size_fn=lambda _: per_step, units="calls/s")
    steps = 0
    started = None
    with torch.no_grad():
        for _ in observer.loader(itertools.repeat(None, args.steps)):
            if steps == 1:
                started = time.perf_counter()
            for _ in range(args.repeat):
                for op, inputs, kwargs in calls:
                    op.forward(*inputs, **kwargs)
            steps += 1
            if observer.done:
                break
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if total_flops and started is not None and steps > 1:
        seconds = time.perf_counter() - started
        tflops = total_flops * args.repeat * (steps - 1) / seconds / 1e12
        # `value` is among the keys milabench's voir instruments forward (benchmate.monitor).
        observer.record_metric(task="train", value=tflops, units="TFLOP/s")
        print(f"opbench: {tflops:.4f} TFLOP/s over {steps - 1} steps", file=sys.stderr)


if __name__ == "__main__":
    main()
