#!/usr/bin/env python
"""Data-parallel training across processes with torchrun and DistributedDataParallel.

Run by ``torchrun --nproc-per-node=N`` (milabench's ``launcher: torchrun``): one process per GPU
with NCCL, or ``nproc_per_node`` CPU processes with gloo on a machine without GPUs. Each rank
trains a torchvision model on its own random batch kept on the device; gradients are averaged
across ranks every step. Rank 0 reports the global throughput (every rank's items) through the
data channel, smuggled in stdout since torchrun cannot pass milabench's pipe.
"""

from __future__ import annotations

import argparse
import itertools
import os

import torch
import torch.distributed as dist
import torchvision
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from benchmate.observer import BenchObserver
from benchmate.options import add_common_arguments, optimizer_step, precision_for


def parse_args() -> argparse.Namespace:
    """The options of this benchmark."""
    parser = argparse.ArgumentParser(description="Data-parallel training with torchrun.")
    add_common_arguments(parser, batch_size=32)
    parser.add_argument("--model", default="resnet18", help="torchvision model name")
    parser.add_argument("--image-size", type=int, default=224, help="side of the images")
    parser.add_argument("--num-classes", type=int, default=1000, help="classes")
    parser.add_argument("--lr", type=float, default=0.01, help="SGD learning rate")
    parser.add_argument("--steps", type=int, default=100000, help="upper bound on steps")
    return parser.parse_args()


def main() -> None:
    """Trains until rank 0's observer has its observations; every rank stops at the same step."""
    args = parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if args.device:
        device = torch.device(args.device)
    elif torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        # The ranks share the CPU: split its cores instead of oversubscribing them.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    try:
        precision = precision_for(args.precision, device)
        torch.manual_seed(dist.get_rank())
        model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.num_classes)
        model = DistributedDataParallel(
            model.to(device), device_ids=[device.index] if device.type == "cuda" else None
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        scaler = precision.grad_scaler()
        images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
        labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
        observer = BenchObserver(device=device, batch_size_fn=lambda batch: len(batch[0]))
        criterion = observer.criterion(nn.CrossEntropyLoss())
        for x, y in observer.loader(itertools.repeat((images, labels), args.steps)):
            with precision.autocast():
                loss = criterion(model(x), y)
            optimizer_step(loss, optimizer, scaler)
            if observer.done:
                break
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
