"""Experiments a fingerprinted run goes into are marked as training experiments for MLflow's UI,
unless someone gave them a kind already; on a real sqlite store."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking import client as io


@pytest.fixture
def client(sqlite_tracking_uri: str) -> MlflowClient:
    return MlflowClient(sqlite_tracking_uri)


def kind(c: MlflowClient, experiment_id: str) -> str | None:
    return c.get_experiment(experiment_id).tags.get(layout.MLFLOW_EXPERIMENT_KIND)


def test_a_new_experiment_is_created_as_a_training_one(client: MlflowClient) -> None:
    experiment_id = io.resolve_experiment(client, "new", None)
    assert kind(client, experiment_id) == layout.EXPERIMENT_KIND_TRAINING
    assert io.resolve_experiment(client, "new", None) == experiment_id


def test_a_kindless_experiment_gets_the_kind_and_a_chosen_kind_stays(
    client: MlflowClient,
) -> None:
    plain = client.create_experiment("plain")
    genai = client.create_experiment(
        "genai", tags={layout.MLFLOW_EXPERIMENT_KIND: "genai_development"}
    )
    assert kind(client, plain) is None
    assert io.resolve_experiment(client, "plain", None) == plain
    assert io.resolve_experiment(client, None, genai) == genai
    assert kind(client, plain) == layout.EXPERIMENT_KIND_TRAINING
    assert kind(client, genai) == "genai_development"


def test_the_default_experiment_and_a_joined_runs_experiment(client: MlflowClient) -> None:
    default = io.resolve_experiment(client, None, None)
    assert default == "0"
    assert kind(client, default) == layout.EXPERIMENT_KIND_TRAINING
    other = client.create_experiment("users")
    run = client.create_run(other)  # a run someone else created, which a fingerprint joins
    io.mark_run_experiment_training(client, run.info.run_id)
    assert kind(client, other) == layout.EXPERIMENT_KIND_TRAINING


def test_a_store_that_refuses_costs_the_kind_not_the_run(client: MlflowClient) -> None:
    """Marking is best effort: an unknown run or experiment raises nothing."""
    io.mark_run_experiment_training(client, "f" * 32)
    io.mark_training(client, "424242")


def test_sync_finds_a_run_spooled_under_the_old_tag_name(client: MlflowClient) -> None:
    experiment = client.create_experiment("legacy")
    old = client.create_run(experiment, tags={layout.TAG_LEGACY_SPOOL_ID: "spool-1"})
    new = client.create_run(experiment, tags={layout.INTERNAL_SPOOL_ID: "spool-2"})
    assert io.search_run(client, "spool-1", layout.TAG_LEGACY_SPOOL_ID) == old.info.run_id
    assert io.search_run(client, "spool-2") == new.info.run_id
    assert io.search_run(client, "spool-1") is None
