"""A small training project for the ``fingerprint rerun`` / ``bisect`` tests: a two-layer network
on a synthetic dataset, its options on the command line, its model, data and loss in files of
their own (``model.py``, ``data.py``, ``helpers.py``) so that a commit can change one alone.

``tests/system/test_bisect.py`` copies this folder into a temporary git repository and runs
``train.py`` as a user runs it, one process per run.
"""

from __future__ import annotations

import argparse

import torch
from data import Samples
from helpers import batch_loss
from model import Net
from torch.utils.data import DataLoader

import mlflow_fingerprint as mfp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--augment", action="store_true")
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--pad", action="store_true")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--run-name", default=None)
    args = parser.parse_args()

    @mfp.fingerprinted(
        experiment="bisect",
        run_name=args.run_name,
        seed=args.seed,
        deterministic=args.deterministic,
    )
    def train(loader: DataLoader, lr: float, steps: int) -> None:
        model = Net(pad=args.pad)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        step = 0
        while step < steps:
            for x, y in loader:
                optimizer.zero_grad()
                loss = batch_loss(model(x), y)
                loss.backward()
                optimizer.step()
                mfp.log_metrics({"loss": loss.item()}, step=step)
                step += 1
                if step >= steps:
                    break

    data = Samples(augment=args.augment)
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=args.workers)
    train(loader, args.lr, args.steps)


if __name__ == "__main__":
    main()
