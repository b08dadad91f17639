"""A script shaped as most are: two models built in ``main()`` and called under a main guard,
in a loop over batches of two sizes, without gradients. ``benchit`` runs it as ``python
main_guard.py`` would, so it finds both models: the encoder called with (4, 3, 16, 16) twice and
(1, 3, 16, 16) once, the classifier with (4, 32) twice and (1, 32) once."""

import argparse

import torch


class Encoder(torch.nn.Module):
    """A convolution, a pooling and a projection to ``width`` features."""

    def __init__(self, width: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.proj = torch.nn.Linear(8, width)

    def forward(self, images):
        """Features of a batch of images."""
        return self.proj(self.pool(torch.relu(self.conv(images))).flatten(1))


class Classifier(torch.nn.Module):
    """A linear layer to class scores."""

    def __init__(self, width: int, classes: int):
        super().__init__()
        self.fc = torch.nn.Linear(width, classes)

    def forward(self, features):
        """Class scores of a batch of features."""
        return self.fc(features)


def classify(encoder, classifier, batches):
    """The predicted class of every image of every batch."""
    predictions = []
    with torch.no_grad():
        for images in batches:
            predictions.append(classifier(encoder(images)).argmax(dim=1))
    return torch.cat(predictions)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--classes", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    encoder = Encoder(args.width).eval()
    classifier = Classifier(args.width, args.classes).eval()
    batches = [torch.rand(4, 3, 16, 16), torch.rand(4, 3, 16, 16), torch.rand(1, 3, 16, 16)]
    print("predicted:", classify(encoder, classifier, batches).tolist())


if __name__ == "__main__":
    main()
