"""One transformer encoder block (self-attention and feed-forward) on a batch of 2 sequences of
16 tokens of width 64."""

import torch

torch.manual_seed(0)

block = torch.nn.TransformerEncoderLayer(
    d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True
).eval()
tokens = torch.rand(2, 16, 64)
with torch.no_grad():
    encoded = block(tokens)
print("encoded:", tuple(encoded.shape))
