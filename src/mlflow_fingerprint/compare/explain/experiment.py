"""``explain(EXPERIMENT)``: read the experiment's runs in a few batched calls, then analyse them.

Which runs: the experiment's active runs (matching ``filter_string``, MLflow's search syntax),
FINISHED ones unless ``include_unfinished``; a run without the metric (at the step asked for), or
with a value that is not a number, is left out and listed with why. Which metric: the one asked
for, else the summary metric (logged once, at the end: what ``train()`` returned) most runs
share, else the metric most runs logged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from ... import layout
from ...errors import ExplainError, FingerprintError, ResolveError
from ...limits import check_step
from ...model.schema import check_version
from ...redact import masked_view
from ...tracking import experiment as reads
from ...tracking import store as tracking
from ...tracking.progress import Progress
from ...tracking.record_cache import RecordCache
from ..partial import has_fingerprint_tags, record_from_tags
from ..resolve import find_experiment_id, parse_record
from .analysis import analyse
from .result import Explanation, Group, LeftOut, Missing, Outlier
from .table import RunRecord, build

MIN_RUNS = 3
FINISHED = "FINISHED"
# Shown to a user whose experiment mixes fingerprinted runs with runs that are not.
ONLY_FINGERPRINTED = f"tags.`{layout.TAG_HASH}` LIKE '%'"


def _at(at: str | int) -> str | int:
    """``"final"`` or a step MLflow can store (``limits.check_step``)."""
    if at == "final":
        return "final"
    step: Any = at
    if isinstance(at, str) and at.strip().isdigit():
        step = int(at)
    try:
        return check_step("--at", step)
    except ValueError:
        raise ExplainError(f"--at must be final or a step >= 0, not {at!r}") from None


def _search(
    mlflow_client: Any, uri: str, experiment_id: str, filter_string: str, progress: Progress
) -> list[Any]:
    server = uri.startswith(("http://", "https://"))  # its workers answer slices at once
    try:
        return reads.search(
            mlflow_client, [experiment_id], filter_string, parallel=server, progress=progress
        )
    except Exception as exc:
        if getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE":
            raise ExplainError(
                f"bad --filter {filter_string!r}: {tracking.first_line(exc)}"
            ) from None
        with tracking.store_errors(uri):
            raise


def choose_metric(runs: Sequence[reads.StoredRun]) -> tuple[str, str]:
    """The summary metric most runs share (a metric whose latest value is at step 0: logged
    once), else the metric most runs logged; and a note saying which and why."""
    summaries = Counter(k for r in runs for k, step in r.metric_steps.items() if step == 0)
    if summaries:
        name, count = min(summaries.items(), key=lambda kv: (-kv[1], kv[0]))
        return name, (
            f"metric {name}: the summary metric {count} of {len(runs)} runs share "
            "(--metric picks another)"
        )
    logged = Counter(k for r in runs for k in r.metrics)
    if not logged:
        raise ExplainError("the runs logged no metric")
    name, count = min(logged.items(), key=lambda kv: (-kv[1], kv[0]))
    return (
        name,
        f"metric {name}: the metric {count} of {len(runs)} runs logged (--metric picks another)",
    )


def refused(run: reads.StoredRun) -> str | None:
    """Why a run's record must not be read at all: its ``fingerprint.schema`` tag says a newer
    release wrote it (``check_version``, which every reader of records calls); None if not."""
    schema = run.tags.get(layout.TAG_SCHEMA, "")
    try:
        check_version(int(schema) if schema.isdigit() else None, f"run {run.run_id}")
    except FingerprintError as exc:
        return str(exc)
    return None


# What :func:`_parsed` has parsed: a bytes object's id -> (it, its record); ("packages",
# digest) -> that package list.
Parsed = dict[Any, Any]


def _parsed(data: bytes, run_id: str, seen: Parsed) -> dict[str, Any]:
    """``data`` parsed, once per bytes object: runs that share a record (``reads.read_records``)
    share its sections too, and records with one package digest share one package list (the
    largest section), so memory grows with the distinct records, not the runs. A record that
    does not parse is parsed again for each run, so its error names that run."""
    hit = seen.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    record, _ = parse_record(data, f"run {run_id}", frozen=False)
    packages = record.get("packages")
    digest = packages.get("digest") if isinstance(packages, dict) else None
    if isinstance(digest, str):
        record["packages"] = seen.setdefault(("packages", digest), packages)
    seen[id(data)] = (data, record)
    return record


def _record(run: reads.StoredRun, data: bytes | None, seen: Parsed) -> tuple[RunRecord, str | None]:
    """The run's record as the analysis reads it, and why it is not whole where it is not. A
    user's params are shown masked where they look secret, as ``diff`` shows them."""
    user = tracking.user_params(dict(run.params))
    params = {shown(k): shown(v, k) for k, v in user.items()}
    why = "no fingerprint artifact"
    if data is not None:
        try:
            record = _parsed(data, run.run_id, seen)
            return RunRecord(run.run_id, {**record, "params": params}, "full"), None
        except ResolveError as exc:
            why = str(exc)
    if has_fingerprint_tags(run.tags):
        return RunRecord(run.run_id, {**record_from_tags(run.tags), "params": params}, "tags"), why
    return RunRecord(run.run_id, {"params": params}, "params"), why


def explain(
    experiment: str,
    *,
    metric: str | None = None,
    at: str | int = "final",
    filter_string: str | None = None,
    tracking_uri: str | None = None,
    include_unfinished: bool = False,
    progress: bool | Progress = False,
) -> Explanation:
    """Which recorded differences account for the spread of ``metric`` across the runs of
    ``experiment`` (a name or id), how much of it is noise, and what these runs cannot separate.

    ``at`` is ``"final"`` (each run's last value) or a step. ``progress``: a line on stderr
    (where it is a terminal) while a read takes over 2 s (``tracking.progress``; the line is
    cleared once the runs are read, and by the caller's ``close`` of a ``Progress`` it passed).
    Raises ``ExplainError`` (one line, a ``FingerprintError``) for an unknown experiment or
    metric and for fewer than 3 runs; ``ResolveError`` when the store does not answer."""
    step = _at(at)
    uri = tracking.effective_uri(tracking_uri)
    mlflow_client = tracking.reader(uri)
    experiment_id = find_experiment_id(mlflow_client, experiment, uri)
    if not isinstance(progress, Progress):
        progress = Progress(progress)
    runs = _search(mlflow_client, uri, experiment_id, filter_string or "", progress)
    where = f" matching --filter {filter_string!r}" if filter_string else ""
    if not runs:
        raise ExplainError(f"experiment {experiment!r} has no runs{where}")
    left: list[LeftOut] = []
    kept = []
    for run in runs:
        if run.status == FINISHED or include_unfinished:
            kept.append(run)
        else:
            left.append(LeftOut(run.run_id, f"status {run.status}", _name(run)))
    notes = []
    if metric is None:
        metric, note = choose_metric(kept or runs)
        notes.append(note)
    elif not any(metric in r.metrics for r in runs):
        names = sorted({k for r in runs for k in r.metrics})
        has = f"; its runs logged {', '.join(names[:8])}" if names else "; its runs logged none"
        raise ExplainError(f"no run of experiment {experiment!r} logged metric {metric!r}{has}")
    values = _values(mlflow_client, uri, kept, metric, step)
    used, y = [], []
    for run in kept:
        value = values.get(run.run_id)
        newer = refused(run)
        if newer is not None:
            left.append(LeftOut(run.run_id, newer, _name(run)))
        elif value is None:
            at_step = "" if step == "final" else f" at step {step}"
            left.append(LeftOut(run.run_id, f"no {metric}{at_step}", _name(run)))
        elif not np.isfinite(value):
            left.append(LeftOut(run.run_id, f"{metric} is {value}", _name(run)))
        else:
            used.append(run)
            y.append(value)
    if len(used) < MIN_RUNS:
        raise ExplainError(
            f"explain needs at least {MIN_RUNS} runs with {metric}: experiment {experiment!r} "
            f"has {len(used)}{where}" + (f" ({_left_summary(left)} left out)" if left else "")
        )
    data = reads.read_records(
        used, uri, reader=mlflow_client, progress=progress, cache=RecordCache.beside_spool()
    )
    progress.close()
    return _explained(
        experiment, experiment_id, metric, step, used, data, np.array(y), left, notes, tracking_uri
    )


@cache
def shown(text: str, name: str | None = None) -> str:
    """A user's value as a report shows it (``masked_view``; the value of a param whose
    ``name`` says it is secret, masked whole); a sweep repeats its values, so each is judged
    once."""
    return masked_view(text, name=name)


def _name(run: reads.StoredRun) -> str | None:
    return shown(run.name) if run.name else run.name


def _left_summary(left: Sequence[LeftOut]) -> str:
    return ", ".join(f"{n} {why}" for why, n in Counter(x.why for x in left).most_common(3))


def _values(
    mlflow_client: Any, uri: str, runs: Sequence[reads.StoredRun], metric: str, step: str | int
) -> dict[str, float]:
    if step == "final":
        return {r.run_id: r.metrics[metric] for r in runs if metric in r.metrics}
    ids = [r.run_id for r in runs if metric in r.metrics]
    with tracking.store_errors(uri):
        return reads.values_at_step(mlflow_client, uri, ids, metric, int(step))


def _explained(
    experiment: str,
    experiment_id: str,
    metric: str,
    step: str | int,
    used: Sequence[reads.StoredRun],
    data: Mapping[str, bytes | None],
    y: np.ndarray,
    left: list[LeftOut],
    notes: list[str],
    tracking_uri: str | None,
) -> Explanation:
    rows, partial, seen = [], {}, {}
    for run in used:
        row, why = _record(run, data[run.run_id], seen)
        rows.append(row)
        if why is not None:
            partial[run.run_id] = (row.coverage, why)
    table = build(rows)
    found = analyse(table, y)
    plain = sum(coverage == "params" for coverage, _ in partial.values())
    tagged = len(partial) - plain
    if plain:
        notes.append(
            f"{plain} of {len(used)} runs have no fingerprint (only their params): explained "
            "with the fields every run holds; to explain the fingerprinted runs alone, add "
            f'--filter "{ONLY_FINGERPRINTED}"'
        )
    if tagged:
        notes.append(
            f"{tagged} of {len(used)} runs have a fingerprint artifact that could not be read: "
            "what their fingerprint.* tags hold stands in for it, as in diff"
        )
    group_ids = {}
    groups = []
    for g in np.nonzero(found.groups.sizes >= 2)[0]:
        members = found.groups.members(int(g))
        group_ids[int(g)] = f"g{len(groups) + 1}"
        groups.append(
            Group(
                group_ids[int(g)],
                tuple(used[i].run_id for i in members),
                float(y[members].mean()),
                float(np.std(y[members], ddof=1)),
            )
        )
    suffix = f" --tracking-uri {tracking.shown(tracking_uri)}" if tracking_uri else ""
    outliers = tuple(
        Outlier(
            used[o.run].run_id,
            group_ids[o.group],
            o.z,
            f"fingerprint diff {used[o.reference].run_id} {used[o.run].run_id}{suffix}",
            _name(used[o.run]),
            float(y[o.run]),
        )
        for o in found.outlying
    )
    return Explanation(
        experiment=experiment,
        experiment_id=experiment_id,
        metric=metric,
        at=step,
        runs=len(used),
        mean=float(y.mean()),
        sd=float(np.std(y, ddof=1)),
        noise=found.noise,
        factors=found.factors,
        ruled_out=found.ruled_out,
        outliers=outliers,
        missing=Missing(
            tuple(partial),
            table.missing,
            {run_id: coverage for run_id, (coverage, _) in partial.items()},
            {run_id: why for run_id, (_, why) in partial.items()},
        ),
        separate_by=found.separate_by,
        left_out=tuple(left),
        groups=tuple(groups),
        notes=(*notes, *found.notes),
    )
