#!/usr/bin/env python
"""DLRM-style recommender training on the synthetic click log made by ``prepare.py``.

The model follows DLRM: a bottom MLP turns the dense features into one vector, an embedding bag
per categorical feature turns its indices into another, the dot products of every pair of these
vectors (the feature interaction) join the bottom MLP's output, and a top MLP predicts the click
(binary cross-entropy on its logit). Embedding gradients are sparse; the optimizer is Adagrad
(``--optimizer sgd`` for the reference implementation's plain SGD, which leaves the loss on a
plateau much longer). The whole log is moved to the device once and batches are sliced from it in
a shuffled order each epoch, so the rate (samples per second) measures the model, not a loader.
"""

from __future__ import annotations

import argparse
import os
import warnings
from typing import Iterator

import torch
from torch import nn

from args import data_file, parse_args
from benchmate.observer import BenchObserver
from benchmate.options import optimizer_step, pick_device, precision_for


# Optimizers that accept the sparse gradients of the embedding bags.
OPTIMIZERS = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad}

# Adagrad builds sparse tensors from the gradients it is given; torch warns once that it does not
# check them. They come from torch's own embedding backward, so the warning says nothing here.
warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")


def mlp(widths: list[int], last_activation: bool) -> nn.Sequential:
    """Linear layers between consecutive ``widths`` with ReLUs (after the last one when asked)."""
    layers: list[nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if last_activation or index < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """Embedding bags, bottom and top MLPs, dot-product interaction of every pair of features."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        dim = args.embedding_dim
        self.bottom = mlp([args.num_dense, *args.bottom_mlp, dim], last_activation=True)
        self.tables = nn.ModuleList(
            nn.EmbeddingBag(args.num_embeddings, dim, mode="sum", sparse=True)
            for _ in range(args.num_sparse)
        )
        for table in self.tables:
            bound = (1.0 / dim) ** 0.5
            nn.init.uniform_(table.weight, -bound, bound)
        features = args.num_sparse + 1
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)
        self.top = mlp([dim + len(rows), *args.top_mlp, 1], last_activation=False)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        """Click logits of a batch: ``dense`` is (B, num_dense), ``sparse`` (B, num_sparse, lookups)."""
        bottom = self.bottom(dense)
        embedded = [table(sparse[:, index]) for index, table in enumerate(self.tables)]
        features = torch.stack([bottom, *[e.to(bottom.dtype) for e in embedded]], dim=1)
        products = torch.bmm(features, features.transpose(1, 2))
        interaction = products[:, self.rows, self.cols]
        return self.top(torch.cat([bottom, interaction], dim=1)).squeeze(1)


def load_clicks(args: argparse.Namespace, device: torch.device) -> dict:
    """The prepared click log on ``device``; a missing one is an error that says to run prepare."""
    path = data_file(args)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no prepared click data at {path!r}: run `milabench prepare` for this benchmark "
            f"(or `python prepare.py` with the same options)"
        )
    data = torch.load(path)
    return {key: value.to(device) for key, value in data.items()}


def batches(data: dict, batch_size: int, generator: torch.Generator) -> Iterator[tuple]:
    """Endless shuffled batches (dense, sparse indices, labels) sliced on the data's device."""
    count = len(data["labels"])
    if count < batch_size:
        raise ValueError(f"the click log has {count} samples, fewer than one batch of {batch_size}")
    device = data["labels"].device
    while True:
        order = torch.randperm(count, generator=generator).to(device)
        for start in range(0, count - batch_size + 1, batch_size):
            index = order[start : start + batch_size]
            yield data["dense"][index], data["sparse"][index].long(), data["labels"][index]


def main(argv: list[str] | None = None) -> None:
    """Trains until the observer has its observations (or ``--steps`` run out)."""
    args = parse_args(argv)
    device = pick_device(args.device)
    precision = precision_for(args.precision, device)
    torch.manual_seed(args.seed)
    data = load_clicks(args, device)
    model = DLRM(args).to(device).train()
    optimizer = OPTIMIZERS[args.optimizer](model.parameters(), lr=args.lr)
    scaler = precision.grad_scaler()
    observer = BenchObserver(device=device, batch_size_fn=lambda batch: len(batch[2]))
    criterion = nn.BCEWithLogitsLoss()
    generator = torch.Generator().manual_seed(args.seed)
    for step, (dense, sparse, labels) in enumerate(observer.loader(batches(data, args.batch_size, generator))):
        with precision.autocast():
            logits = model(dense, sparse)
        loss = observer.record_loss(criterion(logits.float(), labels))
        optimizer_step(loss, optimizer, scaler)
        if observer.done or step + 1 >= args.steps:
            break


# No sys.exit: under voir a SystemExit, even with status 0, is reported as an error.
if __name__ == "__main__":
    main()
