"""The network: its weights come from a generator of its own, so they are the same whatever the
run's seed; the seed moves only the data (order, augmentation)."""

from __future__ import annotations

import torch
from torch import nn

# With --pad, the hidden layer is padded to a width of 40 (a multiple of 8) from a buffer made once
# with torch.empty, the padding then multiplied by zero weights: harmless while that memory holds
# finite numbers (64 MiB comes straight from the operating system, zeroed), until deterministic
# mode fills uninitialised memory with NaN, and NaN * 0 is NaN.
PADDED = 40
SCRATCH = 16 * 1024 * 1024  # float32s: over glibc's largest mmap threshold, so always fresh pages


class Net(nn.Module):
    def __init__(self, pad: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(PADDED if pad else 32, 10)
        self.register_buffer("mask", (torch.arange(PADDED) < 32).float())
        self.scratch = torch.empty(SCRATCH) if pad else None
        weights = torch.Generator().manual_seed(1234)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.1 * torch.randn(p.shape, generator=weights))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x.flatten(1)))
        if self.scratch is not None:
            rows = h.shape[0]
            padding = self.scratch[: rows * (PADDED - 32)].view(rows, PADDED - 32)
            h = torch.cat([h, padding], dim=1) * self.mask
        return self.fc2(h)
