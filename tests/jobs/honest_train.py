"""A training script as reproducibility Q&A threads write one, scaled to a few CPU steps on the
digits:
argparse options with defaults, ``mlflow.log_param``, a DataLoader with optional workers and a
random augmentation drawn in ``__getitem__`` (declared nowhere: mlflow-fingerprint must find
out), the reproducibility notes' seeding recipe, and optionally a set of strings deciding the
order of the input features (what PYTHONHASHSEED changes).

``HONEST_SEED_BY=program`` makes the script seed itself (``torch.manual_seed`` and friends inside
train()) instead of passing ``seed=`` to the decorator: nothing in the command line records it.

``tests/system/test_compare_honest.py`` runs it in-process (``main(argv)``) and, where the
interpreter's own start matters (PYTHONHASHSEED), as a script; it prints one JSON line with the
run id.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

import mlflow
import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, Dataset

import mlflow_fingerprint as mfp

FEATURES = 64


class Digits(Dataset):
    """The 8×8 digits flattened; ``augment`` adds noise drawn from torch's RNG per sample."""

    def __init__(self, augment: bool, order: list[int]) -> None:
        data = load_digits()
        self.x = torch.tensor(data.data[:512, order], dtype=torch.float32) / 16.0
        self.y = torch.tensor(data.target[:512], dtype=torch.long)
        self.augment = augment

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.x[index]
        if self.augment:
            x = x + 0.1 * torch.randn_like(x)
        return x, self.y[index]


def feature_order(by_set: bool) -> list[int]:
    """The input columns in the order a set of their names iterates in (salted string hashes:
    PYTHONHASHSEED), or in their natural order."""
    if not by_set:
        return list(range(FEATURES))
    names = {f"pixel{i}" for i in range(FEATURES)}
    return [int(name.removeprefix("pixel")) for name in names]


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--no-seed-workers", action="store_true")
    p.add_argument("--augment", action="store_true")
    p.add_argument("--set-order", action="store_true")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--experiment", default="honest")
    p.add_argument("--run-name", default=None)
    p.add_argument("--tracking-uri", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> str:
    args = parse(argv)
    by_program = os.environ.get("HONEST_SEED_BY") == "program"

    @mfp.fingerprinted(
        experiment=args.experiment,
        run_name=args.run_name,
        tracking_uri=args.tracking_uri,
        seed=None if by_program else args.seed,
        quiet=True,
    )
    def train(lr: float, steps: int) -> None:
        if by_program and args.seed is not None:
            seed_all(args.seed)
        mlflow.log_param("lr", lr)
        extra = {}
        if args.seed is not None and not args.no_seed_workers:
            extra = {
                "worker_init_fn": mfp.seed_worker,
                "generator": mfp.dataloader_generator(args.seed),
            }
        data = Digits(args.augment, feature_order(args.set_order))
        loader = DataLoader(
            data, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers, **extra
        )
        model = nn.Sequential(
            nn.Linear(FEATURES, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 10)
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        for step, (x, y) in enumerate(loader):
            if step >= steps:
                break
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)

    mlflow.set_tracking_uri(args.tracking_uri)
    try:
        train(args.lr, args.steps)
        run_id = mlflow.last_active_run().info.run_id
    finally:
        mlflow.set_tracking_uri(None)
    print(json.dumps({"run_id": run_id}), flush=True)
    return str(run_id)


if __name__ == "__main__":
    main(sys.argv[1:])
