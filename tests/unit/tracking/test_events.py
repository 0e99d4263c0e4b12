"""Spool events: one encoder, one decoder, and the JSON shape spools on disk already have."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import BadEvent
from mlflow_fingerprint.tracking import events
from mlflow_fingerprint.tracking.events import (
    Artifact,
    CreateRun,
    End,
    JoinRun,
    Metric,
    Params,
    Tags,
    decode,
    encode,
)
from mlflow_fingerprint.tracking.spool import Spool
from mlflow_fingerprint.tracking.sync import replay

EVERY_KIND = [
    JoinRun("a" * 32, "http://tracking:5000"),
    CreateRun(
        spool_id="20261123T120000Z-0123456789ab",
        start_time=1_700_000_000_000,
        experiment_name="exp",
        experiment_id=None,
        run_name="bold-fox-1",
        tags={layout.TAG_HASH: "abc", layout.MLFLOW_RUN_NAME: "bold-fox-1"},
        tracking_uri="sqlite:///mlflow.db",
    ),
    Tags({layout.TAG_STAGE: "end"}),
    Params({"seed": "0", "batch_size": "32"}),
    Metric("loss", 0.25, 7, 1_700_000_000_123),
    Metric("loss", 0.5, None, 1_700_000_000_124),
    Artifact(layout.FINGERPRINT_ARTIFACT, layout.ARTIFACT_DIR),
    End("FAILED", 1_700_000_100_000),
]


@pytest.mark.parametrize("event", EVERY_KIND, ids=lambda e: type(e).__name__)
def test_every_event_decodes_to_itself(event: events.Event) -> None:
    line = encode(event)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert decode(json.loads(line)) == event


def test_every_kind_is_covered() -> None:
    assert {type(e) for e in EVERY_KIND} == set(events.Event.__args__)  # type: ignore[attr-defined]


def test_nan_and_infinity_survive_a_round_trip() -> None:
    for value in (math.nan, math.inf, -math.inf):
        back = decode(json.loads(encode(Metric("x", value, 0, 1))))
        assert isinstance(back, Metric)
        assert math.isnan(back.value) if math.isnan(value) else back.value == value


# What earlier versions wrote, byte for byte: spools left for ``fingerprint sync`` must decode.
TODAYS_SPOOL = b"""\
{"e":"start","spool_id":"S","experiment_name":"legacy","experiment_id":null,"run_name":"old","tags":{"fingerprint.hash":"abc","fingerprint.spool_id":"S"},"start_time":1700000000000,"tracking_uri":"sqlite:///x.db"}
{"e":"artifact","file":"artifacts/fingerprint/fingerprint.json","path":"fingerprint"}
{"e":"m","k":"loss","v":1.0,"s":0,"t":1700000000001}
{"e":"m","k":"loss","v":NaN,"s":null,"t":1700000000002}
{"e":"tags","tags":{"fingerprint.stage":"end"}}
{"e":"params","params":{"seed":"0"}}
{"e":"end","status":"FINISHED","end_time":1700000100000}
"""


def test_a_spool_in_todays_shape_decodes_and_encodes_back_the_same() -> None:
    lines = TODAYS_SPOOL.splitlines(keepends=True)
    decoded = [decode(json.loads(line)) for line in lines]
    assert [type(e) for e in decoded] == [CreateRun, Artifact, Metric, Metric, Tags, Params, End]
    for line, event in zip(lines, decoded, strict=True):
        assert encode(event) == line  # byte for byte: the format on disk is unchanged
    joined = b'{"e":"start","run_id":"0123","tracking_uri":"http://h:5000"}'
    assert decode(json.loads(joined)) == JoinRun("0123", "http://h:5000")


def test_a_spool_in_todays_shape_replays_into_a_real_store(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    spool = Spool.create(tmp_path / "spool")
    spool.write_artifact(layout.ARTIFACT_DIR, layout.FINGERPRINT_FILE, b'{"schema_version": 1}')
    spool.append([TODAYS_SPOOL.replace(b'"S"', json.dumps(spool.spool_id).encode())])
    outcome = replay(spool, sqlite_tracking_uri, search=True)
    assert outcome.caught_up, outcome
    assert outcome.metrics == 2
    assert outcome.events == 5
    assert outcome.rejected == ()
    run = MlflowClient().get_run(str(outcome.run_id))
    assert run.info.run_name == "old"
    assert run.info.status == "FINISHED"
    assert run.data.tags[layout.TAG_STAGE] == "end"
    assert run.data.params == {"seed": "0"}
    values = sorted(
        (m.timestamp, m.value) for m in MlflowClient().get_metric_history(run.info.run_id, "loss")
    )
    assert values[0] == (1_700_000_000_001, 1.0)
    assert math.isnan(values[1][1])


@pytest.mark.parametrize(
    "record",
    [
        {"e": "nonsense"},
        {"k": "loss", "v": 1.0},
        {"e": "m", "k": "loss"},
        {"e": "m", "k": "loss", "v": "high", "t": 1},
        {"e": "start", "spool_id": "S"},
        {"e": "tags", "tags": 3},
        {"e": "end", "status": "FINISHED"},
    ],
)
def test_a_record_that_is_no_event_is_a_bad_event(record: dict[str, object]) -> None:
    with pytest.raises(BadEvent):
        decode(record)


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"e": "m", "k": "loss"}, "spool record 'm' without a valid 'v'"),
        (
            {"e": "m", "k": "loss", "v": "high", "t": 1},
            "spool record 'm' with a value it cannot hold (could not convert string to float: "
            "'high')",
        ),
    ],
)
def test_a_bad_event_says_what_is_wrong_with_it(record: dict[str, object], said: str) -> None:
    """What ``fingerprint sync`` shows for a record it refuses."""
    with pytest.raises(BadEvent) as refused:
        decode(record)
    assert str(refused.value) == said


def test_a_bad_record_is_refused_by_the_replay_and_the_rest_still_arrives(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    run_id = MlflowClient().create_run(MlflowClient().create_experiment("bad")).info.run_id
    spool = Spool.create(tmp_path / "spool")
    spool.append(
        [
            encode(JoinRun(run_id)),
            b'{"e":"m","k":"loss"}\n',
            encode(Metric("ok", 1.0, 0, 1)),
        ]
    )
    outcome = replay(spool, sqlite_tracking_uri, search=False)
    assert outcome.caught_up
    assert len(outcome.rejected) == 1
    assert "m" in outcome.rejected[0]
    assert MlflowClient().get_run(run_id).data.metrics == {"ok": 1.0}
