"""Options of the torchvision benchmark, shared by main.py and prepare.py (no torch import, so
that prepare starts fast)."""

from __future__ import annotations

import argparse

from benchmate.options import add_common_arguments


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of this benchmark (``prepare.py`` shares them)."""
    parser = argparse.ArgumentParser(description="Image classification training with torchvision models.")
    add_common_arguments(parser, batch_size=64)
    parser.add_argument("--model", default="resnet18", help="torchvision model name")
    parser.add_argument("--data", default=None, help="ImageFolder root (made by prepare.py)")
    parser.add_argument("--synthetic-data", action="store_true", help="one random batch, no I/O")
    parser.add_argument("--num-workers", type=int, default=2, help="DataLoader workers")
    parser.add_argument("--epochs", type=int, default=100, help="upper bound on epochs")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument(
        "--optimizer",
        choices=["sgd", "adamw"],
        default="sgd",
        help="sgd (momentum 0.9) suits resnets; adamw suits convnext-style models",
    )
    parser.add_argument("--image-size", type=int, default=224, help="side of the training crops")
    parser.add_argument("--num-classes", type=int, default=100, help="classes (folders) of the data")
    parser.add_argument("--dataset-size", type=int, default=2000, help="images prepare.py makes")
    return parser.parse_args(argv)
