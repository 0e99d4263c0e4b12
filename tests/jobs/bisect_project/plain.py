"""The same training without the decorator: a plain ``mlflow.start_run()``, which gets its
fingerprint through the run context provider."""

from __future__ import annotations

import argparse

import mlflow
import torch
from data import Samples
from loop import fit
from model import Net
from torch.utils.data import DataLoader


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    mlflow.set_experiment("bisect")
    with mlflow.start_run() as run:
        loader = DataLoader(Samples(), batch_size=32, shuffle=True)

        def log(values: dict[str, float], step: int) -> None:
            mlflow.log_metrics(values, step=step)

        fit(Net(), loader, args.lr, args.steps, log)
    print(f"plain run {run.info.run_id}")


if __name__ == "__main__":
    main()
