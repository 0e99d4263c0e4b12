"""A training script as a user writes one before meeting mlflow-fingerprint: it seeds torch,
numpy and random itself (``--seed``), reads its learning rate from the command line, logs its
hyperparameters with ``mlflow.log_params`` and trains SGD on the digits for a few steps.

``tests/system/test_compare_recipe.py`` copies it into a temporary git repository as
``train.py`` and runs it as a script, so the command line, the entry point and its content are
the real ones.
The file ``$RECIPE_LR_SCALE_FILE`` names, where it exists, scales the learning rate inside ``train``
without being an argument, a param, an option or a variable of its own (every run has the same
variable; only the file's content differs, and it lies outside the repository): a change nothing
records.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

import mlflow
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

import mlflow_fingerprint as mfp
from digits import Digits, DigitsCNN


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--run-name", default=None)
    args = parser.parse_args()
    mlflow.set_tracking_uri(args.tracking_uri)  # the script's own mlflow.log_params go there too
    if args.seed is not None:  # the program seeds itself; the decorator is given no seed
        torch.manual_seed(args.seed)
        random.seed(args.seed)
        np.random.seed(args.seed)

    @mfp.fingerprinted(experiment="recipe", run_name=args.run_name, tracking_uri=args.tracking_uri)
    def train(loader: DataLoader, lr: float, momentum: float = 0.0, steps: int = 6) -> None:
        mlflow.log_params({"lr": lr, "momentum": momentum})
        model = DigitsCNN()
        scale_file = Path(os.environ.get("RECIPE_LR_SCALE_FILE", "/nonexistent"))
        scale = float(scale_file.read_text()) if scale_file.is_file() else 1.0
        optimizer = torch.optim.SGD(model.parameters(), lr=lr * scale, momentum=momentum)
        loss_fn = nn.CrossEntropyLoss()
        for step, (x, y) in enumerate(loader):
            if step >= steps:
                break
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            mfp.log_metrics({"loss": loss.item()}, step=step)

    loader = DataLoader(Digits(train=True), batch_size=64, shuffle=True)
    train(loader, args.lr, steps=args.steps)
    print(json.dumps({"run_id": mlflow.last_active_run().info.run_id}), flush=True)


if __name__ == "__main__":
    main()
