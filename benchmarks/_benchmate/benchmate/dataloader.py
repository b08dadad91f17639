"""Image-classification data loaders chosen on the command line (``--loader``), for the
benchmarks that train torchvision models.

``dataloader_arguments(parser)`` adds ``--batch-size``, ``--loader``, ``--num-workers`` and
``--data``; ``imagenet_dataloader(args, model, rank, world_size)`` returns the loader asked for:

- ``pytorch`` (the default; ``torch`` is the same): torchvision's ``ImageFolder`` over
  ``<data>/train`` with ImageNet's training transforms (random 224-pixel crop, flip,
  normalisation), shuffled, or split among ranks by a ``DistributedSampler``;
- ``pytorch_fakedataset``: random images (3x224x224) held in memory, no disk;
- ``synthetic_fixed`` / ``synthetic_random``: one batch of tensors on the device, given again
  (fixed) or redrawn every step (random), so that no data loading is measured at all;
- ``dali``: NVIDIA DALI decoding and augmenting ``<data>/train`` on the GPU.

torch and torchvision (and DALI) are imported when a loader is made.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Iterator

from ._optional import require
from .options import pick_device

LOADERS = ("pytorch", "torch", "pytorch_fakedataset", "synthetic_fixed", "synthetic_random", "dali")

# ImageNet's per-channel statistics, for normalisation.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

# The synthetic loaders' input shape and length, as Python milabench's (244, not 224).
SYNTHETIC_SHAPE = (3, 244, 244)
SYNTHETIC_BATCHES = 1000

# Batches of images pytorch_fakedataset holds.
FAKE_BATCHES = 60


def dataloader_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the loader options to ``parser``."""
    parser.add_argument(
        "--batch-size", type=int, default=16, help="input batch size for training (default: 16)"
    )
    parser.add_argument(
        "--loader", type=str, default="pytorch", choices=LOADERS, help="data loader implementation"
    )
    parser.add_argument("--num-workers", type=int, default=8, help="number of workers for data loading")
    parser.add_argument(
        "--data", type=str, default=None, help="dataset folder (default: $MILABENCH_DIR_DATA/FakeImageNet)"
    )


def data_folder(args: argparse.Namespace) -> str:
    """The dataset folder: ``--data``, else ``$MILABENCH_DIR_DATA/FakeImageNet`` (where
    ``benchmate.datagen`` writes it)."""
    if args.data:
        return args.data
    base = os.environ.get("MILABENCH_DIR_DATA")
    if not base:
        raise SystemExit("no dataset folder: pass --data or set MILABENCH_DIR_DATA")
    return os.path.join(base, "FakeImageNet")


class SyntheticData:
    """``n`` batches made of ``tensors``: the same ones every time when ``fixed_batch``, else
    new random tensors of their shapes, dtypes and devices."""

    def __init__(self, tensors: list[Any], n: int, fixed_batch: bool) -> None:
        self.tensors = tensors
        self.n = n
        self.fixed_batch = fixed_batch

    def __iter__(self) -> Iterator[list[Any]]:
        torch = require("torch", "benchmate.dataloader")
        for _ in range(self.n):
            yield self.tensors if self.fixed_batch else [torch.rand_like(t) for t in self.tensors]

    def __len__(self) -> int:
        return self.n


def synthetic(model: Any, batch_size: int, fixed_batch: bool) -> SyntheticData:
    """Synthetic batches for ``model`` on the default device: random inputs and targets shaped
    like the model's output (one forward pass finds the shape)."""
    torch = require("torch", "benchmate.dataloader")
    device = pick_device(None)
    inputs = torch.randn((batch_size, *SYNTHETIC_SHAPE), device=device)
    with torch.no_grad():
        targets = torch.rand_like(model.to(device)(inputs))
    return SyntheticData([inputs, targets], SYNTHETIC_BATCHES, fixed_batch)


def _loader(dataset: Any, batch_size: int, num_workers: int, **options: Any) -> Any:
    torch = require("torch", "benchmate.dataloader")
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        pin_memory=torch.cuda.is_available(),
        **options,
    )


def fake_dataset(batch_size: int, num_workers: int) -> Any:
    """A loader over ``FAKE_BATCHES`` batches of random 3x224x224 images held in memory, with
    labels ``i % 1000``."""
    torch = require("torch", "benchmate.dataloader")
    items = [(torch.randn(3, 224, 224), i % 1000) for i in range(batch_size * FAKE_BATCHES)]
    return _loader(items, batch_size, num_workers, shuffle=True)


def image_folder(folder: str, batch_size: int, num_workers: int, rank: int = 0, world_size: int = 1) -> Any:
    """A loader over the class folders of ``folder`` with ImageNet's training transforms."""
    datasets = require("torchvision.datasets", "benchmate.dataloader", install="torchvision")
    transforms = require("torchvision.transforms", "benchmate.dataloader", install="torchvision")
    if not os.path.isdir(folder):
        raise SystemExit(
            f"no dataset in {folder}: run the benchmark's prepare step first (milabench prepare)"
        )
    dataset = datasets.ImageFolder(
        folder,
        transforms.Compose(
            [
                transforms.RandomResizedCrop(224),
                transforms.RandomHorizontalFlip(),
                transforms.ToTensor(),
                transforms.Normalize(mean=MEAN, std=STD),
            ]
        ),
    )
    if world_size > 1:
        torch = require("torch", "benchmate.dataloader")
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=world_size, rank=rank)
        return _loader(dataset, batch_size, num_workers, sampler=sampler)
    return _loader(dataset, batch_size, num_workers, shuffle=True)


def dali(folder: str, batch_size: int, num_workers: int, rank: int = 0, world_size: int = 1) -> Any:
    """A DALI pipeline over ``folder`` (decoding, random crop, resize, flip and normalisation on
    GPU 0, this rank's shard), yielding ``(images, labels)`` like a torch loader."""
    require("nvidia.dali", "benchmate.dataloader's dali loader", install="nvidia-dali")
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    torch = require("torch", "benchmate.dataloader")

    @pipeline_def(num_threads=num_workers, device_id=0)
    def pipeline() -> Any:
        files, labels = fn.readers.file(
            file_root=folder, random_shuffle=True, name="Reader", shard_id=rank, num_shards=world_size
        )
        images = fn.decoders.image_random_crop(files, device="mixed", output_type=types.RGB)
        images = fn.resize(images, resize_x=256, resize_y=256)
        images = fn.crop_mirror_normalize(
            images,
            crop_h=224,
            crop_w=224,
            mean=[m * 255 for m in MEAN],
            std=[s * 255 for s in STD],
            mirror=fn.random.coin_flip(),
        )
        return images, labels

    batches = DALIGenericIterator([pipeline(batch_size=batch_size)], ["data", "label"], reader_name="Reader")
    return DaliBatches(batches, torch)


class DaliBatches:
    """DALI's iterator as a torch loader: ``(images, labels)`` pairs, labels as a 1-D long tensor,
    and a ``sampler.set_epoch`` that training loops may call (DALI shuffles by itself)."""

    class sampler:  # noqa: N801 (the attribute name torch loaders have)
        @staticmethod
        def set_epoch(epoch: int) -> None:
            """Nothing to do: the pipeline reshuffles every epoch."""

    def __init__(self, batches: Any, torch: Any) -> None:
        self.batches = batches
        self.torch = torch

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for outputs in self.batches:
            yield outputs[0]["data"], self.torch.squeeze(outputs[0]["label"], dim=1).long()


def imagenet_dataloader(args: argparse.Namespace, model: Any, rank: int = 0, world_size: int = 1) -> Any:
    """The loader named by ``args.loader`` (see the module's documentation)."""
    if args.loader in ("synthetic_fixed", "synthetic_random"):
        return synthetic(model, args.batch_size, fixed_batch=args.loader == "synthetic_fixed")
    if args.loader == "pytorch_fakedataset":
        return fake_dataset(args.batch_size, args.num_workers)
    folder = os.path.join(data_folder(args), "train")
    if args.loader == "dali":
        return dali(folder, args.batch_size, args.num_workers, rank, world_size)
    if args.loader in ("pytorch", "torch"):
        return image_folder(folder, args.batch_size, args.num_workers, rank, world_size)
    raise ValueError(f"unknown loader {args.loader!r}; choose one of {', '.join(LOADERS)}")
