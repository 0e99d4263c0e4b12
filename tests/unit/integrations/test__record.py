"""What the trainer callbacks share (``integrations/_record.py``), without a trainer: the capture
with the settings a trainer knows, the loaders it hands over, and the fingerprint recorded into
an existing run of a real sqlite store and then replaced with its first step. The callbacks in
real Lightning, Hugging Face and Keras fits are tests/system/test_integrations.py's; which switch
each trainer's determinism request names is test_determinism.py's."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from mlflow import MlflowClient
from torch.utils.data import DataLoader, TensorDataset

from mlflow_fingerprint import layout
from mlflow_fingerprint.integrations import _record


def loader(batch_size: int, shuffle: bool) -> DataLoader[tuple[torch.Tensor, ...]]:
    return DataLoader(TensorDataset(torch.zeros(8, 2)), batch_size=batch_size, shuffle=shuffle)


def test_only_loaders_are_described() -> None:
    records = _record.loader_records(None, loader(4, True), "not a loader", loader(2, False))
    assert [(r["batch_size"], r["shuffle"]) for r in records] == [(4, True), (2, False)]
    assert all(r["sampler"] in ("RandomSampler", "SequentialSampler") for r in records)
    assert _record.loader_records() == ()


def test_a_trainer_s_settings_reach_the_record() -> None:
    loaders = _record.loader_records(loader(4, True))
    declared = {"batch_size": 4, "num_workers": None, "world_size": 1}
    fp = _record.capture_for_trainer(
        seed=7, seeded_by="lightning.seed_everything", declared=declared, deterministic=True,
        loaders=loaders,
    )  # fmt: skip
    assert (fp.get("seeds.requested"), fp.get("seeds.seeded_by")) == (
        7, "lightning.seed_everything"
    )  # fmt: skip
    assert fp.get("data.declared") == {"batch_size": 4, "world_size": 1}  # None: not declared
    assert fp.get("data.loaders")[0]["batch_size"] == 4
    assert fp.get("data.captured_at_stage") == "train_start"
    unseeded = _record.capture_for_trainer(
        seed=None, seeded_by="transformers.Trainer", declared={}, deterministic=False
    )
    assert unseeded.get("seeds.seeded_by") is None  # nobody seeded: no seeder named


def test_a_single_process_records_its_own_fingerprint() -> None:
    fp = _record.capture_for_trainer(seed=None, seeded_by="x", declared={}, deterministic=None)
    assert _record.job_fingerprint(fp) == (fp, [])


def test_the_first_step_joins_the_record_without_changing_its_hashes() -> None:
    fp = _record.capture_for_trainer(seed=1, seeded_by="x", declared={}, deterministic=None)
    first = _record.with_first_step(fp, {"stage": "lightning", "weights": {"digest": "ab"}})
    assert first.get("first_step.stage") == "lightning"
    assert first.get("first_step.weights") == {"digest": "ab"}
    assert first.hashes == fp.hashes
    again = _record.with_first_step(first, {"batch": {"digest": "cd"}})
    assert again.get("first_step.weights") == {"digest": "ab"}  # what was there stays
    assert again.get("first_step.batch") == {"digest": "cd"}


def test_nothing_is_done_where_there_is_no_run_to_record_into() -> None:
    fp = _record.capture_for_trainer(seed=None, seeded_by="x", declared={}, deterministic=None)
    assert _record.take_over_from_provider(None) is None
    assert _record.republish(None, fp) is None
    assert _record.announce_end(None) is None
    assert _record.watch(object(), torch.nn.Linear(1, 1), False) is None


def test_the_fingerprint_is_recorded_into_the_trainer_s_run_then_replaced(
    sqlite_tracking_uri: str, spool_dir: Path, tmp_path: Path
) -> None:
    client = MlflowClient(sqlite_tracking_uri)
    run_id = client.create_run(client.create_experiment("fit")).info.run_id
    fp = _record.capture_for_trainer(seed=3, seeded_by="x", declared={}, deterministic=None)
    extra = {layout.TAG_INTEGRATION: "lightning"}
    writer = _record.record_into_run(run_id, sqlite_tracking_uri, fp, extra)
    assert writer.flush(30)
    run = client.get_run(run_id)
    assert run.data.tags[layout.TAG_INTEGRATION] == "lightning"
    assert run.data.tags[layout.TAG_HASH] == fp.hashes["fingerprint"]
    assert run.data.params[layout.PARAM_SEED] == "3"
    first = _record.with_first_step(fp, {"stage": "test"})
    _record.republish(writer, first)
    assert writer.flush(30)
    local = client.download_artifacts(run_id, layout.FINGERPRINT_ARTIFACT, str(tmp_path))
    assert json.loads(Path(local).read_text())["first_step"]["stage"] == "test"
    writer.close()
