"""Curves and summaries (``compare/summary.py``): a metric logged once at the end of a run is its
summary, compared as a final value, never a divergence at step 0."""

from __future__ import annotations

import numpy as np
import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.compare.curves import late_divergence
from mlflow_fingerprint.compare.summary import Logged, curves_of, shared_summaries, summary_names
from mlflow_fingerprint.tracking import history
from mlflow_fingerprint.tracking.history import History
from support.records import cpu_record, new_store, seeded

T0 = 1_700_000_000_000


def h(values: list[float], times: list[int], steps: list[int] | None = None) -> History:
    steps = list(range(len(values))) if steps is None else steps
    return History(
        np.asarray(steps, dtype=np.int64),
        np.asarray(values, dtype=np.float64),
        np.asarray(times, dtype=np.int64),
    )


def test_a_single_value_logged_at_the_end_is_the_summary() -> None:
    runs = {
        "loss": h([2.0, 1.5, 1.0], [T0, T0 + 10, T0 + 20]),
        "val_error": h([0.3], [T0 + 25], [0]),  # the returned dict: no step, stored at 0
        "same_ms": h([0.1], [T0 + 20], [0]),  # in the same millisecond as the last step
        "first_only": h([9.0], [T0 + 1], [0]),  # a one-point curve, logged early
    }
    assert summary_names({n: Logged.of(x) for n, x in runs.items()}) == {"val_error", "same_ms"}
    curves, summary = curves_of(runs)
    assert set(curves) == {"loss", "first_only"}
    assert set(summary) == {"val_error", "same_ms"}


def test_without_a_curve_or_times_nothing_is_a_summary() -> None:
    assert summary_names({"a": Logged(1, T0), "b": Logged(1, T0 + 5)}) == frozenset()
    assert summary_names({"loss": Logged(5, None), "val": Logged(1, T0)}) == frozenset()


def test_a_summary_of_one_run_against_a_stopped_rerun_without_curves_is_still_one() -> None:
    a = {"loss": Logged(6, T0 + 60), "val_error": Logged(1, T0 + 70)}
    rerun = {"loss": Logged(4, T0 + 99), "val_error": Logged(1, T0 + 50)}  # logged early: odd
    assert shared_summaries(a, rerun) == {"val_error"}
    curve_in_b = {"loss": Logged(6, T0 + 60), "val_error": Logged(6, T0 + 70)}
    assert shared_summaries(a, curve_in_b) == frozenset()  # a curve on one side: compared as one


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template):
    return new_store(tmp_path_factory.mktemp("summary-store"), mlflow_db_template)


def logged_run(uri: str, name: str, loss: list[float], val_error: float) -> str:
    """A run whose ``loss`` is logged per step and ``val_error`` once after it, without a step,
    as a ``train()`` that returns its final metrics logs them."""
    import json

    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from mlflow_fingerprint import layout

    client = MlflowClient(uri)
    found = client.get_experiment_by_name("summary")
    experiment = found.experiment_id if found else client.create_experiment("summary")
    run_id = client.create_run(experiment, run_name=name).info.run_id
    client.log_text(run_id, json.dumps(seeded(cpu_record(), 0)), layout.FINGERPRINT_ARTIFACT)
    client.log_batch(run_id, [Metric("loss", v, T0 + 10 * i, i) for i, v in enumerate(loss)])
    client.log_batch(run_id, [Metric("val_error", val_error, T0 + 10 * len(loss), 0)])
    client.set_terminated(run_id)
    return run_id


def test_diff_shows_the_summary_as_such_and_the_curve_where_it_parts(store: str) -> None:
    a = logged_run(store, "a", [2.0, 1.5, 1.0, 0.8], 0.30)
    b = logged_run(store, "b", [2.0, 1.5, 1.1, 0.9], 0.25)
    report = diff(a, b, tracking_uri=store)
    by_name = {m.name: m for m in report.metrics}
    assert by_name["val_error"].summary
    assert by_name["val_error"].first_divergence_step is None
    assert not by_name["val_error"].equal
    assert by_name["loss"].first_divergence_step == 2
    assert not by_name["loss"].summary
    # the curves are identical at step 0 and part at step 2: the summary no longer hides that
    assert late_divergence(report.metrics, 0.0, 0.0) == (0.0, 2)
    shown = {m["name"]: m for m in report.to_dict()["metrics"]}
    assert shown["val_error"]["summary"] is True


def test_the_history_read_keeps_when_each_value_was_logged(store: str) -> None:
    from mlflow import MlflowClient

    run_id = logged_run(store, "times", [1.0, 0.5], 0.1)
    fast = history.read_sqlite(history.sqlite_file(store), run_id, ["loss", "val_error"])
    paged = history.read_store(MlflowClient(store), run_id, ["loss", "val_error"])
    for key in ("loss", "val_error"):
        assert fast[key].times is not None
        assert list(fast[key].times) == list(paged[key].times)
    assert list(fast["loss"].times) == [T0, T0 + 10]
