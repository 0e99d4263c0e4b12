"""The training loop, shared by the decorated script and the plain-MLflow one. Plain SGD by hand:
``torch.optim`` imports torch's compiler stack on first use, seconds per process in a test that
starts dozens of them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from helpers import batch_loss
from torch.utils.data import DataLoader


def fit(
    model: torch.nn.Module,
    loader: DataLoader,
    lr: float,
    steps: int,
    log: Callable[..., Any],
    pause: float = 0.0,
) -> None:
    step = 0
    while step < steps:
        for x, y in loader:
            model.zero_grad()
            loss = batch_loss(model(x), y)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= lr * p.grad
            log({"loss": loss.item()}, step=step)
            time.sleep(pause)
            step += 1
            if step >= steps:
                break


def mean_loss(model: torch.nn.Module, data: Any) -> float:
    """The loss over every sample: a value a run logs once, at its end."""
    with torch.no_grad():
        return float(batch_loss(model(data.x), data.y))
