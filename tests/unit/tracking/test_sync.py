"""Replaying a spool (``tracking/sync.py``) on small spools and a real sqlite store: what a
``--dry-run`` says is pending, where a pass stops and why, what is quarantined, and the end a
sync writes for a run whose writer is gone. Long spools, lost acknowledgements, torn lines and
real writer processes are tests/system/test_sync.py's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking import liveness
from mlflow_fingerprint.tracking.spool import Spool, encode
from mlflow_fingerprint.tracking.sync import (
    Outcome,
    end_as_killed,
    replay,
    summary,
    unended,
)

START = 1_700_000_000_000


def start(spool: Spool, uri: str) -> dict[str, Any]:
    return {
        "e": "start",
        "spool_id": spool.spool_id,
        "experiment_name": "spooled",
        "experiment_id": None,
        "run_name": "short",
        "start_time": START,
        "tags": {layout.INTERNAL_SPOOL_ID: spool.spool_id},
        "tracking_uri": uri,
    }


def metric(step: int, value: float = 1.0) -> dict[str, Any]:
    return {"e": "m", "k": "loss", "v": value, "s": step, "t": START + 10 * step}


def spooled(root: Path, uri: str, *records: dict[str, Any], started: bool = True) -> Spool:
    spool = Spool.create(root)
    first = [start(spool, uri)] if started else []
    spool.append([encode(r) for r in (*first, *records)])
    return spool


def test_caught_up_means_nothing_pending_and_no_stop() -> None:
    assert Outcome("r").caught_up
    assert not Outcome("r", pending=1).caught_up
    assert not Outcome("r", error="down").caught_up
    assert not Outcome(None, stuck="no start").caught_up


def test_a_dry_run_says_what_is_pending_and_a_replay_uploads_it(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    end = {"e": "end", "status": "FINISHED", "end_time": START + 100}
    spool = spooled(
        tmp_path,
        sqlite_tracking_uri,
        metric(0),
        metric(1),
        {"e": "params", "params": {"lr": "0.1"}},
        end,
    )
    before = summary(spool)
    assert before == {
        "spool_id": spool.spool_id,
        "run_id": None,
        "run_name": "short",
        "experiment": "spooled",
        "tracking_uri": sqlite_tracking_uri,
        "pending_metrics": 2,
        "pending_events": 3,  # the start, the params, the end
    }
    started: list[str] = []
    outcome = replay(
        spool, sqlite_tracking_uri, search=True, on_start=lambda r, _: started.append(r)
    )
    assert outcome.caught_up
    assert (outcome.metrics, outcome.events, outcome.rejected) == (2, 3, ())
    assert started == [outcome.run_id]
    after = summary(spool)
    assert (after["run_id"], after["pending_metrics"], after["pending_events"]) == (
        outcome.run_id, 0, 0
    )  # fmt: skip
    run = MlflowClient(sqlite_tracking_uri).get_run(outcome.run_id)
    assert (run.info.status, run.info.end_time, run.data.params) == (
        "FINISHED",
        START + 100,
        {"lr": "0.1"},
    )
    assert spool.settled()


def test_a_pass_asked_to_stop_leaves_the_rest_pending(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled(tmp_path, sqlite_tracking_uri, metric(0), metric(1))
    calls = iter([False, True])
    outcome = replay(spool, sqlite_tracking_uri, search=False, stop=lambda: next(calls))
    assert (outcome.events, outcome.metrics, outcome.pending) == (1, 0, 2)  # the start only
    assert not outcome.caught_up
    assert replay(spool, sqlite_tracking_uri, search=True).metrics == 2  # the rest, later


def test_records_without_a_start_are_stuck_and_kept(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled(tmp_path, sqlite_tracking_uri, metric(0), started=False)
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.stuck == "no readable start record before the first records"
    assert (outcome.run_id, outcome.pending) == (None, 1)
    assert spool.acked().offset == 0


def test_what_no_store_could_take_is_quarantined_and_the_rest_still_arrives(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    artifact = {"e": "artifact", "file": "artifacts/gone.json", "path": layout.ARTIFACT_DIR}
    spool = spooled(tmp_path, sqlite_tracking_uri, {"e": "m", "k": "loss"}, artifact, metric(0))
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.caught_up
    assert outcome.metrics == 1
    assert len(outcome.rejected) == 2
    assert outcome.rejected[0].startswith("record: ")  # not a record this release can read
    assert outcome.rejected[1].startswith("artifact: its file ")
    assert outcome.rejected[1].endswith("gone.json is missing")
    quarantined = spool.quarantined()
    assert [q["record"].get("e") for q in quarantined] == ["m", "artifact"]
    assert not spool.settled()  # a refused record is kept for the user to see
    history = MlflowClient(sqlite_tracking_uri).get_metric_history(outcome.run_id, "loss")
    assert [m.step for m in history] == [0]


def test_a_store_that_cannot_be_opened_is_an_error_not_an_exception(tmp_path: Path) -> None:
    spool = spooled(tmp_path, "sqlite:///x.db", metric(0))
    garbage = tmp_path / "notes.db"
    garbage.write_bytes(b"not a sqlite database, written by someone else" * 100)
    outcome = replay(spool, f"sqlite:///{garbage}", search=True)
    assert outcome.error is not None
    assert "\n" not in outcome.error
    assert outcome.pending == 2
    assert spool.acked().offset == 0


def test_a_run_whose_writer_is_gone_is_ended_killed_at_its_last_value(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled(tmp_path, sqlite_tracking_uri, metric(0), metric(3), metric(1))
    state = unended(spool)
    assert state is not None
    assert (state.last_time, state.recorded, state.writer.gone) == (START + 30, True, False)
    assert state.keep  # this process wrote it and still runs: a later sync ends it
    # the recorded writer's pid is now another process's (different start ticks): it is gone
    me = liveness.identity()
    (spool.path / "writer.json").write_text(json.dumps({**me, "start_ticks": -1}))
    state = unended(spool)
    assert state is not None
    assert state.writer.gone
    assert not state.keep
    end_as_killed(spool, state)
    assert unended(spool) is None  # it has its end now
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.caught_up
    run = MlflowClient(sqlite_tracking_uri).get_run(outcome.run_id)
    assert (run.info.status, run.info.end_time) == ("KILLED", START + 30)
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == "sync"
    assert (
        run.data.tags[layout.INTERNAL_END_REASON]
        == f"its writer never ended it: {state.writer.why}"
    )


def test_a_spool_that_joined_a_run_or_ended_leaves_the_end_to_others(tmp_path: Path) -> None:
    joined = Spool.create(tmp_path)
    joined.append([encode({"e": "start", "run_id": "0" * 32}), encode(metric(0))])
    assert unended(joined) is None
    assert summary(joined)["run_id"] == "0" * 32
    assert summary(joined)["run_name"] is None
    unknown = spooled(tmp_path, "sqlite:///x.db")
    (unknown.path / "writer.json").unlink()
    state = unended(unknown)
    assert state is not None
    assert (state.recorded, state.keep, state.last_time) == (False, False, START)
    assert state.writer.why == "the spool does not say which process wrote it"
