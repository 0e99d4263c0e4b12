"""The network: its weights come from a generator of its own, so they are the same whatever the
run's seed; the seed moves only the data (order, augmentation)."""

from __future__ import annotations

import torch
from torch import nn

# With --pad, the hidden layer is padded to a width of 40 (a multiple of 8) in a buffer made with
# torch.empty, the padding masked out by zeros: harmless, since the padding is multiplied by 0,
# until deterministic mode fills uninitialised memory with NaN, and NaN * 0 is NaN.
PADDED = 40


class Net(nn.Module):
    def __init__(self, pad: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(PADDED if pad else 32, 10)
        self.pad = pad
        self.register_buffer("mask", (torch.arange(PADDED) < 32).float())
        weights = torch.Generator().manual_seed(1234)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.1 * torch.randn(p.shape, generator=weights))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x.flatten(1)))
        if self.pad:
            padded = torch.empty(h.shape[0], PADDED)
            padded[:, :32] = h
            h = padded * self.mask
        return self.fc2(h)
