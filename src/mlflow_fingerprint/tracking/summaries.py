"""What choosing the runs and the metric reads of each run of an experiment, a column at a time:
its id and name (a ``Roster``), its status, its ``fingerprint.schema`` tag, and each metric's
latest value and the step it was logged at.

Why: ``explain`` chooses its metric and its runs from every run's summary before it reads a
record, so every summary is held at once. A ``StoredRun`` a run (the object, its id and name,
a mapping of its metrics with a float object each) was about 400 bytes a run: 38 MiB of a
100,000-run history, the most ``explain`` held. Held as columns, a run is its id and name
(about 60 bytes), two small codes (8) and 20 bytes for each metric it logged.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..layout import TAG_SCHEMA
from .experiment import StoredRun
from .roster import Roster

# The step of a latest value a reader gave none for: never 0, so never read as a summary metric.
NO_STEP = -1


@dataclass(frozen=True)
class Metric:
    """One metric: the runs that logged it (their positions, increasing), its latest value in
    each and the step that value was logged at (:data:`NO_STEP` where none was given)."""

    runs: array[int] = field(default_factory=lambda: array("q"))
    values: array[float] = field(default_factory=lambda: array("d"))
    steps: array[int] = field(default_factory=lambda: array("q"))


@dataclass(frozen=True)
class Codes:
    """A text for each run, as a code into the distinct texts (a status, a schema tag: a few
    values over thousands of runs)."""

    codes: array[int] = field(default_factory=lambda: array("i"))
    texts: list[str | None] = field(default_factory=list)
    _index: dict[str | None, int] = field(default_factory=dict)

    def append(self, text: str | None) -> None:
        code = self._index.get(text)
        if code is None:
            code = self._index[text] = len(self.texts)
            self.texts.append(text)
        self.codes.append(code)

    def __getitem__(self, i: int) -> str | None:
        return self.texts[self.codes[i]]


@dataclass(frozen=True)
class RunSummaries:
    """Runs' summaries in order, added one run at a time (:meth:`add`)."""

    roster: Roster = field(default_factory=Roster)
    statuses: Codes = field(default_factory=Codes)
    schemas: Codes = field(default_factory=Codes)  # None where the run has no schema tag
    metrics: dict[str, Metric] = field(default_factory=dict)

    def add_row(self, run: StoredRun) -> None:
        """The next run, from its row (a search's)."""
        self.add(
            run.run_id,
            run.name,
            run.status,
            run.tags.get(TAG_SCHEMA),
            ((k, v, run.metric_steps.get(k, NO_STEP)) for k, v in run.metrics.items()),
        )

    def add(
        self,
        run_id: str,
        name: str | None,
        status: str,
        schema: str | None,
        metrics: Iterable[tuple[str, float, int]],
    ) -> None:
        """The next run: its id, name, status, schema tag (None: none), and each metric's
        (name, latest value, its step)."""
        at = len(self.roster)
        self.roster.append(run_id, name)
        self.statuses.append(status)
        self.schemas.append(schema)
        for key, value, step in metrics:
            metric = self.metrics.get(key)
            if metric is None:
                metric = self.metrics[key] = Metric()
            metric.runs.append(at)
            metric.values.append(value)
            metric.steps.append(step)

    def __len__(self) -> int:
        return len(self.roster)

    def status(self, i: int) -> str:
        return self.statuses[i] or ""

    def schema(self, i: int) -> str | None:
        return self.schemas[i]
