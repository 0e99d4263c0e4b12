"""The run's metric sink tells the start of training once, on the first logged metric, and then
steps aside: every value still reaches the wrapped sink, in order, and a later call is the wrapped
sink's own (the training loop pays nothing for the wrapper)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlflow_fingerprint.run.started import FirstUse


class Collected:
    run_id = "r"

    def __init__(self) -> None:
        self.values: list[tuple[dict[str, Any], int | None]] = []

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        self.values.append((dict(values), step))


def test_the_first_metric_is_told_once_and_every_value_reaches_the_sink() -> None:
    inner, told = Collected(), []
    sink = FirstUse(inner, lambda: told.append(len(inner.values)))
    for step in range(3):
        sink.log_metrics({"loss": float(step)}, step)
    assert told == [0]  # once, before the first value was handed on
    assert inner.values == [({"loss": 0.0}, 0), ({"loss": 1.0}, 1), ({"loss": 2.0}, 2)]
    assert sink.log_metrics == inner.log_metrics  # the wrapper stepped aside
    assert sink.run_id == "r"
