"""Two models in one script, the encoder called with two input shapes (batches of 1 and 8), the
head with one (the mean of the batch): three invocations."""

import torch

torch.manual_seed(0)


class Encoder(torch.nn.Module):
    """A linear projection followed by a GELU."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 16)
        self.act = torch.nn.GELU()

    def forward(self, x):
        """Project ``x``."""
        return self.act(self.proj(x))


class Head(torch.nn.Module):
    """A linear classifier."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, features):
        """Class scores."""
        return self.fc(features)


encoder = Encoder()
head = Head()
for batch in (1, 1, 8):
    scores = head(encoder(torch.rand(batch, 32)).mean(dim=0, keepdim=True))
print("scores:", tuple(scores.shape))
