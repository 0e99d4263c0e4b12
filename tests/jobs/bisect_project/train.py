"""A small training project for the ``fingerprint rerun`` / ``bisect`` tests: a two-layer network
on a synthetic dataset, its options on the command line, its model, data, loss and training loop
in files of their own (``model.py``, ``data.py``, ``helpers.py``, ``loop.py``) so that a commit
can change one alone.

``train()`` returns its final metrics, as the README shows.
``--pause`` sleeps after each step: a training that runs for as long as a test needs, idle.
``LR_SCALE``, read from the environment and logged as a param, multiplies the learning rate: a
value that reaches the training from outside the record. ``SITE_DEFAULTS_DIR`` names a folder of
a site's defaults: a file ``lr_scale`` there multiplies the learning rate too, unlogged, as a
node's own library default does (the record keeps a folder's variable by name only; the cluster
tests give each node its own). ``--api-key`` is taken and not used, as
a program's key to some service is; ``--note`` is a free-text note that changes nothing.

``tests/system/bisect/bisect_runs.py`` copies this folder into a temporary git repository and runs
``train.py`` as a user runs it, one process per run.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import mlflow
from data import Samples
from loop import fit, mean_loss
from model import Net
from torch.utils.data import DataLoader

import mlflow_fingerprint as mfp


def site_default(name: str, default: float) -> float:
    folder = os.environ.get("SITE_DEFAULTS_DIR")
    path = Path(folder, name) if folder else None
    return float(path.read_text()) if path is not None and path.is_file() else default


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--augment", action="store_true")
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--pad", action="store_true")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--note", default=None)
    args = parser.parse_args()

    @mfp.fingerprinted(experiment="bisect", seed=args.seed, deterministic=args.deterministic)
    def train(loader: DataLoader, lr: float, steps: int) -> dict[str, float]:
        scale = os.environ.get("LR_SCALE", "1")
        mlflow.log_param("lr_scale", scale)
        model = Net(pad=args.pad)
        rate = lr * float(scale) * site_default("lr_scale", 1.0)
        fit(model, loader, rate, steps, mfp.log_metrics, args.pause)
        return {"val_loss": mean_loss(model, data)}

    data = Samples(augment=args.augment)
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=args.workers)
    train(loader, args.lr, args.steps)


if __name__ == "__main__":
    main()
