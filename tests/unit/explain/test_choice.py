"""Which runs and which metric a report is about (``explain/choice.py``), read from the summaries'
columns: the same choices a set of each run's values made, NaN and signed zeros included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlflow_fingerprint.errors import ExplainError
from mlflow_fingerprint.explain import choice
from mlflow_fingerprint.tracking.summaries import RunSummaries


def summaries(*runs: tuple[str, str | None, dict[str, tuple[float, int]]]) -> RunSummaries:
    out = RunSummaries()
    for i, (status, schema, metrics) in enumerate(runs):
        out.add(f"r{i}", None, status, schema, ((k, v, s) for k, (v, s) in metrics.items()))
    return out


def everyone(runs: RunSummaries) -> np.ndarray:
    return np.ones(len(runs), dtype=bool)


@given(st.lists(st.one_of(st.floats(), st.sampled_from([0.0, -0.0, 1.0])), min_size=1))
def test_a_metric_varies_where_a_set_of_its_values_has_two(values: list[float]) -> None:
    runs = summaries(*(("FINISHED", None, {"m": (v, 0)}) for v in values))
    # a set of the values as a store hands them over: each NaN a float of its own
    as_a_set = len({v for v in values if v == v}) + sum(v != v for v in values) > 1
    assert choice.varies(choice.logged(runs, everyone(runs))["m"]) == as_a_set


def test_the_summary_metric_most_runs_share_that_varies_and_counts_nothing() -> None:
    runs = summaries(
        ("FINISHED", None, {"loss": (0.5, 9), "val_loss": (0.4, 0), "epoch": (3.0, 0)}),
        ("FINISHED", None, {"loss": (0.6, 9), "val_loss": (0.4, 0), "epoch": (4.0, 0)}),
        ("FINISHED", None, {"loss": (0.7, 9), "val_loss": (0.5, 0), "epoch": (5.0, 0)}),
    )
    name, note = choice.choose_metric(choice.logged(runs, everyone(runs)), 3)
    assert name == "val_loss"  # epoch is a step count, loss is no summary metric
    assert note == (
        "metric val_loss: the summary metric 3 of 3 runs share, the first that varies "
        "(--metric picks another)"
    )  # epoch, ranked before it, is passed over
    # where every run agrees on the summary metric, the first metric that varies
    same = summaries(*(("FINISHED", None, {"loss": (v, 9), "acc": (1.0, 0)}) for v in (1, 2)))
    name, note = choice.choose_metric(choice.logged(same, everyone(same)), 2)
    assert (name, "the first that varies" in note) == ("loss", True)
    with pytest.raises(ExplainError, match="logged no metric"):
        choice.choose_metric({}, 2)


def test_unfinished_runs_newer_records_and_values_out_of_range_are_told_apart() -> None:
    runs = summaries(
        ("FINISHED", "1", {"m": (1.0, 0)}),
        ("RUNNING", None, {"m": (2.0, 0)}),
        ("FINISHED", "99", {"m": (3.0, 0)}),
        ("FINISHED", None, {"m": (math.inf, 0)}),
        ("FINISHED", None, {}),
    )
    kept = choice.kept(runs, include_unfinished=False)
    assert kept.tolist() == [True, False, True, True, True]
    assert choice.kept(runs, include_unfinished=True).all()
    assert choice.newer(runs).tolist() == [False, False, True, False, False]
    assert "newer" in (choice.refused("99", "r2") or "")
    values = choice.final_values(runs, "m", kept)
    assert values.has.tolist() == [True, False, True, True, False]
    assert choice.out_of_range(values.value).tolist() == [False, False, False, True, True]
    assert choice.why_out_of_range("m", math.inf) == "m is inf (MLflow stores it as 1.797e308)"
    assert choice.why_out_of_range("m", float("nan")) == "m is nan"
    assert "beyond the range" in choice.why_out_of_range("m", -1e200)


def test_values_at_a_step_are_asked_for_the_runs_that_logged_the_metric() -> None:
    runs = summaries(
        ("FINISHED", None, {"m": (1.0, 5)}),
        ("FINISHED", None, {}),
        ("FAILED", None, {"m": (3.0, 5)}),
        ("FINISHED", None, {"m": (4.0, 5)}),
    )
    asked: list[list[str]] = []

    def read(ids: list[str]) -> dict[str, float]:
        asked.append(ids)
        return {"r0": 0.5}  # r3 logged nothing at that step

    values = choice.step_values(runs, "m", choice.kept(runs, False), read)
    assert asked == [["r0", "r3"]]
    assert values.has.tolist() == [True, False, False, False]
    assert values.value[0] == 0.5
