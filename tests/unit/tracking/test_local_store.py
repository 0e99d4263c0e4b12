"""The embedded sqlite store: its first-use lock, what counts as created, and its failures told as
a file's. The sweep itself (processes racing on a new file) is tests/system/test_sweep.py."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

import pytest
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import TEMPORARILY_UNAVAILABLE

from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import Busy, Unreachable
from mlflow_fingerprint.tracking import local_store
from mlflow_fingerprint.tracking.client import _translated
from support.hot_journal import die_inside_a_commit


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite:///mlflow.db",
        "sqlite:////tmp/a b/x.db",
        "sqlite:////tmp/a%20b/x%3F.db",
        "sqlite:////tmp/x.db?mode=ro&cache=shared",
        "sqlite:///rel/x.db#part",
        "sqlite:////tmp/x@y/z.db",
        "sqlite://user:pw@host:12/db.sqlite",
        "sqlite://[::1]/d",
        "sqlite:///:memory:",
        "sqlite://",
        "sqlite:///",
    ],
)
def test_a_sqlite_uri_names_the_file_sqlalchemy_opens(uri: str) -> None:
    from sqlalchemy.engine import make_url

    database = make_url(uri).database
    expected = Path(database) if database and database != ":memory:" else None
    assert local_store.sqlite_file(uri) == expected


def test_a_uri_sqlalchemy_cannot_read_is_a_value_error_and_another_store_no_file() -> None:
    with pytest.raises(ValueError, match="not a database URL"):
        local_store.sqlite_file("sqlite:mlflow.db")
    assert local_store.sqlite_file("http://127.0.0.1:5000") is None
    assert local_store.sqlite_file("postgresql://u@h/db") is None


def test_the_first_use_lock_is_exclusive_for_a_creator_and_shared_for_openers(
    tmp_path: Path,
) -> None:
    database = tmp_path / "sub" / "mlflow.db"
    lock = database.with_name("mlflow.db" + layout.LOCK_SUFFIX)
    with local_store.first_use_lock(database, exclusive=True) as held:
        assert held
        other = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # an opener waits while the file is created
                fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        finally:
            os.close(other)
    with local_store.first_use_lock(database, exclusive=False) as held:
        assert held


def test_a_file_counts_as_created_once_mlflow_recorded_its_schema(tmp_path: Path) -> None:
    database = tmp_path / "mlflow.db"
    assert not local_store.created(database)  # missing
    database.touch()
    assert not local_store.created(database)  # empty: MLflow creates its tables
    with sqlite3.connect(database) as connection:
        connection.execute("create table alembic_version (version_num varchar(32))")
        assert not local_store.created(database)  # no version yet: still being created
        connection.execute("insert into alembic_version values ('a8c4a736bde6')")
    assert local_store.created(database)
    assert local_store.leftovers(database) == []
    with sqlite3.connect(database) as connection:
        connection.execute("create table _alembic_tmp_latest_metrics (x int)")
        connection.execute("create table alembic_tmp_decoy (x int)")  # no leading underscore
    assert local_store.leftovers(database) == ["_alembic_tmp_latest_metrics"]


def test_a_file_whose_writer_died_inside_a_commit_is_read_as_of_its_last_commit(
    tmp_path: Path,
) -> None:
    database = tmp_path / "mlflow.db"
    with sqlite3.connect(database) as connection:
        connection.execute("create table alembic_version (version_num varchar(32))")
        connection.execute("insert into alembic_version values ('a8c4a736bde6')")
    connection.close()
    die_inside_a_commit(database)
    assert local_store.created(database)
    connection = local_store.read_only(database)
    try:
        tables = connection.execute("select name from sqlite_master").fetchall()
    finally:
        connection.close()
    assert tables == [("alembic_version",)]  # the dead writer's table was rolled back
    assert not database.with_name("mlflow.db-journal").exists()


def test_a_locked_sqlite_file_is_busy_not_an_outage() -> None:
    def locked() -> None:
        raise MlflowException(
            "(sqlite3.OperationalError) database is locked", error_code=TEMPORARILY_UNAVAILABLE
        )

    def refused() -> None:
        raise ConnectionRefusedError("Connection refused")

    with pytest.raises(Busy):
        _translated(locked)
    with pytest.raises(Unreachable) as info:
        _translated(refused)
    assert not isinstance(info.value, Busy)


def test_messages_name_a_file_as_a_file_and_a_server_as_a_server(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    busy = local_store.failure(uri, "OperationalError: database is locked")
    assert busy.startswith(f"the MLflow database file {tmp_path / 'mlflow.db'} is locked")
    broken = local_store.failure(uri, "table _alembic_tmp_metrics already exists", "/spool/x")
    assert "half-migrated" in broken
    assert "The values are kept in /spool/x" in broken
    assert f"--tracking-uri sqlite:///{tmp_path / 'mlflow-new.db'}" in broken
    assert "server" not in busy + broken
    assert local_store.where("http://u:pw@host:5000") == "the tracking server http://host:5000"
