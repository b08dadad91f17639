"""Whole models usable as ``benchit ops`` operators (buildable: the build spec gives the
constructor's arguments, the input spec the batch), under PARAM's names where PARAM has them.

* ``pytorch.model.alex_net``: AlexNet (5 convolutions, 3 linear layers), ``num_classes`` (1000);
  input ``[N, 3, 224, 224]``.
* ``pytorch.model.resnet``: a ResNet of basic blocks, ``layers`` (``[2, 2, 2, 2]``: ResNet-18),
  ``num_classes`` (1000); input ``[N, 3, H, W]``.
* ``pytorch.model.mlp``: ``sizes`` (list of widths), ReLU between layers; input ``[N, sizes[0]]``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn


class AlexNet(nn.Module):
    """AlexNet as in torchvision (no dependency on it)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.pool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """A ResNet of basic blocks (``layers=[2, 2, 2, 2]`` is ResNet-18)."""

    def __init__(self, layers: Sequence[int] = (2, 2, 2, 2), num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        blocks: list[nn.Module] = []
        width = 64
        for stage, count in enumerate(layers):
            outputs = 64 * 2**stage
            for index in range(count):
                stride = 2 if index == 0 and stage > 0 else 1
                blocks.append(BasicBlock(width, outputs, stride))
                width = outputs
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.blocks(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1))


def mlp(sizes: Sequence[int] = (1024, 1024, 1024)) -> nn.Module:
    """Linear layers of the given widths with ReLU between them."""
    layers: list[nn.Module] = []
    for index, (inputs, outputs) in enumerate(zip(sizes, sizes[1:])):
        if index:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(inputs, outputs))
    return nn.Sequential(*layers)


MODELS: dict[str, Callable[..., nn.Module]] = {
    "pytorch.model.alex_net": AlexNet,
    "pytorch.model.resnet": ResNet,
    "pytorch.model.mlp": mlp,
}
