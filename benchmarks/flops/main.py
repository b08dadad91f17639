#!/usr/bin/env python
"""Matrix-multiply throughput: TFLOP/s of square matmuls at the precision asked.

Each step multiplies two ``--size`` x ``--size`` matrices ``--repeat`` times (2·n³ floating-point
operations each). The rate is reported in TFLOP/s (``units: TFLOP/s``) through benchmate's timed
iterator, so the device is synchronised only when rates are pushed.
"""

from __future__ import annotations

import argparse
import itertools

import torch

from benchmate.observer import BenchObserver
from benchmate.options import add_common_arguments, compute_dtype, pick_device, precision_for


def parse_args() -> argparse.Namespace:
    """The options of this benchmark."""
    parser = argparse.ArgumentParser(description="Matrix-multiply TFLOP/s.")
    add_common_arguments(parser, batch_size=1)
    parser.add_argument("--size", type=int, default=8192, help="side of the square matrices")
    parser.add_argument("--repeat", type=int, default=10, help="matmuls per step")
    parser.add_argument("--steps", type=int, default=100000, help="upper bound on steps")
    return parser.parse_args()


def main() -> None:
    """Multiplies until the observer has its observations."""
    args = parse_args()
    device = pick_device(args.device)
    precision = precision_for(args.precision, device)
    dtype = compute_dtype(precision)
    n = args.size
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    tflop_per_step = 2 * n**3 * args.repeat / 1e12
    observer = BenchObserver(device=device, batch_size_fn=lambda _: tflop_per_step, units="TFLOP/s")
    for _ in observer.loader(itertools.repeat(None, args.steps)):
        for _ in range(args.repeat):
            torch.mm(a, b, out=out)
        if observer.done:
            break


if __name__ == "__main__":
    main()
