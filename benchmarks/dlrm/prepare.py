#!/usr/bin/env python
"""Makes the synthetic click log of the DLRM benchmark (nothing is downloaded).

Each sample has ``--num-dense`` continuous features, ``--num-sparse`` categorical features of
``--lookups`` indices each into tables of ``--num-embeddings`` rows, and a click label. Indices
follow a power law (a few rows are popular, most are rare), like real categorical logs. Labels
are drawn from a hidden model, a logistic function of the dense features, one hidden weight per
table row and a few pairwise products of them, so there is something to learn and the loss can
fall below that of a constant guess. Idempotent: an existing file for the same options is kept.
"""

from __future__ import annotations

import os
import sys

import torch

from args import data_file, parse_args

# Skew of the index distribution: index = floor(rows * u ** SKEW) for uniform u.
SKEW = 3.0
# Target click-through rate of the labels.
CTR = 0.25
# Weight in the label logit of the dense part, the row part and the pairwise part (each of unit
# spread before scaling): the dense part is learnt first, the rows as they are visited.
SCALES = (1.5, 1.0, 0.5)
# Samples generated at a time (bounds memory for large logs).
CHUNK = 1 << 18


def hidden_model(args, generator: torch.Generator) -> dict:
    """The random truth labels are drawn from: dense weights, row weights, interacting pairs."""
    pairs = torch.randint(0, args.num_sparse, (max(1, args.num_sparse // 2), 2), generator=generator)
    return {
        "dense": torch.randn(args.num_dense, generator=generator) / max(1, args.num_dense) ** 0.5,
        "rows": torch.randn(args.num_sparse, args.num_embeddings, generator=generator),
        "pairs": pairs,
    }


def make_chunk(args, truth: dict, count: int, generator: torch.Generator) -> dict:
    """``count`` samples: features drawn at random, labels drawn from ``truth``."""
    dense = torch.log1p(torch.exp(torch.randn(count, args.num_dense, generator=generator) * 1.5))
    dense = (dense - dense.mean(0)) / dense.std(0).clamp_min(1e-6)
    u = torch.rand(count, args.num_sparse, args.lookups, generator=generator)
    sparse = (u.pow(SKEW) * args.num_embeddings).long().clamp_max(args.num_embeddings - 1)
    table = torch.arange(args.num_sparse).view(1, -1, 1)
    weights = truth["rows"][table, sparse].mean(-1)
    left, right = truth["pairs"][:, 0], truth["pairs"][:, 1]
    parts = (dense @ truth["dense"], weights.sum(1), (weights[:, left] * weights[:, right]).sum(1))
    logit = sum(scale * part / part.std().clamp_min(1e-6) for scale, part in zip(SCALES, parts))
    bias = torch.log(torch.tensor(CTR / (1 - CTR)))
    labels = torch.bernoulli(torch.sigmoid(logit + bias), generator=generator)
    return {"dense": dense.float(), "sparse": sparse.int(), "labels": labels.float()}


def make_dataset(args) -> str:
    """Writes the click log for ``args`` (unless it exists) and returns its path."""
    path = data_file(args)
    if os.path.exists(path):
        print(f"click data already prepared in {path}")
        return path
    os.makedirs(args.data, exist_ok=True)
    generator = torch.Generator().manual_seed(args.seed)
    truth = hidden_model(args, generator)
    chunks = []
    for start in range(0, args.dataset_size, CHUNK):
        chunks.append(make_chunk(args, truth, min(CHUNK, args.dataset_size - start), generator))
    data = {key: torch.cat([chunk[key] for chunk in chunks]) for key in chunks[0]}
    temporary = path + ".partial"
    torch.save(data, temporary)
    os.replace(temporary, path)
    ctr = data["labels"].mean().item()
    print(f"wrote {args.dataset_size} click samples (CTR {ctr:.3f}) to {path}")
    return path


def main() -> int:
    """Prepares the data of the command line's options."""
    make_dataset(parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
