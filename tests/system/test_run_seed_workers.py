"""Seeded DataLoader workers (real worker processes) draw the same numbers run after run."""

from __future__ import annotations

import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import mlflow_fingerprint as mfp


class RandomPerSample(Dataset):
    """Each sample draws from torch, numpy and python in whichever process loads it."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([float(torch.rand(())), float(np.random.rand()), random.random()])


def epoch(seed: int, num_workers: int = 2) -> torch.Tensor:
    loader = DataLoader(
        RandomPerSample(),
        batch_size=4,
        shuffle=True,
        num_workers=num_workers,
        worker_init_fn=mfp.seed_worker,
        generator=mfp.dataloader_generator(seed),
    )
    return torch.cat(list(loader))


def test_seed_worker_and_generator_make_worker_randomness_repeatable() -> None:
    first = epoch(0)
    assert torch.equal(first, epoch(0))  # every RNG in every worker, and the order
    assert not torch.equal(first, epoch(1))
    assert len(set(first[:, 1].tolist())) == len(first)  # numpy differs per worker and sample
