"""Replay a spool into MLflow: what the live uploader does during a run and ``fingerprint sync``
does after an outage, with the same code.

Records are sent strictly in order, starting after the last acknowledged offset, and each accepted
call is acknowledged in the spool before the next one is made, so an acknowledged record is never
sent again. A record can reach the store twice only when its answer never got acknowledged (a
crash right after the call, or a call a closing run gave up on that completed later); it is then
byte-identical (same key, value, step and time stamp), which MLflow's SQL stores deduplicate. A
run is tagged with its spool id, and ``sync`` looks it up by that tag before creating one.

Nothing is given up: a store that is down, answers 5xx or refuses our credentials stops the pass
(retry later); a record the store refuses as invalid is quarantined in the spool with the reason
(:meth:`.Spool.quarantine`); a spool whose run cannot be started (no readable start record, an
experiment deleted) stops with the reason and keeps every record.

A run whose writer died (SIGKILL, out of memory) has no end record and would stay RUNNING in
MLflow for ever. When its writer is provably gone (:mod:`.liveness`), ``sync`` appends what the
writer would have: tags saying who ended it and why, and an end record with status KILLED (MLflow's
status for a run whose process died) at the time of its last logged value. Appended to the spool
first, they are uploaded by the same replay, exactly once, even if this sync is interrupted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .. import layout
from ..errors import BadEvent, Busy
from . import client as io
from . import liveness
from .events import (
    Artifact,
    CreateRun,
    End,
    Event,
    JoinRun,
    Metric,
    Params,
    Tags,
    decode,
    encode,
    to_record,
)
from .spool import Spool


@dataclass(frozen=True)
class Outcome:
    """What one replay pass did, and why it stopped if it stopped early: ``error`` when the store
    is unavailable (unreachable, 5xx, not authorized: retry later), ``stuck`` when this spool
    cannot go on whatever the store does (no readable start record, the run cannot be created).
    ``rejected``: what the store refused as invalid, now quarantined in the spool."""

    run_id: str | None
    metrics: int = 0
    events: int = 0
    rejected: tuple[str, ...] = ()
    pending: int = 0
    error: str | None = None
    stuck: str | None = None
    unauthorized: bool = False  # the error is the store refusing our credentials (401/403)
    busy: bool = False  # the error is a sqlite file locked by another process: retry soon

    @property
    def caught_up(self) -> bool:
        return self.pending == 0 and self.error is None and self.stuck is None


OnStart = Callable[[str, Any], None]


def _start(c: Any, event: JoinRun | CreateRun, search: bool) -> tuple[str, Any]:
    """The run id for a start event: the run it joins, the run already tagged with this spool's
    id (``search``: after a crash between creating it and acknowledging that), or a new run.
    Returns (run id, the Run when created here). A joined run's experiment, and a new run's, get
    the training kind where they have none (:func:`.client.mark_training`)."""
    if isinstance(event, JoinRun):
        io.mark_run_experiment_training(c, event.run_id)
        return event.run_id, None
    if search and event.spool_id:
        # a spool written before the tag's rename tagged its run under the old name
        legacy = layout.TAG_LEGACY_SPOOL_ID in event.tags
        tag = layout.TAG_LEGACY_SPOOL_ID if legacy else layout.INTERNAL_SPOOL_ID
        found = io.search_run(c, event.spool_id, tag)
        if found:
            return found, None
    experiment_id = io.resolve_experiment(c, event.experiment_name, event.experiment_id)
    run = io.create_run(c, experiment_id, event.run_name, event.tags, event.start_time)
    return run.info.run_id, run


Refusal = tuple[str, dict[str, Any]]  # (what and why, the record to quarantine)


def _log_items(
    c: Any, run_id: str, kind: Literal["tags", "params"], items: Mapping[str, str]
) -> list[Refusal]:
    """Tags or params in batches; a refused batch is retried item by item so that one conflicting
    param (a value the user's run already holds) does not take the others down with it."""

    def log(batch: Mapping[str, str]) -> None:
        if kind == "tags":
            io.log_batch(c, run_id, tags=batch)
        else:
            io.log_batch(c, run_id, params=batch)

    refused: list[Refusal] = []
    keys = list(items)
    for part in io.chunks(keys, io.MAX_PARAMS_TAGS_PER_BATCH):
        batch = {k: items[k] for k in part}
        try:
            log(batch)
        except io.Rejected:
            for key, value in batch.items():
                try:
                    log({key: value})
                except io.Rejected as exc:
                    one = Tags({key: value}) if kind == "tags" else Params({key: value})
                    refused.append((f"{kind[:-1]} {key}: {exc}", to_record(one)))
    return refused


Decoded = tuple[int, Mapping[str, Any], Event | BadEvent]  # (end offset, record, event or why not)


def _decoded_one(record: Mapping[str, Any]) -> Event | BadEvent:
    try:
        return decode(record)
    except BadEvent as exc:
        return exc


def _decoded(spool: Spool, offset: int) -> list[Decoded]:
    return [(end, record, _decoded_one(record)) for end, record in spool.read_from(offset)]


def _metric_run(records: Sequence[Decoded], start: int) -> int:
    """Index just past the run of consecutive metric events starting at ``start`` (capped)."""
    end = start
    while (
        end < len(records)
        and isinstance(records[end][2], Metric)
        and end - start < io.MAX_METRICS_PER_BATCH
    ):
        end += 1
    return end


def _send(c: Any, spool: Spool, run_id: str, event: Event) -> list[Refusal]:
    """Send one non-metric, non-start event; what the store refused of it."""
    match event:
        case Tags():
            return _log_items(c, run_id, "tags", event.tags)
        case Params():
            return _log_items(c, run_id, "params", event.params)
        case Artifact():
            local = spool.path / event.file
            if not local.is_file():  # e.g. a cleaned /tmp overflow folder: no store can help
                raise io.Rejected(f"its file {local} is missing")
            io.log_artifact(c, run_id, str(local), event.path)
        case End():
            io.set_terminated(c, run_id, event.status, event.end_time)
        case _:  # starts and metrics are replay's own
            raise io.Rejected(f"a {event.kind!r} record cannot be sent on its own")
    return []


def replay(
    spool: Spool,
    uri: str,
    *,
    search: bool,
    stop: Callable[[], bool] = lambda: False,
    on_start: OnStart | None = None,
) -> Outcome:
    """Upload every record after the acknowledged offset, in order, until done, ``stop()``, or the
    store becomes unreachable. Never raises for anything the store does. ``search``: look for a
    run created earlier from this spool before creating one (sync; a live writer knows there is
    none)."""
    acked = spool.acked()
    run_id = acked.run_id
    records = _decoded(spool, acked.offset)
    metrics = events = 0
    rejected: list[str] = []
    i = 0

    def outcome(**stopped: Any) -> Outcome:
        return Outcome(run_id, metrics, events, tuple(rejected), len(records) - i, **stopped)

    try:
        c = io.client(uri)  # a sqlite file is created or migrated here, on first use
    except io.Rejected as exc:  # a store MLflow cannot open: no retry will help by itself
        return outcome(error=str(exc))
    except io.Unreachable as exc:
        return outcome(error=str(exc), busy=isinstance(exc, Busy))

    while i < len(records) and not stop():
        offset, _, event = records[i]
        kind = event.kind if not isinstance(event, BadEvent) else "record"
        nxt = i + 1
        try:
            if isinstance(event, JoinRun | CreateRun):
                try:
                    run_id, run = _start(c, event, search)
                except io.Rejected as exc:  # e.g. a deleted experiment: keep all, say why
                    return outcome(stuck=f"the store refused to start the run: {exc}")
                if on_start is not None:
                    on_start(run_id, run)
            elif run_id is None:
                return outcome(stuck="no readable start record before the first records")
            elif isinstance(event, BadEvent):
                raise io.Rejected(str(event))
            elif isinstance(event, Metric):
                nxt = _metric_run(records, i)
                batch = [m for _, _, m in records[i:nxt] if isinstance(m, Metric)]
                io.log_batch(c, run_id, metrics=batch)
                offset = records[nxt - 1][0]
                metrics += nxt - i
            else:
                for why, refused in _send(c, spool, run_id, event):
                    rejected.append(f"{kind}: {why}")
                    spool.quarantine(refused, why)
            if not isinstance(event, Metric):
                events += 1
            spool.ack(offset, run_id)
        except io.Rejected as exc:
            rejected.append(f"{kind}: {exc}")
            for _, raw, _ in records[i:nxt]:
                spool.quarantine(raw, str(exc))
            spool.ack(records[nxt - 1][0], run_id, note=f"quarantined: {exc}")
        except io.Unreachable as exc:
            return outcome(
                error=str(exc),
                unauthorized=isinstance(exc, io.Unauthorized),
                busy=isinstance(exc, Busy),
            )
        i = nxt
    return outcome()


@dataclass(frozen=True)
class Unended:
    """A run this spool created and never ended, and whether its writer is gone for good."""

    writer: liveness.Writer
    last_time: int  # ms: the last value logged, else the start
    recorded: bool  # the spool says who its writer is: a later sync may find it gone

    @property
    def keep(self) -> bool:
        """Keep the spool after uploading it, for a later sync to end the run."""
        return self.recorded and not self.writer.gone


def unended(spool: Spool) -> Unended | None:
    """None unless the spool created its run and holds no end record. A spool that joined a run
    (the user's ``mlflow.start_run``) leaves ending it to whoever started it."""
    start: CreateRun | JoinRun | None = None
    last_time = 0
    for _, _, event in _decoded(spool, 0):
        if isinstance(event, JoinRun | CreateRun) and start is None:
            start = event
        elif isinstance(event, End):
            return None
        elif isinstance(event, Metric):
            last_time = max(last_time, event.timestamp)
    if not isinstance(start, CreateRun):
        return None
    last_time = max(last_time, start.start_time)
    recorded = spool.writer()
    return Unended(liveness.judge(recorded), last_time, recorded is not None)


def end_as_killed(spool: Spool, state: Unended) -> None:
    """Append the end a dead writer could not write; the next replay uploads it."""
    spool.drop_torn_tail()
    reason = f"its writer never ended it: {state.writer.why}"
    tags = {layout.INTERNAL_ENDED_BY: "sync", layout.INTERNAL_END_REASON: reason}
    spool.append(
        [
            encode(Tags(tags)),
            encode(End("KILLED", state.last_time)),
        ]
    )


def summary(spool: Spool) -> dict[str, Any]:
    """What a spool holds and what is still to upload, for ``fingerprint sync --dry-run``."""
    acked = spool.acked()
    first = next(iter(spool.read_from(0)), None)
    start = _decoded_one(first[1]) if first is not None else None
    created = start if isinstance(start, CreateRun) else None
    joined = start.run_id if isinstance(start, JoinRun) else None
    pending = [event for _, _, event in _decoded(spool, acked.offset)]
    metrics = sum(isinstance(event, Metric) for event in pending)
    return {
        "spool_id": spool.spool_id,
        "run_id": acked.run_id or joined,
        "run_name": created.run_name if created else None,
        "experiment": (created.experiment_name or created.experiment_id) if created else None,
        "tracking_uri": start.tracking_uri if isinstance(start, JoinRun | CreateRun) else None,
        "pending_metrics": metrics,
        "pending_events": len(pending) - metrics,
    }
