"""A file as a writer leaves it when it dies inside a commit (a training's uploader reached by
SIGTERM or SIGKILL mid-write): changed pages already in the file, and beside it the hot journal
that restores the last commit, which only a connection that may write plays back.

Made in this process, without a process to kill: a transaction large enough to spill into the
file (sqlite writes and syncs the journal first), the file and its journal copied as they are on
disk, the transaction rolled back, and the copies put back: the file's bytes into the same file,
so that connections already open to it (MLflow's pool) read what the writer left."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from mlflow_fingerprint.tracking.local_store import SQLITE_READONLY_ROLLBACK


def die_inside_a_commit(database: Path) -> None:
    """Leave ``database`` as a writer that died inside a commit does, and check that a read-only
    connection refuses it with SQLITE_READONLY_ROLLBACK (so a test built on it can fail)."""
    journal = database.with_name(database.name + "-journal")
    dying = database.with_name("dying.db")
    dying_journal = dying.with_name(dying.name + "-journal")
    connection = sqlite3.connect(database, isolation_level=None)
    try:
        connection.execute("pragma cache_size = 1")  # every changed page spills into the file
        connection.execute("begin")
        connection.execute("create table half_written (body text)")
        connection.executemany("insert into half_written values (?)", [("x" * 500,)] * 2000)
        shutil.copyfile(database, dying)
        shutil.copyfile(journal, dying_journal)
        connection.execute("rollback")
    finally:
        connection.close()
    shutil.copyfile(dying, database)
    os.replace(dying_journal, journal)
    dying.unlink()
    raw = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError) as refused:
            raw.execute("pragma schema_version").fetchone()
    finally:
        raw.close()
    assert refused.value.sqlite_errorcode == SQLITE_READONLY_ROLLBACK, refused.value
