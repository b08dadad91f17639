"""The reference model of MLAgility's hello world: ``Linear(11, 5)`` wrapped as ``fc`` and called
once with ``x`` of shape (11,). Its model hash is ``2a1e15ca`` and its invocation hash
``24adc42f``, as MLAgility computes them."""

import torch

torch.manual_seed(0)


class SmallModel(torch.nn.Module):
    """One linear layer."""

    def __init__(self, input_size: int, output_size: int):
        super().__init__()
        self.fc = torch.nn.Linear(input_size, output_size)

    def forward(self, x):
        """Apply the layer."""
        return self.fc(x)


model = SmallModel(11, 5)
inputs = {"x": torch.rand(11)}
output = model(**inputs)
print(output)
