"""MLflow's embedded store, a sqlite file: opened for the first time by one process at a time,
and its failures told as a file's, not a server's.

A sweep (a Hydra multirun, a job array, ``for i in ...; do python train.py & done``) starts many
processes against the same new ``mlflow.db`` at once. MLflow creates and migrates the file the
first time a process opens it, and several processes doing that together race in its schema
migrations: the file is left half-migrated (``table _alembic_tmp_latest_metrics already
exists``) and no process can open it again. So the package opens a sqlite store under an
exclusive ``flock`` on a file beside it (``<name>.mfp-lock``): the first process creates and
migrates it, the others wait, then find it ready. MLflow keeps the opened store for the process,
so later calls (the user's own ``mlflow.log_*`` in the same process) never migrate again. The lock
file is removed once the store is ready, as sqlite removes its journal: left beside a project's
``mlflow.db`` it was one more untracked file in every later run's ``git status``. Removing it is
safe then because nothing needs the lock any more: a process that still holds the removed file, or
makes a new one, finds the database created and migrates nothing.

After that the file is shared the way sqlite shares it: one writer at a time, the others waiting
(MLflow sets a busy timeout of 20 s) and, past it, failing with "database is locked", which the
uploader retries within a second or two rather than treating the file as gone
(``errors.Busy``). What cannot be retried, a file an earlier crash left half-migrated, gets one
message saying so and how to recover: the run's values are in its spool, which ``fingerprint
sync`` uploads into a new file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from ..layout import LOCK_SUFFIX
from ..redact import strip_url_credentials

if TYPE_CHECKING:  # sqlite3 is imported where a file is opened: a training never needs it
    import sqlite3

# What sqlite says when another process holds the write lock past the busy timeout.
BUSY_MARKERS = ("database is locked", "database table is locked", "database is busy")
# What sqlite says when MLflow migrates a file whose tables an interrupted migration left behind
# (alembic copies a table to ``_alembic_tmp_<name>`` to alter it on sqlite).
HALF_MIGRATED_MARKERS = ("_alembic_tmp_", "already exists")

# sqlite's extended result code for a read-only connection that finds a hot journal.
SQLITE_READONLY_ROLLBACK = 776

_opened: set[str] = set()  # the sqlite URIs this process has opened (MLflow keeps their stores)
_opening = threading.Lock()


# A database URL as SQLAlchemy's ``make_url`` (which MLflow opens a store with) reads it: its
# database is what follows the host's slash, up to the query, percent-decoded.
_DATABASE_URL = re.compile(
    r"""
        (?P<name>[\w\+]+)://
        (?:
            (?P<username>[^:/]*)
            (?::(?P<password>[^@]*))?
        @)?
        (?:
            (?:
                \[(?P<ipv6host>[^/\?]+)\] |
                (?P<ipv4host>[^/:\?]+)
            )?
            (?::(?P<port>[^/\?]*))?
        )?
        (?:/(?P<database>[^\?]*))?
        (?:\?(?P<query>.*))?
    """,
    re.X,
)


def sqlite_file(uri: str) -> Path | None:
    """The database file a ``sqlite:///`` URI names (existing or not); None for other stores.
    Read as SQLAlchemy reads it, without importing SQLAlchemy: a command that reads the file's
    tables itself (``explain``, ``diff``) would spend a third of a second on that import alone.
    Raises ``ValueError`` for a URI SQLAlchemy could not parse either."""
    if not uri.startswith("sqlite:"):
        return None
    found = _DATABASE_URL.match(uri)
    if found is None:
        raise ValueError("not a database URL SQLAlchemy can read (sqlite:///PATH)")
    database = unquote(found["database"] or "")
    return Path(database) if database and database != ":memory:" else None


def read_only(database: Path, timeout_s: float = 5.0) -> sqlite3.Connection:
    """``database`` opened read-only, as a file URI (a path holding ``?`` or ``#`` stays a path),
    waiting at most ``timeout_s`` for a writer's lock: what every direct read of MLflow's tables
    (the metric histories, ``explain``'s runs, the checks here) opens it with.

    A writer that died inside a commit (a training ended by SIGTERM or SIGKILL while its uploader
    wrote) leaves a hot journal: the pages that restore the file's last commit. sqlite plays it
    back when the file is next opened, but only on a connection that may write; a read-only one
    fails with SQLITE_READONLY_ROLLBACK ("attempt to write a readonly database") until then, and a
    store fit to read would look like no MLflow database at all. So the file is opened once for
    writing to let sqlite restore it, as any MLflow client opening it would, and read again. A
    file this process may not write stays unreadable, with sqlite's error."""
    import sqlite3

    uri = database.resolve().as_uri()

    def opened(mode: str) -> sqlite3.Connection:
        return sqlite3.connect(f"{uri}?mode={mode}", uri=True, timeout=timeout_s)

    connection = opened("ro")
    try:
        connection.execute("pragma schema_version").fetchone()  # takes the read lock
    except sqlite3.OperationalError as exc:
        connection.close()
        if exc.sqlite_errorcode != SQLITE_READONLY_ROLLBACK:
            raise
        restoring = opened("rw")
        try:
            restoring.execute("pragma schema_version").fetchone()  # plays the journal back
        finally:
            restoring.close()
        connection = opened("ro")
    return connection


def lock_file(database: Path) -> Path:
    return database.with_name(database.name + LOCK_SUFFIX)


def _drop_lock(database: Path) -> None:
    """Remove the lock file of a database that is created (see the module's docstring: only
    then; before it, another process could lock a new file while one holds the old)."""
    with contextlib.suppress(OSError):
        lock_file(database).unlink(missing_ok=True)


@contextlib.contextmanager
def first_use_lock(database: Path, exclusive: bool) -> Iterator[bool]:
    """Hold a lock on ``<database>.mfp-lock`` (waiting for it): exclusive to create the file,
    shared to wait for a process creating it; yields whether it is held. A folder where the lock
    file cannot be made (read-only) yields False: the store is then opened as MLflow opens it."""
    lock = lock_file(database)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield True
    finally:
        os.close(fd)  # releases the lock


def created(database: Path) -> bool:
    """Whether MLflow has created ``database`` (it records its schema version), read with the
    standard library: MLflow itself migrates only a file without tables, so opening a created
    one is safe from any number of processes at once. A half-migrated file counts as created:
    opening it fails, with the message ``failure`` gives."""
    import sqlite3

    if not database.is_file() or database.stat().st_size == 0:
        return False
    try:
        connection = read_only(database, timeout_s=30)
    except sqlite3.Error:
        return False
    try:
        rows = connection.execute(
            "select name from sqlite_master where type = 'table' and name = 'alembic_version'"
        ).fetchall()
        return bool(rows) and bool(connection.execute("select 1 from alembic_version").fetchall())
    except sqlite3.Error:
        return False
    finally:
        connection.close()


def ready(uri: str) -> str:
    """``uri``, its store opened once in this process. A sqlite file that does not exist yet (or
    has no tables) is created and migrated under an exclusive ``first_use_lock``; one that
    exists is opened once no process holds that lock. Other stores are returned untouched.
    Raises what opening raises (a half-migrated file); nothing is remembered then, so a later
    call tries again."""
    database = sqlite_file(uri)
    if database is None or uri in _opened:
        return uri
    # MLflow's store module takes over a second to import: done before any lock is taken, so
    # that a sweep's processes do not import it one after another.
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    from mlflow import MlflowClient

    with _opening:
        if uri in _opened:
            return uri
        with first_use_lock(database, exclusive=False):
            exists = created(database)  # a creator holds the lock exclusively until it is done
            if exists:
                _drop_lock(database)
        if exists:
            MlflowClient(tracking_uri=uri)  # opens and caches the store; nothing is migrated
        else:
            with first_use_lock(database, exclusive=True):
                MlflowClient(tracking_uri=uri)  # creates and migrates, or finds it done
                _drop_lock(database)  # only once it is: a failed creation leaves the lock
        _opened.add(uri)
    return uri


def is_busy(text: str) -> bool:
    return any(marker in text for marker in BUSY_MARKERS)


def is_half_migrated(text: str) -> bool:
    return any(marker in text for marker in HALF_MIGRATED_MARKERS)


def one_workspace(connection: sqlite3.Connection) -> bool:
    """Whether the open MLflow file holds experiments of one workspace at most: MLflow reads
    only the active workspace's, so a reader of the tables reads only such a file."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(experiments)")}
    if "workspace" not in columns:
        return True
    (workspaces,) = connection.execute(
        "SELECT COUNT(DISTINCT workspace) FROM experiments"
    ).fetchone()
    return bool(workspaces <= 1)


def leftovers(database: Path) -> list[str]:
    """The ``_alembic_tmp_`` tables an interrupted migration left in ``database``."""
    import sqlite3

    try:
        connection = read_only(database)
    except sqlite3.Error:
        return []
    try:
        rows = connection.execute(
            "select name from sqlite_master where type = 'table' and name like ? escape '!'",
            ("!_alembic!_tmp!_%",),
        ).fetchall()
        return sorted(str(name) for (name,) in rows)
    except sqlite3.Error:
        return []
    finally:
        connection.close()


def where(uri: str) -> str:
    """The store as a message names it: a file as a file, a server as a server."""
    database = sqlite_file(uri)
    if database is not None:
        return f"the MLflow database file {database}"
    if uri.startswith("file:") or "://" not in uri:
        return f"the MLflow store folder {uri.removeprefix('file://')}"
    return f"the tracking server {strip_url_credentials(uri)}"


def half_migrated(uri: str, reason: str, spool: Path | str | None = None) -> str:
    """What happened to a half-migrated file, and how to get the values into a working store."""
    database = sqlite_file(uri) or Path("mlflow.db")
    new = database.with_name(f"{database.stem}-new{database.suffix}")
    kept = f"The values are kept in {spool}; to recover, " if spool is not None else "To recover, "
    return (
        f"{where(uri)} was left half-migrated by a process that stopped while MLflow was "
        f"creating or upgrading its tables ({reason}); MLflow cannot open it. {kept}move the "
        f"file aside and run `fingerprint sync --tracking-uri sqlite:///{new}` (a new file), "
        "then point MLFLOW_TRACKING_URI at it"
    )


def broken(uri: str, reason: str) -> bool:
    """Whether ``reason`` (why ``uri`` could not be opened) is a half-migrated sqlite file."""
    database = sqlite_file(uri)
    if database is None or is_busy(reason):
        return False
    return is_half_migrated(reason) or bool(leftovers(database))


def failure(uri: str, reason: str, spool: Path | str | None = None) -> str:
    """One sentence on why ``uri`` could not be used, naming a local file as a file."""
    if broken(uri, reason):
        return half_migrated(uri, reason, spool)
    if sqlite_file(uri) is not None and is_busy(reason):
        return f"{where(uri)} is locked by another process ({reason})"
    return f"{where(uri)} could not be used ({reason})"
