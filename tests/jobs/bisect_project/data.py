"""512 samples of 64 features in 10 classes, made from a generator of their own: the same data on
every machine, without a download. With ``augment`` each sample gets noise drawn from torch's RNG
in ``__getitem__``, i.e. in whichever DataLoader worker loads it."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset


class Samples(Dataset):
    def __init__(self, augment: bool = False) -> None:
        made = torch.Generator().manual_seed(7)
        self.x = torch.rand(512, 64, generator=made)
        self.y = (self.x @ torch.randn(64, 10, generator=made)).argmax(dim=1)
        self.augment = augment

    @property
    def draws_random(self) -> bool:
        """Declared for mlflow-fingerprint: loading a sample draws random numbers."""
        return self.augment

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.x[index]
        if self.augment:
            x = x + 0.05 * torch.randn_like(x)
        return x, self.y[index]
