"""A small multi-layer perceptron, called on a batch of 8 a hundred times (``--calls N`` to change:
the worst case of discovery's per-call overhead, as the model is tiny)."""

import argparse

import torch

torch.manual_seed(0)


class MLP(torch.nn.Module):
    """Three linear layers with ReLU between them."""

    def __init__(self, features: int = 64, hidden: int = 128, classes: int = 10):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(features, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden, classes),
        )

    def forward(self, x):
        """Class scores of each row of ``x``."""
        return self.layers(x)


parser = argparse.ArgumentParser()
parser.add_argument("--calls", type=int, default=100)
calls = parser.parse_args().calls

model = MLP()
batch = torch.rand(8, 64)
for _ in range(calls):
    scores = model(batch)
print("predicted classes:", scores.argmax(dim=1).tolist())
