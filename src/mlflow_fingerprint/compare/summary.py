"""Curves and summaries: which of a run's metrics are points of a curve, and which its summary
(docs/design.md, "Curves and summaries").

A metric logged at training steps is a curve. A metric a run logs once at its end (the dict
``train()`` returns, a test accuracy logged after the loop) is its summary: MLflow stores a value
logged without a step at step 0, so read as a curve it would "part at step 0" from any run whose
value differs, and from every rerun stopped early, which never logs it. What tells the two apart
is when a value was logged: a metric with a single value, logged no earlier than the last value
of the run's curves, is a summary. A run with no curve (every metric logged once) has no summary:
its single values are compared as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy's arrays: a diff of two fingerprint files reads no history
    from ..tracking.history import History


@dataclass(frozen=True)
class Logged:
    """How a run logged one metric: how many values, and when the last one."""

    count: int
    last_ms: int | None

    @staticmethod
    def of(history: History) -> Logged:
        times = history.times
        last = int(times.max()) if times is not None and len(times) else None
        return Logged(len(history), last)


def summary_names(logged: Mapping[str, Logged]) -> frozenset[str]:
    """The metrics of one run (``name -> Logged``) that are its summary."""
    curves = [m for m in logged.values() if m.count > 1]
    if not curves or any(m.last_ms is None for m in curves):
        return frozenset()
    end = max(m.last_ms for m in curves if m.last_ms is not None)
    return frozenset(
        name
        for name, m in logged.items()
        if m.count == 1 and m.last_ms is not None and m.last_ms >= end
    )


def shared_summaries(a: Mapping[str, Logged], b: Mapping[str, Logged]) -> frozenset[str]:
    """The metrics compared as a summary between two runs: one value in each, and a summary in
    at least one of them (the other may have run without curves: a stopped rerun never does)."""
    single = {n for n in a.keys() & b.keys() if a[n].count == 1 and b[n].count == 1}
    return frozenset(single & (summary_names(a) | summary_names(b)))


def curves_of(histories: Mapping[str, History]) -> tuple[dict[str, History], dict[str, History]]:
    """A run's histories split in two: (its curves, its summary)."""
    summary = summary_names({n: Logged.of(h) for n, h in histories.items()})
    curves = {n: h for n, h in histories.items() if n not in summary}
    return curves, {n: h for n, h in histories.items() if n in summary}
