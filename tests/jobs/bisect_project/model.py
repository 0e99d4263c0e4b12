"""The network: its weights come from a generator of its own, so they are the same whatever the
run's seed; the seed moves only the data (order, augmentation)."""

from __future__ import annotations

import torch
from torch import nn

# With --scatter, this many values are summed into 32 bins with index_put_(accumulate=True): on a
# CPU with several threads that sum is added in whatever order the threads reach it, unless
# deterministic mode is on.
SCATTERED = 40 * 1024


class Net(nn.Module):
    def __init__(self, scatter: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)
        self.scatter = scatter
        self.register_buffer("bins", torch.arange(SCATTERED) % 32)
        weights = torch.Generator().manual_seed(1234)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.1 * torch.randn(p.shape, generator=weights))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x.flatten(1)))
        if self.scatter:
            spread = h.flatten().repeat(SCATTERED // h.numel() + 1)[:SCATTERED]
            pooled = torch.zeros(32).index_put((self.bins,), spread, accumulate=True)
            h = h * (pooled / pooled.mean())
        return self.fc2(h)
