"""The runs' summaries as columns (``tracking/summaries.py``): each run's id, name, status, schema
tag and metrics come back as they were added, from a search's rows too, in far fewer bytes than
a row object a run."""

from __future__ import annotations

import math
from types import MappingProxyType

from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking.experiment import StoredRun
from mlflow_fingerprint.tracking.summaries import RunSummaries
from support.memory import held_alone

NONE = MappingProxyType({})


def stored(run_id: str, status: str, metrics: dict[str, float], steps: dict[str, int], **tags):
    return StoredRun(
        run_id, f"name-{run_id}", status, "1", "", NONE, MappingProxyType(tags),
        MappingProxyType(metrics), MappingProxyType(steps),
    )  # fmt: skip


def test_a_search_s_rows_read_as_columns() -> None:
    rows = [
        stored("a", "FINISHED", {"loss": 0.5, "acc": 0.9}, {"loss": 3, "acc": 0}),
        stored("b", "FAILED", {"acc": float("nan")}, {"acc": 0}, **{layout.TAG_SCHEMA: "9"}),
        stored("c", "FINISHED", {"loss": 0.25}, {}),  # a reader that gave no step
    ]
    runs = RunSummaries()
    for row in rows:
        runs.add_row(row)
    assert len(runs) == 3
    assert [runs.roster.run_id(i) for i in range(3)] == ["a", "b", "c"]
    assert [runs.status(i) for i in range(3)] == ["FINISHED", "FAILED", "FINISHED"]
    assert [runs.schema(i) for i in range(3)] == [None, "9", None]
    assert runs.statuses.texts == ["FINISHED", "FAILED"]  # each status once
    loss, acc = runs.metrics["loss"], runs.metrics["acc"]
    assert (list(loss.runs), list(loss.values), list(loss.steps)) == ([0, 2], [0.5, 0.25], [3, -1])
    assert (list(acc.runs), list(acc.steps)) == ([0, 1], [0, 0])
    assert acc.values[0] == 0.9
    assert math.isnan(acc.values[1])


def test_a_run_costs_its_codes_and_its_metrics_not_an_object() -> None:
    """About 400 bytes a run as a ``StoredRun`` with a mapping of its metrics; here its id and
    name, two codes and 20 bytes a metric."""
    runs = RunSummaries()
    with held_alone() as held:
        for i in range(20_000):
            metrics = (("val_loss", i / 7, 0), ("loss", i / 3, 99))
            runs.add(f"{i:032x}", f"run-{i}", "FINISHED", "1", metrics)
    assert held.bytes / len(runs) < 140, held.bytes / len(runs)
    assert runs.metrics["loss"].values[19_999] == 19_999 / 3
