#!/usr/bin/env python
"""Image classification training with torchvision models (random weights).

Reads a folder of JPEG images (``--data``, made by ``prepare.py``) through torchvision's
``ImageFolder`` and a ``DataLoader`` with workers, or, with ``--synthetic-data``, trains on one
random batch kept on the device (no I/O: the model's own speed). Throughput and losses reach
milabench through benchmate's ``BenchObserver``.
"""

from __future__ import annotations

import argparse
import os

import torch
import torchvision
from torch import nn
from torchvision import transforms

from args import parse_args
from benchmate.observer import BenchObserver
from benchmate.options import optimizer_step, pick_device, precision_for


def image_folder(args: argparse.Namespace) -> torch.utils.data.DataLoader:
    """The JPEG folder loader; a missing folder is an error that says to run prepare."""
    if not args.data or not os.path.isdir(args.data):
        raise FileNotFoundError(
            f"no prepared dataset at {args.data!r}: run `milabench prepare` for this benchmark"
        )
    transform = transforms.Compose(
        [
            transforms.RandomResizedCrop(args.image_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ]
    )
    dataset = torchvision.datasets.ImageFolder(args.data, transform=transform)
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=True,
        drop_last=True,
        num_workers=args.num_workers,
        persistent_workers=args.num_workers > 0,
        pin_memory=torch.cuda.is_available(),
    )


def synthetic(args: argparse.Namespace, device: torch.device, steps: int = 1000) -> list:
    """The same random batch, already on the device, ``steps`` times per epoch."""
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
    return [(images, labels)] * steps


def main(argv: list[str] | None = None) -> None:
    """Trains until the observer has its observations (or the epochs run out)."""
    args = parse_args(argv)
    device = pick_device(args.device)
    precision = precision_for(args.precision, device)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.num_classes)
    model = model.to(device).train()
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scaler = precision.grad_scaler()
    observer = BenchObserver(device=device, batch_size_fn=lambda batch: len(batch[0]))
    criterion = observer.criterion(nn.CrossEntropyLoss())
    data = synthetic(args, device) if args.synthetic_data else image_folder(args)
    loader = observer.loader(data)
    for _ in range(args.epochs):
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with precision.autocast():
                loss = criterion(model(images), labels)
            optimizer_step(loss, optimizer, scaler)
        if observer.done:
            break


# No sys.exit: under voir a SystemExit, even with status 0, is reported as an error.
if __name__ == "__main__":
    main()
