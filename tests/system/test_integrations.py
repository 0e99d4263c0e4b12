"""The Lightning and Hugging Face callbacks, with the real trainers on tiny models (CPU, a few
steps, no downloaded weights) against a real sqlite MLflow store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint import layout


def _run(uri: str, run_id: str):
    from mlflow import MlflowClient

    return MlflowClient(uri).get_run(run_id)


def _experiment_kind(uri: str, run) -> str | None:
    from mlflow import MlflowClient

    return (
        MlflowClient(uri)
        .get_experiment(run.info.experiment_id)
        .tags.get(layout.MLFLOW_EXPERIMENT_KIND)
    )


def _artifact(run_id: str, tmp_path: Path) -> dict:
    import mlflow

    path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path=layout.FINGERPRINT_ARTIFACT, dst_path=str(tmp_path / "dl")
    )
    return json.loads(Path(path).read_text())


def test_importing_the_package_imports_no_trainer() -> None:
    code = (
        "import sys, mlflow_fingerprint, mlflow_fingerprint.integrations as i; "
        "assert 'lightning' not in sys.modules and 'transformers' not in sys.modules; "
        "assert 'pytorch_lightning' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lightning_mlflowlogger_run_is_tagged_by_the_context_provider(
    sqlite_tracking_uri: str,
) -> None:
    from lightning.pytorch.loggers import MLFlowLogger

    logger = MLFlowLogger(experiment_name="pl-plain", tracking_uri=sqlite_tracking_uri)
    tags = _run(sqlite_tracking_uri, logger.run_id).data.tags
    assert tags[layout.TAG_HASH] != "unavailable"
    assert layout.INTERNAL_SPOOL_ID in tags
    assert layout.TAG_LEGACY_SPOOL_ID not in tags


def tiny_module() -> Any:
    """A Lightning module small enough to fit in a second: one linear layer, SGD."""
    import lightning.pytorch as pl
    import torch

    class Tiny(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def training_step(self, batch, _index):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.layer(x), y)

        def validation_step(self, batch, _index):
            return self.training_step(batch, _index)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Tiny()


def test_lightning_fit_records_seed_batch_size_and_workers(
    sqlite_tracking_uri: str,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import MLFlowLogger
    from torch.utils.data import DataLoader, TensorDataset

    from mlflow_fingerprint.capture.first_step import batch_record, weights_record
    from mlflow_fingerprint.integrations import FingerprintCallback
    from mlflow_fingerprint.run import context_provider

    class SlowFirstStep(pl.Callback):
        """A first step slower than the provider's wait before it searches for the logger's run
        (as on a loaded machine): its queued start record must not land over the first step."""

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
            if batch_idx == 0:
                time.sleep(4 * context_provider.SEARCH_AFTER_S)

    monkeypatch.setattr(context_provider, "SEARCH_AFTER_S", 0.3)
    pl.seed_everything(7)
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, num_workers=0)
    logger = MLFlowLogger(experiment_name="pl", tracking_uri=sqlite_tracking_uri)
    callback = FingerprintCallback()
    trainer = pl.Trainer(
        max_steps=3,
        logger=logger,
        callbacks=[callback, SlowFirstStep()],
        deterministic=True,
        accelerator="cpu",
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    module = tiny_module()
    initial = [p.detach().clone() for p in module.parameters()]
    trainer.fit(module, loader)
    trainer.validate(module, loader)  # tears the callback down again: no second closing line

    assert callback.run_id == logger.run_id
    run = _run(sqlite_tracking_uri, logger.run_id)
    tags = run.data.tags
    assert tags[layout.TAG_SEED] == "7"
    assert tags[layout.TAG_BATCH_SIZE] == "8"
    assert tags[layout.TAG_NUM_WORKERS] == "0"
    assert tags[layout.TAG_INTEGRATION] == "lightning"
    assert _experiment_kind(sqlite_tracking_uri, run) == layout.EXPERIMENT_KIND_TRAINING
    assert run.data.params["batch_size"] == "8"
    record = _artifact(logger.run_id, tmp_path)
    assert record["seeds"]["requested"] == 7
    assert record["data"]["loaders"][0]["batch_size"] == 8
    assert record["determinism"]["deterministic_algorithms"] is True
    assert record["hashes"]["fingerprint"] == tags[layout.TAG_HASH]
    # what the first batch started from: the module's initial weights and the loader's first batch
    first = record["first_step"]
    assert first["recorded_by"] == "lightning"
    assert first["weights"]["digest"] == weights_record([initial], torch)["digest"]
    assert (
        first["weights"]["digest"] != weights_record([list(module.parameters())], torch)["digest"]
    )
    assert first["batch"]["digest"] == batch_record(next(iter(loader)), torch)["digest"]
    # the closing line a decorated run prints: the fit's run, and a command that works now
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("mlflow-fingerp")]
    assert f"run {logger.run_id} " in line
    # the command follows on lines of its own, continued by a backslash
    closing = err.split(line, 1)[1].replace(" \\\n", " ")
    assert f"fingerprint show {logger.run_id}" in closing  # the experiment's first run


def test_transformers_trainer_records_its_arguments(
    sqlite_tracking_uri: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "hf")
    from transformers import Trainer, TrainingArguments

    from jobs.hf_ddp_job import Rows, tiny_bert  # the 2-rank job's model and data
    from mlflow_fingerprint.integrations import FingerprintTrainerCallback

    model = tiny_bert()
    initial = {id(p): p.detach().clone() for p in model.parameters()}

    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        dataloader_num_workers=0,
        max_steps=2,
        seed=11,
        full_determinism=False,
        report_to=["mlflow"],
        save_strategy="no",
        logging_steps=1,
        use_cpu=True,
        disable_tqdm=True,
    )
    callback = FingerprintTrainerCallback()
    trainer = Trainer(model=model, args=args, train_dataset=Rows(), callbacks=[callback])
    trainer.train()

    assert callback.run_id is not None
    # the closing line a decorated run prints, for the trainer's run
    (line,) = [x for x in capfd.readouterr().err.splitlines() if x.startswith("mlflow-fingerp")]
    assert f"run {callback.run_id} " in line
    run = _run(sqlite_tracking_uri, callback.run_id)
    tags = run.data.tags
    assert tags[layout.TAG_SEED] == "11"
    assert tags[layout.TAG_BATCH_SIZE] == "4"
    assert tags[layout.TAG_INTEGRATION] == "transformers"
    assert _experiment_kind(sqlite_tracking_uri, run) == layout.EXPERIMENT_KIND_TRAINING
    record = _artifact(callback.run_id, tmp_path)
    assert record["seeds"]["requested"] == 11
    assert record["data"]["declared"]["batch_size"] == 4
    assert record["data"]["declared"]["num_workers"] == 0
    assert record["data"]["declared"]["full_determinism"] is False
    # what the first step started from: the model's initial weights, taken at the optimizer's
    # first step; the Trainer hands callbacks no batch
    import torch

    from mlflow_fingerprint.capture.first_step import weights_record

    first = record["first_step"]
    assert first["recorded_by"] == "torch.optim"
    groups = [[initial[id(p)] for p in g["params"]] for g in trainer.optimizer.param_groups]
    assert first["weights"]["digest"] == weights_record(groups, torch)["digest"]
    assert "unavailable" in first["batch"]


def _watched(run_id: str, tmp_path: Path):
    import mlflow

    from mlflow_fingerprint.model.watched import decode

    path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path=layout.STEPS_ARTIFACT, dst_path=str(tmp_path / "watched")
    )
    return decode(Path(path).read_bytes())


def test_lightning_callback_watches_the_module_it_fits(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import MLFlowLogger
    from torch.utils.data import DataLoader, TensorDataset

    from mlflow_fingerprint.integrations import FingerprintCallback

    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    logger = MLFlowLogger(experiment_name="pl-watch", tracking_uri=sqlite_tracking_uri)
    callback = FingerprintCallback(watch=[1, 2])
    module = tiny_module()
    pl.Trainer(
        max_steps=4,
        logger=logger,
        callbacks=[callback],
        accelerator="cpu",
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    ).fit(module, DataLoader(data, batch_size=8))

    assert callback.watch.closed
    assert not module.layer._forward_hooks
    records = _watched(logger.run_id, tmp_path)
    assert sorted({r.step for r in records}) == [1, 2]
    assert {(r.phase, r.module, r.tensor) for r in records} >= {
        ("forward", "layer", "output"),
        ("backward", "layer", "weight"),
        ("optimizer", "layer", "weight"),
    }
    final = next(r for r in records if r.key == (2, "optimizer", "layer", "weight", 0))
    assert final.shape == (2, 4)


def test_transformers_callback_watches_the_trainers_model(
    sqlite_tracking_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "hf-watch")
    from transformers import Trainer, TrainingArguments

    from jobs.hf_ddp_job import Rows, tiny_bert
    from mlflow_fingerprint.integrations import FingerprintTrainerCallback

    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        max_steps=2,
        seed=11,
        report_to=["mlflow"],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    callback = FingerprintTrainerCallback(watch=True)
    Trainer(model=tiny_bert(), args=args, train_dataset=Rows(), callbacks=[callback]).train()

    records = _watched(callback.run_id, tmp_path)
    assert sorted({r.step for r in records}) == [0, 1]  # the default steps a 2-step run reaches
    phases = [r.phase for r in records if r.step == 0]
    assert phases.index("backward") > phases.index("forward")
    assert phases[-1] == "optimizer"
    assert any(r.kind == "Embedding" for r in records)
