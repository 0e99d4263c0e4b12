"""Opening a store to read it: a reader never writes, not even MLflow's tables into a file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.errors import ResolveError
from mlflow_fingerprint.tracking import local_store, store
from support.hot_journal import die_inside_a_commit


def other_programs_database(path: Path) -> Path:
    with sqlite3.connect(path) as connection:
        connection.execute("create table notes (body text)")
    connection.close()
    return path


@pytest.mark.parametrize(
    "make",
    [
        lambda path: path.touch(),  # an empty file: sqlite would take it for a new database
        other_programs_database,
    ],
    ids=["empty", "another-programs"],
)
def test_a_file_mlflow_did_not_create_is_refused_and_left_as_it_was(tmp_path: Path, make) -> None:
    path = tmp_path / "data.db"
    make(path)
    before = path.read_bytes()
    with pytest.raises(ResolveError, match="is not an MLflow database"):
        store.client(f"sqlite:///{path}")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.db"]


def test_a_store_whose_writer_died_inside_a_commit_opens_with_its_runs(
    sqlite_tracking_uri: str,
) -> None:
    import mlflow

    run = mlflow.MlflowClient(sqlite_tracking_uri).create_run("0")
    die_inside_a_commit(local_store.sqlite_file(sqlite_tracking_uri))
    found = store.client(sqlite_tracking_uri).get_run(run.info.run_id)
    assert found.info.status == "RUNNING"


def test_a_read_command_on_an_empty_file_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    code = main(["show", "0123456789abcdef0123456789abcdef", "--tracking-uri", f"sqlite:///{path}"])
    out, err = capsys.readouterr()
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert "is not an MLflow database" in err
    assert path.stat().st_size == 0


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("http://u:pw-Zq9@[bad/", "the tracking URI http://[bad/ is not a valid URL: Invalid IPv6"),
        ("http://127.0.0.1:99999", "is not a valid URL: Port out of range"),
        ("https://host:abc/", "is not a valid URL: Port could not be cast"),
        ("http://u:pw-Zq9/x@127.0.0.1:5000", "percent-encode it"),
    ],
)
def test_a_server_uri_that_is_no_url_is_one_line_naming_it(
    uri: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a parser's bare ``ValueError: Invalid IPv6 URL``, and none of its password."""
    code = main(["show", "0123456789abcdef0123456789abcdef", "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert said in err
    assert "Zq9" not in err
