"""A small convolutional network on 32x32 RGB images, called twice on a batch of 2."""

import torch

torch.manual_seed(0)


class SmallCNN(torch.nn.Module):
    """Two convolution blocks and a linear classifier."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, kernel_size=3, padding=1),
            torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, kernel_size=3, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = torch.nn.Linear(32, classes)

    def forward(self, images):
        """Class scores of each image."""
        return self.classifier(self.features(images).flatten(1))


model = SmallCNN().eval()
images = torch.rand(2, 3, 32, 32)
with torch.no_grad():
    for _ in range(2):
        scores = model(images)
print("scores:", tuple(scores.shape))
