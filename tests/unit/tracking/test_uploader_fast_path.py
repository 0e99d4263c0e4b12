"""The writer's fast path (a ``dict`` of floats under names it has seen, an ``int`` step) keeps
every check of the slow one: a name is checked once, and only a ``str`` that passed is taken on
trust; a value logged keeps no object the garbage collector counts."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from mlflow_fingerprint.tracking import uploader
from support.stored import metric_pairs
from support.writer_values import open_writer, ours


def test_a_known_name_takes_no_value_the_slow_path_refuses(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    writer, run_id = open_writer(sqlite_tracking_uri, spool_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.log_metrics({"loss": 0.5}, step=0)  # "loss" is known from here on
        writer.log_metrics({"loss": 1}, step=1)  # an int: converted
        writer.log_metrics({"loss": np.float32(0.25)}, step=2)  # not a float: converted
        writer.log_metrics({"loss": 10**400}, step=3)  # too large: refused
        writer.log_metrics({np.str_("loss"): 9.0}, step=4)  # equal to a known name, not a str
        writer.log_metrics({"loss": 9.0}, step=2**63)  # outside MLflow's steps
        writer.log_metrics({"loss": 0.125}, step=np.int64(5))  # a step to convert
        assert writer.close(60)
    messages = ours(caught)
    assert len(messages) == 3, messages  # one per kind
    for said in ("too large for a float", "is not valid in MLflow", "step 92233"):
        assert any(said in m for m in messages), (said, messages)
    client = MlflowClient(sqlite_tracking_uri)
    assert metric_pairs(client, run_id, "loss") == [(0, 0.5), (1, 1.0), (2, 0.25), (5, 0.125)]


def test_names_past_the_remembered_ones_are_still_checked(
    sqlite_tracking_uri: str, spool_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uploader, "KNOWN_NAMES", 1)
    writer, run_id = open_writer(sqlite_tracking_uri, spool_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            writer.log_metrics({"a": 1.0, "b": 2.0, "bad name!": 3.0}, step=step)
        assert writer.close(60)
    assert len(ours(caught)) == 1  # the bad name, once
    assert MlflowClient(sqlite_tracking_uri).get_run(run_id).data.metrics == {"a": 1.0, "b": 2.0}


def test_a_logged_value_does_not_bring_the_next_collection_nearer(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    """A tuple per value kept in the queue counted one allocation each: every 700 values a
    collection, and now and then a full one (tenths of a second in a process that imported
    MLflow and torch) inside the training loop."""
    writer, _ = open_writer(sqlite_tracking_uri, spool_dir)
    writer.log_metrics({"loss": 0.0, "acc": 1.0}, step=0)
    assert writer.flush(60)  # the uploader idle: what is counted is the caller's
    values = [float(step) for step in range(2000)]
    gc.disable()
    try:
        before = gc.get_count()[0]
        for step, value in enumerate(values):
            writer.log_metrics({"loss": value, "acc": value}, step=step)
        counted = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert writer.close(60)
    assert counted < 200, f"{counted} allocations counted for 4000 values"
