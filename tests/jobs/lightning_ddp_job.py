"""torchrun target: real Lightning DDP fits (CPU, gloo, 2 steps each) with ``MLFlowLogger`` and
``FingerprintCallback``. Lightning finds torchrun's variables and initialises the group itself.
One fit per ``--experiment`` (the fits share one job: the imports are most of its time). Before
the fit named by ``--hetero`` rank 1 switches deterministic algorithms on, so the ranks' numerics
differ; in the one named by ``--rank1-skips`` rank 1 has no callback, so rank 0 waits in the
gather until the side group's timeout (name it last: the side group is spent after that). Each
rank writes what it saw to ``<out>/<experiment>-rank-<i>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

import lightning.pytorch as pl
import torch
from lightning.pytorch.loggers import MLFlowLogger
from torch.utils.data import DataLoader, TensorDataset

from mlflow_fingerprint.integrations import FingerprintCallback


class Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch: list[torch.Tensor], _index: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def fit(tracking_uri: str, experiment: str, out: Path, with_callback: bool) -> None:
    pl.seed_everything(7)
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    callback = FingerprintCallback() if with_callback else None
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        max_steps=2,
        logger=MLFlowLogger(experiment_name=experiment, tracking_uri=tracking_uri),
        callbacks=[callback] if callback is not None else [],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(Tiny(), DataLoader(data, batch_size=4))
    fp = callback.fingerprint if callback is not None else None
    seen = {
        "rank": trainer.global_rank,
        "run_id": callback.run_id if callback is not None else None,
        "ranks": len((fp.get("distributed.ranks") if fp is not None else None) or []),
        "steps": trainer.global_step,
        "warnings": sorted({type(w.message).__name__ for w in caught}),
        "ours": [str(w.message) for w in caught if "mlflow-fingerprint" in str(w.message)],
    }
    (out / f"{experiment}-rank-{trainer.global_rank}.json").write_text(json.dumps(seen))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--experiment", action="append", required=True)
    parser.add_argument("--hetero", default=None)
    parser.add_argument("--rank1-skips", default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for experiment in args.experiment:
        if experiment == args.hetero and os.environ.get("RANK") == "1":
            torch.use_deterministic_algorithms(True)
        skips = experiment == args.rank1_skips and os.environ.get("RANK") == "1"
        fit(args.tracking_uri, experiment, args.out, with_callback=not skips)


if __name__ == "__main__":
    main()
