"""Replaying spools into a real sqlite store: ordering, idempotence, refusals, the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.run.mlflow_io import SPOOL_ID_TAG
from mlflow_fingerprint.run.spool import Spool, encode
from mlflow_fingerprint.run.sync import replay


def spooled_run(root: Path, uri: str, steps: int, name: str = "spooled") -> Spool:
    """A spool as a run writes it when the server is down from the start."""
    spool = Spool.create(root)
    artifact = spool.write_artifact("fingerprint", "fingerprint.json", b'{"schema_version": 1}')
    records: list[dict[str, Any]] = [
        {
            "e": "start",
            "spool_id": spool.spool_id,
            "experiment_name": "spooled",
            "experiment_id": None,
            "run_name": name,
            "start_time": 1_700_000_000_000,
            "tags": {"fingerprint.hash": "abc", SPOOL_ID_TAG: spool.spool_id},
            "tracking_uri": uri,
        },
        {"e": "artifact", "file": str(artifact.relative_to(spool.path)), "path": "fingerprint"},
        *(
            {"e": "m", "k": "loss", "v": 1.0 / (s + 1), "s": s, "t": 1_700_000_000_000 + s}
            for s in range(steps)
        ),
        {"e": "params", "params": {"seed": "0"}},
        {"e": "end", "status": "FINISHED", "end_time": 1_700_000_100_000},
    ]
    spool.append([encode(r) for r in records])
    return spool


def runs_in(experiment: str) -> list[Any]:
    client = MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id]) if exp else []


def test_replay_uploads_in_batches_and_a_second_replay_uploads_nothing(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled_run(tmp_path / "spool", sqlite_tracking_uri, steps=2500)
    first = replay(spool, sqlite_tracking_uri, search=True)
    assert first.caught_up
    assert first.metrics == 2500
    again = replay(spool, sqlite_tracking_uri, search=True)
    assert (again.metrics, again.events) == (0, 0)

    [run] = runs_in("spooled")
    history = MlflowClient().get_metric_history(run.info.run_id, "loss")
    assert [m.step for m in history] == list(range(2500))
    assert run.info.status == "FINISHED"
    assert run.info.start_time == 1_700_000_000_000
    assert run.info.end_time == 1_700_000_100_000
    assert run.data.params == {"seed": "0"}
    assert [a.path for a in MlflowClient().list_artifacts(run.info.run_id, "fingerprint")] == [
        "fingerprint/fingerprint.json"
    ]


def test_lost_acknowledgements_do_not_make_a_second_run(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled_run(tmp_path / "spool", sqlite_tracking_uri, steps=10)
    assert replay(spool, sqlite_tracking_uri, search=True).caught_up
    (spool.path / "acks.jsonl").unlink()  # a crash right after the store answered
    assert replay(spool, sqlite_tracking_uri, search=True).caught_up
    [run] = runs_in("spooled")
    assert len(MlflowClient().get_metric_history(run.info.run_id, "loss")) == 10


def test_a_torn_last_line_is_not_uploaded_and_does_not_block(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled_run(tmp_path / "spool", sqlite_tracking_uri, steps=3)
    with open(spool.path / "events.jsonl", "ab") as f:
        f.write(b'{"e":"m","k":"loss","v":9')  # the process died mid-write
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.caught_up
    [run] = runs_in("spooled")
    assert [m.value for m in MlflowClient().get_metric_history(run.info.run_id, "loss")] == [
        1.0,
        0.5,
        pytest.approx(1 / 3),
    ]


def test_a_refused_record_is_skipped_and_the_rest_still_arrives(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = spooled_run(tmp_path / "spool", sqlite_tracking_uri, steps=0)
    spool.path.joinpath("events.jsonl").write_bytes(
        b"".join(
            line + b"\n"
            for line in spool.path.joinpath("events.jsonl").read_bytes().splitlines()
            if b'"end"' not in line
        )
    )
    spool.append(
        [
            encode({"e": "params", "params": {"seed": "1", "lr": "0.1"}}),  # seed=0 already logged
            encode({"e": "m", "k": "ok", "v": 1.0, "s": 0, "t": 1}),
            encode({"e": "end", "status": "FINISHED", "end_time": 1_700_000_100_000}),
        ]
    )
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.caught_up
    assert len(outcome.rejected) == 1
    assert "seed" in outcome.rejected[0]
    [run] = runs_in("spooled")
    assert run.data.params == {"seed": "0", "lr": "0.1"}
    assert run.data.metrics == {"ok": 1.0}
    assert run.info.status == "FINISHED"


def test_a_run_missing_from_the_store_keeps_the_spool(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = Spool.create(tmp_path / "spool")
    spool.append(
        [
            encode({"e": "start", "run_id": "0" * 32}),  # joined a run this store does not have
            encode({"e": "m", "k": "loss", "v": 1.0, "s": 0, "t": 1}),
        ]
    )
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.error is not None
    assert outcome.pending == 1
    assert outcome.rejected == ()
    assert spool.acked().offset < spool.size()  # nothing given up: a later sync can still send it


def test_cli_sync_dry_run_then_sync_then_nothing_left(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spooled_run(spool_dir, sqlite_tracking_uri, steps=5, name="later")
    assert cli(["sync", "--dry-run"]) == 0
    assert "later: would upload 5 metric values, 4 other records" in capsys.readouterr().out
    assert runs_in("spooled") == []
    assert cli(["sync"]) == 0
    assert "later: uploaded 5 metric values and 4 other records" in capsys.readouterr().out
    assert list(spool_dir.iterdir()) == []
    assert cli(["sync"]) == 0
    assert "nothing to sync" in capsys.readouterr().out
    assert len(runs_in("spooled")) == 1


def test_cli_sync_skips_a_spool_a_live_process_holds(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = spooled_run(spool_dir, sqlite_tracking_uri, steps=1, name="live")
    with spool.locked() as held:
        assert held
        assert cli(["sync"]) == 0
    assert "live: skipped, still being written" in capsys.readouterr().out
    assert runs_in("spooled") == []


def test_cli_sync_bad_spool_dir_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["sync", "--spool-dir", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "does not exist" in err
