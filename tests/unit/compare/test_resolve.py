"""What a user typed, turned into a fingerprint record (``compare/resolve.py``): files, record
objects and runs of a real sqlite MLflow store, and the one line each wrong reference gets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.compare.resolve import (
    looks_like_file,
    parse_record,
    previous_run_id,
    resolve,
    run_id_of,
)
from mlflow_fingerprint.errors import ResolveError
from mlflow_fingerprint.model.fingerprint import Fingerprint
from support.records import cpu_record, log_run, seeded, write

RUN = "0123456789abcdef0123456789abcdef"


def test_a_run_id_is_read_from_a_bare_id_or_a_runs_uri() -> None:
    assert run_id_of(RUN) == RUN
    assert run_id_of(f"runs:/{RUN}") == RUN
    assert run_id_of(f"runs:/{RUN}/fingerprint/fingerprint.json") == RUN
    assert run_id_of("baseline") is None  # a run name
    assert run_id_of(RUN.upper()) is None
    with pytest.raises(ResolveError, match="does not name a run id"):
        run_id_of("runs:/not-an-id")


def test_a_reference_ending_in_json_or_naming_a_file_is_a_file(tmp_path: Path) -> None:
    assert looks_like_file("missing.json")
    (tmp_path / "record").write_text("{}")
    assert looks_like_file(str(tmp_path / "record"))
    assert not looks_like_file(RUN)


def test_a_record_is_parsed_migrated_and_its_url_tokens_masked() -> None:
    record = cpu_record()
    record["git"]["remote"] = "https://user:hunter2@example.com/repo.git"
    parsed, notes = parse_record(json.dumps(record), "a.json")
    assert notes == ()
    assert "hunter2" not in json.dumps(parsed)
    assert parsed["hashes"] == record["hashes"]
    loose, _ = parse_record(json.dumps(record).encode(), "a.json", frozen=False)
    assert loose["seeds"] == parsed["seeds"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "a.json is not a fingerprint: not valid JSON"),
        ('{"schema_version": 99}', "99"),
        ('{"schema_version": 1, "gpu": 3}', "a.json is not a fingerprint: "),
    ],
)
def test_what_is_no_record_is_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ResolveError, match=message) as raised:
        parse_record(text, "a.json")
    assert "\n" not in str(raised.value)


def test_objects_files_and_paths_resolve_to_their_record(tmp_path: Path) -> None:
    record = seeded(cpu_record(), 3)
    by_object = resolve(Fingerprint.from_dict(record), label="A")
    assert (by_object.ref.ref, by_object.ref.kind, by_object.is_run) == ("A", "object", False)
    assert resolve(record).record["hashes"] == record["hashes"]
    path = write(tmp_path, "a", record)
    for value in (path, f"  {path} ", Path(path)):
        found = resolve(value)
        assert found.ref.kind == "file"
        assert found.record["seeds"]["requested"] == 3


def test_files_that_cannot_be_read_are_named(tmp_path: Path) -> None:
    with pytest.raises(ResolveError, match=r"cannot read missing\.json"):
        resolve("missing.json")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ResolveError, match=r"cannot read .*folder.json: not a regular file"):
        resolve(tmp_path / "folder.json")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # nobody writes to it: refused, not waited on
    with pytest.raises(ResolveError, match="cannot read"):
        resolve(str(fifo))
    for value in ("", "  ", 3, None):
        with pytest.raises(ResolveError, match="cannot compare"):
            resolve(value)


def test_runs_resolve_by_id_uri_and_name_with_their_metrics_tags_and_params(
    sqlite_tracking_uri: str,
) -> None:
    record = seeded(cpu_record(), 1)
    params = {"lr": "0.1", "db_password": "hunter2"}
    run_id = log_run(
        sqlite_tracking_uri, "exp", "base", record, {"loss": [2.0, 1.0]}, params=params
    )
    for ref in (run_id, f"runs:/{run_id}"):
        found = resolve(ref)
        assert (found.ref.run_id, found.ref.name, found.is_run) == (run_id, "base", True)
        assert found.metrics == {"loss": 1.0}
        assert found.partial is False
        assert found.tags[layout.TAG_HASH] == record["hashes"]["fingerprint"]
        assert found.record["hashes"] == record["hashes"]
    by_name = resolve("base", experiment="exp")
    assert by_name.ref.run_id == run_id
    assert by_name.ref.experiment_id is not None
    shown = by_name.record["params"]
    assert shown["lr"] == "0.1"
    assert "hunter2" not in json.dumps(shown)
    experiment_id = by_name.ref.experiment_id
    assert resolve("base", experiment=experiment_id).ref.run_id == run_id  # by its id


def test_a_run_name_needs_its_experiment_and_must_be_unique(sqlite_tracking_uri: str) -> None:
    log_run(sqlite_tracking_uri, "exp", "twin", cpu_record(), {})
    with pytest.raises(ResolveError, match="give its experiment with -e EXPERIMENT"):
        resolve("twin")
    with pytest.raises(ResolveError, match="no experiment named 'nope'"):
        resolve("twin", experiment="nope")
    with pytest.raises(ResolveError, match="no run named 'other' in experiment 'exp'"):
        resolve("other", experiment="exp")
    log_run(sqlite_tracking_uri, "exp", "twin", cpu_record(), {})
    with pytest.raises(ResolveError, match=r"run name 'twin' is ambiguous .*; give a run id"):
        resolve("twin", experiment="exp")
    with pytest.raises(ResolveError, match=f"no run with id {RUN}"):
        resolve(RUN)


def test_a_run_without_its_artifact_is_compared_on_its_tags_or_refused(
    sqlite_tracking_uri: str,
) -> None:
    record = seeded(cpu_record(), 2)
    run_id = log_run(sqlite_tracking_uri, "exp", "tagged", record, {})
    client = MlflowClient(sqlite_tracking_uri)
    artifacts = Path(client.get_run(run_id).info.artifact_uri.removeprefix("file://"))
    (artifacts / layout.FINGERPRINT_ARTIFACT).unlink()
    found = resolve(run_id, label="A")
    assert found.partial
    assert found.record["hashes"]["fingerprint"] == record["hashes"]["fingerprint"]
    assert len(found.notes) == 1
    assert run_id in found.notes[0]
    bare = log_run(sqlite_tracking_uri, "exp", "bare", None, {})
    with pytest.raises(ResolveError, match=f"run {bare} .* has no fingerprint"):
        resolve(bare)
    newer = log_run(sqlite_tracking_uri, "exp", "newer", record, {})
    client.set_tag(newer, layout.TAG_SCHEMA, "99")
    with pytest.raises(ResolveError, match="99") as refused:
        resolve(newer)
    assert "\n" not in str(refused.value)


def test_a_run_given_alone_is_compared_with_the_previous_one(
    sqlite_tracking_uri: str, tmp_path: Path
) -> None:
    first = log_run(sqlite_tracking_uri, "exp", "first", cpu_record(), {})
    second = log_run(sqlite_tracking_uri, "exp", "second", cpu_record(), {})
    assert previous_run_id(second, None, None) == first
    assert previous_run_id("second", None, "exp") == first
    with pytest.raises(ResolveError, match=f"run {first} has no earlier finished run"):
        previous_run_id(first, None, None)
    with pytest.raises(ResolveError, match="give -e EXPERIMENT for a name"):
        previous_run_id("second", None, None)
    with pytest.raises(ResolveError, match=r"cannot read gone\.json: no such file"):
        previous_run_id("gone.json", None, None)
    path = write(tmp_path, "a", cpu_record())
    with pytest.raises(ResolveError, match="is a file; give a second run"):
        previous_run_id(path, None, None)
