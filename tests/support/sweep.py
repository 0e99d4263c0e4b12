"""A real CPU sweep for ``explain``: a tiny MLP on scikit-learn's digits, trained in this process
by one decorated function called once per run (each call is its own run).

The design (32 runs: every combination of the four below, each with two seeds):

- ``lr`` (0.1 or 0.3) and ``width`` (8 or 32): two options that change the result;
- ``dropout`` and ``weight_decay``: changed together, always (0 and 0, or 0.5 and 0.01): a
  confounded pair;
- ``torch.set_num_threads`` 1 or 2: a thread count, which does not change this model's numbers
  (crossed with everything else, so nothing else can pass for it);
- seeds 0 and 1 for every configuration: the replicates.

Used by the explain tests (once per session) and by ``python tests/support/sweep.py URI`` for
the README's transcript.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

LRS = (0.1, 0.3)
WIDTHS = (8, 32)
PAIRS = ((0.0, 0.0), (0.5, 0.01))  # (dropout, weight_decay)
THREADS = (1, 2)
SEEDS = (0, 1)
STEPS = 25
BATCH = 64
EXPERIMENT = "sweep"


@dataclass(frozen=True)
class SweepRun:
    run_id: str
    lr: float
    width: int
    dropout: float
    weight_decay: float
    threads: int
    seed: int
    val_loss: float


@cache
def _digits() -> tuple[Any, Any]:
    import torch
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    return x, torch.tensor(data.target)


def train(lr: float, width: int, dropout: float, weight_decay: float, steps: int = STEPS) -> dict:
    """SGD on minibatches drawn from torch's global RNG (seeded by the decorator); returns the
    validation loss as the run's summary metric and logs the training loss every step."""
    import torch

    import mlflow_fingerprint as mfp

    x, y = _digits()
    cut = 1400
    model = torch.nn.Sequential(
        torch.nn.Linear(64, width),
        torch.nn.ReLU(),
        torch.nn.Dropout(dropout),
        torch.nn.Linear(width, 10),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    for step in range(steps):
        index = torch.randint(0, cut, (BATCH,))
        loss = torch.nn.functional.cross_entropy(model(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        mfp.log_metrics({"loss": loss.item()}, step=step)
    model.eval()
    with torch.no_grad():
        val_loss = torch.nn.functional.cross_entropy(model(x[cut:]), y[cut:]).item()
    return {"val_loss": val_loss}


def configurations() -> list[tuple[float, int, tuple[float, float], int, int]]:
    """(lr, width, (dropout, weight_decay), threads, seed) for every run, in training order."""
    return list(itertools.product(LRS, WIDTHS, PAIRS, THREADS, SEEDS))


def run_sweep(tracking_uri: str, experiment: str = EXPERIMENT) -> list[SweepRun]:
    """Train every run of the sweep into ``experiment``; torch's thread count is restored."""
    import torch

    import mlflow_fingerprint as mfp

    before = torch.get_num_threads()
    runs = []
    try:
        for lr, width, (dropout, weight_decay), threads, seed in configurations():
            torch.set_num_threads(threads)
            decorated = mfp.fingerprinted(
                experiment=experiment, seed=seed, tracking_uri=tracking_uri
            )(train)
            result = decorated(lr, width, dropout, weight_decay)
            run_id = _last_run_id()
            runs.append(
                SweepRun(
                    run_id, lr, width, dropout, weight_decay, threads, seed, result["val_loss"]
                )
            )
    finally:
        torch.set_num_threads(before)
    return runs


def _last_run_id() -> str:
    import mlflow

    run = mlflow.last_active_run()
    assert run is not None
    return run.info.run_id


if __name__ == "__main__":
    for r in run_sweep(sys.argv[1]):
        print(r)
