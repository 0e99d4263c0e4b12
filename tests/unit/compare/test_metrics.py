"""Metric comparison: first divergence, equality, paged history reads and seed-to-seed noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlflow_fingerprint import diff
from mlflow_fingerprint.compare.metrics import bitwise_equal, compare, first_divergence
from mlflow_fingerprint.tracking import history
from mlflow_fingerprint.tracking.history import History
from support.records import cpu_record, log_run, new_store, seeded


def h(values, steps=None):
    values = np.asarray(values, dtype=np.float64)
    steps = np.arange(len(values)) if steps is None else np.asarray(steps)
    return History(steps.astype(np.int64), values)


def test_histories_that_differ_from_the_start_diverge_at_step_0():
    assert first_divergence(h([1.0, 2.0]), h([1.5, 2.0])) == 0


@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50), st.data()
)
def test_histories_that_agree_for_k_steps_report_k(values, data):
    """Even a one-ulp change at step k (and agreement after it) is found at k."""
    k = data.draw(st.integers(0, len(values) - 1))
    other = list(values)
    other[k] = float(np.nextafter(values[k], -np.inf if values[k] > 0 else np.inf))
    assert first_divergence(h(values), h(other)) == k


def test_equal_histories_do_not_diverge_and_nan_agrees_with_nan():
    values = [1.0, math.nan, 3.0]
    assert first_divergence(h(values), h(values)) is None
    assert bitwise_equal(h(values), h(values))


def test_tolerances_follow_assert_close():
    a, b = h([1.0, 100.0]), h([1.0 + 1e-9, 100.001])
    assert first_divergence(a, b) == 0
    assert first_divergence(a, b, atol=1e-6) == 1
    assert first_divergence(a, b, atol=1e-6, rtol=1e-5) is None


def test_a_shorter_history_diverges_where_it_ends_and_a_missing_step_where_it_is_missing():
    assert first_divergence(h([1.0, 2.0, 3.0]), h([1.0, 2.0])) == 2
    assert first_divergence(h([1.0, 2.0, 3.0], [0, 5, 10]), h([1.0, 2.0, 3.0], [0, 6, 10])) == 5


def test_negative_zero_is_equal_but_not_bitwise_equal():
    result = compare("m", h([0.0]), h([-0.0]))
    assert result.equal
    assert not result.bitwise_equal


def test_final_values_and_differences():
    result = compare("loss", h([2.0, 0.91]), h([2.0, 0.87]))
    assert (result.a, result.b) == (0.91, 0.87)
    assert result.abs_diff == pytest.approx(0.04)
    assert result.rel_diff == pytest.approx(0.04 / 0.91)
    assert result.first_divergence_step == 1
    assert not result.equal
    assert not result.bitwise_equal


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db_template):
    return new_store(tmp_path_factory.mktemp("metrics-store"), mlflow_db_template)


def test_sqlite_read_matches_the_stores_own_paged_read(store, monkeypatch):
    from mlflow import MlflowClient

    values = [0.5, math.nan, math.inf, -1.0] * 10
    run_id = log_run(
        store, "metrics", "read", seeded(cpu_record(), 0), {"loss": values, "acc": [0.1, 0.2]}
    )
    client = MlflowClient(store)
    client.log_metric(run_id, "acc", 0.25, step=1, timestamp=1_800_000_000_000)  # 2 values at 1
    fast = history.read_sqlite(history.sqlite_file(store), run_id, ["loss", "acc", "absent"])
    monkeypatch.setattr(history, "PAGE_SIZE", 7)  # several pages through the store
    paged = history.read_store(client, run_id, ["loss", "acc", "absent"])
    for key in ("loss", "acc", "absent"):
        assert bitwise_equal(fast[key], paged[key]), key
        reference = client.get_metric_history(run_id, key)
        assert len(fast[key]) == len(reference)
    assert list(fast["acc"].values) == [0.1, 0.2, 0.25]  # logging order kept within a step
    assert np.isnan(fast["loss"].values[1])


def test_runs_diverging_from_the_start_and_after_k_steps(store):
    record = seeded(cpu_record(), 0)
    base = list(np.linspace(2.0, 0.1, 50))
    late = base[:17] + [v + 1e-3 for v in base[17:]]
    early = [v + 1e-3 for v in base]
    a = log_run(store, "metrics", "base", record, {"loss": base, "acc": [0.9]})
    b = log_run(store, "metrics", "late", record, {"loss": late, "acc": [0.9]})
    c = log_run(store, "metrics", "early", record, {"loss": early, "acc": [0.9]})
    by_name = {m.name: m for m in diff(a, b, tracking_uri=store).metrics}
    assert by_name["loss"].first_divergence_step == 17
    assert by_name["acc"].bitwise_equal
    assert {m.name: m for m in diff(a, c, tracking_uri=store).metrics}[
        "loss"
    ].first_divergence_step == 0
    only = diff(a, b, tracking_uri=store, metrics=["acc"])
    assert [m.name for m in only.metrics] == ["acc"]
    assert only.verdict == "same_results"
    assert only.exit_code == 0
    assert diff(a, b, tracking_uri=store, atol=1e-2).verdict == "same_results"


def test_replicates_give_the_seed_to_seed_spread(store):
    record = cpu_record()
    finals = {10: 0.50, 11: 0.52, 12: 0.51, 13: 0.53}
    for seed, final in finals.items():
        log_run(store, "replicates", f"seed{seed}", seeded(record, seed), {"acc": [0.1, final]})
    a = log_run(store, "replicates", "a", seeded(record, 0), {"acc": [0.1, 0.50]})
    near = log_run(store, "replicates", "near", seeded(record, 1), {"acc": [0.1, 0.51]})
    close = diff(a, near, tracking_uri=store).metrics[0].spread
    assert close is not None
    assert close.seeds == 4
    assert (close.kind, close.seed) == ("across_seeds", None)  # A and B: seeds 0 and 1
    assert not close.outside
    assert (close.low, close.high) == (0.5, 0.53)
    far = log_run(store, "replicates", "far", seeded(record, 2), {"acc": [0.1, 0.90]})
    assert diff(a, far, tracking_uri=store).metrics[0].spread.outside


def test_a_seed_to_seed_band_rests_only_on_pairs_of_different_seeds(store):
    """Replicates that share one seed and agree bit for bit show no seed-to-seed spread: a pair
    whose seeds differ has no band from them (a band of 0 would call any gap a cause)."""
    record = cpu_record()
    for name in ("x", "y"):
        log_run(store, "one-seed", name, seeded(record, 5), {"acc": [0.1, 0.5]})
    a = log_run(store, "one-seed", "a", seeded(record, 0), {"acc": [0.1, 0.50]})
    b = log_run(store, "one-seed", "b", seeded(record, 1), {"acc": [0.1, 0.51]})
    (acc,) = diff(a, b, tracking_uri=store).metrics
    assert (acc.spread, acc.no_band) == (None, True)


def test_fewer_than_three_replicate_seeds_give_no_spread(store):
    record = seeded(cpu_record(), 0)
    a = log_run(store, "lonely", "a", record, {"loss": [1.0]})
    b = log_run(store, "lonely", "b", record, {"loss": [2.0]})
    assert diff(a, b, tracking_uri=store).metrics[0].spread is None


def test_runs_sharing_no_metric_have_no_metrics_verdict(store):
    record = seeded(cpu_record(), 0)
    a = log_run(store, "disjoint", "a", record, {"loss": [1.0]})
    b = log_run(store, "disjoint", "b", record, {"acc": [1.0]})
    report = diff(a, b, tracking_uri=store)
    assert report.verdict == "no_metrics"
    assert report.exit_code == 0
    assert any("share no metric" in n for n in report.notes)
