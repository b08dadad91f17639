#!/usr/bin/env python
"""Makes the image dataset of the torchvision benchmark: ``--dataset-size`` JPEG files in
``--num-classes`` class folders under ``--data`` (nothing is downloaded).

Images are smooth colour fields (a small grid scaled up), which compress like photographs rather
than like noise. Each class has its own tint, and every image mixes it with a noise pattern of
its own; the tint survives any crop, so the labels can be learned and a benchmark's loss falls as
it would on real data instead of staying at chance. Idempotent: a complete folder is left as it is.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from PIL import Image

from args import parse_args

SIDE = 256

# How much of an image is its class tint (the rest is the image's own noise).
SIGNAL = 0.6

# Bumped when the images change, so that older folders are made again.
VERSION = 2


def make_dataset(root: str, size: int, classes: int, seed: int = 0) -> None:
    """Writes ``size`` JPEG images spread over ``classes`` folders under ``root``."""
    marker = os.path.join(root, ".complete")
    wanted = f"v{VERSION} {size} {classes} {SIDE}\n"
    if os.path.exists(marker) and open(marker).read() == wanted:
        print(f"dataset already prepared in {root}")
        return
    rng = np.random.default_rng(seed)
    tints = rng.integers(0, 256, size=(classes, 1, 1, 3)).astype(np.float32)
    for index in range(size):
        label = index % classes
        folder = os.path.join(root, f"class{label:04d}")
        os.makedirs(folder, exist_ok=True)
        noise = rng.integers(0, 256, size=(8, 8, 3)).astype(np.float32)
        grid = (SIGNAL * tints[label] + (1 - SIGNAL) * noise).astype(np.uint8)
        image = Image.fromarray(grid).resize((SIDE, SIDE), Image.BILINEAR)
        image.save(os.path.join(folder, f"{index:07d}.jpg"), quality=90)
    with open(marker, "w") as out:
        out.write(wanted)
    print(f"wrote {size} images in {classes} classes to {root}")


def main() -> int:
    args = parse_args()
    if args.synthetic_data or not args.data:
        print("synthetic data: nothing to prepare")
        return 0
    make_dataset(args.data, args.dataset_size, args.num_classes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
