"""Replay a spool into MLflow: what the live uploader does during a run and ``fingerprint sync``
does after an outage, with the same code.

Records are sent strictly in order, starting after the last acknowledged offset, and each accepted
call is acknowledged in the spool before the next one is made, so an acknowledged record is never
sent again. A record can reach the store twice only when its answer never got acknowledged (a
crash right after the call, or a call a closing run gave up on that completed later); it is then
byte-identical (same key, value, step and time stamp), which MLflow's SQL stores deduplicate. A
run is tagged with its spool id, and ``sync`` looks it up by that tag before creating one.

A run whose writer died (SIGKILL, out of memory) has no end record and would stay RUNNING in
MLflow for ever. When its writer is provably gone (:mod:`.liveness`), ``sync`` appends what the
writer would have: tags saying who ended it and why, and an end record with status KILLED (MLflow's
status for a run whose process died) at the time of its last logged value. Appended to the spool
first, they are uploaded by the same replay, exactly once, even if this sync is interrupted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import client as io
from . import liveness
from .spool import Spool, encode


@dataclass(frozen=True)
class Outcome:
    """What one replay pass did, and why it stopped if it stopped early."""

    run_id: str | None
    metrics: int = 0
    events: int = 0
    rejected: tuple[str, ...] = ()
    pending: int = 0
    error: str | None = None

    @property
    def caught_up(self) -> bool:
        return self.pending == 0 and self.error is None


OnStart = Callable[[str, Any], None]


def _start(c: Any, record: Mapping[str, Any], search: bool) -> tuple[str, Any]:
    """The run id for a start record: the run it joins, the run already tagged with this spool's
    id (``search``: after a crash between creating it and acknowledging that), or a new run.
    Returns (run id, the Run when created here). A joined run's experiment, and a new run's, get
    the training kind where they have none (:func:`.client.mark_training`)."""
    if record.get("run_id"):
        io.mark_run_experiment_training(c, record["run_id"])
        return record["run_id"], None
    if search:
        # a spool written before the tag's rename tagged its run under the old name
        tags = record.get("tags") or {}
        tag = io.LEGACY_SPOOL_ID_TAG if io.LEGACY_SPOOL_ID_TAG in tags else io.SPOOL_ID_TAG
        found = io.search_run(c, record["spool_id"], tag)
        if found:
            return found, None
    experiment_id = io.resolve_experiment(
        c, record.get("experiment_name"), record.get("experiment_id")
    )
    run = io.create_run(
        c,
        experiment_id,
        record.get("run_name"),
        record.get("tags") or {},
        int(record["start_time"]),
    )
    return run.info.run_id, run


def _log_items(c: Any, run_id: str, kind: str, items: Mapping[str, str]) -> list[str]:
    """Tags or params in batches; a refused batch is retried item by item so that one conflicting
    param (a value the user's run already holds) does not take the others down with it."""
    refused: list[str] = []
    keys = list(items)
    for part in io.chunks(keys, io.MAX_PARAMS_TAGS_PER_BATCH):
        batch = {k: items[k] for k in part}
        try:
            io.log_batch(c, run_id, **{kind: batch})
        except io.Rejected:
            for key, value in batch.items():
                try:
                    io.log_batch(c, run_id, **{kind: {key: value}})
                except io.Rejected as exc:
                    refused.append(f"{kind[:-1]} {key}: {exc}")
    return refused


def _metric_run(records: Sequence[tuple[int, dict[str, Any]]], start: int) -> int:
    """Index just past the run of consecutive metric records starting at ``start`` (capped)."""
    end = start
    while (
        end < len(records)
        and records[end][1].get("e") == "m"
        and end - start < io.MAX_METRICS_PER_BATCH
    ):
        end += 1
    return end


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
    records = list(spool.read_from(acked.offset))
    metrics = events = 0
    rejected: list[str] = []
    c = io.client(uri)
    i = 0
    while i < len(records) and not stop():
        offset, record = records[i]
        kind = record.get("e")
        nxt = i + 1
        try:
            if kind == "start":
                run_id, run = _start(c, record, search)
                if on_start is not None:
                    on_start(run_id, run)
            elif run_id is None:
                raise io.Rejected(f"spool {spool.spool_id} has no start record before {kind!r}")
            elif kind == "m":
                nxt = _metric_run(records, i)
                io.log_batch(c, run_id, metrics=[r for _, r in records[i:nxt]])
                offset = records[nxt - 1][0]
                metrics += nxt - i
            elif kind in ("tags", "params"):
                rejected += _log_items(c, run_id, kind, record[kind])
            elif kind == "artifact":
                io.log_artifact(c, run_id, str(spool.path / record["file"]), record["path"])
            elif kind == "end":
                io.set_terminated(c, run_id, record["status"], int(record["end_time"]))
            else:
                raise io.Rejected(f"unknown spool record {kind!r}")
            if kind != "m":
                events += 1
            spool.ack(offset, run_id)
        except io.Rejected as exc:
            rejected.append(f"{kind}: {exc}")
            spool.ack(records[nxt - 1][0], run_id, note=f"refused: {exc}")
        except io.Unreachable as exc:
            return Outcome(run_id, metrics, events, tuple(rejected), len(records) - i, str(exc))
        i = nxt
    return Outcome(run_id, metrics, events, tuple(rejected), len(records) - i)


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
    start: Mapping[str, Any] = {}
    last_time = 0
    for _, record in spool.read_from(0):
        kind = record.get("e")
        if kind == "start" and not start:
            start = record
        elif kind == "end":
            return None
        elif kind == "m":
            last_time = max(last_time, int(record.get("t") or 0))
    if not start or start.get("run_id"):
        return None
    last_time = max(last_time, int(start.get("start_time") or 0))
    recorded = spool.writer()
    return Unended(liveness.judge(recorded), last_time, recorded is not None)


def end_as_killed(spool: Spool, state: Unended) -> None:
    """Append the end a dead writer could not write; the next replay uploads it."""
    spool.drop_torn_tail()
    reason = f"its writer never ended it: {state.writer.why}"
    tags = {io.ENDED_BY_TAG: "sync", io.END_REASON_TAG: reason}
    spool.append(
        [
            encode({"e": "tags", "tags": tags}),
            encode({"e": "end", "status": "KILLED", "end_time": state.last_time}),
        ]
    )


def summary(spool: Spool) -> dict[str, Any]:
    """What a spool holds and what is still to upload, for ``fingerprint sync --dry-run``."""
    acked = spool.acked()
    start = spool.first_record() or {}
    pending = [record.get("e") for _, record in spool.read_from(acked.offset)]
    return {
        "spool_id": spool.spool_id,
        "run_id": acked.run_id or start.get("run_id"),
        "run_name": start.get("run_name"),
        "experiment": start.get("experiment_name") or start.get("experiment_id"),
        "tracking_uri": start.get("tracking_uri"),
        "pending_metrics": pending.count("m"),
        "pending_events": len(pending) - pending.count("m"),
    }
