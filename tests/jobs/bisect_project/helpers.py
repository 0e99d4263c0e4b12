"""The loss."""

from __future__ import annotations

import torch
from torch.nn import functional as F


def batch_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, labels)
