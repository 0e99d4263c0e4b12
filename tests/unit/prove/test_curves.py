"""Whose curve a rerun followed (``prove/curves.py``): curves compared bit for bit inside the
window a rerun ran, summary values only where both runs ran to their end."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlflow_fingerprint.prove.curves import Metrics, compare, parted_at, read, summary_differs
from mlflow_fingerprint.tracking.history import History
from support.records import cpu_record, log_run, new_store


def h(*values: float, start: int = 0) -> History:
    return History(np.arange(start, start + len(values)), np.array(values, dtype=np.float64))


def test_up_to_keeps_the_steps_inside_the_window_and_drops_the_summary() -> None:
    m = Metrics({"loss": h(4.0, 3.0, 2.0, 1.0)}, {"acc": h(0.9)})
    cut = m.up_to(1)
    assert cut.curves["loss"].steps.tolist() == [0, 1]
    assert cut.curves["loss"].values.tolist() == [4.0, 3.0]
    assert cut.summary == {}
    assert m.up_to(None) is m


def test_curves_part_at_the_first_step_any_shared_curve_differs() -> None:
    x = {"loss": h(1.0, 2.0, 3.0), "lr": h(0.1, 0.1, 0.1), "only_x": h(9.0)}
    y = {"loss": h(1.0, 2.0, 3.5), "lr": h(0.1, 0.2, 0.1)}
    assert parted_at(x, y) == 1
    assert parted_at(x, {"loss": h(1.0, 2.0, 3.0)}) is None
    # one bit apart is apart
    assert parted_at({"l": h(1.0)}, {"l": h(float(np.nextafter(1.0, 2.0)))}) == 0


def test_only_summary_values_both_runs_logged_and_that_differ_are_named() -> None:
    x = Metrics({}, {"acc": h(0.5), "f1": h(0.7), "only_x": h(1.0)})
    y = Metrics({}, {"acc": h(0.5), "f1": h(0.71)})
    assert summary_differs(x, y) == ("f1",)


def test_a_stopped_rerun_is_compared_in_its_window_and_never_on_the_summary() -> None:
    reference = Metrics({"loss": h(4.0, 3.0, 2.0, 1.0)}, {"acc": h(0.9)})
    stopped = Metrics({"loss": h(4.0, 3.0, 2.0)}, {})
    found = compare(stopped, reference, until=2, stopped=True)
    assert found.same
    assert found.parted is None
    assert found.summary == ()
    # the same rerun judged as one that ran to its end: its curve is short of A's
    whole = compare(stopped, reference, until=2, stopped=False)
    assert whole.parted == 3
    assert not whole.same


def test_a_rerun_that_ran_to_its_end_is_compared_on_its_summary_too() -> None:
    reference = Metrics({"loss": h(4.0, 3.0)}, {"acc": h(0.9)})
    got = Metrics({"loss": h(4.0, 3.0)}, {"acc": h(0.8)})
    found = compare(got, reference, until=None, stopped=False)
    assert found.parted is None
    assert found.summary == ("acc",)
    assert not found.same


def test_a_stored_run_is_read_as_its_curves_and_its_summary(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    uri = new_store(tmp_path, mlflow_db_template)
    run_id = log_run(uri, "e", "a", cpu_record(), {"loss": [3.0, 2.0, 1.5, 1.0]})
    got = read(uri, run_id, ["loss"])
    assert got.curves["loss"].values.tolist() == [3.0, 2.0, 1.5, 1.0]
    assert got.curves["loss"].steps.tolist() == [0, 1, 2, 3]
    assert got.summary == {}
