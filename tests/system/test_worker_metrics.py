"""Metrics logged inside forked DataLoader workers (``__getitem__``, ``worker_init_fn``) are
delivered to the run, each exactly once, instead of vanishing with the worker's copy of the
writer (which has none of the writer's threads)."""

from __future__ import annotations

from pathlib import Path

import torch
from mlflow.tracking import MlflowClient
from torch.utils.data import DataLoader, Dataset

import mlflow_fingerprint as mfp
from support.stored import exactly_once_problems

ITEMS = 24


class Logged(Dataset):
    """Logs each item it serves, from whichever worker serves it."""

    def __len__(self) -> int:
        return ITEMS

    def __getitem__(self, index: int) -> torch.Tensor:
        mfp.log_metrics({"served": float(index)}, step=index)
        return torch.tensor([float(index)])


def announce(worker_id: int) -> None:
    mfp.log_metrics({"worker_started": 1.0}, step=worker_id)


def test_values_logged_in_forked_workers_reach_the_run_exactly_once(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    loader = DataLoader(
        Logged(),
        batch_size=4,
        num_workers=2,
        worker_init_fn=announce,
        multiprocessing_context="fork",
    )

    @mfp.fingerprinted(experiment="workers")
    def train(loader: DataLoader) -> None:
        for step, batch in enumerate(loader):
            mfp.log_metrics({"batch_sum": float(batch.sum())}, step=step)

    train(loader)
    client = MlflowClient()
    [run] = client.search_runs([client.get_experiment_by_name("workers").experiment_id])
    logged = {
        "served": [(i, float(i)) for i in range(ITEMS)],
        "worker_started": [(0, 1.0), (1, 1.0)],
        "batch_sum": [(s, float(sum(range(4 * s, 4 * s + 4)))) for s in range(ITEMS // 4)],
    }
    assert exactly_once_problems(client, run.info.run_id, logged) == []
    assert run.info.status == "FINISHED"
    assert list(spool_dir.iterdir()) == []
