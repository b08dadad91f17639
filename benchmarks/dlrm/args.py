"""Options of the DLRM benchmark, shared by main.py and prepare.py (no torch import here, so that
both parse the same command line)."""

from __future__ import annotations

import argparse
import os

from benchmate.options import add_common_arguments


def int_list(text: str) -> list[int]:
    """Parses ``"512,256,64"`` into ``[512, 256, 64]``."""
    return [int(part) for part in text.split(",") if part.strip()]


def default_data() -> str:
    """``$MILABENCH_DATA_DIR/dlrm`` (``./data/dlrm`` outside milabench)."""
    return os.path.join(os.environ.get("MILABENCH_DATA_DIR", "data"), "dlrm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options of this benchmark (``prepare.py`` shares them, so it makes what main reads)."""
    parser = argparse.ArgumentParser(description="DLRM-style recommender training on synthetic clicks.")
    add_common_arguments(parser, batch_size=2048)
    parser.add_argument("--data", default=None, help="folder of the click data (default: $MILABENCH_DATA_DIR/dlrm)")
    parser.add_argument("--dataset-size", type=int, default=1 << 20, help="click samples prepare.py makes")
    parser.add_argument("--num-dense", type=int, default=13, help="dense (continuous) features")
    parser.add_argument("--num-sparse", type=int, default=26, help="sparse (categorical) features, one table each")
    parser.add_argument("--num-embeddings", type=int, default=100000, help="rows of each embedding table")
    parser.add_argument("--lookups", type=int, default=1, help="indices per sparse feature (multi-hot bag)")
    parser.add_argument("--embedding-dim", type=int, default=64, help="width of embeddings and bottom MLP output")
    parser.add_argument("--bottom-mlp", type=int_list, default=[512, 256], help="hidden widths of the bottom MLP")
    parser.add_argument("--top-mlp", type=int_list, default=[512, 256], help="hidden widths of the top MLP")
    parser.add_argument("--optimizer", default="adagrad", choices=("adagrad", "sgd"), help="optimizer (both take sparse gradients)")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--num-workers", type=int, default=0, help="unused: batches are sliced on the device")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the weights")
    parser.add_argument("--steps", type=int, default=1000000, help="upper bound on steps")
    args = parser.parse_args(argv)
    if args.data is None:
        args.data = default_data()
    return args


def data_file(args: argparse.Namespace) -> str:
    """The file prepare.py writes for these options (its name says what it holds)."""
    name = (
        f"clicks-n{args.dataset_size}-d{args.num_dense}-s{args.num_sparse}"
        f"-e{args.num_embeddings}-l{args.lookups}-seed{args.seed}.pt"
    )
    return os.path.join(args.data, name)
