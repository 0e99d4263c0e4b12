"""Whose curve a rerun followed: its metrics against a recorded run's, bit for bit.

A run's metrics are its curves and its summary (``compare.summary``). A rerun is compared on the
curves, inside the window of steps it ran (up to the step it stops after); the summary values,
logged once at the end, are compared only where both runs ran to their end: a rerun stopped
early never logs them, and that is no divergence (docs/design.md, "Curves and summaries").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..compare.metrics import bitwise_equal, first_divergence
from ..compare.summary import curves_of
from ..tracking import history
from ..tracking import store as tracking
from ..tracking.history import History


@dataclass(frozen=True)
class Metrics:
    """One run's metrics as a rerun compares them: its curves (up to a step, or whole) and its
    summary (empty where the window stops before the run's end)."""

    curves: Mapping[str, History]
    summary: Mapping[str, History]

    def up_to(self, until: int | None) -> Metrics:
        """The curves without the steps after ``until``, and no summary; all of it for None."""
        if until is None:
            return self
        kept = {}
        for name, h in self.curves.items():
            inside = h.steps <= until
            kept[name] = History(h.steps[inside], h.values[inside])
        return Metrics(kept, {})


def read(uri: str, run_id: str, names: Sequence[str]) -> Metrics:
    """A run's metrics ``names``, as stored."""
    with tracking.store_errors(uri):
        found = history.fetch(tracking.client(uri), uri, run_id, names)
    curves, summary = curves_of(found)
    return Metrics(curves, summary)


def parted_at(x: Mapping[str, History], y: Mapping[str, History]) -> int | None:
    """The first step where any curve the two share differs; None where none does."""
    steps = [
        s for name in x.keys() & y.keys() if (s := first_divergence(x[name], y[name])) is not None
    ]
    return min(steps) if steps else None


def summary_differs(x: Metrics, y: Metrics) -> tuple[str, ...]:
    """The summary metrics both runs logged whose values are not equal, bit for bit."""
    shared = sorted(x.summary.keys() & y.summary.keys())
    return tuple(n for n in shared if not bitwise_equal(x.summary[n], y.summary[n]))


@dataclass(frozen=True)
class Comparison:
    """A rerun's metrics against a recorded run's."""

    parted: int | None  # the first step where a curve differs
    summary: tuple[str, ...]  # summary values that differ (only where both ran to their end)

    @property
    def same(self) -> bool:
        return self.parted is None and not self.summary


def compare(got: Metrics, reference: Metrics, until: int | None, stopped: bool) -> Comparison:
    """``got`` (a rerun) against ``reference``: a rerun stopped after step ``until`` on the
    curves up to there; one that ran to its end on everything, its summary included."""
    window = until if stopped else None
    ours, theirs = got.up_to(window), reference.up_to(window)
    differ = summary_differs(ours, theirs) if window is None else ()
    return Comparison(parted_at(ours.curves, theirs.curves), differ)
