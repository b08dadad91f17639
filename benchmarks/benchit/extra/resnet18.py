"""A script that needs a package benchit's environment does not have: torchvision's ResNet-18
(random weights, nothing downloaded), evaluated on one batch under a main guard. Run it with
``benchit benchmarks/benchit/extra/resnet18.py --with torchvision``; without ``--with``, benchit
says which package to add."""

import torch
import torchvision


def main():
    model = torchvision.models.resnet18(weights=None)
    model.eval()
    images = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        print(model(images).argmax(dim=1))


if __name__ == "__main__":
    main()
