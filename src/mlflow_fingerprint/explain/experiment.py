"""``explain(EXPERIMENT)``: read the experiment's runs in a few batched calls, then analyse them.

Which runs: the experiment's active runs (matching ``filter_string``, MLflow's search syntax),
FINISHED ones unless ``include_unfinished``; a run without the metric (at the step asked for), or
with a value that is not a number, is left out and listed with why. Which metric: the one asked
for, else the summary metric (logged once, at the end: what ``train()`` returned) most runs
share, else the metric most runs logged; of those, the first that varies across the runs and is
not a step count (``steps``, ``epoch``). Where every run has the same value, there is nothing to
explain, and the report is one line saying so.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import layout
from ..compare.partial import has_fingerprint_tags, record_from_tags
from ..compare.resolve import find_experiment_id, parse_record
from ..errors import ExplainError, ResolveError
from ..model.vocabulary import Coverage
from ..redact import masked_view
from ..tracking import experiment as reads
from ..tracking import sqlite_runs
from ..tracking import store as tracking
from ..tracking.progress import Progress
from ..tracking.record_cache import RecordCache
from ..tracking.roster import Roster, RunIds
from ..tracking.summaries import RunSummaries
from . import choice, replicas
from .analysis import analyse
from .options import ExplainOptions
from .records import Records
from .result import Explanation, Group, LeftOut, Missing, Noise, Outlier
from .table import Table, build

MIN_RUNS = 3
# The clauses of a --filter (MLflow's filters join clauses with AND only), quoted values aside.
MAX_CLAUSES = 100
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
# Shown to a user whose experiment mixes fingerprinted runs with runs that are not.
ONLY_FINGERPRINTED = f"tags.`{layout.TAG_HASH}` LIKE '%'"


def _search(
    mlflow_client: Any, uri: str, experiment_id: str, filter_string: str, progress: Progress
) -> Iterator[list[reads.StoredRun]]:
    """The runs ``filter_string`` matches, page by page as the store gives them. A filter the
    store refuses, or cannot evaluate where the same search without it succeeds (a filter of
    400 clauses is past what sqlite takes), is a bad --filter, said in one line: not a failure
    of the store. What the caller does with a page raises as it would anywhere."""
    clauses = len(_AND.split(_QUOTED.sub("''", filter_string))) if filter_string else 0
    if clauses > MAX_CLAUSES:
        raise ExplainError(
            f"bad --filter {_shown_filter(filter_string)}: {clauses} clauses, more than the "
            f"{MAX_CLAUSES} explain sends to a store (sqlite joins a table per clause, 200 at "
            "most, and such a query takes minutes to build)"
        )
    server = uri.startswith(("http://", "https://"))  # its workers answer slices at once
    pages = reads.search_pages(
        mlflow_client, [experiment_id], filter_string, parallel=server, progress=progress
    )
    while True:
        try:
            with tracking.sql_log_off():
                page = next(pages, None)
        except Exception as exc:
            refused = getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE"
            if filter_string and (refused or _answers(mlflow_client, experiment_id)):
                raise ExplainError(
                    f"bad --filter {_shown_filter(filter_string)}: {tracking.first_line(exc)}"
                ) from None
            with tracking.store_errors(uri):
                raise
        if page is None:
            return
        yield page


def _answers(mlflow_client: Any, experiment_id: str) -> bool:
    """Whether the store answers a search of the experiment without a filter."""
    try:
        with tracking.sql_log_off():
            mlflow_client.search_runs([experiment_id], max_results=1)
    except Exception:
        return False
    return True


def _shown_filter(filter_string: str, limit: int = 80) -> str:
    """The filter as an error line names it: whole where short, else its start and its size."""
    if len(filter_string) <= limit:
        return repr(filter_string)
    return f"{filter_string[:limit]!r}… ({len(filter_string)} characters)"


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
        parsed: dict[str, Any] = hit[1]  # Parsed holds (data, its record) under id(data)
        return parsed
    record, _ = parse_record(data, f"run {run_id}", frozen=False)
    packages = record.get("packages")
    digest = packages.get("digest") if isinstance(packages, dict) else None
    if isinstance(digest, str):
        record["packages"] = seen.setdefault(("packages", digest), packages)
    seen[id(data)] = (data, record)
    return record


# Each distinct set of params a run logged, as :func:`_params` shows it: (name, value) pairs ->
# the one mapping the runs that logged them share.
SharedParams = dict[tuple[tuple[str, str], ...], Mapping[str, str]]


def _params(run: reads.StoredRun, held: SharedParams) -> Mapping[str, str]:
    """A user's params, shown masked where they look secret, as ``diff`` shows them; one
    mapping for the runs that logged the same ones (``held``): a sweep logs a few sets of
    params over many seeds, and a mapping in each run's record was most of a replicate's
    record (18 MiB at 100,000 runs). Nothing writes to it."""
    user = tracking.user_params(dict(run.params))
    pairs = tuple((shown(k), shown(v, k)) for k, v in user.items())
    shared = held.get(pairs)
    if shared is None:  # a mapping made only for a set of params not seen before
        shared = held[pairs] = dict(pairs)
    return shared


@dataclass(frozen=True, slots=True)
class Made:
    """A run's record as a page makes it (``Records.add`` holds it): a replicate's
    ``Reseeded``, else the record read for it or what its tags say, without its params (None
    where it has neither); its params; and why it is not whole, where it is not."""

    coverage: Coverage
    record: Mapping[str, Any] | None
    params: Mapping[str, str]
    why: str | None = None


def _record(run: reads.StoredRun, data: bytes | None, lending: Lending) -> Made:
    """The run's record as the analysis reads it, and why it is not whole where it is not."""
    params = _params(run, lending.params)
    seen = lending.seen
    why = "no fingerprint artifact"
    if data is not None:
        try:
            return Made("full", _parsed(data, run.run_id, seen), params)
        except ResolveError as exc:
            why = str(exc)
    if has_fingerprint_tags(run.tags):
        return Made("tags", record_from_tags(run.tags), params, why)
    return Made("params", None, params, why)


@dataclass(frozen=True)
class Asked:
    """What a report is about: the experiment (as named, and its id), the metric, the step, and
    the store its outliers' ``diff`` commands name."""

    experiment: str
    experiment_id: str
    metric: str
    at: str | int
    tracking_uri: str | None


@dataclass(frozen=True)
class Lending:
    """What the pages of runs read so far hold for the next ones: the base of each recipe's
    replicates (``replicas.group_key`` -> the first run with it) and what it lends them (None
    where its record is not whole or not sound), each record parsed (``_parsed``), each set of
    params (``_params``), and the records read from remote stores before (``RecordCache``)."""

    cache: RecordCache | None
    bases: dict[tuple[str, ...], str] = field(default_factory=dict)
    lenders: dict[tuple[str, ...], replicas.Base | None] = field(default_factory=dict)
    seen: Parsed = field(default_factory=dict)
    params: SharedParams = field(default_factory=dict)


@dataclass(frozen=True)
class Read:
    """Every run's record (``Records``, in the runs' order) and, for each run read without its
    whole record, its coverage and why."""

    records: Records
    partial: dict[str, tuple[Coverage, str]]


def _read(
    pages: Iterable[list[reads.StoredRun]],
    uri: str,
    mlflow_client: Any,
    progress: Progress,
    total: int,
) -> Read:
    """Each run's record and why it is not whole, page after page, in the runs' order: one
    record read per recipe, the others of its replicates derived from it and checked by their
    own hashes (``replicas``); a run whose record cannot be derived so is read for itself, as
    are runs without the tags.

    Each page is emptied as its records are made (:func:`_take`). ``total``: the runs of all
    pages, counted on the progress line page by page."""
    lending = Lending(RecordCache.beside_spool())
    progress.stage("records", total)
    read = Read(Records(), {})
    for page in pages:
        count = len(page)
        _take(read, page, lending, uri, mlflow_client)
        progress.add(count)
    return read


def _take(
    read: Read, page: list[reads.StoredRun], lending: Lending, uri: str, mlflow_client: Any
) -> None:
    """The records of a page of runs added to ``read``, the page emptied as they are made: a
    derived run's row goes once its record is made, so a history's rows and its records are
    never all held at once, and what a page holds by run (its records by id, the runs its bases
    stand for) is a page's worth. The records are held as ``Records`` hold them: a few dozen
    bytes a run."""
    for run_id, made in _read_page(page, lending, uri, mlflow_client):
        read.records.add(made.coverage, made.record, made.params)
        if made.why is not None:
            read.partial[run_id] = (made.coverage, made.why)


@dataclass(frozen=True)
class Streamed:
    """What a search's pages leave as they go (:func:`_streamed`): each run's summary, the
    records of the runs a report may use, and each run's place among those records (-1 where
    its record is not read: unfinished, or a newer release's)."""

    summaries: RunSummaries
    read: Read
    at: array[int]


def _streamed(
    pages: Iterable[list[reads.StoredRun]],
    include_unfinished: bool,
    uri: str,
    mlflow_client: Any,
) -> Streamed:
    """A search's runs made into summaries and records page by page as the store gives them,
    each page's rows dropped once made: a history's rows are never all held (about 1 KB a run
    through the REST reader). A run a report cannot use whatever the metric (unfinished, a
    newer release's record) is summarised, and its record not read."""
    out = Streamed(RunSummaries(), Read(Records(), {}), array("q"))
    lending = Lending(RecordCache.beside_spool())
    for page in pages:
        readable: list[reads.StoredRun] = []
        for run in page:
            out.summaries.add_row(run)
            finished = run.status == choice.FINISHED or include_unfinished
            if finished and not choice.is_newer(run.tags.get(layout.TAG_SCHEMA)):
                out.at.append(len(out.read.records) + len(readable))
                readable.append(run)
            else:
                out.at.append(-1)
        page.clear()
        _take(out.read, readable, lending, uri, mlflow_client)
    return out


def _used(streamed: Streamed, used: np.ndarray, usable: np.ndarray) -> Read:
    """The records of the runs at positions ``used`` (``usable``, as a mask): the streamed
    records themselves where those are every run's."""
    read = streamed.read
    places = np.frombuffer(streamed.at, dtype=np.int64)[used]
    if len(places) == len(read.records):
        return read
    roster = streamed.summaries.roster
    partial = {}
    if read.partial:
        for i in np.flatnonzero(usable).tolist():
            run_id = roster.run_id(i)
            if run_id in read.partial:
                partial[run_id] = read.partial[run_id]
    return Read(read.records.subset(places.tolist()), partial)


def _read_page(
    page: list[reads.StoredRun],
    lending: Lending,
    uri: str,
    mlflow_client: Any,
) -> list[tuple[str, Made]]:
    """:func:`_read` of one page, with what the pages before it lend (``lending``): each run's
    id and record, in the page's order."""
    out: dict[str, Made] = {}
    order = [run.run_id for run in page]

    def parse(runs: Sequence[reads.StoredRun]) -> None:
        data = reads.read_records(runs, uri, reader=mlflow_client, cache=lending.cache)
        for run in runs:
            out[run.run_id] = _record(run, data[run.run_id], lending)

    stand_in: dict[str, tuple[str, ...]] = {}  # a run a base stands for -> its group key
    fresh: list[tuple[reads.StoredRun, tuple[str, ...]]] = []  # the bases first seen here
    own = []
    for run in page:
        key = replicas.group_key(run)
        if key is not None:
            if lending.bases.setdefault(key, run.run_id) != run.run_id:
                stand_in[run.run_id] = key
                continue
            fresh.append((run, key))
        own.append(run)
    parse(own)
    for run, key in fresh:
        base = out[run.run_id]
        if base.coverage == "full" and base.record is not None:
            whole = {**base.record, "params": base.params}
            lending.lenders[key] = replicas.lender(whole, run.tags)
        else:
            lending.lenders[key] = None
    unread = []
    while page:
        run = page.pop()  # the row goes here, unless its record must be read
        key = stand_in.get(run.run_id)
        if key is None:
            continue
        lent = lending.lenders[key]
        params = _params(run, lending.params)
        record = lent.derived(run, params) if lent is not None else None
        if record is None:
            unread.append(run)
        else:
            out[run.run_id] = Made("full", record, params)
    if unread:
        parse(unread[::-1])  # in the runs' order, as popped in reverse
    return [(run_id, out[run_id]) for run_id in order]


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
    cleared once the runs are read, and by the caller's ``close`` of a ``Progress`` it passed);
    the keywords are those of ``ExplainOptions``.
    Raises ``ExplainError`` (one line, a ``FingerprintError``) for an unknown experiment or
    metric and for fewer than 3 runs; ``ResolveError`` when the store does not answer."""
    options = ExplainOptions(
        metric=metric,
        at=at,
        filter_string=filter_string,
        tracking_uri=tracking_uri,
        include_unfinished=include_unfinished,
        progress=progress,
    )
    return explain_with(experiment, options)


@dataclass(frozen=True)
class Chosen:
    """The runs a report analyses (their ids and names), with their values of the metric, and
    what it says beside; and their records where a search's pages were made into them as they
    came, else the store's file their rows are read from."""

    asked: Asked
    named: Roster
    y: np.ndarray
    left: list[LeftOut]
    notes: list[str]
    mlflow_client: Any  # None where the store's tables were read without a reader
    read: Read | None  # the records of the runs, made from a search's pages
    tables: Path | None = None  # else the file their rows are read from


def explain_with(experiment: str, options: ExplainOptions) -> Explanation:
    """``explain`` of ``experiment`` as ``options`` say (the command line builds them from its
    own)."""
    uri = tracking.effective_uri(options.tracking_uri)
    progress = options.progress
    if not isinstance(progress, Progress):
        progress = Progress(progress)
    chosen = _chosen(experiment, options, uri, progress)
    if isinstance(chosen, Explanation):
        return chosen
    asked, named, y, left, notes = chosen.asked, chosen.named, chosen.y, chosen.left, chosen.notes
    # what the report names a run by is all it keeps of a run's summary (the summaries went
    # with ``_chosen``): a search's rows went as their records were made, a store's are read by
    # id (``whole_rows``), and the records go once the table is made from them: nothing but the
    # table reaches the analysis
    read = chosen.read
    if read is None:
        assert chosen.tables is not None  # the runs came from the store's tables
        pages = sqlite_runs.whole_rows(chosen.tables, named, asked.experiment_id)
        read = _read(pages, uri, chosen.mlflow_client, progress, len(named))
    del chosen
    tabled = _tabled(read)
    del read
    progress.close()
    # values are bounded above, so numpy has nothing to warn of; none of its lines reaches a user
    with np.errstate(all="ignore"):
        return _explained(asked, named, tabled, y, left, notes)


def _chosen(
    experiment: str, options: ExplainOptions, uri: str, progress: Progress
) -> Chosen | Explanation:
    """The runs to analyse and their values; where they all agree on the metric, the report."""
    metric, step, filter_string = options.metric, options.at, options.filter_string
    # a local sqlite store, unfiltered: the runs' summaries read from its tables, their whole
    # rows later, page by page (``sqlite_runs``); otherwise, or where they cannot be read so,
    # the store's reader (MLflow's client, the REST reader), the summaries made from its rows
    direct = None if filter_string else sqlite_runs.summaries(uri, experiment, progress)
    tables, streamed = None, None
    if direct is not None:
        mlflow_client = None
        experiment_id, runs, tables = direct.experiment_id, direct.runs, direct.path
    else:
        mlflow_client = tracking.reader(uri)
        experiment_id = find_experiment_id(mlflow_client, experiment, uri)
        pages = _search(mlflow_client, uri, experiment_id, filter_string or "", progress)
        streamed = _streamed(pages, options.include_unfinished, uri, mlflow_client)
        runs = streamed.summaries
    del direct
    where = f" matching --filter {filter_string!r}" if filter_string else ""
    if not len(runs):
        raise ExplainError(f"experiment {experiment!r} has no runs{where}")
    roster = runs.roster
    left: list[LeftOut] = []
    kept = choice.kept(runs, options.include_unfinished)
    for i in np.flatnonzero(~kept).tolist():
        why = f"status {runs.status(i)}"
        left.append(LeftOut(roster.run_id(i), why, _name(roster.name(i))))
    notes = []
    if metric is None:
        among = kept if kept.any() else np.ones(len(runs), dtype=bool)
        metric, note = choice.choose_metric(choice.logged(runs, among), int(among.sum()))
        notes.append(note)
    elif metric not in runs.metrics:
        names = sorted(runs.metrics)
        has = f"; its runs logged {', '.join(names[:8])}" if names else "; its runs logged none"
        raise ExplainError(f"no run of experiment {experiment!r} logged metric {metric!r}{has}")
    values = _values(mlflow_client, uri, runs, kept, metric, step)
    newer = choice.newer(runs)
    wild = choice.out_of_range(values.value)
    usable = kept & ~newer & values.has & ~wild
    for i in np.flatnonzero(kept & ~usable).tolist():
        run_id = roster.run_id(i)
        if newer[i]:
            why = choice.refused(runs.schema(i), run_id) or ""
        elif not values.has[i]:
            why = f"no {metric}" + ("" if step == "final" else f" at step {step}")
        else:
            why = choice.why_out_of_range(metric, float(values.value[i]))
        left.append(LeftOut(run_id, why, _name(roster.name(i))))
    used = np.flatnonzero(usable)
    y = values.value[used]
    if len(used) < MIN_RUNS:
        raise ExplainError(
            f"explain needs at least {MIN_RUNS} runs with {metric}: experiment {experiment!r} "
            f"has {len(used)}{where}" + (f" ({_left_summary(left)} left out)" if left else "")
        )
    asked = Asked(experiment, experiment_id, metric, step, options.tracking_uri)
    if np.ptp(y) == 0:
        progress.close()
        return _agreed(asked, y, left, notes)
    read = None if streamed is None else _used(streamed, used, usable)
    del streamed
    # the runs' own roster where every run is used (a copy beside it was 7 MiB at 100,000)
    named = roster if len(used) == len(roster) else roster.picked(used.tolist())
    return Chosen(asked, named, y, left, notes, mlflow_client, read, tables)


@cache
def shown(text: str, name: str | None = None) -> str:
    """A user's value as a report shows it (``masked_view``; the value of a param whose
    ``name`` says it is secret, masked whole); a sweep repeats its values, so each is judged
    once."""
    return masked_view(text, name=name)


def _name(name: str | None) -> str | None:
    """A run's name as a report shows it: asked for the runs a report names (outliers, runs
    left out), never for every run, as judging 100,000 distinct names takes seconds."""
    return shown(name) if name else name


def _left_summary(left: Sequence[LeftOut]) -> str:
    return ", ".join(f"{n} {why}" for why, n in Counter(x.why for x in left).most_common(3))


def _values(
    mlflow_client: Any,
    uri: str,
    runs: RunSummaries,
    among: np.ndarray,
    metric: str,
    step: str | int,
) -> choice.Values:
    if step == "final":
        return choice.final_values(runs, metric, among)

    def read(ids: list[str]) -> Mapping[str, float]:
        with tracking.store_errors(uri):
            return reads.values_at_step(
                lambda: mlflow_client or tracking.reader(uri), uri, ids, metric, int(step)
            )

    return choice.step_values(runs, metric, among, read)


def _agreed(
    asked: Asked, y: Sequence[float], left: Sequence[LeftOut], notes: Sequence[str]
) -> Explanation:
    """Every run has the same value: no spread, so no field, seed or noise floor to weigh."""
    return Explanation(
        experiment=asked.experiment,
        experiment_id=asked.experiment_id,
        metric=asked.metric,
        at=asked.at,
        runs=len(y),
        mean=float(y[0]),
        sd=0.0,
        noise=Noise(None, None, 0, 0),
        left_out=tuple(left),
        notes=(*notes, f"all {len(y)} runs agree on {asked.metric}: no spread to explain"),
    )


@dataclass(frozen=True)
class Tabled:
    """What the analysis and the report need of the runs' records: the table, and the runs
    read without their whole record (run id -> its coverage and why)."""

    table: Table
    partial: dict[str, tuple[Coverage, str]]


def _tabled(read: Read) -> Tabled:
    """The table of the records ``read``, which the caller hands over: the records go when it
    returns, so they and the analysis's own arrays are never held at once."""
    return Tabled(build(read.records), read.partial)


def _explained(
    asked: Asked,
    used: Roster,
    tabled: Tabled,
    y: np.ndarray,
    left: list[LeftOut],
    notes: list[str],
) -> Explanation:
    table, partial = tabled.table, tabled.partial
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
    group_ids: dict[int, str] = {}
    groups: list[Group] = []
    for g in np.nonzero(found.groups.sizes >= 2)[0]:
        members = found.groups.members(int(g))
        group_ids[int(g)] = f"g{len(groups) + 1}"
        groups.append(
            Group(
                group_ids[int(g)],
                RunIds.of(used, members.tolist()),
                float(y[members].mean()),
                float(np.std(y[members], ddof=1)),
            )
        )
    uri = asked.tracking_uri
    suffix = f" --tracking-uri {tracking.shown(uri)}" if uri else ""
    outliers = tuple(
        Outlier(
            used.run_id(o.run),
            group_ids[o.group],
            o.z,
            f"fingerprint diff {used.run_id(o.reference)} {used.run_id(o.run)}{suffix}",
            _name(used.name(o.run)),
            float(y[o.run]),
        )
        for o in found.outlying
    )
    return Explanation(
        experiment=asked.experiment,
        experiment_id=asked.experiment_id,
        metric=asked.metric,
        at=asked.at,
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
