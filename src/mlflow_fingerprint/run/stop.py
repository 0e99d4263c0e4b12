"""``MLFLOW_FINGERPRINT_STOP_AFTER``: end a training once a metric past a step has been logged.

A rerun only needs the steps up to where two runs part, so ``fingerprint rerun --until-step N``
stops the training there rather than running it to the end. The stop is taken where every value
of a run passes (its metric sink: ``mfp.log_metrics``, ``run.log_metrics``, a trainer callback
logging into a ``fingerprinted`` run): the value is handed on first, so it is stored, then
``TrainingStopped`` unwinds train() to the decorator, which ends the run FINISHED.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import TrainingStopped
from .current import MetricSink


def step_number(step: Any) -> int | None:
    """``step`` as an int (a python int, a numpy or 0-d torch integer), None if it is none."""
    if step is None or isinstance(step, bool):
        return None
    try:
        return operator.index(step)
    except TypeError:
        try:
            return int(step)
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True, eq=False)
class StoppingSink:
    """A run's metric sink that stops the training after logging a value past ``stop_after``.
    Steps up to ``stop_after`` never stop it; values logged without a step do not count."""

    inner: MetricSink
    stop_after: int

    @property
    def run_id(self) -> str | None:
        return self.inner.run_id

    def __getattr__(self, name: str) -> Any:
        """Everything else is the wrapped sink's: ``mfp.watch`` writes its records through the
        run's writer (``record``) and reads its ranks, and a rerun stopped early must still write
        the steps it watched (a rerun's watched steps were lost without this, seen on an H100)."""
        if name == "inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        self.inner.log_metrics(values, step)
        number = step_number(step)
        if number is not None and number > self.stop_after:
            raise TrainingStopped(number)
