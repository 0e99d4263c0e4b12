"""``@mfp.fingerprinted`` around a real training: the digits CNN, a real sqlite MLflow store."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import mlflow
import pytest
import torch
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint
from support.design import DESIGN_TAGS


def only_run(experiment: str) -> Any:
    client = MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment}"
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]


def artifact_fingerprint(run_id: str, name: str = layout.FINGERPRINT_FILE) -> Fingerprint:
    path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path=f"{layout.ARTIFACT_DIR}/{name}"
    )
    return Fingerprint.load(path)


def history(run_id: str, key: str = "loss") -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in MlflowClient().get_metric_history(run_id, key)]


def test_decorated_digits_run_has_tags_artifact_params_and_every_metric(
    sqlite_tracking_uri: str, digits: ModuleType
) -> None:
    loaders = digits.make_loaders(batch_size=32, num_workers=2, seed_workers=True, augment=True)

    @mfp.fingerprinted(experiment="digits", run_name="a", seed=0)
    def train(loader: Any, val_loader: Any) -> dict[str, float]:
        return digits.train(loader, epochs=1, val_loader=val_loader, max_steps=25)

    result = train(*loaders)

    run = only_run("digits")
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "a"
    for key in DESIGN_TAGS:
        assert key in run.data.tags, key
    tags = run.data.tags
    assert tags[layout.TAG_SEED] == "0"
    # the training loader's (the validation loader's 256 and 0 stay in the fingerprint), undeclared
    assert tags[layout.TAG_BATCH_SIZE] == "32"
    assert tags[layout.TAG_NUM_WORKERS] == "2"
    assert tags[layout.TAG_GPU] == "none"
    assert tags[layout.TAG_DEVICE] == "cpu"  # a CPU torch build computes nowhere else
    assert tags[layout.TAG_TORCH] == torch.__version__
    assert run.data.params == {"batch_size": "32", "num_workers": "2", "seed": "0"}

    fp = artifact_fingerprint(run.info.run_id)
    assert tags[layout.TAG_HASH] == fp.hashes["fingerprint"]
    train_loader = fp.get("data.loaders.0")
    assert train_loader["batch_size"] == 32
    assert train_loader["num_workers"] == 2
    assert train_loader["shuffle"] is True
    assert train_loader["worker_init_fn"] == "mlflow_fingerprint.run.seeding.seed_worker"
    assert train_loader["generator"] == {"present": True, "initial_seed": 0}
    assert train_loader["dataset"]["length"] == len(loaders[0].dataset)
    assert train_loader["batches_seen"] == 26  # max_steps, and the batch that ends the loop
    val_loader = fp.get("data.loaders.1")
    assert (val_loader["batch_size"], val_loader["num_workers"]) == (256, 0)
    assert val_loader["batches_seen"] == -(-len(loaders[1].dataset) // 256)
    assert fp.get("seeds.requested") == 0
    assert fp.get("seeds.seeded_by") == "mlflow_fingerprint.fingerprinted"

    steps = history(run.info.run_id)
    assert [s for s, _ in steps] == list(range(25))
    assert run.data.metrics["val_error"] == pytest.approx(result["val_error"])
    names = {a.path for a in MlflowClient().list_artifacts(run.info.run_id, layout.ARTIFACT_DIR)}
    assert {
        layout.FINGERPRINT_ARTIFACT,
        layout.PACKAGES_ARTIFACT,
        layout.RUN_ARTIFACT,
    } <= names


def test_same_seed_twice_gives_bitwise_equal_loss_histories(
    sqlite_tracking_uri: str, digits: ModuleType
) -> None:
    def one_run(name: str) -> list[tuple[int, float]]:
        @mfp.fingerprinted(experiment="twins", run_name=name, seed=7)
        def train() -> dict[str, float]:
            loader, _ = digits.make_loaders(
                batch_size=64, num_workers=0, seed_workers=True, augment=True, seed=7
            )
            return digits.train(loader, epochs=1, max_steps=20)

        train()
        return history(mlflow.last_active_run().info.run_id)

    first, second = one_run("a"), one_run("b")
    assert len(first) == 20
    assert first == second  # floats compared exactly


def test_exception_leaves_a_failed_run_with_its_fingerprint_and_traceback(
    sqlite_tracking_uri: str,
) -> None:
    @mfp.fingerprinted(experiment="boom", seed=1)
    def train() -> None:
        for step in range(5):
            mfp.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        raise ValueError("diverged at step 5")

    with pytest.raises(ValueError, match="diverged"):
        train()

    run = only_run("boom")
    assert run.info.status == "FAILED"
    assert run.data.tags[layout.TAG_SEED] == "1"
    assert (
        artifact_fingerprint(run.info.run_id).hashes["fingerprint"]
        == (run.data.tags[layout.TAG_HASH])
    )
    trace = Path(
        mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path=layout.TRACEBACK_ARTIFACT
        )
    ).read_text()
    assert "ValueError: diverged at step 5" in trace
    assert [s for s, _ in history(run.info.run_id)] == [0, 1, 2, 3, 4]


def test_seeded_runs_without_a_name_get_different_names(sqlite_tracking_uri: str) -> None:
    @mfp.fingerprinted(experiment="names", seed=0)
    def train() -> None:
        return None

    train()
    train()
    runs = MlflowClient().search_runs([mlflow.get_experiment_by_name("names").experiment_id])
    assert len(runs) == 2
    names = {r.info.run_name for r in runs}
    assert len(names) == 2, names  # MLflow alone would name both from the just-seeded `random`


def test_keyboard_interrupt_marks_the_run_killed(sqlite_tracking_uri: str) -> None:
    @mfp.fingerprinted(experiment="stopped")
    def train() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train()
    assert only_run("stopped").info.status == "KILLED"


def test_joins_a_run_the_user_opened_and_leaves_it_open(sqlite_tracking_uri: str) -> None:
    @mfp.fingerprinted(seed=3)
    def train() -> dict[str, float]:
        mfp.log_metrics({"loss": 0.5}, step=0)
        mlflow.log_metric("user_metric", 1.0)  # the user's own calls still land in the run
        return {"acc": 0.9}

    mlflow.set_experiment("joined")
    with mlflow.start_run() as outer:
        train()
        assert mlflow.active_run().info.run_id == outer.info.run_id
        assert MlflowClient().get_run(outer.info.run_id).info.status == "RUNNING"

    run = only_run("joined")
    assert run.info.run_id == outer.info.run_id
    assert run.info.status == "FINISHED"
    assert run.data.tags[layout.TAG_SEED] == "3"
    assert run.data.metrics == {"loss": 0.5, "user_metric": 1.0, "acc": 0.9}


def test_nested_fingerprinted_runs_become_parent_and_child(sqlite_tracking_uri: str) -> None:
    @mfp.fingerprinted(run_name="trial")
    def trial(x: float) -> dict[str, float]:
        mlflow.log_metric("direct", x)  # attached: mlflow's fluent API sees the child run
        return {"score": x}

    @mfp.fingerprinted(experiment="sweep", run_name="sweep")
    def sweep() -> None:
        trial(1.0)
        trial(2.0)

    sweep()
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("sweep").experiment_id])
    parent = next(r for r in runs if r.info.run_name == "sweep")
    children = [r for r in runs if r.info.run_name == "trial"]
    assert len(runs) == 3
    assert {r.data.tags.get(layout.MLFLOW_PARENT_RUN_ID) for r in children} == {parent.info.run_id}
    assert sorted(r.data.metrics["score"] for r in children) == [1.0, 2.0]
    assert sorted(r.data.metrics["direct"] for r in children) == [1.0, 2.0]
    assert all(r.info.status == "FINISHED" for r in runs)


def test_context_manager_records_declared_loader_facts(sqlite_tracking_uri: str) -> None:
    with mfp.fingerprinted(experiment="block", batch_size=128, num_workers=4) as run:
        for step in range(3):
            mfp.log_metrics({"loss": float(step)}, step=step)

    recorded = only_run("block")
    assert recorded.info.run_id == run.run_id
    assert recorded.data.tags[layout.TAG_BATCH_SIZE] == "128"
    assert recorded.data.tags[layout.TAG_NUM_WORKERS] == "4"
    assert recorded.data.params == {layout.PARAM_BATCH_SIZE: "128", layout.PARAM_NUM_WORKERS: "4"}
    assert artifact_fingerprint(run.run_id).get("data.declared") == {
        "batch_size": 128,
        "num_workers": 4,
    }


def test_flags_set_inside_train_reach_the_fingerprint(
    sqlite_tracking_uri: str, digits: ModuleType
) -> None:
    threads = torch.get_num_threads()
    wanted = 1 if threads != 1 else 2

    @mfp.fingerprinted(experiment="flags")
    def train() -> None:
        torch.set_num_threads(wanted)  # after the start capture, before the first batch
        loader, _ = digits.make_loaders(batch_size=64)
        digits.train(loader, epochs=1, max_steps=2)

    try:
        train()
    finally:
        torch.set_num_threads(threads)
    run = only_run("flags")
    final = artifact_fingerprint(run.info.run_id)
    start = artifact_fingerprint(run.info.run_id, layout.START_FILE)
    assert start.get("torch.threads.intra_op") == threads
    assert final.get("torch.threads.intra_op") == wanted
    # seen from the first batch on (the end capture follows only because batches were counted)
    record = json.loads(
        Path(
            mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id, artifact_path=layout.RUN_ARTIFACT
            )
        ).read_text()
    )
    captures = {c["stage"]: c["hashes"]["numerics"] for c in record["captures"]}
    assert list(captures) == ["start", "first_batch", "end"]
    assert captures["first_batch"] == final.hashes["numerics"] != captures["start"]
    assert final.get("data.loaders.0.batches_seen") == 3  # max_steps, and the batch that ends it
    assert run.data.tags[layout.TAG_HASH_NUMERICS] == final.hashes["numerics"]
    assert run.data.tags[layout.TAG_BATCH_SIZE] == "64"


def test_deterministic_mode_is_applied_recorded_and_undone(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    @mfp.fingerprinted(experiment="det", deterministic=True)
    def train() -> None:
        seen["algorithms"] = torch.are_deterministic_algorithms_enabled()
        seen["cudnn"] = torch.backends.cudnn.deterministic

    # Start from the defaults, whatever an earlier test in this process left switched on.
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    try:
        train()
        assert seen == {"algorithms": True, "cudnn": True}
        assert torch.are_deterministic_algorithms_enabled() is False
        assert torch.backends.cudnn.deterministic is False
    finally:
        torch.use_deterministic_algorithms(previous)
    run = only_run("det")
    assert run.data.tags[layout.TAG_DETERMINISTIC] == "on"
    record = json.loads(
        Path(
            mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id, artifact_path=layout.RUN_ARTIFACT
            )
        ).read_text()
    )
    assert record["deterministic"]["requested"] == "on"
    assert (
        "use_deterministic_algorithms(True, warn_only=False)"
        in (record["deterministic"]["actions"])
    )


def test_the_deterministic_decision_is_in_the_fingerprint_and_the_diff_names_it(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    fingerprints = {}
    try:
        for mode in (False, True):
            with mfp.fingerprinted(experiment="det-pair", deterministic=mode) as run:
                pass
            fingerprints[mode] = run.fingerprint
    finally:
        torch.use_deterministic_algorithms(previous)
    off, on = fingerprints[False], fingerprints[True]
    assert off.get("determinism.requested") == {
        "mode": "off",
        "by": "mlflow_fingerprint.fingerprinted",
        "applied": [],
    }
    assert on.get("determinism.requested.mode") == "on"
    assert "use_deterministic_algorithms(True, warn_only=False)" in on.get(
        "determinism.requested.applied"
    )
    report = mfp.diff(off, on)
    fields = [d.field for d in report.effective_differences]
    assert fields[:2] == ["determinism.deterministic_algorithms", "determinism.requested.mode"]
    request = report.effective_differences[1]
    assert request.effect == report.effective_differences[0].effect == "numerics"
    assert request.explanation.startswith(
        "B asked for deterministic mode (mlflow_fingerprint.fingerprinted), A did not"
    )


def test_bad_arguments_fail_before_training() -> None:
    with pytest.raises(ValueError, match="deterministic"):
        mfp.fingerprinted(deterministic="yes")
    with pytest.raises(ValueError, match="seed"):
        mfp.fingerprinted(seed=-1)


def test_the_first_batch_capture_reads_the_training_threads_torch_config(
    sqlite_tracking_uri: str, digits: ModuleType
) -> None:
    """torch keeps config overrides per thread (ContextVars): the first-batch capture, taken on
    a background thread, must see what the training thread sees (inductor's ``deterministic``
    follows ``use_deterministic_algorithms``), or its numerics hash differs from the end's."""

    @mfp.fingerprinted(experiment="thread-config")
    def train() -> None:
        loader, _ = digits.make_loaders(batch_size=64)
        digits.train(loader, epochs=1, max_steps=2)

    torch.use_deterministic_algorithms(True)
    try:
        train()
    finally:
        torch.use_deterministic_algorithms(False)
    run = only_run("thread-config")
    record = json.loads(
        Path(
            mlflow.artifacts.download_artifacts(
                run_id=run.info.run_id, artifact_path=layout.RUN_ARTIFACT
            )
        ).read_text()
    )
    hashes = {c["stage"]: c["hashes"]["numerics"] for c in record["captures"]}
    assert hashes["first_batch"] == hashes["end"] == hashes["start"], hashes
