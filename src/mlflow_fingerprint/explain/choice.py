"""Which runs a report analyses and which metric, read from the runs' summaries a column at a time.

Which runs: FINISHED ones unless told otherwise; a run without the metric (at the step asked
for), with a value that is not a number or is beyond :data:`MAX_VALUE`, or whose record a newer
release wrote, is left out and listed with why. Which metric: the one asked for, else the summary
metric (logged once, at the end: what ``train()`` returned) most runs share, else the metric most
runs logged; of those, the first that varies across the runs and is not a step count (``steps``,
``epoch``).

Why columns: every run's summary is read before a record is, and a history of 100,000 runs
held as one object a run (with a mapping of its metrics) was the most ``explain`` held
(``tracking.summaries``); the counts and the checks below are a few array operations per metric.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import ExplainError, FingerprintError
from ..model.schema import check_version
from ..tracking.summaries import Codes, RunSummaries

# The largest metric value explain analyses: its squares, summed over a million runs, stay far
# inside a float. MLflow stores an infinity as the largest float (1.797e308), so a diverged
# run's inf arrives finite; it and anything this large are left out and listed with why.
MAX_VALUE = 1e100
# What MLflow writes for +-inf (``sys.float_info.max``).
STORED_INFINITY = 1.7976931348623157e308
# Metrics that count the training rather than measure it (names with their separators dropped).
COUNTERS = frozenset(
    {"step", "steps", "globalstep", "numsteps", "totalsteps", "epoch", "epochs", "iteration"}
    | {"iterations", "iter", "iters", "batches", "numbatches", "samples", "numsamples"}
)
FINISHED = "FINISHED"


@dataclass(frozen=True)
class Logged:
    """One metric in the runs that logged it (of those a choice is among): their positions,
    its latest value in each and the step it was logged at."""

    runs: np.ndarray
    values: np.ndarray
    steps: np.ndarray


def logged(summaries: RunSummaries, among: np.ndarray) -> dict[str, Logged]:
    """Each metric the runs ``among`` (a mask of the summaries' runs) logged."""
    out = {}
    for name, metric in summaries.metrics.items():
        runs = np.frombuffer(metric.runs, dtype=np.int64)
        inside = among[runs]
        if inside.any():
            out[name] = Logged(
                runs[inside],
                np.frombuffer(metric.values, dtype=np.float64)[inside],
                np.frombuffer(metric.steps, dtype=np.int64)[inside],
            )
    return out


def kept(summaries: RunSummaries, include_unfinished: bool) -> np.ndarray:
    """The runs a report may use, as a mask: FINISHED ones, or every one."""
    if include_unfinished:
        return np.ones(len(summaries), dtype=bool)
    return _where(summaries.statuses, lambda status: status == FINISHED)


def counts_steps(name: str) -> bool:
    """A metric that counts the training (``steps``, ``epoch``, ``global_step``): equal in runs
    of one length, and never what a spread of results is about."""
    return re.sub(r"[^a-z]", "", name.lower()) in COUNTERS


def varies(metric: Logged) -> bool:
    """The runs that logged it do not all end on one value (each NaN a value of its own, as a
    set of the values counts them)."""
    nan = np.isnan(metric.values)
    ordered = np.sort(metric.values[~nan])  # not np.unique: it imports numpy.ma (1.2 MiB)
    distinct = int(np.count_nonzero(ordered[1:] != ordered[:-1])) + (len(ordered) > 0)
    return distinct + int(nan.sum()) > 1


def choose_metric(metrics: Mapping[str, Logged], runs: int) -> tuple[str, str]:
    """A metric that varies across the ``runs`` runs, never a step count: the summary metric
    most runs share (a metric whose latest value is at step 0: logged once), else the metric
    most runs logged; and a note saying which and why. Where no metric varies, the first of
    them, and the report says every run agrees on it."""
    at_zero = {k: int((m.steps == 0).sum()) for k, m in metrics.items()}
    summaries = Counter({k: n for k, n in at_zero.items() if n})
    counts = Counter({k: len(m.runs) for k, m in metrics.items()})
    if not counts:
        raise ExplainError("the runs logged no metric")
    ranked = [
        *(("the summary metric", k, n) for k, n in _by_count(summaries)),
        *(("the metric", k, n) for k, n in _by_count(counts) if k not in summaries),
    ]
    useful = [c for c in ranked if not counts_steps(c[1])] or ranked
    what, name, count = next((c for c in useful if varies(metrics[c[1]])), useful[0])
    verb = "share" if what == "the summary metric" else "logged"
    passed = ", the first that varies" if name != ranked[0][1] else ""
    return name, f"metric {name}: {what} {count} of {runs} runs {verb}{passed} " + (
        "(--metric picks another)"
    )


def _by_count(counts: Counter[str]) -> list[tuple[str, int]]:
    """Most runs first, then by name."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def refused(schema: str | None, run_id: str) -> str | None:
    """Why a run's record must not be read at all: its ``fingerprint.schema`` tag says a newer
    release wrote it (``check_version``, which every reader of records calls); None if not."""
    schema = schema or ""
    try:
        check_version(int(schema) if schema.isdigit() else None, f"run {run_id}")
    except FingerprintError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=1024)  # a schema tag is a run's text: bounded, however many kinds
def is_newer(schema: str | None) -> bool:
    """A run with this schema tag holds a newer release's record (:func:`refused`): judged once
    for each tag, however many runs carry it."""
    return refused(schema, "") is not None


def newer(summaries: RunSummaries) -> np.ndarray:
    """The runs whose schema tag names a newer release's record, as a mask."""
    return _where(summaries.schemas, is_newer)


def _where(column: Codes, holds: Callable[[str | None], bool]) -> np.ndarray:
    """The runs whose text ``holds`` says yes to, as a mask: each distinct text asked once
    (``np.isin`` would do it too, but imports ``numpy.ma`` for it)."""
    table = np.array([holds(text) for text in column.texts], dtype=bool)
    mask: np.ndarray = table[np.frombuffer(column.codes, dtype=np.int32)]
    return mask


@dataclass(frozen=True)
class Values:
    """The metric in each run: whether the run has a value, and the value (NaN where none)."""

    has: np.ndarray
    value: np.ndarray


def final_values(summaries: RunSummaries, metric: str, among: np.ndarray) -> Values:
    """Each run's latest value of ``metric``, for the runs ``among``."""
    has: np.ndarray = np.zeros(len(summaries), dtype=bool)
    value = np.full(len(summaries), np.nan)
    column = summaries.metrics.get(metric)
    if column is not None:
        runs = np.frombuffer(column.runs, dtype=np.int64)
        has[runs] = True
        value[runs] = np.frombuffer(column.values, dtype=np.float64)
    return Values(has & among, value)


def step_values(
    summaries: RunSummaries,
    metric: str,
    among: np.ndarray,
    read: Callable[[list[str]], Mapping[str, float]],
) -> Values:
    """Each run's value of ``metric`` at a step, for the runs ``among`` that logged it: ``read``
    takes their ids and gives each one's value there (none where it logged none)."""
    has: np.ndarray = np.zeros(len(summaries), dtype=bool)
    value = np.full(len(summaries), np.nan)
    column = summaries.metrics.get(metric)
    if column is None:
        return Values(has, value)
    runs = np.frombuffer(column.runs, dtype=np.int64)
    candidates = runs[among[runs]].tolist()
    ids = [summaries.roster.run_id(i) for i in candidates]
    found = read(ids)
    for i, run_id in zip(candidates, ids, strict=True):
        at = found.get(run_id)
        if at is not None:
            has[i] = True
            value[i] = at
    return Values(has, value)


def out_of_range(values: np.ndarray) -> np.ndarray:
    """Values a report leaves out, as a mask: not a number, infinite, or beyond MAX_VALUE."""
    mask: np.ndarray = ~np.isfinite(values) | (np.abs(values) > MAX_VALUE)
    return mask


def why_out_of_range(metric: str, value: float) -> str:
    """Why a value is left out: not a number, infinite however stored, or beyond MAX_VALUE
    (said without the value, so runs left out for one reason are counted together)."""
    if np.isnan(value):
        return f"{metric} is nan"
    if np.isinf(value) or abs(value) >= STORED_INFINITY:
        sign = "-" if value < 0 else ""
        return f"{metric} is {sign}inf (MLflow stores it as {sign}1.797e308)"
    return f"{metric} is beyond the range explain analyses (±{MAX_VALUE:g})"
