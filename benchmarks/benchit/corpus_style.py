# labels: name::corpus_style author::benchit task::example
"""A script written the way MLAgility's model corpus writes them: no main guard, sizes read with
``mlagility.parser.parse`` (benchit provides it when MLAgility is not installed), an ``inputs``
dict, one call. ``--script-args "--batch_size 4 --max_seq_length 32"`` changes the sizes."""

from mlagility.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

embedding = 64
model = torch.nn.Sequential(
    torch.nn.Linear(embedding, 4 * embedding),
    torch.nn.GELU(),
    torch.nn.Linear(4 * embedding, embedding),
)
model.eval()
inputs = {"input": torch.ones(batch_size, max_seq_length, embedding)}

model(**inputs)
