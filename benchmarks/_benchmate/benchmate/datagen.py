"""A fake ImageNet on disk, for the ``prepare.py`` of image benchmarks.

``generate_fakeimagenet()`` writes ``$MILABENCH_DIR_DATA/FakeImageNet`` (or ``--output``):
``train/``, ``val/`` and ``test/`` folders of class folders (``0`` to ``999``) holding random-noise
JPEG images, ``labels.txt`` (``class,class`` per line) and ``done`` (the image counts, JSON).
Validation and test images are named as ImageNet names them (``ILSVRC2012_val_00000003.JPEG``),
which some benchmarks expect; training images are ``<class>_<index>.JPEG``. Image ``i`` of a
split always has the same pixels and class (``i % 1000``), and a folder that already holds
enough images is left as it is, so preparing again only adds what is missing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
from pathlib import Path
from typing import Any

from ._optional import require

CLASSES = 1000
SPLITS = ("train", "val", "test")


def device_count() -> int:
    """Accelerators torch sees (CUDA/ROCm, XPU, HPU); 1 when there is none or no torch, as one
    device (the CPU) still runs the benchmark."""
    try:
        import torch
    except ImportError:
        return 1
    for kind in ("cuda", "xpu", "hpu"):
        backend = getattr(torch, kind, None)
        if backend is not None and backend.is_available():
            return max(1, backend.device_count())
    return 1


def fakeimagenet_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of :func:`generate_fakeimagenet`, read from ``argv`` (the command line by
    default; options it does not know are ignored, so a benchmark's own arguments can be
    passed): ``--batch-size`` (512), ``--batch-count`` (60), ``--device-count`` (all
    accelerators), ``--image-size C H W`` (3 384 384), ``--val`` and ``--test`` (0.1: sizes
    relative to the training set), ``--output`` (``$MILABENCH_DIR_DATA``)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--batch-size", default=512, type=int)
    parser.add_argument("--batch-count", default=60, type=int)
    parser.add_argument("--device-count", default=None, type=int)
    parser.add_argument("--device", default=None, type=str)
    parser.add_argument("--image-size", default=[3, 384, 384], type=int, nargs=3)
    parser.add_argument("--val", default=0.1, type=float)
    parser.add_argument("--test", default=0.1, type=float)
    parser.add_argument("--output", default=os.environ.get("MILABENCH_DIR_DATA"), type=str)
    args, _ = parser.parse_known_args(argv)
    if args.device_count is None:
        args.device_count = device_count()
    return args


def split_sizes(args: argparse.Namespace) -> dict[str, int]:
    """Images per split: ``batch_size * batch_count * device_count`` for training, the ``val``
    and ``test`` fractions of it for the others. ``MILABENCH_TESTING_PREPARE=BS,BC`` replaces the
    batch size and count (small datasets for tests)."""
    batch_size, batch_count = args.batch_size, args.batch_count
    override = os.environ.get("MILABENCH_TESTING_PREPARE")
    if override:
        batch_size, batch_count = (int(x) for x in override.split(","))
    train = batch_size * batch_count * args.device_count
    return {"train": train, "val": int(train * args.val), "test": int(train * args.test)}


def image_path(folder: str, split: str, index: int) -> str:
    """Where image ``index`` of ``split`` goes under ``folder`` (the split's folder)."""
    label = index % CLASSES
    name = f"{label}_{index}" if split == "train" else f"ILSVRC2012_{split}_{index:08d}"
    return os.path.join(folder, str(label), f"{name}.JPEG")


def write_image(job: tuple[int, str, str, tuple[int, int, int]]) -> None:
    """Writes one image: random bytes seeded by its index, ``(channels, height, width)``."""
    index, folder, split, (channels, height, width) = job
    image_module = require("PIL.Image", "benchmate.datagen", install="pillow")
    mode = {1: "L", 3: "RGB"}[channels]
    pixels = random.Random(index).randbytes(channels * height * width)
    path = image_path(folder, split, index)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    image_module.frombytes(mode, (width, height), pixels).save(path)


def class_folders(root: Path) -> list[Path]:
    """The class folders of every split under ``root``."""
    return [c for split in SPLITS if (root / split).is_dir() for c in (root / split).iterdir() if c.is_dir()]


def count_images(root: Path) -> dict[str, int]:
    """Images already in each split folder of ``root`` (files in its class folders)."""
    counts = dict.fromkeys(SPLITS, 0)
    for folder in class_folders(root):
        counts[folder.parent.name] += sum(1 for f in folder.iterdir() if f.is_file())
    return counts


def generate_sets(
    root: Path, sizes: dict[str, int], shape: tuple[int, int, int], workers: int | None = None
) -> None:
    """Adds the images each split lacks (numbered on from those present), in ``workers``
    processes (up to 8), then writes ``done``."""
    if len(shape) != 3 or shape[0] not in (1, 3):
        raise ValueError(f"image size must be CHANNELS HEIGHT WIDTH with 1 or 3 channels, not {list(shape)}")
    present = count_images(root)
    jobs: list[Any] = []
    for split, wanted in sizes.items():
        have = present.get(split, 0)
        if have < wanted:
            print(f"Generating {split} (current {have}) (target: {wanted})")
            jobs += [(index, str(root / split), split, tuple(shape)) for index in range(have, wanted)]
    if jobs:
        require("PIL.Image", "benchmate.datagen", install="pillow")
        workers = workers or min(os.cpu_count() or 1, 8)
        # spawn: the caller may hold threads or a CUDA context that fork would copy badly.
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for _ in pool.imap_unordered(write_image, jobs, chunksize=16):
                pass
    with open(root / "done", "w") as out:
        json.dump(sizes, out)


def write_labels(root: Path) -> None:
    """Writes ``labels.txt``: one ``class,class`` line per class folder found, in order."""
    labels = sorted({int(folder.name) for folder in class_folders(root) if folder.name.isdigit()})
    with open(root / "labels.txt", "w") as out:
        out.writelines(f"{label},{label}\n" for label in labels)


def generate_fakeimagenet(args: argparse.Namespace | None = None) -> None:
    """Writes the fake ImageNet described by ``args`` (:func:`fakeimagenet_args` when None)."""
    if args is None:
        args = fakeimagenet_args()
    if not args.output:
        raise SystemExit("generate_fakeimagenet: no output folder; pass --output or set MILABENCH_DIR_DATA")
    root = Path(args.output) / "FakeImageNet"
    print(f"Generating fake data into {root}...")
    root.mkdir(parents=True, exist_ok=True)
    generate_sets(root, split_sizes(args), tuple(args.image_size))
    write_labels(root)
    print("Done!")
