"""Replaying spools into a real sqlite store: ordering, idempotence, refusals, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.tracking.spool import Spool, encode
from mlflow_fingerprint.tracking.sync import replay


def spooled_run(
    root: Path, uri: str, steps: int, name: str = "spooled", tag: str = layout.INTERNAL_SPOOL_ID
) -> Spool:
    """A spool as a run writes it when the server is down from the start (``tag``: the spool id
    tag's name, which older releases spelled ``fingerprint.spool_id``)."""
    spool = Spool.create(root)
    artifact = spool.write_artifact(
        layout.ARTIFACT_DIR, layout.FINGERPRINT_FILE, b'{"schema_version": 1}'
    )
    records: list[dict[str, Any]] = [
        {
            "e": "start",
            "spool_id": spool.spool_id,
            "experiment_name": "spooled",
            "experiment_id": None,
            "run_name": name,
            "start_time": 1_700_000_000_000,
            "tags": {layout.TAG_HASH: "abc", tag: spool.spool_id},
            "tracking_uri": uri,
        },
        {
            "e": "artifact",
            "file": str(artifact.relative_to(spool.path)),
            "path": layout.ARTIFACT_DIR,
        },
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


def test_sync_joins_the_run_an_older_release_created_under_the_old_tag(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    """A spool written before the spool id tag left the ``fingerprint.`` namespace, whose run was
    created but never acknowledged (a crash in between): sync finds that run by the old tag."""
    spool = spooled_run(
        tmp_path / "spool", sqlite_tracking_uri, steps=3, tag=layout.TAG_LEGACY_SPOOL_ID
    )
    client = MlflowClient()
    experiment = client.create_experiment("spooled")
    created = client.create_run(experiment, tags={layout.TAG_LEGACY_SPOOL_ID: spool.spool_id})
    assert replay(spool, sqlite_tracking_uri, search=True).caught_up
    [run] = runs_in("spooled")
    assert run.info.run_id == created.info.run_id
    assert len(MlflowClient().get_metric_history(run.info.run_id, "loss")) == 3


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
    assert run.data.params == {layout.PARAM_SEED: "0"}
    assert [
        a.path for a in MlflowClient().list_artifacts(run.info.run_id, layout.ARTIFACT_DIR)
    ] == [layout.FINGERPRINT_ARTIFACT]


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
    assert run.data.params == {layout.PARAM_SEED: "0", "lr": "0.1"}
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


# -- runs whose writer never ended them ----------------------------------------------------------

WRITER = """
import json, sys
from pathlib import Path
from mlflow_fingerprint.tracking.spool import Spool, encode

spool = Spool.create(Path(sys.argv[1]))
records = json.loads(sys.stdin.readline())
spool.append([encode({**r, "spool_id": spool.spool_id}) for r in records])
with open(spool.path / "events.jsonl", "ab") as f:
    f.write(sys.argv[2].encode())  # what it was writing when it died, if anything
print(spool.path, flush=True)
sys.stdin.read()  # alive until the test closes its stdin
"""
LAST_T = 1_700_000_000_000 + 4


def start_writer(root: Path, uri: str, torn: str = "") -> tuple[subprocess.Popen[str], Spool]:
    """A real process that writes a run's spool (start, 5 values, no end), then stays alive."""
    records = [
        {
            "e": "start",
            "experiment_name": "spooled",
            "run_name": "crashed",
            "start_time": 1_700_000_000_000,
            "tags": {},
            "tracking_uri": uri,
        },
        *({"e": "m", "k": "loss", "v": 1.0, "s": s, "t": 1_700_000_000_000 + s} for s in range(5)),
    ]
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), torn],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write(json.dumps(records) + "\n")
    child.stdin.flush()
    return child, Spool(Path(child.stdout.readline().strip()))


def end(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    child.wait(60)


def the_run() -> Any:
    [run] = runs_in("spooled")
    return run


def test_a_live_writers_run_is_left_running_then_ended_once_it_is_gone(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child, spool = start_writer(spool_dir, sqlite_tracking_uri)
    host = os.uname().nodename
    try:
        assert cli(["sync"]) == 0
        out = capsys.readouterr().out
        assert out.count("\n") == 1
        assert f"left it RUNNING: process {child.pid} on {host} is still running" in out
        run = the_run()
        assert run.info.status == "RUNNING"
        assert run.info.end_time is None
        assert len(MlflowClient().get_metric_history(run.info.run_id, "loss")) == 5
        assert spool.path.is_dir(), "the spool must stay for a later sync to end the run"
    finally:
        end(child)

    assert cli(["sync"]) == 0
    out = capsys.readouterr().out
    assert f"uploaded 0 metric values and 2 other records into run {run.info.run_id}" in out
    assert f"ended it as KILLED: process {child.pid} on {host} exited" in out
    run = the_run()
    assert run.info.status == "KILLED"
    assert run.info.end_time == LAST_T
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == "sync"
    assert run.data.tags[layout.INTERNAL_END_REASON] == (
        f"its writer never ended it: process {child.pid} on {host} exited"
    )
    assert not spool.path.exists()
    assert cli(["sync"]) == 0
    assert "nothing to sync" in capsys.readouterr().out


@pytest.mark.parametrize("torn", ["", '{"e":"m","k":"loss","v":0.2,"s":5,"t":17'])
def test_a_dead_writers_run_is_ended_killed_at_its_last_value(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str], torn: str
) -> None:
    """``torn``: it died in the middle of writing a line; the end appended after it must not be
    read as part of that damaged line."""
    child, _ = start_writer(spool_dir, sqlite_tracking_uri, torn)
    end(child)
    assert cli(["sync"]) == 0
    assert "ended it as KILLED" in capsys.readouterr().out
    run = the_run()
    assert (run.info.status, run.info.end_time) == ("KILLED", LAST_T)
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == "sync"
    assert [m.step for m in MlflowClient().get_metric_history(run.info.run_id, "loss")] == list(
        range(5)
    )


def test_dry_run_says_it_would_end_the_run_and_changes_nothing(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child, spool = start_writer(spool_dir, sqlite_tracking_uri)
    end(child)
    size = spool.size()
    assert cli(["sync", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would upload 5 metric values, 1 other records" in out
    assert f"would end it as KILLED: process {child.pid}" in out
    assert spool.size() == size
    assert runs_in("spooled") == []


def test_the_end_survives_an_unreachable_server_and_the_override_uri(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server moved: the spool names a URI nothing answers on, ``--tracking-uri`` the new
    one. The first sync (the old URI) keeps everything; the end it decided on is uploaded later."""
    child, spool = start_writer(spool_dir, "http://127.0.0.1:9")
    end(child)
    assert cli(["sync"]) == 2
    captured = capsys.readouterr()
    assert "http://127.0.0.1:9 unreachable; kept 5 metric values, 3 other records" in captured.out
    assert captured.err.count("\n") == 1
    assert spool.path.is_dir()
    assert cli(["sync", "--tracking-uri", sqlite_tracking_uri]) == 0
    assert "uploaded 5 metric values and 3 other records" in capsys.readouterr().out
    run = the_run()
    assert (run.info.status, run.info.end_time) == ("KILLED", LAST_T)
    assert run.data.tags[layout.INTERNAL_ENDED_BY] == "sync"


def test_a_joined_run_is_left_to_whoever_started_it(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The spool joined a run the user opened (``mlflow.start_run``): sync uploads what it
    holds, and ending that run stays the user's business even though the writer is gone."""
    client = MlflowClient()
    run_id = client.create_run(client.create_experiment("spooled")).info.run_id
    child = subprocess.run(
        [sys.executable, "-c", WRITER, str(spool_dir), ""],
        input=json.dumps([{"e": "start", "run_id": run_id, "tracking_uri": sqlite_tracking_uri}])
        + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert child.stdout.strip()
    assert cli(["sync"]) == 0
    assert "KILLED" not in capsys.readouterr().out
    run = client.get_run(run_id)
    assert run.info.status == "RUNNING"
    assert layout.INTERNAL_ENDED_BY not in run.data.tags
